package procgroup

import (
	"syscall"
	"time"
)

// ProcInfo is what the OS tells about a process (proc_<os>.go reads it).
type ProcInfo struct {
	State     byte   // R, S, D, Z, T, ...
	PGID      int    // process group
	PPID      int    // parent (Linux only; 0 elsewhere)
	StartTick uint64 // start time (Linux: clock ticks since boot; macOS: µs since the epoch; Windows: 100 ns since 1601), only compared
}

// Alive reports whether pid is a live (non-zombie) process started at
// startTick. A zero startTick matches any start time.
func Alive(pid int, startTick uint64) bool {
	if pid <= 0 {
		return false
	}
	info, err := ReadProc(pid)
	if err != nil || info.State == 'Z' || info.State == 'X' {
		return false
	}
	return startTick == 0 || info.StartTick == startTick
}

// Stop sends SIGTERM to group pgid, waits up to grace for every process
// in it to go, then sends SIGKILL and waits a little more. It reports whether
// the group is gone.
func Stop(pgid int, grace time.Duration) bool {
	if !GroupAlive(pgid) {
		return true
	}
	// A suspended group would never see SIGTERM: wake it first.
	_ = Signal(pgid, SigCont)
	_ = Signal(pgid, syscall.SIGTERM)
	if waitGroupGone(pgid, grace) {
		return true
	}
	_ = Signal(pgid, syscall.SIGKILL)
	return waitGroupGone(pgid, 3*time.Second)
}

func waitGroupGone(pgid int, d time.Duration) bool {
	return waitUntil(func() bool { return !GroupAlive(pgid) }, d)
}

// waitUntil polls done, more slowly as it waits, for up to d, and reports
// whether it came true.
func waitUntil(done func() bool, d time.Duration) bool {
	deadline := time.Now().Add(d)
	wait := 5 * time.Millisecond
	for {
		if done() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}
