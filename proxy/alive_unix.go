//go:build unix

package proxy

import (
	"net"
	"syscall"
	"time"
)

// reusable reports whether a kept connection, idle for idle, may carry a
// request: the service sent nothing unasked and, with check, has not
// closed it (see get and peekAfter).
func (u *upstream) reusable(check bool, idle time.Duration) bool {
	if u.br.Buffered() > 0 {
		return false
	}
	return !check && idle < peekAfter || u.alive()
}

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

// peerGone reports whether the other end of c closed it (or reset it): a
// non-blocking peek that reads end of file. Bytes waiting (a pipelined
// request) or none yet mean it is still there.
func peerGone(c net.Conn) bool {
	var rc syscall.RawConn
	switch c := c.(type) {
	case *spinConn:
		rc = c.rc
	case syscall.Conn:
		var err error
		if rc, err = c.SyscallConn(); err != nil {
			return false
		}
	default:
		return false
	}
	gone := false
	var b [1]byte
	rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		gone = n == 0 && err == nil || err == syscall.ECONNRESET
		return true
	})
	return gone
}
