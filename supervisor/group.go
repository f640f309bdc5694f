package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/git-binky/git-binky/logfile"
	"github.com/git-binky/git-binky/procgroup"
)

// Group supervises the services of one unit (a world): they start and stop
// together and may depend on each other.
type Group struct {
	// lay guards procs and order: Add extends them while services run.
	lay   sync.RWMutex
	procs map[string]*proc
	order []string // dependencies before dependents

	// ctx bounds the supervision loops; it outlives any one Start call, so
	// services belong to the group, not to the request that started them.
	ctx    context.Context
	cancel context.CancelFunc

	// pubMu serialises state changes and their delivery, so onChange and
	// subscribers see each service's changes in the order they happened.
	pubMu sync.Mutex

	mu       sync.Mutex
	subs     map[int]chan Event
	nextSub  int
	onChange func(Status)
	rotating bool
}

// NewGroup checks specs (unique names, known dependencies, no cycle) and
// returns a group that has started nothing yet. onChange, if set, is called
// on every state change, one at a time and in order; it must not block long
// nor call back into the group.
func NewGroup(specs []Spec, onChange func(Status)) (*Group, error) {
	g := &Group{procs: map[string]*proc{}, subs: map[int]chan Event{}, onChange: onChange}
	procs, order, err := g.extend(nil, specs)
	if err != nil {
		return nil, err
	}
	g.procs, g.order = procs, order
	g.ctx, g.cancel = context.WithCancel(context.Background())
	return g, nil
}

// Add extends the group with services that its next Start starts (an up
// widening a running world to another group): the services it has run on
// untouched. The same checks as NewGroup's apply to the whole.
func (g *Group) Add(specs []Spec) error {
	g.lay.Lock()
	defer g.lay.Unlock()
	procs, order, err := g.extend(g.procs, specs)
	if err != nil {
		return err
	}
	g.procs, g.order = procs, order
	return nil
}

// Remove takes services out of the group (those an up added that did not
// start). It refuses one that runs, or that a service staying depends on.
func (g *Group) Remove(names []string) error {
	g.lay.Lock()
	defer g.lay.Unlock()
	staying := map[string]*proc{}
	for n, p := range g.procs {
		if !slices.Contains(names, n) {
			staying[n] = p
		} else if p.isRunning() {
			return fmt.Errorf("service %s runs: stop it before it leaves its group", n)
		}
	}
	procs, order, err := g.extend(staying, nil)
	if err != nil {
		return err
	}
	g.procs, g.order = procs, order
	return nil
}

// extend returns have (not modified) with specs' services added, and
// their start order, after checking names, dependencies and cycles.
func (g *Group) extend(have map[string]*proc, specs []Spec) (map[string]*proc, []string, error) {
	procs := make(map[string]*proc, len(have)+len(specs))
	for n, p := range have {
		procs[n] = p
	}
	for _, s := range specs {
		if s.Name == "" {
			return nil, nil, errors.New("a service needs a name")
		}
		if _, dup := procs[s.Name]; dup {
			return nil, nil, fmt.Errorf("service %q is defined twice", s.Name)
		}
		s = s.withDefaults()
		procs[s.Name] = &proc{g: g, spec: s, ready: make(chan struct{}), failed: make(chan error, 1), fellOver: make(chan struct{}), wake: make(chan struct{}, 1),
			st: Status{Name: s.Name, State: Stopped}}
	}
	for _, p := range procs {
		for _, d := range p.spec.DependsOn {
			if _, ok := procs[d]; !ok {
				return nil, nil, fmt.Errorf("service %q depends on %q, which is not in the group", p.spec.Name, d)
			}
		}
	}
	order, err := topoOrder(procs)
	if err != nil {
		return nil, nil, err
	}
	return procs, order, nil
}

// get is the service called name.
func (g *Group) get(name string) (*proc, bool) {
	g.lay.RLock()
	defer g.lay.RUnlock()
	p, ok := g.procs[name]
	return p, ok
}

// ordered is every service, dependencies before dependents.
func (g *Group) ordered() []*proc {
	g.lay.RLock()
	defer g.lay.RUnlock()
	out := make([]*proc, 0, len(g.order))
	for _, n := range g.order {
		out = append(out, g.procs[n])
	}
	return out
}

// names is every service's name, in start order.
func (g *Group) names() []string {
	g.lay.RLock()
	defer g.lay.RUnlock()
	return append([]string(nil), g.order...)
}

// deps is p's dependencies.
func (g *Group) deps(p *proc) []*proc {
	g.lay.RLock()
	defer g.lay.RUnlock()
	var out []*proc
	for _, d := range p.spec.DependsOn {
		out = append(out, g.procs[d])
	}
	return out
}

// Spec returns the spec a service runs with.
func (g *Group) Spec(name string) (Spec, bool) {
	p, ok := g.get(name)
	if !ok {
		return Spec{}, false
	}
	return p.spec, true
}

func topoOrder(procs map[string]*proc) ([]string, error) {
	names := make([]string, 0, len(procs))
	for n := range procs {
		names = append(names, n)
	}
	sort.Strings(names)
	state := map[string]int{} // 0 new, 1 visiting, 2 done
	var out []string
	var visit func(n string, path []string) error
	visit = func(n string, path []string) error {
		switch state[n] {
		case 1:
			return fmt.Errorf("dependency cycle: %s -> %s", strings.Join(path, " -> "), n)
		case 2:
			return nil
		}
		state[n] = 1
		deps := append([]string(nil), procs[n].spec.DependsOn...)
		sort.Strings(deps)
		for _, d := range deps {
			if err := visit(d, append(path, n)); err != nil {
				return err
			}
		}
		state[n] = 2
		out = append(out, n)
		return nil
	}
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Start starts every service not yet up (running, or a oneshot done),
// each once its dependencies are ready, and returns when all are ready. If
// any fails to start or to become healthy within its start period, or ctx
// is cancelled, Start stops what it started, so nothing is left half up,
// and returns why. What it found up (a running world's services, when an
// up adds another group's) is left running.
func (g *Group) Start(ctx context.Context) error {
	g.startRotation()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	procs := g.ordered()
	errs := make(chan error, len(procs))
	var started []*proc
	for _, p := range procs {
		if p.up() {
			errs <- nil
			continue
		}
		p.fresh()
		started = append(started, p)
		deps := g.deps(p)
		go func() { errs <- p.start(ctx, deps, nil) }()
	}
	var first error
	for range procs {
		err := <-errs
		// The failure itself, not a dependent's word of it (which comes
		// as soon, and would cut the failure's own report off).
		dep := errors.As(err, new(depFailed))
		if err != nil && (first == nil || errors.As(first, new(depFailed)) && !dep) {
			first = err
		}
		if err != nil && !dep {
			cancel()
		}
	}
	if first != nil {
		for i := len(started) - 1; i >= 0; i-- { // dependents first, as Stop
			_ = started[i].stop(context.Background())
		}
		return first
	}
	return nil
}

// fresh readies a service that is not running for a start of its own:
// the readiness of its last run (a service stopped in a group that is
// started again) must not answer for this one.
func (p *proc) fresh() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.freshLocked()
}

// freshLocked is fresh with p.mu held.
func (p *proc) freshLocked() {
	if !p.running {
		p.ready, p.readyOnce, p.isReady = make(chan struct{}), sync.Once{}, false
	}
}

func (p *proc) isRunning() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// up reports whether the service needs no start: its process runs, or it
// is a oneshot that finished (adopted as done).
func (p *proc) up() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running || p.spec.Oneshot && p.isReady && p.st.State == Done
}

// Adopt takes over a service that is already running (started by an earlier
// supervisor), identified by st.PID and st.StartTick. It returns false, and
// adopts nothing, when that process is gone or the pid now belongs to
// another process.
func (g *Group) Adopt(name string, st Status) bool {
	p, ok := g.get(name)
	if !ok || !procgroup.Alive(st.PID, st.StartTick) {
		return false
	}
	info, err := procgroup.ReadProc(st.PID)
	if err != nil {
		return false
	}
	g.startRotation()
	// Its old message was the old supervisor's word; this one's probes
	// give their own (a kept "no health check" stayed beside a probe that
	// ran).
	st.Name, st.PGID, st.Message = name, info.PGID, ""
	switch st.State {
	case "", Stopped, Crashed:
		st.State = Starting
	case Suspended:
		// Stopped for memory by a supervisor that is gone: none here
		// stopped it, so none would ever resume it (an attack left a
		// world's processes stopped for good across a daemon restart).
		// Its new daemon suspends it again if memory is still short.
		if err := procgroup.Signal(st.PGID, procgroup.SigCont); err != nil {
			return false
		}
		st.State = Starting
	}
	p.mu.Lock()
	if p.running {
		p.mu.Unlock()
		return true
	}
	p.running = true
	p.st = st
	p.pgid = st.PGID
	done := make(chan struct{})
	p.done = done
	p.mu.Unlock()
	p.markReady()
	go p.supervise(g.ctx, &st, done)
	return true
}

// AdoptDone takes over a oneshot an earlier supervisor ran to its end
// (st says done): ready, not running, as this group's own would be.
func (g *Group) AdoptDone(name string, st Status) bool {
	p, ok := g.get(name)
	if !ok || !p.spec.Oneshot || st.State != Done {
		return false
	}
	st.Name, st.PID, st.PGID = name, 0, 0
	p.mu.Lock()
	if p.running {
		p.mu.Unlock()
		return false
	}
	p.st = st
	p.mu.Unlock()
	p.markReady()
	return true
}

// Stop stops every service, dependents before their dependencies, each by
// SIGTERM to its process group and SIGKILL after its grace period.
func (g *Group) Stop(ctx context.Context) error {
	var errs []error
	procs := g.ordered()
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].stop(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close stops supervising without touching the processes: they keep
// running for the next supervisor to adopt.
func (g *Group) Close() { g.cancel() }

// Statuses returns every service's status in start order.
func (g *Group) Statuses() []Status {
	procs := g.ordered()
	out := make([]Status, 0, len(procs))
	for _, p := range procs {
		out = append(out, p.status())
	}
	return out
}

// Status returns one service's status.
func (g *Group) Status(name string) (Status, bool) {
	p, ok := g.get(name)
	if !ok {
		return Status{}, false
	}
	return p.status(), true
}

// Signal sends sig to every running service's process group (SIGSTOP and
// SIGCONT suspend and resume a world) and marks them suspended or back to
// their previous state.
func (g *Group) Signal(sig syscall.Signal) error {
	var errs []error
	for _, p := range g.ordered() {
		if err := p.signal(sig); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Subscribe returns a channel of every state change from now on, and a
// function to stop receiving. A subscriber that falls behind loses events,
// never blocks the supervisor; Statuses is always the truth.
func (g *Group) Subscribe() (<-chan Event, func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	id := g.nextSub
	g.nextSub++
	ch := make(chan Event, 64)
	g.subs[id] = ch
	return ch, func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if c, ok := g.subs[id]; ok {
			delete(g.subs, id)
			close(c)
		}
	}
}

// publish delivers a state change; callers hold pubMu.
func (g *Group) publish(st Status) {
	if g.onChange != nil {
		g.onChange(st)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, ch := range g.subs {
		select {
		case ch <- Event{Status: st}:
		default:
		}
	}
}

// startRotation starts the one log-rotation loop of the group. It checks
// every second (a stat per log), so a log outgrows its bound by at most
// about a second of output: a service printing in a loop wrote 8 GB in the
// 10 s the loop once waited. A rotation stops with the group.
func (g *Group) startRotation() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.rotating {
		return
	}
	g.rotating = true
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-g.ctx.Done():
				return
			case <-t.C:
				for _, p := range g.ordered() {
					_ = logfile.Rotate(g.ctx, p.spec.LogPath, p.spec.MaxLogBytes)
				}
			}
		}
	}()
}

// proc is one supervised service.
type proc struct {
	g    *Group
	spec Spec

	ready     chan struct{} // closed the first time the service is ready
	readyOnce sync.Once
	failed    chan error // a start failure before the service was ready
	// fellOver is closed (and made anew, mu held) each time a start of
	// the service fails: what waits on it as a dependency stops waiting,
	// since ready will not come of that start.
	fellOver chan struct{}

	mu       sync.Mutex
	st       Status
	pgid     int
	running  bool // a supervise loop exists
	stopping bool
	isReady  bool
	lastRes  string
	paused   State         // the state before SIGSTOP
	done     chan struct{} // closed when the current supervise loop ends
	wake     chan struct{} // a stop's word to a loop waiting to restart
}

func (p *proc) status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.st
}

// set updates the status under the lock and publishes the result.
func (p *proc) set(fn func(*Status)) {
	p.g.pubMu.Lock()
	defer p.g.pubMu.Unlock()
	p.mu.Lock()
	fn(&p.st)
	st := p.st
	p.mu.Unlock()
	p.g.publish(st)
}

func (p *proc) markReady() {
	p.mu.Lock()
	p.isReady = true
	p.mu.Unlock()
	p.readyOnce.Do(func() { close(p.ready) })
}

// start starts the service once deps are ready. fells, when given, are
// the channels each dependency's failure closes, read when the caller
// judged its state; else they are read here.
func (p *proc) start(ctx context.Context, deps []*proc, fells []chan struct{}) error {
	for i, d := range deps {
		d.mu.Lock()
		ready, fell := d.ready, d.fellOver
		d.mu.Unlock()
		if fells != nil {
			fell = fells[i]
		}
		select {
		case <-ready:
		case <-fell:
			return depFailed{fmt.Errorf("service %s depends on %s, which failed to start: %s", p.spec.Name, d.spec.Name, d.status().Message)}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.mu.Lock()
	if p.running {
		p.mu.Unlock()
		return p.waitReady(ctx)
	}
	p.running, p.stopping = true, false
	done := make(chan struct{})
	p.done = done
	select { // a failure left over from an earlier run is not this one's
	case <-p.failed:
	default:
	}
	p.mu.Unlock()
	go p.supervise(p.g.ctx, nil, done)
	return p.waitReady(ctx)
}

func (p *proc) waitReady(ctx context.Context) error {
	t := time.NewTimer(p.spec.Health.StartPeriod)
	defer t.Stop()
	timeout := t.C
	if p.spec.Oneshot {
		timeout = nil // a migration takes what it takes
	}
	select {
	case <-p.ready:
		return nil
	case err := <-p.failed:
		return err
	case <-timeout:
		p.mu.Lock()
		last := p.lastRes
		p.mu.Unlock()
		if last == "" {
			last = "no probe finished"
		}
		return fmt.Errorf("service %s did not become healthy within %s; last probe: %s (if it only starts slowly, raise its health start_period)", p.spec.Name, p.spec.Health.StartPeriod, last)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// supervise runs the service until it is stopped or, by its policy, stays
// down. adopted is the status of an already running process to take over.
func (p *proc) supervise(ctx context.Context, adopted *Status, done chan struct{}) {
	defer close(done)
	// However it ends, no loop runs now (unless a newer one does): a stop
	// whose caller went away before this one ended left running set, and
	// the next start took the last run's readiness for its own.
	defer func() {
		p.mu.Lock()
		if p.done == done {
			p.running = false
		}
		p.mu.Unlock()
	}()
	select {
	case <-p.wake: // a word left by a stop of an earlier loop
	default:
	}
	backoff := 100 * time.Millisecond
	var recent []time.Time // restart times, for crash-loop reporting
	for attempt := 0; ; attempt++ {
		var wait func() *int
		if adopted != nil && attempt == 0 {
			wait = p.adoptWait(adopted.PID, adopted.StartTick)
			p.set(func(s *Status) {})
		} else {
			w, err := p.spawn()
			if err != nil {
				p.exitFailed(err.Error(), nil)
				return
			}
			if w == nil { // stopped before it could start
				return
			}
			wait = w
		}
		runCtx, cancelRun := context.WithCancel(ctx)
		healthDone := make(chan struct{})
		if p.spec.Oneshot {
			close(healthDone) // ready when it exits 0, not while it runs
		} else {
			go func() { defer close(healthDone); p.healthLoop(runCtx) }()
		}
		started := time.Now()
		code := wait()
		cancelRun()
		<-healthDone
		// The leader is gone; make sure nothing it left in its group (a
		// server a shell script backgrounded) still holds the port.
		p.mu.Lock()
		pgid, stopping, wasReady := p.pgid, p.stopping, p.isReady
		p.mu.Unlock()
		procgroup.Stop(pgid, p.spec.StopTimeout)
		if !stopping {
			// (A stop stops the marked itself: one look at the processes.)
			procgroup.StopMarked(p.spec.Mark, p.spec.StopTimeout)
		}
		if stopping || ctx.Err() != nil {
			// Our own SIGTERM's exit code says nothing about the service.
			p.set(func(s *Status) { s.State, s.ExitCode, s.Message, s.PID = Stopped, nil, "", 0 })
			return
		}
		if p.spec.Oneshot {
			p.finishOneshot(code, adopted != nil && attempt == 0)
			return
		}
		desc := describeExit(code)
		if !wasReady {
			// A first start that fails fails its up (Start waits on it);
			// a restart that does is retried as any crash is: what it
			// waited for (a server down a moment) may come back.
			if attempt == 0 && adopted == nil {
				when := "before it became healthy"
				if p.spec.Health.none() {
					when = fmt.Sprintf("within %s of its start (it has no health check: one that dies that soon fails its up)", p.spec.Settle)
				}
				p.exitFailed(fmt.Sprintf("service %s %s %s%s", p.spec.Name, desc, when, p.logTail()), code)
				return
			}
			desc += " before it became healthy"
		}
		restart := p.spec.Restart == RestartAlways || (p.spec.Restart == RestartOnFailure && (code == nil || *code != 0))
		if !restart {
			state := Crashed
			if code != nil && *code == 0 {
				state = Stopped
			}
			p.set(func(s *Status) { s.State, s.ExitCode, s.Message, s.PID = state, code, desc, 0 })
			p.mu.Lock()
			p.running = false
			p.mu.Unlock()
			return
		}
		if time.Since(started) > 30*time.Second {
			backoff = 100 * time.Millisecond // it ran well; this is not a loop
		}
		now := time.Now()
		recent = append(recent, now)
		for len(recent) > 0 && now.Sub(recent[0]) > time.Minute {
			recent = recent[1:]
		}
		msg := fmt.Sprintf("%s; restarting in %s", desc, backoff.Round(time.Millisecond))
		if len(recent) >= 5 {
			msg = fmt.Sprintf("crash loop: %d restarts in the last minute; %s", len(recent), msg)
		}
		p.set(func(s *Status) { s.State, s.ExitCode, s.Message, s.PID = Crashed, code, msg, 0; s.Restarts++ })
		if !p.backOff(ctx, backoff) {
			p.set(func(s *Status) { s.State, s.ExitCode, s.Message, s.PID = Stopped, nil, "", 0 })
			return
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// finishOneshot records how a oneshot ended: done, which lets its
// dependents start, or failed, which fails the Start waiting for it. An
// adopted one's exit code is unknown (it is not this daemon's child): its
// exit is taken for success, and says so.
func (p *proc) finishOneshot(code *int, adopted bool) {
	switch {
	case code != nil && *code == 0:
		p.set(func(s *Status) { s.State, s.ExitCode, s.Message, s.PID = Done, code, "", 0 })
	case code == nil && adopted:
		p.set(func(s *Status) {
			s.State, s.ExitCode, s.PID = Done, nil, 0
			s.Message = "exited while an earlier daemon ran it (its exit code is unknown)"
		})
	default:
		p.exitFailed(fmt.Sprintf("service %s %s: it runs once (oneshot), and what depends on it starts only once it exits 0%s", p.spec.Name, describeExit(code), p.logTail()), code)
		return
	}
	p.mu.Lock()
	p.running = false
	p.mu.Unlock()
	p.markReady()
}

// backOff waits d before a restart and reports whether to restart: not
// when the group ends or the service is stopped meanwhile (a stop that
// waited for the backoff to end timed out, and a later start ran beside
// the loop that then woke and started the service again).
func (p *proc) backOff(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return false
	case <-p.wake:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.stopping
}

func describeExit(code *int) string {
	switch {
	case code == nil:
		return "exited"
	case *code > 128:
		return fmt.Sprintf("was killed by signal %d (exit code %d)", *code-128, *code)
	}
	return fmt.Sprintf("exited with code %d", *code)
}

// depFailed is a start that ended because a dependency's failed.
type depFailed struct{ error }

func (e depFailed) Unwrap() error { return e.error }

// exitFailed records a service that could not start or died before it was
// ready, and reports it to the Start waiting for it.
func (p *proc) exitFailed(msg string, code *int) {
	p.mu.Lock()
	p.running = false
	p.mu.Unlock()
	p.set(func(s *Status) { s.State, s.ExitCode, s.Message, s.PID = Crashed, code, msg, 0 })
	p.mu.Lock()
	close(p.fellOver) // after the message its dependents quote
	p.fellOver = make(chan struct{})
	p.mu.Unlock()
	select {
	case p.failed <- errors.New(msg):
	default:
	}
}

// spawn starts the process in a new process group, its output appended to
// the log file. It returns nil, nil when the service is being stopped.
func (p *proc) spawn() (func() *int, error) {
	s := p.spec
	// The working folder first: git deletes a removed worktree's files
	// before its admin folder, where the log is, and a log made in
	// between left git unable to delete that folder ("Directory not
	// empty").
	if s.Dir != "" {
		if fi, err := os.Stat(s.Dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("service %s: working folder %s does not exist (check its cwd)", s.Name, s.Dir)
		}
	}
	if s.PortsFree != nil {
		if err := s.PortsFree(); err != nil {
			return nil, fmt.Errorf("service %s: %w", s.Name, err)
		}
	}
	logf, err := logfile.Open(s.LogPath)
	if err != nil {
		return nil, fmt.Errorf("service %s: open log: %w", s.Name, err)
	}
	defer logf.Close() // the child has its own descriptor
	cmd := procgroup.Command(context.Background(), s.Cmd)
	cmd.Dir = s.Dir
	marked := procgroup.Mark(cmd, s.Env, s.Mark)
	defer marked() // (once more does nothing)
	cmd.Stdout, cmd.Stderr = logf, logf
	shown := s.Shown
	if shown == "" {
		shown = s.Cmd
	}
	fmt.Fprintf(logf, "=== binky %s: starting %s: %s\n", time.Now().Format(time.RFC3339), s.Name, shown)

	p.g.pubMu.Lock()
	defer p.g.pubMu.Unlock()
	p.mu.Lock()
	if p.stopping {
		p.running = false
		p.mu.Unlock()
		return nil, nil
	}
	err = procgroup.Start(cmd)
	marked() // the daemon's copy of the mark goes at once
	if err != nil {
		p.mu.Unlock()
		return nil, fmt.Errorf("service %s: start %q: %w", s.Name, shown, err)
	}
	pid := cmd.Process.Pid
	p.pgid = pid
	p.isReady = false
	info, _ := procgroup.ReadProc(pid)
	p.st.PID, p.st.PGID, p.st.StartTick = pid, pid, info.StartTick
	p.st.State, p.st.Started, p.st.Message, p.st.ExitCode = Starting, time.Now().UTC(), "", nil
	if s.Oneshot {
		p.st.Message = "running once: what depends on it waits for it to exit 0"
	}
	st := p.st
	p.mu.Unlock()
	p.g.publish(st)
	return func() *int {
		err := cmd.Wait()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			} else {
				code = ee.ExitCode()
			}
		} else if err != nil {
			code = -1
		}
		return &code
	}, nil
}

// adoptWait returns a function that blocks until the adopted process exits.
// It is not our child, so its exit code is unknown.
func (p *proc) adoptWait(pid int, tick uint64) func() *int {
	return func() *int {
		waitExit(pid, tick)
		return nil
	}
}

// healthLoop probes the service for one run: quickly until it is first
// healthy, then every Interval, marking it unhealthy after Retries failures.
func (p *proc) healthLoop(ctx context.Context) {
	h := p.spec.Health
	// Healthy is published before readiness is signalled, so whoever waits
	// for ready (Start) has seen the event when it returns.
	if h.none() {
		p.set(func(s *Status) { s.State, s.Message = Running, "no health check" })
		if p.spec.Settle > 0 && !sleepCtx(ctx, p.spec.Settle) {
			return // it exited first: not ready, which fails its first start
		}
		p.markReady()
		return
	}
	fails := 0
	// While starting, probe soon and then less often (5ms doubling to 50ms):
	// the first probes decide how long every dependent waits.
	startWait := 5 * time.Millisecond
	for {
		ok, res := probe(ctx, &p.spec) // credentials hidden there
		if ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		p.lastRes = res
		ready, state, paused := p.isReady, p.st.State, p.paused != ""
		p.mu.Unlock()
		if paused {
			ok = true // a suspended service cannot answer; that is not a failure
		}
		switch {
		case ok:
			fails = 0
			if state != Healthy && !paused {
				p.set(func(s *Status) { s.State, s.Message = Healthy, "" })
			}
			if !ready {
				p.markReady()
			}
		default:
			fails++
			if ready && fails >= h.Retries && state == Healthy {
				p.set(func(s *Status) { s.State, s.Message = Unhealthy, res })
			}
		}
		interval := h.Interval
		if !ready {
			interval = min(startWait, h.Interval)
			startWait = min(startWait*2, 50*time.Millisecond)
		}
		if !sleepCtx(ctx, interval) {
			return
		}
	}
}

func (p *proc) stop(ctx context.Context) error {
	p.mu.Lock()
	p.stopping = true
	running, pgid, done := p.running, p.pgid, p.done
	p.mu.Unlock()
	if !running || done == nil {
		return nil
	}
	// A loop waiting out a restart's backoff (up to 30 s) ends now.
	select {
	case p.wake <- struct{}{}:
	default:
	}
	var err error
	if pgid > 0 && !procgroup.Stop(pgid, p.spec.StopTimeout) {
		err = fmt.Errorf("service %s: process group %d survived SIGKILL", p.spec.Name, pgid)
	}
	if !procgroup.StopMarked(p.spec.Mark, p.spec.StopTimeout) {
		err = errors.Join(err, fmt.Errorf("service %s: a process it started outside its group survived SIGKILL", p.spec.Name))
	}
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(p.spec.StopTimeout + 5*time.Second):
		err = errors.Join(err, fmt.Errorf("service %s: supervisor did not finish stopping", p.spec.Name))
	}
	p.mu.Lock()
	p.running = false
	p.mu.Unlock()
	return err
}

func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	pgid, running := p.pgid, p.running
	p.mu.Unlock()
	if !running || pgid <= 0 {
		return nil
	}
	if err := procgroup.Signal(pgid, sig); err != nil {
		return fmt.Errorf("service %s: %w", p.spec.Name, err)
	}
	switch sig {
	case procgroup.SigStop:
		p.set(func(s *Status) {
			if s.State != Suspended {
				p.paused = s.State
				s.State = Suspended
			}
		})
	case procgroup.SigCont:
		p.set(func(s *Status) {
			if s.State == Suspended {
				s.State = p.paused
			}
			p.paused = ""
		})
	}
	return nil
}

// logTail returns the last lines of the service's log, for errors that
// should say what the process printed before it died.
func (p *proc) logTail() string {
	// Only this run's output: what follows the last start marker, not the
	// lines an earlier run left above it.
	var lines []string
	for _, l := range logfile.Tail(p.spec.LogPath, 20) {
		if strings.HasPrefix(l, "=== binky ") {
			lines = lines[:0]
			continue
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return ""
	}
	if len(lines) > 5 {
		// The last five lines, and the error's own line when a stack
		// trace pushed it above them (Node's, Java's): "at ..." frames
		// and a version line say least of why it died.
		tail := lines[len(lines)-5:]
		for i := len(lines) - 6; i >= 0; i-- {
			if l := strings.TrimSpace(lines[i]); errorLine.MatchString(l) && !strings.HasPrefix(l, "at ") {
				tail = append([]string{lines[i], "..."}, tail...)
				break
			}
		}
		lines = tail
	}
	return "; last output:\n    " + p.spec.hide(strings.Join(lines, "\n    "))
}

// errorLine is a line of output that names an error.
var errorLine = regexp.MustCompile(`(?i)\b(\w*error|\w*exception|panic|fatal|traceback)\b`)
