//go:build unix

package daemon

import (
	"os"
	"syscall"
)

// killSelf ends the daemon at once, as kill -9 would: no deferred cleanup,
// no socket removed (the failure points' crash).
func killSelf() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }
