//go:build linux

package daemon

import "syscall"

// caddyProcAttr puts caddy in its own process group and has the kernel
// stop it when the daemon dies (the next daemon starts its own).
func caddyProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
