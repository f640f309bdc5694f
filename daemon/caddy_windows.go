//go:build windows

package daemon

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// caddyProcAttr gives caddy a console process group of its own. Windows has
// no parent-death signal: a caddy left by a daemon that crashed holds the
// https port until it is stopped.
func caddyProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}
