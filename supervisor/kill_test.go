package supervisor

import "os"

// killPID kills one process (not its group), as a crash would: SIGKILL on
// unix, TerminateProcess on Windows.
func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
