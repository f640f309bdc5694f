//go:build linux || darwin

package main

import (
	"syscall"
	"unsafe"
)

// stdoutIsTerminal asks the terminal driver, as binky does (golang.org/x/term):
// /dev/null is a character device too, and no person reads it.
func stdoutIsTerminal() bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, 1, ioctlGetTermios, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}
