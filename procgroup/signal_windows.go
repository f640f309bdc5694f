//go:build windows

package procgroup

import "syscall"

// SigStop and SigCont suspend and resume a group. Windows has no such
// signals: Signal turns them into NtSuspendProcess / NtResumeProcess on
// every process of the group's job object. The values are Linux's, which no
// Windows signal uses.
const (
	SigStop = syscall.Signal(19)
	SigCont = syscall.Signal(18)
)
