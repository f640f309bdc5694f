// Package daemon is the machine-wide git-binky daemon: it listens on a unix
// socket in $BINKY_HOME, owns every world's supervised services, and keeps
// the world records current. There is one daemon per user and machine; the
// CLI starts it on demand.
package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofrs/flock"

	"github.com/git-binky/git-binky/adapters/managed"
	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/procgroup"
	"github.com/git-binky/git-binky/proxy"
	"github.com/git-binky/git-binky/world"
)

// ErrRunning is returned by Run when another daemon already serves Home.
var ErrRunning = errors.New("a git-binky daemon is already running")

// Daemon serves one BINKY_HOME.
type Daemon struct {
	home    world.Home
	version string
	log     *slog.Logger
	started time.Time
	// env is what services adopted or started without a caller (after a
	// daemon restart) get as their base environment.
	env []string

	mu        sync.Mutex
	worlds    map[string]*worldRun
	removing  map[string]chan struct{} // the removes under way, by world id (removeTurn)
	repoLocks map[string]chan struct{}
	// blanksBuilding are the blank templates being built here, and
	// upsUnderWay the ups that have not ended: a wanted blank is built
	// once none is (blank.go).
	blanksBuilding map[string]bool
	upsUnderWay    int
	// blankTurns are the blank templates an up is cloning now: one at a
	// time (blank.go).
	blankTurns map[string]bool
	// blankWanted are the blank templates to build once the up that found
	// them missing has ended (blank.go).
	blankWanted map[string]func()
	// draining is set, under mu, before Run waits for its requests: work
	// started in the background after that (by a hook's up, which no
	// request counts) is not started, rather than added to a WaitGroup
	// being waited on.
	draining bool

	watch   *watcher
	adopted chan struct{} // closed once services left running are adopted
	// deadMarks are the marks of services adoption found dead, whose
	// leftovers it stops in one look once every world is adopted (only
	// adoptAll's goroutine touches it).
	deadMarks []string

	admission *Admission
	servers   *managed.Servers

	proxy *proxy.Proxy
	// proxyErr and httpsErr say why the proxy or https is not serving;
	// a proxy that could not listen tries again in the background, so
	// listenMu guards both.
	listenMu    sync.Mutex
	proxyErr    error
	httpsErr    error
	downNoted   *string // what proxy.down says, once written: nil before
	routesDirty chan struct{}

	ctx      context.Context // the daemon's lifetime, for background work
	stop     context.CancelFunc
	requests sync.WaitGroup

	// gone is the homeFate that ended the daemon, if one did; homeEvery
	// how often it looks (homeCheckEvery unless a test says), lockGrace
	// how long its lock file may be gone (lockGoneGrace unless a test says).
	gone      atomic.Int32
	homeEvery time.Duration
	lockGrace time.Duration

	// repoMissing is when each watched repository was first seen missing
	// (under mu); its worlds are torn down only once it has been missing
	// for repoGoneAfter (repoGoneGrace unless a test says).
	repoMissing   map[string]*missingRepo
	repoGoneAfter time.Duration

	// unchecked is when the watcher first saw each new worktree with no
	// files checked out (by admin folder, under mu): git may still be
	// checking them out. It is taken for --no-checkout after
	// noCheckoutAfter (noCheckoutWait unless a test says).
	unchecked       map[string]*unchecked
	noCheckoutAfter time.Duration
	recheckEvery    time.Duration

	// awaitingHook is when the watcher first saw each new worktree (by
	// admin folder, under mu) whose add's hook may still be on its way:
	// the hook brings the environment of the shell that ran `git worktree
	// add`, which the world must start with, so for hookGrace the watcher
	// leaves it to the hook (hookAfter: hookGrace unless a test says).
	awaitingHook map[string]*unchecked
	hookAfter    time.Duration

	// queued describes each world whose up waits for admission and that
	// has no record yet (by id, under mu): status lists them.
	queued map[string]queuedWorld

	// bornUps are the worktrees (by admin folder, under mu) whose up for
	// being born is under way: the hook and the watcher may both see a
	// worktree born, and the second must not queue another up.
	bornUps map[string]bool
	// downBorn are the worktrees of bornUps a down named before their up
	// had started anything (by admin folder, under mu): that up ends then.
	downBorn map[string]bool
	// hookBorn counts, by admin folder (under mu), the hook's born events
	// not yet handed to autoBorn: waiting for adoption or for their
	// repository's lock, they are ups a down must know of too.
	hookBorn map[string]int

	// lost are worktrees (by admin folder, under mu) that a daemon before
	// this one saw born but that have no world: their up was queued, or
	// under way before its record, when that daemon died or stopped. The
	// watcher's next look takes them for born again (findLost).
	lost map[string]bool

	// refs are admin URLs that admin_url references with ${env.X}
	// resolved to, by repository and reference (rememberRef).
	refs sync.Map
}

// New returns a daemon for home. log receives its decisions as JSON.
func New(home world.Home, version string, log *slog.Logger) *Daemon {
	d := &Daemon{home: home, version: version, log: log, worlds: map[string]*worldRun{}, env: world.WithoutGitExecPath(os.Environ()),
		adopted: make(chan struct{}), repoMissing: map[string]*missingRepo{}, repoGoneAfter: repoGoneGrace,
		unchecked: map[string]*unchecked{}, awaitingHook: map[string]*unchecked{}, lost: map[string]bool{}, bornUps: map[string]bool{}, downBorn: map[string]bool{}, hookBorn: map[string]int{}, queued: map[string]queuedWorld{}, noCheckoutAfter: noCheckoutWait, recheckEvery: time.Second, hookAfter: hookGrace}
	d.servers = managed.New(home)
	d.admission = NewAdmission(newOSMachine(), realClock{}, d.settings, home.Dir, log)
	d.admission.suspend = func(id string) error { return d.signalWorld(id, procgroup.SigStop, true) }
	d.admission.resume = func(id string) error { return d.signalWorld(id, procgroup.SigCont, false) }
	d.admission.suspendable = func(id string) bool {
		d.mu.Lock()
		r := d.worlds[id]
		d.mu.Unlock()
		// Running processes, and no up under way (its ending is set while
		// it holds the world).
		return r != nil && r.live.Load() != nil && r.ending.Load() == nil
	}
	return d
}

// InfoPath is where a running daemon describes itself (api.DaemonInfo).
func InfoPath(h world.Home) string { return h.InfoPath() }

// Run serves until ctx is done or a client asks it to shut down. Services
// keep running when it returns; the next daemon adopts them.
func (d *Daemon) Run(ctx context.Context) error {
	if err := d.home.Ensure(); err != nil {
		return err
	}
	lock := flock.New(filepath.Join(d.home.Dir, "daemon.lock"))
	ok, err := lock.TryLock()
	if err != nil {
		return fmt.Errorf("lock %s: %w", lock.Path(), err)
	}
	if !ok {
		return ErrRunning
	}
	defer lock.Unlock()

	sock := d.home.SocketPath()
	if len(sock) > 104 {
		return fmt.Errorf("socket path %s is %d bytes, longer than unix sockets allow (104): set BINKY_HOME to a shorter folder", sock, len(sock))
	}
	os.Remove(sock) // a stale socket from a crashed daemon; we hold the lock
	ln, err := listenSocket(sock)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", sock, err)
	}
	// Removed on the way out only while it is still this daemon's: a home
	// deleted and made again at the same path has a new daemon on a new
	// socket there, which this one's exit must not take away.
	if ul, ok := ln.(*net.UnixListener); ok {
		ul.SetUnlinkOnClose(false)
	}
	defer removeOwn(sock)()
	defer ln.Close()

	// Two lives: ctx ends when the daemon is asked to stop (nothing new
	// starts after), life once it has finished what it was doing: the
	// requests under way, the proxy serving every world meanwhile, the
	// watch on its home.
	life, endLife := context.WithCancel(context.WithoutCancel(ctx))
	defer endLife()
	ctx, d.stop = context.WithCancel(ctx)
	defer d.stop()
	d.ctx = ctx
	d.started = time.Now().UTC()
	self, _ := procgroup.ReadProc(os.Getpid())
	info, _ := json.Marshal(api.DaemonInfo{PID: os.Getpid(), Version: d.version, Started: d.started, StartTick: self.StartTick})
	if err := world.WriteFileAtomic(InfoPath(d.home), info, 0o600); err != nil {
		return err
	}
	defer removeOwn(InfoPath(d.home))()
	d.log.Info("daemon started", "pid", os.Getpid(), "version", d.version, "home", d.home.Dir)

	hw, err := openHomeWatch(d.home.Dir, lock.Path())
	if err != nil {
		d.log.Error("cannot watch the home: a daemon whose home is deleted will run until stopped", "err", err)
	} else {
		defer hw.dir.Close()
		hw.servers = d.servers.Running()
		d.servers.OnRunning = hw.note
		every, grace := d.homeEvery, d.lockGrace
		if every <= 0 {
			every = homeCheckEvery
		}
		if grace <= 0 {
			grace = lockGoneGrace
		}
		go d.watchHome(life, hw, every, grace)
	}

	d.startProxy(life)
	if err := d.newWatcher(); err != nil {
		d.log.Error("watcher not started: worktrees added or removed will be noticed only by the next daemon", "err", err)
	}
	go d.admission.Watch(ctx, 2*time.Second)

	// Serve at once (a hook must not wait for a daemon to finish starting);
	// requests that touch worlds wait until adoption is done.
	go func() {
		d.reapSteps()
		d.adoptAll(ctx)
		d.findLost()
		d.remarkSlices(ctx)
		close(d.adopted)
		if d.watch != nil {
			d.watch.start(ctx)
		}
	}()

	// A stop drains: the requests that came before it finish (an up
	// whose services are starting runs on: a migration is not cut off
	// halfway), and the socket still answers meanwhile what a user needs
	// then: a status, a down or a remove (which ends such an up). Other
	// requests are told the daemon is stopping; their clients wait for
	// the next daemon.
	go func() {
		<-ctx.Done()
		d.mu.Lock()
		d.draining = true
		d.mu.Unlock()
		d.requests.Wait() // an up waiting for its turn leaves at once (up's AfterFunc)
		ln.Close()
	}()
	var late sync.WaitGroup // requests that came during the drain
	for {
		conn, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			break
		}
		if err != nil {
			d.log.Error("accept", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		// A request lives as long as its client stays connected, not
		// as long as the daemon is not asked to stop: what it started it
		// finishes (a migration is not cut off halfway).
		if d.background() {
			go func() {
				defer d.requests.Done()
				d.serve(life, conn.(*net.UnixConn), false)
			}()
			continue
		}
		late.Add(1)
		go func() {
			defer late.Done()
			d.serve(life, conn.(*net.UnixConn), true)
		}()
	}
	late.Wait()
	if homeFate(d.gone.Load()) == homeDeleted {
		d.endOrphans(hw)
		d.log.Info("daemon stopped, its deleted home's services and shared servers with it")
		return nil
	}
	d.closeAll()
	d.log.Info("daemon stopped; services left running for the next daemon")
	return nil
}

// removeOwn notes the file at path now and returns a func that removes
// it if path is still that file (not one another process has put there
// since). The same inode is not enough: a file made after ours was
// deleted may get its number; its modification time tells them apart.
func removeOwn(path string) func() {
	mine, err := os.Lstat(path)
	return func() {
		if err != nil {
			return
		}
		if now, err := os.Lstat(path); err == nil && os.SameFile(mine, now) && now.ModTime().Equal(mine.ModTime()) {
			os.Remove(path)
		}
	}
}

// serve answers one request on conn; one that came while the daemon
// stops (late) only if it is of what a stopping daemon still answers.
func (d *Daemon) serve(ctx context.Context, conn *net.UnixConn, late bool) {
	defer conn.Close()
	if uid, err := peerUID(conn); err != nil || uid != os.Getuid() {
		d.log.Warn("refused a client of another user", "uid", uid, "err", err)
		return
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return
	}
	var req api.Request
	enc := json.NewEncoder(conn)
	var wmu sync.Mutex
	send := func(m api.Message) {
		wmu.Lock()
		defer wmu.Unlock()
		_ = enc.Encode(m)
	}
	if err := json.Unmarshal(line, &req); err != nil {
		send(api.Message{Error: &api.Error{Code: api.CodeUsage, Message: "bad request: " + err.Error()}})
		return
	}
	if req.Version != d.version && req.Op != api.OpShutdown && req.Op != api.OpHello {
		send(api.Message{Error: &api.Error{Code: api.CodeVersion, Message: fmt.Sprintf("daemon is version %s, client %s", d.version, req.Version)}})
		return
	}
	if late && !answeredWhileStopping(req.Op) {
		send(api.Message{Error: &api.Error{Code: api.CodeStopping, Message: "the daemon is stopping: " + d.hello().Stopping}})
		return
	}
	// The request lives as long as the client stays connected: Ctrl-C in
	// the CLI closes the connection and cancels what it asked for.
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = r.ReadByte() // returns when the client hangs up
		cancel()
	}()
	emit := func(e api.Event) { send(api.Message{Event: &e}) }
	result, err := d.dispatch(reqCtx, req, emit)
	if err != nil {
		var ae *api.Error
		if !errors.As(err, &ae) {
			ae = &api.Error{Message: err.Error()}
		}
		d.log.Info("request failed", "op", req.Op, "name", req.Name, "err", ae.Message)
		send(api.Message{Error: ae})
		return
	}
	b, err := json.Marshal(result)
	if err != nil {
		send(api.Message{Error: &api.Error{Message: err.Error()}})
		return
	}
	send(api.Message{Result: b})
}

// background counts one piece of background work as a request, so that
// the daemon's stop waits for it, and reports false (counting nothing)
// once the stop has begun waiting: the work is not to start.
func (d *Daemon) background() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.draining {
		return false
	}
	d.requests.Add(1)
	return true
}

func (d *Daemon) dispatch(ctx context.Context, req api.Request, emit func(api.Event)) (any, error) {
	switch req.Op {
	case api.OpHello:
		return d.hello(), nil
	case api.OpHook:
		// Counted as a request, so that a stop finishes its up too; one
		// that comes during the stop is left for the next daemon.
		if !d.background() {
			d.deferHook(req)
			return map[string]bool{"accepted": true}, nil
		}
		go func() {
			defer d.requests.Done()
			d.hook(context.WithoutCancel(d.ctx), req)
		}()
		return map[string]bool{"accepted": true}, nil
	case api.OpShutdown:
		d.log.Info("shutdown requested")
		go d.stop()
		return d.hello(), nil
	}
	select {
	case <-d.adopted:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	switch req.Op {
	case api.OpWatch:
		if d.watch != nil {
			d.watch.refresh()
			if repo, _, _ := gitx.Discover(req.Dir); repo != nil {
				d.reconcileRepo(ctx, repo.CommonDir)
			}
		}
		return map[string]bool{"ok": true}, nil
	case api.OpUp:
		return d.Up(ctx, req, emit)
	case api.OpDown:
		return d.Down(ctx, req)
	case api.OpReload:
		return d.Reload(ctx, req, emit)
	case api.OpReset:
		return d.Reset(ctx, req, emit)
	case api.OpRemove:
		return d.Remove(ctx, req)
	case api.OpStatus:
		return d.Status(ctx, req)
	case api.OpMetrics:
		return d.Metrics(ctx)
	case api.OpGC:
		return d.GC(ctx, req)
	case api.OpService:
		return d.Service(ctx, req)
	case api.OpServers:
		return d.Servers(ctx, req)
	case api.OpGolden:
		return d.Golden(ctx, req)
	}
	return nil, &api.Error{Code: api.CodeUsage, Message: fmt.Sprintf("unknown request %q", req.Op)}
}

// answeredWhileStopping reports whether a stopping daemon answers op: what
// starts nothing, and what ends an up it waits for.
func answeredWhileStopping(op string) bool {
	switch op {
	case api.OpHello, api.OpShutdown, api.OpStatus, api.OpDown, api.OpRemove:
		return true
	case api.OpHook:
		return true // answered at once, its work left to the next daemon (deferHook)
	}
	return false
}

func (d *Daemon) hello() api.Hello {
	d.mu.Lock()
	n, draining := len(d.worlds), d.draining
	var starting []string
	for id, r := range d.worlds {
		if draining && r.starting.Load() != nil {
			starting = append(starting, id)
		}
	}
	d.mu.Unlock()
	h := api.Hello{Version: d.version, PID: os.Getpid(), Started: d.started, Home: d.home.Dir, Worlds: n}
	if draining {
		h.Stopping = d.finishing(starting)
	}
	d.listenMu.Lock()
	errs := []error{d.proxyErr, d.httpsErr}
	d.listenMu.Unlock()
	for _, err := range errs {
		if err != nil {
			h.Problems = append(h.Problems, err.Error())
		}
	}
	return h
}

// settings reads settings.toml; on a bad file it keeps the defaults and logs
// why, rather than stopping the daemon.
func (d *Daemon) settings() world.Settings {
	s, err := d.home.LoadSettings()
	if err != nil {
		d.log.Error("settings", "err", err)
	}
	return s
}

// signalWorld suspends or resumes a world's process groups and records it:
// a suspended world keeps the state it had, which its resume gives back
// (an untrusted one must not come back as running, its reason lost).
func (d *Daemon) signalWorld(id string, sig syscall.Signal, suspend bool) error {
	d.mu.Lock()
	r := d.worlds[id]
	d.mu.Unlock()
	if r == nil {
		return nil
	}
	g := r.live.Load()
	if g == nil {
		return nil
	}
	err := g.Signal(sig)
	if homeFate(d.gone.Load()) == homeDeleted {
		return err // saving would make the deleted home again
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = d.home.UpdateRecord(ctx, id, func(rec *world.Record) error {
		// An untrusted world approved while it was suspended (an up, a
		// checkout back to an approved file) resumes as running.
		approved := !suspend && rec.SuspendedFrom == world.StateUntrusted && d.worktreeTrusted(rec)
		suspendRecord(rec, suspend, approved)
		return nil
	})
	d.routesChanged()
	return err
}

// worktreeTrusted reports whether the binky.toml (and env files) now in
// rec's worktree are approved on this machine.
func (d *Daemon) worktreeTrusted(rec *world.Record) bool {
	repo, wt, err := recordWorktree(rec)
	if err != nil {
		return false
	}
	w, err := world.FromWorktree(d.home, repo, wt)
	if err != nil {
		return false
	}
	w.PinEnvFiles()
	return d.home.TrustedWorld(w)
}

// suspendRecord marks rec suspended (keeping its state and reason) or
// resumed (giving them back, but running once approved says the
// worktree's config is approved now). Only a running or untrusted world
// is marked suspended: one a down or reload stopped meanwhile keeps its
// state, and so does a world whose state changed while it was suspended
// (made untrusted, stopped).
func suspendRecord(rec *world.Record, suspend, approved bool) {
	switch {
	case suspend && (rec.State == world.StateRunning || rec.State == world.StateUntrusted):
		rec.SuspendedFrom, rec.SuspendedReason = rec.State, rec.Reason
		rec.State, rec.Reason = world.StateSuspended, ""
	case !suspend && rec.State == world.StateSuspended:
		rec.State, rec.Reason = world.StateRunning, ""
		if rec.SuspendedFrom == world.StateUntrusted && !approved {
			rec.State, rec.Reason = world.StateUntrusted, rec.SuspendedReason
		}
		fallthrough
	case !suspend:
		rec.SuspendedFrom, rec.SuspendedReason = "", ""
	}
}

// finishing says what a stopping daemon finishes before it exits: the ups
// of the worlds ids whose services are starting, and how to end one now.
func (d *Daemon) finishing(ids []string) string {
	var names, paths []string
	for _, id := range ids {
		if rec, err := d.home.LoadRecord(id); err == nil {
			names, paths = append(names, rec.Worktree), append(paths, rec.Path)
		}
	}
	switch len(names) {
	case 0:
		return "it finishes the requests under way, then exits"
	case 1:
		// Its folder named: 'down' finds a world from where it is run.
		return fmt.Sprintf("it exits once the up of %s has started its services ('git -C %s binky down' ends that up now)", names[0], world.ShellArg(paths[0]))
	}
	slices.Sort(names)
	return fmt.Sprintf("it exits once the ups of %s have started their services ('git -C <worktree> binky down' ends one now)", strings.Join(names, ", "))
}
