//go:build unix

package proxy

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

// tcpPair is a connected loopback pair: the client side wrapped to spin.
func tcpPair(t *testing.T, clients *atomic.Int32) (spin net.Conn, peer net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	w := spinWrap(c, clients)
	if _, ok := w.(*spinConn); !ok {
		t.Fatalf("a TCP connection was not wrapped: %T", w)
	}
	return w, s
}

func TestSpinReadGetsWhatArrivesSoonOrLateThenEOF(t *testing.T) {
	var clients atomic.Int32
	c, peer := tcpPair(t, &clients)
	for _, delay := range []time.Duration{0, 20 * time.Microsecond, 5 * time.Millisecond} {
		go func() { time.Sleep(delay); peer.Write([]byte("hello")) }()
		buf := make([]byte, 16)
		n, err := c.Read(buf)
		if err != nil || string(buf[:n]) != "hello" {
			t.Fatalf("after %s: read %q, %v", delay, buf[:n], err)
		}
	}
	peer.Close()
	if _, err := c.Read(make([]byte, 16)); err != io.EOF {
		t.Fatalf("read after the peer closed: %v, want io.EOF", err)
	}
	if spinners.Load() != 0 {
		t.Fatal("a read left the spinner slot taken")
	}
}

func TestSpinReadKeepsTheDeadline(t *testing.T) {
	var clients atomic.Int32
	c, _ := tcpPair(t, &clients)
	c.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	start := time.Now()
	_, err := c.Read(make([]byte, 16))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past its deadline: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the deadline took %s", d)
	}
}

func TestOnlyAProxyWithFewClientsSpins(t *testing.T) {
	var clients atomic.Int32
	c, peer := tcpPair(t, &clients)
	read := func() {
		t.Helper()
		go peer.Write([]byte("x"))
		buf := make([]byte, 16)
		if n, err := c.Read(buf); err != nil || string(buf[:n]) != "x" {
			t.Fatalf("read %q, %v", buf[:n], err)
		}
	}
	before := spins.Load()
	clients.Store(1) // one client: spin
	read()
	if spins.Load() != before+1 {
		t.Fatal("a read with one client did not spin")
	}
	clients.Store(spinClients + 1) // more: wait in the netpoller at once
	read()
	if spins.Load() != before+1 {
		t.Fatal("a read spun with more clients than spinClients")
	}
}
