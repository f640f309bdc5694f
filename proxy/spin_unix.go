//go:build unix

package proxy

import (
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	// spinFor is how long a read polls its socket before its goroutine
	// parks: about two round trips of a small request on loopback.
	spinFor = 100 * time.Microsecond
	// spinClients is the most client connections at which reads poll.
	spinClients = 2
)

// spinners is how many reads poll right now: one at most, so polling never
// takes a second core from the service or the client.
var spinners atomic.Int32

// spins counts the reads that polled (for tests).
var spins atomic.Int64

// spinConn is a TCP connection whose reads poll the socket for up to
// spinFor before waiting in the netpoller, while the proxy has at most
// spinClients client connections. An answer that comes within spinFor is
// read without the goroutine parking and its thread being woken again,
// which on a small (virtual) machine is most of what a proxied request
// costs at one connection (docs/performance.md). With more connections
// reads never poll: their work keeps the threads awake, and polling would
// take CPU from them (measured: 0.83x the throughput at 8 connections when
// an idle moment between requests was enough to poll).
type spinConn struct {
	net.Conn
	rc      syscall.RawConn
	clients *atomic.Int32
}

func spinWrap(c net.Conn, clients *atomic.Int32) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &spinConn{Conn: c, rc: rc, clients: clients}
}

func (s *spinConn) Read(p []byte) (int, error) {
	if len(p) == 0 || s.clients.Load() > spinClients || !spinners.CompareAndSwap(0, 1) {
		return s.Conn.Read(p)
	}
	spins.Add(1)
	var n int
	var err error
	got := false
	until := time.Now().Add(spinFor)
	rerr := s.rc.Read(func(fd uintptr) bool {
		for i := 1; ; i++ {
			n, err = syscall.Read(int(fd), p)
			switch {
			case err == syscall.EINTR:
			case err != syscall.EAGAIN:
				got = true
				return true
			case i%8 == 0 && time.Now().After(until):
				return true // give up: the netpoller waits from here
			}
		}
	})
	spinners.Store(0)
	if !got || rerr != nil {
		return s.Conn.Read(p)
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: s.LocalAddr(), Addr: s.RemoteAddr(), Err: err}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}
