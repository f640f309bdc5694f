//go:build unix

package daemon

import (
	"net"
	"syscall"
)

// listenSocket listens on the daemon's unix socket, created 0600 from the
// start, not chmod-ed after.
func listenSocket(sock string) (net.Listener, error) {
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", sock)
	syscall.Umask(old)
	return ln, err
}
