//go:build windows

package managed

import (
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// account is the user a server runs as when it is not the caller: on
// Windows always the caller (PostgreSQL's pg_ctl drops an administrator's
// rights itself), so it carries nothing.
type account struct{}

// runAs is the account servers run as: the caller.
func runAs() (*account, error) { return nil, nil }

// chownTree has nothing to do: servers run as the caller.
func chownTree(string, *account) error { return nil }

// detached starts a server in a console process group of its own, with no
// console window, so it outlives the daemon and a Ctrl-C in the terminal
// that started the daemon does not reach it.
func detached(*account) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_NO_WINDOW}
}

// newAccount is never reached on Windows (os.Getuid is -1, never root).
func newAccount(int, int) *account { return nil }

// stopPID stops process pid: Windows has no SIGTERM to send another
// process, so it is terminated.
func stopPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// pidAlive reports whether process pid is running.
func pidAlive(pid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == uint32(windows.WAIT_TIMEOUT)
}

// killPID kills process pid.
func killPID(pid int) { _ = stopPID(pid) }

// signalPID ends one process: Windows has no signals to send it, so every
// one of them terminates it.
func signalPID(pid int, _ syscall.Signal) error { return stopPID(pid) }
