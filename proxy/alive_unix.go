//go:build unix

package proxy

import "syscall"

// alive reports whether the service still has u open and sent nothing
// unasked: one non-blocking peek at the socket.
func (u *upstream) alive() bool {
	if u.br.Buffered() > 0 {
		return false
	}
	sc, ok := u.conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	var b [1]byte
	rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		_ = n
		ok = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return ok
}
