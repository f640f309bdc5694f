//go:build unix

package client

import (
	"errors"
	"os"
	"syscall"
)

// exeSuffix is what an executable's file name ends with.
const exeSuffix = ""

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// detached starts the daemon in its own session, away from the terminal's
// signals.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// execBinary replaces this process with bin.
func execBinary(bin string, argv []string) error { return syscall.Exec(bin, argv, os.Environ()) }
