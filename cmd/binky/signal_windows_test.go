//go:build windows

package main

import (
	"os"
	"syscall"

	"github.com/git-binky/git-binky/procgroup"
)

// signalPID does what kill(2) would to pid, or to the group -pid: Windows
// delivers no signals to a process, so one process is terminated and a group
// goes through procgroup.Signal (its job object); sig 0 only checks
// that the process exists. The end-to-end tests that call it run on Linux
// only; this keeps them compiling.
func signalPID(pid int, sig syscall.Signal) error {
	if pid < 0 {
		return procgroup.Signal(-pid, sig)
	}
	p, err := os.FindProcess(pid) // opens the process: fails when there is none
	if err != nil || sig == 0 {
		return err
	}
	return p.Kill()
}
