//go:build unix

package procgroup

// shell returns the shell that runs a service's cmd, a health cmd, a
// migrate or seed step and a verify check: always /bin/sh on unix, so a
// binky.toml means the same on every machine whatever the user's login shell.
func shell() (string, error) { return "/bin/sh", nil }
