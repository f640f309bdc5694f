//go:build unix

package procgroup

import "syscall"

// SigStop and SigCont suspend and resume a group (a world under memory
// pressure). They are named here because Windows has no such signals: there
// the same names suspend and resume every process of the group's job object.
const (
	SigStop = syscall.SIGSTOP
	SigCont = syscall.SIGCONT
)
