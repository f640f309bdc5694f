//go:build unix

package world

import "syscall"

// openNonBlock opens without waiting for a writer when the path is a
// named pipe (the check that it is a regular file comes after the open).
const openNonBlock = syscall.O_NONBLOCK
