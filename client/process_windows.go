//go:build windows

package client

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"
)

// exeSuffix is what an executable's file name ends with.
const exeSuffix = ".exe"

// processAlive reports whether pid is a running process.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		// Another user's process cannot be opened, but it is alive.
		return err == windows.ERROR_ACCESS_DENIED
	}
	defer windows.CloseHandle(h)
	ev, err := windows.WaitForSingleObject(h, 0)
	return err == nil && ev == uint32(windows.WAIT_TIMEOUT)
}

// detached starts the daemon in a console process group of its own and
// without a console, so closing or interrupting the terminal that started it
// does not stop it.
func detached() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.DETACHED_PROCESS}
}

// execBinary runs bin with this process's stdio and waits for it: Windows
// cannot replace a process image. Its exit status comes back as the error.
func execBinary(bin string, argv []string) error {
	cmd := exec.Command(bin, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	return cmd.Run()
}
