//go:build windows

package daemon

import (
	"fmt"
	"net"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// listenSocket listens on the daemon's AF_UNIX socket (Windows 10 1803 and
// later) and then gives the socket file a protected DACL that lets only the
// daemon's own user open it: connecting needs write access to the file. Until
// the DACL is set the file has its folder's inherited ACL, so every
// connection is also checked in peerUID.
func listenSocket(sock string) (net.Listener, error) {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	if err := restrictToUser(sock); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restrict %s to this user: %w", sock, err)
	}
	return ln, nil
}

func currentUser() (*windows.SID, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return nil, err
	}
	return u.User.Sid, nil
}

func restrictToUser(path string) error {
	sid, err := currentUser()
	if err != nil {
		return err
	}
	sd, err := windows.SecurityDescriptorFromString("D:P(A;;FA;;;" + sid.String() + ")")
	if err != nil {
		return err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return err
	}
	return windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
}

// sioAFUnixGetPeerPID is SIO_AF_UNIX_GETPEERPID (afunix.h): the pid of the
// process at the other end of an AF_UNIX connection.
const sioAFUnixGetPeerPID = 0x58000100

// peerUID checks that the process at the other end of conn runs as the
// daemon's user (the SIDs of the two processes' tokens are equal). Windows
// has no uids: it returns os.Getuid() (-1) for the same user, which is what
// the caller compares with, and an error for anyone else.
func peerUID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return -1, err
	}
	var pid uint32
	var ioErr error
	if err := raw.Control(func(fd uintptr) {
		var n uint32
		ioErr = windows.WSAIoctl(windows.Handle(fd), sioAFUnixGetPeerPID, nil, 0,
			(*byte)(unsafe.Pointer(&pid)), uint32(unsafe.Sizeof(pid)), &n, nil, 0)
	}); err != nil {
		return -1, err
	}
	if ioErr != nil {
		return -1, fmt.Errorf("peer pid: %w", ioErr)
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if err != nil {
		return -1, fmt.Errorf("open peer process %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	var tok windows.Token
	if err := windows.OpenProcessToken(h, windows.TOKEN_QUERY, &tok); err != nil {
		return -1, fmt.Errorf("peer process %d token: %w", pid, err)
	}
	defer tok.Close()
	peer, err := tok.GetTokenUser()
	if err != nil {
		return -1, err
	}
	me, err := currentUser()
	if err != nil {
		return -1, err
	}
	if !windows.EqualSid(peer.User.Sid, me) {
		return -1, fmt.Errorf("peer process %d runs as %s, not as this daemon's user", pid, peer.User.Sid)
	}
	return os.Getuid(), nil
}
