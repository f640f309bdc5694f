//go:build windows

package managed

import (
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
