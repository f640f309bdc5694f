package procgroup

import (
	"crypto/sha256"
	"encoding/hex"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// MarkVar is the environment variable that marks every process binky
// starts for one service or one migrate/seed step, with a value naming it.
// Stopping a process group misses what left the group (a setsid, a
// double-forked daemon), which then held the world's port past its down
// and its remove; the mark, inherited by every descendant, does not.
//
// A process can lose its environment, though: `env -i` clears it, and a
// program that writes its title (redis-server, nginx, postgres, perl's
// $0) writes over the memory /proc/<pid>/environ shows. So on Linux a
// marked command is also handed an open descriptor, an empty memfd named
// for the mark, as MarkFD, which children inherit whatever they do to
// their environment or title, and which only closing it sheds.
const MarkVar = "BINKY_MARK"

// MarkFD is the descriptor a marked command finds its mark's memfd on
// (Linux). Only this one is looked at, one readlink a process, so a stop
// costs little beside thousands of open descriptors; and it is out of the
// way of the ones scripts take for themselves (3 to 9, `exec 3>&1`,
// `flock 9`) and the ones shells move theirs to (10 and up, bash's 255).
const MarkFD = 47

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

// Mark marks cmd as mark's: its environment is env with the mark (as
// WithMark) and, on Linux, it is handed the mark's descriptor. The caller
// runs the returned func as soon as cmd has started (or failed to): it
// closes this process's copy of the descriptor, which a child this
// process forks meanwhile for something else holds until its exec. Once
// is enough; again does nothing.
func Mark(cmd *exec.Cmd, env []string, mark string) (started func()) {
	if mark == "" {
		cmd.Env = env // nil: this process's own, as exec.Cmd has it
		return func() {}
	}
	cmd.Env = WithMark(env, mark)
	return carryMark(cmd, mark)
}

// memfdName is the name of mark's descriptor, as /proc/<pid>/fd shows it
// after "/memfd:": the mark itself when it is short and plain (so that
// `ls -l /proc/<pid>/fd` tells whose a process is), else its hash.
func memfdName(mark string) string {
	plain := len(mark) <= 200
	for _, r := range mark {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-", r)) {
			plain = false
			break
		}
	}
	if plain {
		return memfdPrefix + mark
	}
	sum := sha256.Sum256([]byte(mark))
	return memfdPrefix + "#" + hex.EncodeToString(sum[:16])
}

// memfdPrefix starts the name of every mark's descriptor.
const memfdPrefix = "binky:"

// marked is a process found carrying a mark, by pid and start time.
type marked struct {
	pid  int
	tick uint64
}

// KillMarked sends SIGKILL to every process carrying mark and reports how
// many there were.
func KillMarked(mark string) int {
	if mark == "" {
		return 0
	}
	return signalAll(findMarked(mark), syscall.SIGKILL)
}

// CountMarked is how many processes carry one of marks (0 where marks
// cannot be found: not Linux).
func CountMarked(marks ...string) int { return len(findMarked(marks...)) }

// StopMarked stops the processes carrying mark as Stop stops a group:
// SIGTERM, up to grace for them to go, then SIGKILL. It reports whether
// none is left. With none there, it costs one look at the process table.
// While it waits it watches the processes it signalled, and looks at the
// whole table again only once they are gone (for any they started
// meanwhile).
func StopMarked(mark string, grace time.Duration) bool { return StopAllMarked([]string{mark}, grace) }

// StopAllMarked is StopMarked for every process carrying one of marks, in
// one look at the process table.
func StopAllMarked(marks []string, grace time.Duration) bool {
	procs := findMarked(marks...)
	if len(procs) == 0 {
		return true
	}
	goneAfter := func(sig syscall.Signal) func() bool {
		return func() bool {
			for _, p := range procs {
				if Alive(p.pid, p.tick) {
					return false
				}
			}
			if procs = findMarked(marks...); len(procs) == 0 {
				return true
			}
			signalAll(procs, SigCont)
			signalAll(procs, sig)
			return false
		}
	}
	// A suspended process would never see SIGTERM: wake it first.
	signalAll(procs, SigCont)
	signalAll(procs, syscall.SIGTERM)
	if waitUntil(goneAfter(syscall.SIGTERM), grace) {
		return true
	}
	procs = findMarked(marks...)
	signalAll(procs, syscall.SIGKILL)
	return waitUntil(goneAfter(syscall.SIGKILL), time.Second)
}
