package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/git-binky/git-binky/world"
)

// Machine reads what admission decides on. The real one reads the OS;
// tests give a fake.
type Machine interface {
	Memory() (available, total uint64, err error)
	DiskFree(path string) (uint64, error)
}

// osMachine reads /proc/meminfo (or the file $BINKY_MEMINFO names, in the
// same format, to rehearse memory pressure) and statfs; memory_<os>.go and
// disk_<os>.go say how other systems are read.
type osMachine struct{ meminfo string }

func newOSMachine() osMachine {
	if p := os.Getenv("BINKY_MEMINFO"); p != "" {
		return osMachine{meminfo: p}
	}
	return osMachine{meminfo: meminfoPath}
}

func (m osMachine) Memory() (uint64, uint64, error) {
	if m.meminfo == "" {
		return systemMemory()
	}
	b, err := os.ReadFile(m.meminfo)
	if err != nil {
		return 0, 0, err
	}
	var avail, total uint64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "MemAvailable:":
			avail = v * 1024
		case "MemTotal:":
			total = v * 1024
		}
	}
	if total == 0 {
		return 0, 0, fmt.Errorf("/proc/meminfo has no MemTotal")
	}
	return avail, total, nil
}

// Clock is time for admission; tests give a fake.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

type realClock struct{}

func (realClock) Now() time.Time                         { return time.Now() }
func (realClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Admission decides when a world may start: first come, first served,
// while fewer than max_parallel worlds run and the machine keeps its RAM and
// disk reserves. Under memory pressure later it suspends the newest world
// and resumes suspended worlds, oldest first, when room returns.
type Admission struct {
	machine  Machine
	clock    Clock
	settings func() world.Settings
	diskPath string
	log      *slog.Logger
	// suspend and resume act on a world's processes (SIGSTOP / SIGCONT).
	suspend, resume func(id string) error
	// suspendable says whether a world may be suspended now: one still in
	// its up has nothing to stop yet (or is checking its health), and
	// counting it suspended would resume it first for nothing. nil: all.
	suspendable func(id string) bool

	mu        sync.Mutex
	queue     []*ticket
	running   []string // admitted world ids, oldest first
	suspended []string // in the order they were suspended
	changed   chan struct{}
}

type ticket struct {
	id, name string
}

// NewAdmission returns admission over machine, reading settings afresh for
// every decision (so `git binky reserve` applies at once).
func NewAdmission(machine Machine, clock Clock, settings func() world.Settings, diskPath string, log *slog.Logger) *Admission {
	return &Admission{machine: machine, clock: clock, settings: settings, diskPath: diskPath, log: log, changed: make(chan struct{})}
}

// Queued is what a waiting world is told.
type Queued struct {
	Position, Length int
	Reason           string
}

func (q Queued) String(name string) string {
	return fmt.Sprintf("queued: %s (position %d of %d) — %s", name, q.Position, q.Length, q.Reason)
}

// Acquire waits until the world id may run, telling onQueued whenever its
// place or the reason changes. A world already admitted returns at once.
// When ctx is done the world leaves the queue and nothing of it remains.
func (a *Admission) Acquire(ctx context.Context, id, name string, onQueued func(Queued)) error {
	a.mu.Lock()
	if a.isRunning(id) {
		a.mu.Unlock()
		return nil
	}
	t := &ticket{id: id, name: name}
	a.queue = append(a.queue, t)
	a.mu.Unlock()
	var last Queued
	for {
		a.mu.Lock()
		pos := a.position(t)
		ok, reason, figures := a.room(len(a.running))
		if pos == 1 && ok && len(a.suspended) == 0 {
			a.queue = a.queue[1:]
			a.running = append(a.running, id)
			n := len(a.running)
			a.signal()
			a.mu.Unlock()
			a.log.Info("admitted", append([]any{"world", name, "running", n}, figures...)...)
			return nil
		}
		if pos > 1 {
			reason = "waiting for the worlds ahead of it"
		} else if ok {
			reason = "waiting for suspended worlds to resume first"
		}
		q := Queued{Position: pos, Length: len(a.queue), Reason: reason}
		changed := a.changed
		a.mu.Unlock()
		if q != last {
			last = q
			a.log.Info("queued", append([]any{"world", name, "position", q.Position, "of", q.Length, "reason", q.Reason}, figures...)...)
			if onQueued != nil {
				onQueued(q)
			}
		}
		select {
		case <-changed:
		case <-a.clock.After(time.Second): // RAM and disk change without telling us
		case <-ctx.Done():
			a.mu.Lock()
			a.remove(t)
			a.signal()
			a.mu.Unlock()
			a.log.Info("left the queue", "world", name, "why", ctx.Err())
			return ctx.Err()
		}
	}
}

// Admit marks a world as running without queueing (a world adopted from a
// previous daemon is already running).
func (a *Admission) Admit(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.isRunning(id) {
		a.running = append(a.running, id)
	}
}

// Release frees the world's slot (down, remove, a failed start).
func (a *Admission) Release(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.running = without(a.running, id)
	a.suspended = without(a.suspended, id)
	a.signal()
}

// Suspended reports whether the world is suspended for memory.
func (a *Admission) Suspended(id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return contains(a.suspended, id)
}

// Waiting is one world in the queue, at Position of Length.
type Waiting struct {
	ID               string
	Position, Length int
}

// Queue lists the worlds waiting, first first.
func (a *Admission) Queue() []Waiting {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]Waiting, len(a.queue))
	for i, t := range a.queue {
		out[i] = Waiting{ID: t.id, Position: i + 1, Length: len(a.queue)}
	}
	return out
}

// QueueLength is how many worlds wait.
func (a *Admission) QueueLength() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.queue)
}

// Watch checks memory pressure every interval until ctx is done.
func (a *Admission) Watch(ctx context.Context, interval time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.clock.After(interval):
			a.Rebalance()
		}
	}
}

// Rebalance suspends the newest running world while free RAM is under the
// reserve (never the last one: a machine with one world has nothing to
// trade), and resumes the world suspended first once free RAM is back above
// the reserve with a margin, so that it does not flap.
func (a *Admission) Rebalance() {
	avail, total, err := a.machine.Memory()
	if err != nil {
		return
	}
	s := a.settings()
	reserve := uint64(s.Reserve.RAMPercent / 100 * float64(total))
	margin := total / 20
	// Which worlds may be suspended is asked outside a.mu: the daemon's
	// answer takes its own locks.
	var candidates []string
	if avail < reserve {
		a.mu.Lock()
		for i := len(a.running) - 1; i >= 0; i-- {
			if !contains(a.suspended, a.running[i]) {
				candidates = append(candidates, a.running[i])
			}
		}
		a.mu.Unlock()
		if a.suspendable != nil {
			candidates = slices.DeleteFunc(candidates, func(id string) bool { return !a.suspendable(id) })
		}
	}
	a.mu.Lock()
	var act func(string) error
	var id, verb string
	switch {
	case avail < reserve:
		for _, c := range candidates {
			if len(a.running)-len(a.suspended) <= 1 {
				break
			}
			if a.isRunning(c) && !contains(a.suspended, c) {
				id, verb, act = c, "suspended", a.suspend
				a.suspended = append(a.suspended, id)
				break
			}
		}
	case avail > reserve+margin && len(a.suspended) > 0:
		id, verb, act = a.suspended[0], "resumed", a.resume
		a.suspended = a.suspended[1:]
		a.signal()
	}
	a.mu.Unlock()
	if act == nil {
		return
	}
	a.log.Warn("world "+verb+" for memory", "world", id, "ram_free", gib(avail), "ram_reserve", gib(reserve), "ram_total", gib(total))
	if err := act(id); err != nil {
		a.log.Error(verb+" failed", "world", id, "err", err)
	}
}

// room says whether one more world fits now, why not, and the figures.
func (a *Admission) room(running int) (bool, string, []any) {
	s := a.settings()
	if running >= s.MaxParallel {
		return false, fmt.Sprintf("waiting for a slot (%d running, max_parallel %d)", running, s.MaxParallel), []any{"max_parallel", s.MaxParallel}
	}
	avail, total, err := a.machine.Memory()
	if err == nil {
		reserve := uint64(s.Reserve.RAMPercent / 100 * float64(total))
		figures := []any{"ram_free", gib(avail), "ram_reserve", gib(reserve)}
		if avail <= reserve {
			return false, fmt.Sprintf("waiting for RAM (%s free, %s kept in reserve)", gib(avail), gib(reserve)), figures
		}
	}
	if free, err := a.machine.DiskFree(a.diskPath); err == nil {
		reserve := uint64(s.Reserve.DiskGB * (1 << 30))
		if free <= reserve {
			return false, fmt.Sprintf("waiting for disk (%s free, %s kept in reserve)", gib(free), gib(reserve)), []any{"disk_free", gib(free), "disk_reserve", gib(reserve)}
		}
	}
	return true, "", nil
}

func (a *Admission) position(t *ticket) int {
	for i, q := range a.queue {
		if q == t {
			return i + 1
		}
	}
	return 0
}

func (a *Admission) remove(t *ticket) {
	for i, q := range a.queue {
		if q == t {
			a.queue = append(a.queue[:i], a.queue[i+1:]...)
			return
		}
	}
}

func (a *Admission) isRunning(id string) bool { return contains(a.running, id) }

// signal wakes every waiter; callers hold mu.
func (a *Admission) signal() {
	close(a.changed)
	a.changed = make(chan struct{})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func without(list []string, s string) []string {
	out := list[:0]
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
