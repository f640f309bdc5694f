//go:build unix

package supervisor

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
)

// SignalGroup sends sig to every process in group pgid.
func SignalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return fmt.Errorf("refusing to signal process group %d", pgid)
	}
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// setGroup makes cmd the leader of a new process group, so that stopping it
// reaches every process it started.
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// startGroup starts cmd in the group setGroup asked for.
func startGroup(cmd *exec.Cmd) error { return cmd.Start() }

// killGroup kills cmd's whole group (exec.Cmd.Cancel).
func killGroup(cmd *exec.Cmd) error { return SignalGroup(cmd.Process.Pid, syscall.SIGKILL) }
