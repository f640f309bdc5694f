//go:build darwin

package daemon

import "syscall"

// caddyProcAttr puts caddy in its own process group. macOS has no
// parent-death signal: a caddy left by a daemon that crashed holds the
// https port until it is stopped, and the next daemon's caddy fails to bind
// and says so in caddy.log.
func caddyProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
