//go:build unix

package procgroup

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
)

// Signal sends sig to every process in group pgid.
func Signal(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return fmt.Errorf("refusing to signal process group %d", pgid)
	}
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Set makes cmd the leader of a new process group, so that stopping it
// reaches every process it started.
func Set(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// Start starts cmd in the group Set asked for.
func Start(cmd *exec.Cmd) error { return cmd.Start() }

// kill kills cmd's whole group (exec.Cmd.Cancel).
func kill(cmd *exec.Cmd) error { return Signal(cmd.Process.Pid, syscall.SIGKILL) }
