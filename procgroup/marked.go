package procgroup

import (
	"strings"
	"syscall"
	"time"
)

// MarkVar is the environment variable that marks every process binky
// starts for one service or one migrate/seed step, with a value naming it.
// Stopping a process group misses what left the group (a setsid, a
// double-forked daemon), which then held the world's port past its down
// and its remove; the mark, inherited by every descendant, does not.
const MarkVar = "BINKY_MARK"

// WithMark is env with its mark set to mark: a mark inherited from the
// caller (a `git binky up` run from inside another world's service) is
// dropped, or stopping that service would stop this one's processes too.
func WithMark(env []string, mark string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, MarkVar+"=") {
			out = append(out, kv)
		}
	}
	if mark == "" {
		return out
	}
	return append(out, MarkVar+"="+mark)
}

// KillMarked sends SIGKILL to every process carrying mark and reports how
// many there were.
func KillMarked(mark string) int { return signalMarked(mark, syscall.SIGKILL) }

// StopMarked stops the processes carrying mark as Stop stops a group:
// SIGTERM, up to grace for them to go, then SIGKILL. It reports whether
// none is left. With none there, it costs one look at the process table.
func StopMarked(mark string, grace time.Duration) bool {
	if mark == "" {
		return true
	}
	if signalMarked(mark, SigCont) == 0 {
		return true
	}
	gone := func() bool { return signalMarked(mark, 0) == 0 }
	signalMarked(mark, syscall.SIGTERM)
	if waitUntil(gone, grace) {
		return true
	}
	signalMarked(mark, syscall.SIGKILL)
	return waitUntil(gone, time.Second)
}
