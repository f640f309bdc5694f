package procgroup

import (
	"os/exec"
	"syscall"
)

// DieWithParent has the kernel kill cmd (SIGKILL) when the thread that
// starts it ends: with the caller holding its OS thread until cmd is done
// (runtime.LockOSThread), when the process that started it dies, a kill -9
// included. Only cmd itself: what it started lives on, but a shell killed
// starts nothing more. Call it after Set (or Command).
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
