//go:build unix

package managed

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// account is the user a server runs as, when it is not the caller.
type account = syscall.Credential

// runAs is the account servers run as: the caller, unless it is root, which
// PostgreSQL refuses; then the "postgres" user that the PostgreSQL packages
// create.
func runAs() (*account, error) {
	if os.Getuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("binky runs as root and PostgreSQL refuses to: create a 'postgres' user (the postgresql package does), or run binky as a normal user")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &account{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func chownTree(root string, cred *account) error {
	if cred == nil {
		return nil
	}
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(cred.Uid), int(cred.Gid))
	})
}

// detached starts a server in its own session, as cred when it is set.
func detached(cred *account) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Credential: cred}
}

// newAccount is the account of the user uid, group gid.
func newAccount(uid, gid int) *account { return &account{Uid: uint32(uid), Gid: uint32(gid)} }

// stopPID asks process pid to stop (SIGTERM).
func stopPID(pid int) error { return syscall.Kill(pid, syscall.SIGTERM) }

// pidAlive reports whether process pid exists.
func pidAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// killPID kills process pid (SIGKILL).
func killPID(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }

// signalPID sends sig to one process.
func signalPID(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
