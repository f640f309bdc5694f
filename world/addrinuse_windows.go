//go:build windows

package world

import (
	"errors"

	"golang.org/x/sys/windows"
)

// addrInUse reports whether a listen failed because the address is taken:
// Winsock says WSAEADDRINUSE, which is not syscall.EADDRINUSE on Windows.
func addrInUse(err error) bool { return errors.Is(err, windows.WSAEADDRINUSE) }
