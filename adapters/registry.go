package adapters

import (
	"os"
	"os/exec"
	"path/filepath"
)

// builtin is the table of adapters compiled into binky, by canonical name.
// server names the binary binky needs to run the kind's shared server itself
// when a service gives no admin_url.
var builtin = map[string]struct{ server string }{
	"postgres": {server: "initdb"},
	"redis":    {server: "redis-server"},
}

// aliases maps protocol-compatible names onto one implementation.
var aliases = map[string]string{
	"postgresql": "postgres",
	"valkey":     "redis",
}

// Canonical returns the implementation name behind name (valkey → redis).
func Canonical(name string) string {
	if c, ok := aliases[name]; ok {
		return c
	}
	return name
}

// ExternalCommand is the executable an adapter name not built in is driven
// through.
func ExternalCommand(name string) string { return "binky-adapter-" + name }

// Describe tells `check` whether binky can drive the adapter name, and
// whether a service using it can leave admin_url out: true for built-in
// kinds whose server binky can start (the binary is installed) and for
// external adapters, which own their configuration.
func Describe(name string) (known, adminOptional bool) {
	if b, ok := builtin[Canonical(name)]; ok {
		return true, FindServerBinary(b.server) != ""
	}
	if _, err := exec.LookPath(ExternalCommand(name)); err == nil {
		return true, true
	}
	return false, false
}

// FindServerBinary finds a server program on PATH or where distributions
// install it off PATH (Debian keeps initdb under /usr/lib/postgresql/<v>/bin).
func FindServerBinary(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, pattern := range []string{"/usr/lib/postgresql/*/bin/", "/usr/local/pgsql/bin/", "/opt/homebrew/bin/", "/usr/local/bin/"} {
		matches, _ := filepath.Glob(pattern + name)
		for i := len(matches) - 1; i >= 0; i-- { // newest version sorts last
			if fi, err := os.Stat(matches[i]); err == nil && fi.Mode()&0o111 != 0 {
				return matches[i]
			}
		}
	}
	return ""
}
