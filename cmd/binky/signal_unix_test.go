//go:build unix

package main

import "syscall"

// signalPID sends sig to pid, or to the group -pid, as kill(2) does.
func signalPID(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }
