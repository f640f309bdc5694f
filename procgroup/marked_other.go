//go:build !linux

package procgroup

import (
	"os/exec"
	"syscall"
)

// findMarked finds nothing here: only Linux shows another process's
// environment (/proc/<pid>/environ) and descriptors.
func findMarked(...string) []marked { return nil }

// carryMark hands cmd no descriptor here: nothing could find it.
func carryMark(*exec.Cmd, string) func() { return func() {} }

// DropInheritedMarks has nothing to drop here.
func DropInheritedMarks() {}

// SealInheritedMarks has nothing to seal here.
func SealInheritedMarks() {}

// signalAll has no process to signal here.
func signalAll([]marked, syscall.Signal) int { return 0 }
