package proxy

import (
	"net"
	"time"
)

// reusable: a socket cannot be peeked at without blocking on Windows, so a
// request that cannot be retried gets a new connection instead of a kept
// one, and a retryable one a kept connection the service sent nothing
// unasked on (that we have read).
func (u *upstream) reusable(check bool, _ time.Duration) bool { return !check && u.br.Buffered() == 0 }

// peerGone cannot peek without blocking on Windows: a client that went
// away is found when its answer is written.
func peerGone(c net.Conn) bool { return false }
