//go:build !unix

package proxy

import (
	"net"
	"sync/atomic"
)

// spinWrap polls nowhere but on unix (spin_unix.go).
func spinWrap(c net.Conn, _ *atomic.Int32) net.Conn { return c }
