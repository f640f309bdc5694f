//go:build windows

package proxy

import (
	"errors"

	"golang.org/x/sys/windows"
)

// connRefused reports whether err says nothing listens on the service's
// port: Winsock's WSAECONNREFUSED, which is not syscall.ECONNREFUSED there.
func connRefused(err error) bool { return errors.Is(err, windows.WSAECONNREFUSED) }
