package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/builtin"
	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/procgroup"
	"github.com/git-binky/git-binky/supervisor"
	"github.com/git-binky/git-binky/world"
)

// worldRun is the daemon's live hold on one world. Its mutex serialises
// up, down and remove of that world; different worlds proceed in parallel.
type worldRun struct {
	id    string
	mu    sync.Mutex
	group *supervisor.Group
	names []string // the services the group runs
	env   []string // the environment of the last explicit up, for restarts
	// live is group, for what must not wait on mu while an up or a down
	// holds it for seconds (status, signals, shutdown). setGroup keeps the
	// two equal.
	live atomic.Pointer[supervisor.Group]
	// ending ends the up of this world that holds mu (nil when none
	// does): a teardown, its worktree removed meanwhile, ends it rather
	// than wait behind it. Read without mu, which that up holds.
	ending atomic.Pointer[context.CancelCauseFunc]
	// starting ends the start of the services of the up that holds mu
	// (nil when none is starting them): a down or a remove ends it, since
	// a oneshot (a migration) may wait for good, and they would wait
	// behind it.
	starting atomic.Pointer[context.CancelCauseFunc]
	// gone is set (mu held) when a remove or teardown retired this run:
	// a request that waited on mu meanwhile must take the world's new run,
	// or it would start services nobody can stop (lockRunOf).
	gone bool
}

// lockRunOf returns world id's current run, locked: a run retired while
// this waited for its lock is left for the one that replaced it.
func (d *Daemon) lockRunOf(ctx context.Context, id string) (*worldRun, error) {
	for {
		r := d.run(id)
		if err := lockRun(ctx, r); err != nil {
			return nil, err
		}
		if !r.gone {
			return r, nil
		}
		r.mu.Unlock()
	}
}

// retire forgets r, whose world was removed or torn down; r.mu held.
func (d *Daemon) retire(r *worldRun) {
	r.gone = true
	d.mu.Lock()
	if d.worlds[r.id] == r {
		delete(d.worlds, r.id)
	}
	d.mu.Unlock()
}

// setGroup replaces the world's group and the services it runs; mu held.
func (r *worldRun) setGroup(g *supervisor.Group, names []string) {
	r.group, r.names = g, names
	r.live.Store(g)
}

// repoLock serialises what touches one repository's worktrees: worktree
// creation (git's own locks make parallel adds fail) and reconciliation.
func (d *Daemon) repoLock(common string) func() {
	unlock, _ := d.repoLockCtx(context.Background(), common)
	return unlock
}

// repoLockCtx is repoLock giving up when ctx is done: an up whose client
// went away must not go on waiting behind a slow worktree add.
func (d *Daemon) repoLockCtx(ctx context.Context, common string) (func(), error) {
	d.mu.Lock()
	if d.repoLocks == nil {
		d.repoLocks = map[string]chan struct{}{}
	}
	m, ok := d.repoLocks[common]
	if !ok {
		m = make(chan struct{}, 1)
		d.repoLocks[common] = m
	}
	d.mu.Unlock()
	select {
	case m <- struct{}{}:
		return func() { <-m }, nil
	case <-ctx.Done():
		return func() {}, ctx.Err()
	}
}

func (d *Daemon) run(id string) *worldRun {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.worlds[id]
	if !ok {
		r = &worldRun{id: id}
		d.worlds[id] = r
	}
	return r
}

// lockRun takes the world's lock, giving up when ctx is done.
func lockRun(ctx context.Context, r *worldRun) error {
	locked := make(chan struct{})
	go func() {
		r.mu.Lock()
		close(locked)
	}()
	select {
	case <-locked:
		return nil
	case <-ctx.Done():
		go func() { <-locked; r.mu.Unlock() }()
		return ctx.Err()
	}
}

// openWorld finds the world a request names. With create set, a name that
// matches no worktree gets one: `git worktree add` on the branch of that
// name (checked out if it exists, created from HEAD if not).
func (d *Daemon) openWorld(ctx context.Context, req api.Request, create bool, emit func(api.Event)) (*world.World, error) {
	w, err := world.Open(d.home, req.Dir, req.Name)
	if err != nil && create && req.Name != "" && errors.Is(err, world.ErrNoConfig) {
		// Another up of this name may be checking the worktree out now
		// (git lists it before its files are there): its files are
		// there once that up lets go of the repository.
		if repo, _, _ := gitx.Discover(req.Dir); repo != nil {
			unlock, lerr := d.repoLockCtx(ctx, repo.CommonDir)
			unlock()
			if lerr != nil {
				return nil, lerr
			}
			w, err = world.Open(d.home, req.Dir, req.Name)
		}
	}
	if err == nil || !create || req.Name == "" || !errors.Is(err, gitx.ErrNoSuchWorktree) {
		return w, classify(err)
	}
	if strings.HasPrefix(req.Name, "-") {
		// git would take it for an option (git worktree add -b <name>
		// runs git branch <name>).
		return nil, &api.Error{Code: api.CodeUsage, Message: fmt.Sprintf("cannot create worktree %q: a worktree or branch name cannot begin with '-'", req.Name)}
	}
	if looksLikePath(req.Name) {
		// `up ../feat` became a branch "../feat" git refused, in a folder
		// named "..-feat".
		return nil, &api.Error{Code: api.CodeUsage, Message: fmt.Sprintf("cannot create worktree %q: up takes a worktree or branch name, not a path (for a worktree at a path: git -C %s binky up)", req.Name, world.ShellArg(req.Name))}
	}
	repo, _, derr := gitx.Discover(req.Dir)
	if repo == nil {
		return nil, classify(derr)
	}
	base := repo.MainPath
	if base == "" {
		base = filepath.Dir(repo.CommonDir)
	}
	dir := ".."
	if cfg, err := world.LoadConfig(filepath.Join(base, world.ConfigFile)); err == nil {
		dir = cfg.Project.WorktreeDir
		d.warmServers(cfg)
	}
	// worktree_dir is relative to the main worktree. A branch's '/' is a
	// '-' in its folder's name: feature/login made ../feature/login, a
	// folder "feature" shared by every repository beside this one and left
	// behind by remove, and bugfix/login's worktree was then "login1".
	path := filepath.Join(base, dir, strings.ReplaceAll(req.Name, "/", "-"))
	// git takes locks of its own (refs, the index): one worktree add at a
	// time per repository, however many ups arrive together.
	unlock, err := d.repoLockCtx(ctx, repo.CommonDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if w, err := world.Open(d.home, req.Dir, req.Name); err == nil || !errors.Is(err, gitx.ErrNoSuchWorktree) {
		return w, classify(err) // made by an up that held the lock before us
	}
	// Looked at under the lock: the folder of a worktree another up is
	// adding was taken for a stranger's.
	if _, err := os.Stat(path); err == nil {
		return nil, &api.Error{Code: api.CodeUsage, Message: fmt.Sprintf("cannot create worktree %q: %s already exists and is not a worktree of this repository", req.Name, path)}
	}
	emit(api.Event{Message: fmt.Sprintf("creating worktree %s at %s", req.Name, path)})
	wt, err := repo.AddWorktree(ctx, path, req.Name, req.Dir)
	if err != nil {
		return nil, err
	}
	// This up starts the world, with its caller's environment: the
	// watcher, which looks under the same lock, must not take the new
	// worktree for one born behind binky's back and start it too (nor
	// does the hook: AddWorktree tells it).
	d.markSeenLocked(repo.CommonDir, wt)
	w, err = world.FromWorktree(d.home, repo, wt)
	return w, classify(err)
}

// looksLikePath reports whether a name given to up is a path rather than
// a branch's name: absolute, or with a "." or ".." element.
func looksLikePath(name string) bool {
	if filepath.IsAbs(name) || strings.HasPrefix(name, "~") {
		return true
	}
	for _, el := range strings.Split(filepath.ToSlash(name), "/") {
		if el == "." || el == ".." {
			return true
		}
	}
	return false
}

// warmServers starts, in the background, the managed servers that cfg's
// services will be given, so that a server's first start (initdb alone
// is most of a second) runs beside the `git worktree add` of the up that
// needs it rather than after it. cfg is the main worktree's: the new
// worktree's own, read once it exists, decides what the up provisions. A
// server that cannot start says so to that up. It starts before the up's
// admission: an up that then waits in the queue (memory) has its server
// running already, as it would once admitted.
func (d *Daemon) warmServers(cfg *world.Config) {
	base := d.ctx // the daemon's life: a stop cuts a start off as it would an up's
	if base == nil {
		base = context.Background()
	}
	for _, kind := range managedKinds(cfg) {
		// Counted as the request it serves: the daemon's stop (and a
		// deleted home's clean-up) waits for it, and knows its server.
		if !d.background() {
			return
		}
		go func() {
			defer d.requests.Done()
			ctx, cancel := context.WithTimeout(base, 2*time.Minute)
			defer cancel()
			_, _ = d.servers.AdminURL(ctx, kind)
		}()
	}
}

// managedKinds lists the kinds of server binky runs itself that cfg's
// services use: those with an adapter binky has a server for and no
// admin_url of their own.
func managedKinds(cfg *world.Config) []string {
	var kinds []string
	for _, n := range cfg.ServiceNames() {
		svc := cfg.Services[n]
		if svc.Adapter == "" || svc.AdminURL != "" {
			continue
		}
		if kind, ok := builtin.Managed(svc.Adapter); ok && !slices.Contains(kinds, kind) {
			kinds = append(kinds, kind)
		}
	}
	return kinds
}

// classify attaches an error code to the errors clients branch on.
func classify(err error) error {
	var ce *world.ConfigError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce), errors.Is(err, world.ErrNoConfig):
		return &api.Error{Code: api.CodeConfig, Message: err.Error()}
	case errors.Is(err, gitx.ErrNoSuchWorktree), errors.Is(err, gitx.ErrNotRepository), errors.Is(err, gitx.ErrNotWorktree):
		return &api.Error{Code: api.CodeNotFound, Message: err.Error()}
	case errors.Is(err, world.ErrOtherHome):
		return &api.Error{Code: api.CodeUsage, Message: err.Error()}
	}
	return err
}

// Up brings a world up for a client that asked: it approves the config it
// runs (the user chose to run it) and registers the repository for the
// watcher, then starts the world.
func (d *Daemon) Up(ctx context.Context, req api.Request, emit func(api.Event)) (api.World, error) {
	return d.upAlso(ctx, req, nil, emit)
}

// upAlso is Up starting the services also names beside req.Group's.
func (d *Daemon) upAlso(ctx context.Context, req api.Request, also []string, emit func(api.Event)) (api.World, error) {
	w, err := d.openWorld(ctx, req, true, emit)
	if err != nil {
		return api.World{}, err
	}
	if w.Worktree.NoCheckout {
		w = d.awaitCheckout(ctx, req, w, emit)
	}
	if w.Worktree.NoCheckout {
		return api.World{}, &api.Error{Code: api.CodeUsage, Message: fmt.Sprintf("worktree %s has no files checked out (git worktree add --no-checkout): check out a branch in it first", w.Worktree.Path)}
	}
	// A world this home holds for a removed worktree of this name goes
	// first: this worktree is another (and may be another home's now).
	d.retireReplacedOf(ctx, w)
	// A worktree another home runs is refused before anything is approved
	// or registered here (and before any record or lease is made: a world
	// still queued must leave nothing behind).
	if err := d.home.CheckOwner(w); err != nil {
		return api.World{}, classify(err)
	}
	w.PinEnvFiles()
	approved := d.home.TrustedWorld(w)
	why := ""
	if !approved {
		why = d.home.Untrusted(w.Config.Source, w.Config.Path)
	}
	if err := d.home.Trust(w.Config.Source, w.Config.Path); err != nil {
		return api.World{}, err
	}
	if !approved {
		// up (and reload, which is down then up) approves the files as
		// they are: said, since the hook and the watcher would not have
		// run them, with which one was new (an env file, not binky.toml).
		emit(api.Event{World: w.Name, State: api.EventNotice, Message: fmt.Sprintf("approved %s for this repository on this machine (%s): the hook and the watcher may now start it", w.Config.Path, why)})
	}
	defer d.registerRepo(ctx, w)()
	env := req.Env
	if len(env) == 0 {
		env = d.env
	}
	return d.up(ctx, req.Op, w, req.Group, also, env, emit)
}

// Reload stops a world and starts it again on the same ports and data:
// what it ran (the services an up --group added too) and req.Group's. A
// file that no longer loads (a typo mid-edit) is refused before anything
// stops: the world runs on, as up leaves it.
func (d *Daemon) Reload(ctx context.Context, req api.Request, emit func(api.Event)) (api.World, error) {
	w, err := d.openWorld(ctx, req, false, emit)
	if err != nil {
		return api.World{}, err
	}
	env := req.Env
	if len(env) == 0 {
		env = d.env
	}
	_, ran, err := d.down(ctx, req, d.restartable(w, req.Group, env), nil)
	if err == nil {
		var desc api.World
		if desc, err = d.upAlso(ctx, req, ran, emit); err == nil {
			return desc, nil
		}
	}
	d.releaseIfStopped(ctx, w.ID)
	return api.World{}, err
}

// restart reports whether req stops a world to start it again at once
// (reload, reset): its down keeps the world's place for its up.
func restart(req api.Request) bool { return req.Op == api.OpReload || req.Op == api.OpReset }

// releaseIfStopped gives back world id's place among the running worlds
// when nothing of it runs: a reload or a reset kept it through its down,
// for its up, and one that failed in between (a drop, an up refused
// before its start) must not hold it for a world that runs nothing.
// Looked at under the world's lock, so that an up of it under way keeps
// the place it was given.
func (d *Daemon) releaseIfStopped(ctx context.Context, id string) {
	r, err := d.lockRunOf(context.WithoutCancel(ctx), id)
	if err != nil {
		return
	}
	defer r.mu.Unlock()
	if r.group == nil || !holdsPlace(r.group) {
		d.admission.Release(id)
	}
}

// restartable is what would refuse w's up, asked before a reload (or a
// reset) stops anything: a group the file lacks, a ${env.X} the caller
// has not set, a damaged secret (the world was stopped, then the up
// failed, and it was left down).
func (d *Daemon) restartable(w *world.World, group string, env []string) func(ran []string) error {
	return func(ran []string) error {
		names, err := startNames(w.Config, group, ran)
		if err != nil {
			return &api.Error{Code: api.CodeUsage, Message: err.Error()}
		}
		if len(dataServices(w.Config)) > 0 {
			if _, err := d.home.Secret(); err != nil {
				return err
			}
		}
		return unsetEnv(w, names, env)
	}
}

// Reset makes a world's data again: it stops the world, drops the slices
// binky made for it (every one, or req.Service's), and starts it as up
// does, which makes them as a new world's are: cloned from this branch's
// golden template, or provisioned, migrated and seeded. Its ports, files
// and other slices stay. A slice that could not be dropped fails the
// reset and stays as it was, with the world stopped.
func (d *Daemon) Reset(ctx context.Context, req api.Request, emit func(api.Event)) (api.World, error) {
	w, err := d.openWorld(ctx, req, false, emit)
	if err != nil {
		return api.World{}, err
	}
	if err := d.home.CheckOwner(w); err != nil {
		return api.World{}, classify(err)
	}
	if !d.home.HasRecord(w.ID) {
		return api.World{}, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("%s has no world yet: nothing to reset ('git binky up %s' makes its data)", w.Name, world.ShellArg(w.Name))}
	}
	data := dataServices(w.Config)
	switch {
	case len(data) == 0:
		return api.World{}, &api.Error{Code: api.CodeUsage, Message: fmt.Sprintf("%s has no data service (no service with an adapter): nothing to reset", w.Config.Path)}
	case req.Service != "" && !slices.Contains(data, req.Service):
		return api.World{}, &api.Error{Code: api.CodeUsage, Message: fmt.Sprintf("%q is not a data service of %s: its data services are %s", req.Service, w.Config.Path, strings.Join(data, ", "))}
	case req.Service != "":
		data = []string{req.Service}
	}
	env := req.Env
	if len(env) == 0 {
		env = d.env
	}
	check := d.restartable(w, req.Group, env)
	// What the up after the drop clones from is built first, while the
	// world still runs on its data: a branch whose migrate fails keeps
	// its world and its data, as an up would have left them.
	if err := d.buildGoldens(ctx, w, data, env, emit); err != nil {
		return api.World{}, fmt.Errorf("reset %s: %w\n  (nothing was stopped or dropped: the world keeps its data until the template its new data is cloned from builds; fix that, then run 'git binky reset' again)", w.Name, err)
	}
	drop := func(w *world.World) error { return d.dropSlicesOf(ctx, w, data, env, emit) }
	_, ran, err := d.down(ctx, req, check, drop)
	if err == nil {
		var desc api.World
		if desc, err = d.upAlso(ctx, req, ran, emit); err == nil {
			return desc, nil
		}
	}
	d.releaseIfStopped(ctx, w.ID)
	return api.World{}, err
}

// dropSlicesOf drops the slices of w's services names and forgets them in
// its record, for the next up to make again. It runs with the world
// stopped and its lock held: no service uses them, and no up starts on
// them meanwhile.
//
// The slices are marked not ready in the record before a step touches
// them: whatever cuts the reset off from there (a crash, a teardown failed
// half way, as a Redis one deleting keys in batches), the next up drops
// what is left and makes them again, as it does a slice an up left
// incomplete. Only one left alone before any step (another world's, not
// marked as this one's) is put back as it was.
func (d *Daemon) dropSlicesOf(ctx context.Context, w *world.World, names, callerEnv []string, emit func(api.Event)) error {
	homeID, err := d.home.ID()
	if err != nil {
		return err
	}
	secret, err := d.home.Secret()
	if err != nil {
		return err
	}
	// Run to the end whatever the client does: a Ctrl-C cut a teardown
	// half way.
	tctx, cancel := teardownContext(ctx)
	defer cancel()
	notice := func(service, msg string) {
		emit(api.Event{World: w.Name, Service: service, State: api.EventNotice, Message: msg})
	}
	rec, err := d.home.LoadRecord(w.ID)
	if err != nil {
		return err
	}
	// What names the slices' servers: ${env.X} from the worktree's env
	// files too, as the up that made them read it.
	env := callerEnv
	pe, perr := w.ProcessEnv(rec, callerEnv, "")
	if perr == nil {
		env = envList(pe)
	}
	// A data service its record names no slice of (one the record lost)
	// may still have one on its server, which the up would take back as
	// it is, data and all. It is dropped too when the server has it,
	// marked as this world's; not when an entry of this record names it
	// (the slice an older binky made for two services, the other's now).
	var lost []world.SliceRecord
	for _, n := range names {
		if findSlice(rec, n) != nil || perr != nil {
			continue
		}
		admin, ref, err := d.adminURL(tctx, w, n, pe)
		if err != nil {
			continue
		}
		svc := w.Config.Services[n]
		a, err := builtin.Lookup(svc.Adapter)
		if err != nil {
			continue
		}
		sl := world.SliceRecord{Service: n, Adapter: adapters.Canonical(svc.Adapter), Name: sliceName(w, n, 0), Config: sliceConfig(ref, svc.Options)}
		if other := d.sharedWithOther(tctx, rec, sl, nil, env); other != "" {
			continue
		}
		if there, err := templateExists(tctx, a, admin, sl.Name); err == nil && !there {
			continue
		}
		lost = append(lost, sl)
	}
	// Each target as it was, to put back what is left alone: absent (a
	// lost one), or ready or not.
	type was struct{ recorded, ready bool }
	before := map[string]was{}
	var targets []world.SliceRecord
	err = d.home.UpdateRecord(tctx, w.ID, func(r *world.Record) error {
		kept := r.Slices[:0:0]
		for _, sl := range r.Slices {
			if !slices.Contains(names, sl.Service) {
				kept = append(kept, sl)
				continue
			}
			if other := d.sharedWithOther(tctx, r, sl, names, env); other != "" {
				// An older binky made one slice for two services: the
				// other keeps it and its data, and this one gets a
				// slice of its own at the up, as up splits them.
				notice(sl.Service, fmt.Sprintf("service %s shared %s slice %s with service %s: %s keeps it and its data, and %s gets a new slice of its own",
					sl.Service, sl.Adapter, sl.Name, other, other, sl.Service))
				continue
			}
			before[sl.Service] = was{recorded: true, ready: sl.Ready}
			sl.Ready = false
			targets = append(targets, sl)
			kept = append(kept, sl)
		}
		for _, sl := range lost {
			if findSlice(r, sl.Service) == nil {
				before[sl.Service] = was{}
				targets = append(targets, sl)
				kept = append(kept, sl) // not ready: the next up drops it
			}
		}
		r.Slices = kept
		return nil
	})
	if err != nil {
		return fmt.Errorf("reset %s: %w (its world is stopped: 'git binky up' starts it)", w.Name, err)
	}
	sctx := d.withSteps(tctx)
	outcome := map[string]teardown{} // by service
	var failed []string
	cut := false
	done := map[string]teardown{} // by adapter and name: a slice two targets share goes once
	for _, sl := range targets {
		key := sl.Adapter + "\x00" + sl.Name
		res, seen := done[key]
		note := ""
		if !seen {
			note, res = d.teardownSlice(sctx, rec, sl, env, homeID, secret)
			note = strings.TrimSuffix(note, " (git binky gc drops it later)")
			done[key] = res
		}
		if res == sliceNotOurs {
			res = sliceUntouched // adapters look at the mark before they drop
		}
		outcome[sl.Service] = res
		switch {
		case seen:
		case res == sliceDropped:
			msg := fmt.Sprintf("service %s: dropped its %s slice %s, to be made again", sl.Service, sl.Adapter, sl.Name)
			if note != "" {
				msg += " (" + note + ")"
			}
			notice(sl.Service, msg)
			if err := d.step("reset.slice_dropped"); err != nil {
				failed, cut = append(failed, err.Error()), true
			}
		case res == sliceUntouched && !before[sl.Service].recorded:
			// One the record lost, not this world's: not ours to drop.
		case res == sliceUntouched:
			failed = append(failed, note+": it keeps its data")
		default:
			failed = append(failed, note+": the next 'git binky up' drops what is left of it and makes it again")
		}
		if cut {
			break // as a crash here would leave the rest: not ready
		}
	}
	err = d.home.UpdateRecord(tctx, w.ID, func(r *world.Record) error {
		kept := r.Slices[:0:0]
		for _, sl := range r.Slices {
			res, ok := outcome[sl.Service]
			switch {
			case ok && res == sliceDropped:
				continue
			case ok && res == sliceUntouched && !before[sl.Service].recorded:
				continue // as it was: not in the record
			case ok && res == sliceUntouched:
				sl.Ready = before[sl.Service].ready
			}
			kept = append(kept, sl)
		}
		r.Slices = kept
		return nil
	})
	if err != nil {
		return fmt.Errorf("reset %s: %w (its world is stopped: the next 'git binky up' makes the slices it dropped again)", w.Name, err)
	}
	if len(failed) > 0 {
		return fmt.Errorf("reset %s: %s. Its world is stopped: 'git binky up' starts it", w.Name, strings.Join(failed, "; "))
	}
	return nil
}

// sharedWithOther returns a service other than names whose recorded slice
// is sl too (the same kind, name and server): one slice an older binky
// made for two services. "" when there is none.
func (d *Daemon) sharedWithOther(ctx context.Context, rec *world.Record, sl world.SliceRecord, names, env []string) string {
	server, _ := sl.Config["admin"].(string)
	for _, o := range rec.Slices {
		if slices.Contains(names, o.Service) || o.Name != sl.Name || o.Adapter != sl.Adapter {
			continue
		}
		if other, _ := o.Config["admin"].(string); other == server || d.sameAdmin(ctx, other, server, env) {
			return o.Service
		}
	}
	return ""
}

// retireReplacedOf tears down, under the repository's lock, the world this
// home holds for a removed worktree whose name w now has.
func (d *Daemon) retireReplacedOf(ctx context.Context, w *world.World) {
	if w.Worktree.Main {
		return
	}
	rec, err := d.home.LoadRecord(w.ID)
	if err != nil {
		return // none: nothing stale
	}
	unlock, err := d.repoLockCtx(ctx, w.Repo.CommonDir)
	if err != nil {
		return // its up is ending: the next one retires it
	}
	defer unlock()
	d.retireReplaced(ctx, rec)
}

// awaitCheckout gives a worktree git is still adding the moment to check
// its files out: an up racing `git worktree add` of the same name found
// it with none yet and refused it as made with --no-checkout. Only a
// fresh one is waited for (git wrote its gitdir in the last seconds, or
// holds its index lock), and not past checkoutLockWait.
func (d *Daemon) awaitCheckout(ctx context.Context, req api.Request, w *world.World, emit func(api.Event)) *world.World {
	start := time.Now()
	deadline := start.Add(checkoutLockWait)
	told := false
	for w.Worktree.NoCheckout && time.Now().Before(deadline) {
		if !told && time.Since(start) > time.Second {
			// A large checkout, or a git that died holding the lock: say
			// what this waits for, and how to end it.
			emit(api.Event{World: w.Name, Message: fmt.Sprintf("waiting for git to check out %s (it holds %s; if no git is running, remove that file)",
				w.Worktree.Path, filepath.Join(w.Worktree.AdminDir, "index.lock"))})
			told = true
		}
		admin := w.Worktree.AdminDir
		fi, err := os.Stat(filepath.Join(admin, "gitdir"))
		fresh := err == nil && time.Since(fi.ModTime()) < d.noCheckoutAfter
		if !fresh && !exists(filepath.Join(admin, "index.lock")) {
			return w
		}
		select {
		case <-ctx.Done():
			return w
		case <-time.After(50 * time.Millisecond):
		}
		if again, err := world.Open(d.home, req.Dir, req.Name); err == nil {
			w = again
		}
	}
	return w
}

// up starts a world's services (those of group, or all, and those of also
// that the file still has, with what they depend on): ports first, then
// services in depends_on order, each once its dependencies are healthy. It
// is idempotent: a world already running them is left as it is. Its
// errors begin with cmd, the command that ends with this up (up, reload,
// reset), and the world's name.
func (d *Daemon) up(ctx context.Context, cmd string, w *world.World, group string, also, env []string, emit func(api.Event)) (api.World, error) {
	// A blank template a plain slice found missing is built once no up
	// is under way, not beside one (blank.go).
	defer d.upStarted()()
	names, err := startNames(w.Config, group, also)
	if err != nil {
		return api.World{}, &api.Error{Code: api.CodeUsage, Message: err.Error()}
	}
	// Every path that starts processes comes here, so this is where an
	// unapproved binky.toml is stopped: the hook, the watcher, a worktree
	// move and a reload must not run what the user never approved.
	approved := world.TrustHash(w.Config.Source)
	// The env files are read once, here: what is judged is what every
	// process of this up gets, however long it waits for its turn.
	w.PinEnvFiles()
	if !d.home.TrustedWorld(w) {
		msg := untrustedReason(d.home, w)
		d.setState(w.ID, world.StateUntrusted, msg)
		return api.World{}, &api.Error{Code: api.CodeUsage, Message: msg}
	}
	if err := unsetEnv(w, names, env); err != nil {
		return api.World{}, err
	}
	r, err := d.lockRunOf(ctx, w.ID)
	if err != nil {
		return api.World{}, err
	}
	defer r.mu.Unlock()
	if d.downBeforeBornUp(ctx) {
		d.log.Info("up of a new worktree ended: a down came before it started anything", "world", w.Name)
		return api.World{}, fmt.Errorf("%s %s: %w", cmd, w.Name, errDownCameFirst)
	}
	// In the admission queue or provisioning slices, this up holds the
	// world's lock: a teardown of the world ends it (teardown).
	parent := ctx
	ctx, endUp := context.WithCancelCause(ctx)
	r.ending.Store(&endUp)
	defer func() { r.ending.Store(nil); endUp(nil) }()
	tornDown := func() bool { return parent.Err() == nil && ctx.Err() != nil }

	if r.group != nil && covers(r.names, names) && allUp(r.group, r.names) {
		rec, err := d.home.LoadRecord(w.ID)
		same, diff := true, []string(nil)
		if err == nil {
			same, diff = runsAsSpecified(w, rec, r, env)
		}
		if err == nil && rec.Approved != "" && rec.Approved != approved {
			emit(api.Event{World: w.Name, State: api.EventNotice, Message: "already up, running the binky.toml it started with: the changed one is approved now, and 'git binky reload' restarts the services with it"})
		} else if !same {
			// An env file edited (or the caller's environment changed):
			// the approval is the same binky.toml's, and up said nothing.
			emit(api.Event{World: w.Name, State: api.EventNotice, Message: fmt.Sprintf("already up, its services running with the environment they started with, which differs now in %s (an env_file changed, or your shell's environment is another): 'git binky reload' restarts them with it",
				namesList(diff, 8))})
		} else {
			emit(api.Event{World: w.Name, Message: "already up"})
		}
		if err == nil {
			d.noteStaleSlices(w, rec, emit)
		}
		if err == nil && rec.State == world.StateUntrusted {
			// The user approved the current file; what runs is still the
			// config approved before, until a reload.
			d.setState(w.ID, world.StateRunning, "")
		}
		if err == nil && rec.State == world.StateStarting {
			// Its up started everything but could not save that it had
			// (a full disk): recorded now.
			if err := d.saveState(w.ID, world.StateRunning, ""); err != nil {
				return api.World{}, unsavedRecord(cmd, w.Name, d.home.WorldsDir(), err)
			}
		}
		return d.describe(w.ID, r)
	}
	// widen: the world runs and this up adds to it (up --group of another
	// group, or what crashed started again). Its group takes the new
	// services and its running ones run on: a healthy API must not lose
	// its clients' connections for a worker beside it.
	widen := false
	admitted := false
	if r.group != nil {
		// Running, but not all that is asked for: start the wider set, on
		// the same ports. Not a service the file no longer has: it stops,
		// and leaves the record (a deleted service).
		names = slices.DeleteFunc(union(r.names, names), func(n string) bool { return w.Config.Services[n] == nil })
		widen = d.widens(w, r, approved, env)
		var err error
		if widen {
			err = d.stopUnwell(ctx, r)
			admitted = holdsPlace(r.group)
		} else if err = d.stopKeepingPlace(ctx, r); err == nil {
			// Nothing runs until this up starts it again: said, should
			// it end before it does. Its place is kept: a failure from
			// here on gives it back.
			d.setState(w.ID, world.StateStopped, "")
			admitted = false
		}
		if err != nil {
			return api.World{}, err
		}
	}
	// What a widened world's failure leaves: the services that still run,
	// so the world is still running if any does.
	failed := func(state world.State, reason string) {
		if widen && runsAny(r.group) {
			state, reason = world.StateRunning, ""
		}
		admitted = widen && holdsPlace(r.group)
		d.setState(w.ID, state, reason)
	}
	d.mu.Lock()
	d.queued[w.ID] = queuedWorld{common: w.Repo.CommonDir, world: api.World{ID: w.ID, Project: w.Project, Worktree: w.Name, Path: w.Worktree.Path,
		Branch: w.Worktree.Branch, State: world.StateQueued, Ports: map[string]int{}, Services: []api.Service{}}}
	d.mu.Unlock()
	// A stop ends the wait for a turn (the client asks the next daemon),
	// whenever it comes: before this wait began, or during it.
	unwatch := func() bool { return false }
	if d.ctx != nil {
		unwatch = context.AfterFunc(d.ctx, func() { endUp(errDaemonStopping) })
	}
	err = d.admission.Acquire(ctx, w.ID, w.Name, func(q Queued) {
		emit(api.Event{World: w.Name, State: string(world.StateQueued), Message: q.String(w.Name)})
		d.mu.Lock()
		if qw, ok := d.queued[w.ID]; ok {
			qw.world.Message = q.String(w.Name)
			d.queued[w.ID] = qw
		}
		d.mu.Unlock()
	})
	if !unwatch() && d.ctx != nil && err == nil {
		// Its turn came as the stop did: nothing started yet, so it is
		// the next daemon's, as a queued one is. (A place the world held
		// before, for what runs, it keeps.)
		if !admitted {
			d.admission.Release(w.ID)
		}
		err = errDaemonStopping
	}
	d.mu.Lock()
	delete(d.queued, w.ID)
	d.mu.Unlock()
	if err != nil {
		if tornDown() && errors.Is(context.Cause(ctx), errTakenOutOfQueue) {
			return api.World{}, fmt.Errorf("%s %s: %w", cmd, w.Name, errTakenOutOfQueue)
		}
		if tornDown() && errors.Is(context.Cause(ctx), errDaemonStopping) {
			// Nothing started: the client asks the next daemon.
			return api.World{}, &api.Error{Code: api.CodeStopping, Message: fmt.Sprintf("%s %s: %v", cmd, w.Name, errDaemonStopping)}
		}
		if tornDown() {
			return api.World{}, fmt.Errorf("%s %s: its worktree was removed while it waited for its turn: %w", cmd, w.Name, err)
		}
		return api.World{}, err
	}
	defer func() {
		if !admitted {
			d.admission.Release(w.ID)
		}
	}()
	// A worktree removed while its up waited (for its turn, or for the
	// world's lock behind a remove) has no world to start: an attack saw
	// one admitted after all, its slices made and its processes failing
	// in a folder that was gone, until the watcher tore it down.
	if !w.Worktree.Main && !exists(w.Worktree.AdminDir) {
		d.log.Info("up ended: its worktree was removed while it waited", "world", w.Name)
		return api.World{}, fmt.Errorf("%s %s: its worktree was removed while it waited for its turn", cmd, w.Name)
	}
	var adding []string // what a widening up starts that the world had not
	if widen {
		adding = slices.DeleteFunc(slices.Clone(names), func(n string) bool { _, ok := r.group.Spec(n); return ok })
	}
	rec, err := w.Update(ctx, func(rec *world.Record) error {
		// A widening world stays running: a daemon killed during its up
		// must adopt the services that ran before it, and stop only what
		// the up was adding (adoptAdding).
		if !widen {
			rec.State, rec.Reason = world.StateStarting, ""
			// A new start: what an earlier, failed one counted (restarts,
			// its exit) is not this one's; status showed "stopped, 5
			// restarts" for a service this up never started.
			for _, st := range rec.Services {
				if st.PID == 0 {
					st.Restarts, st.ExitCode, st.Message = 0, nil, ""
				}
			}
		}
		rec.Adding = adding
		// What starts now is what restarts later, even after a daemon
		// restart: this config, approved above.
		rec.Approved = approved
		// A service the config no longer has is forgotten once nothing of
		// it runs: status showed a deleted one forever, and up counted it.
		for n, s := range rec.Services {
			if _, ok := w.Config.Services[n]; !ok && (s.PID == 0 || !procgroup.Alive(s.PID, s.StartTick)) {
				delete(rec.Services, n)
			}
		}
		return nil
	})
	if err != nil {
		return api.World{}, err
	}
	if widen {
		defer d.doneAdding(w.ID)
	}
	failPoint(exitAtUpStarting)
	if r.group == nil && rec.Orphaned {
		// Its record was lost while it ran: a worker of it, holding no
		// port, would run twice.
		d.stopOrphans(w, rec, emit)
		if rec, err = w.Update(ctx, func(rec *world.Record) error { rec.Orphaned = false; return nil }); err != nil {
			return api.World{}, err
		}
	}
	if err := checkPortsFree(rec, toStart(r, widen, names), w.Config); err != nil {
		if r.group == nil && d.stopOrphans(w, rec, emit) {
			err = checkPortsFree(rec, toStart(r, widen, names), w.Config)
		}
		if err != nil {
			failed(world.StateStopped, err.Error())
			return api.World{}, err
		}
	}
	if rec, err = d.provisionSlices(ctx, w, rec, env, emit); err != nil {
		reason := err.Error()
		switch {
		case tornDown():
			reason = "its worktree was removed while its slices were provisioned"
		case ctx.Err() != nil:
			reason = "up was cancelled while its slices were provisioned (the client went away): run 'git binky up' again"
		}
		failed(world.StateFailed, reason)
		return api.World{}, fmt.Errorf("%s %s: %w", cmd, w.Name, err)
	}
	failPoint(exitAtUpSlices)
	specs, err := buildSpecs(w, rec, names, env)
	if err != nil {
		failed(world.StateStopped, err.Error())
		return api.World{}, err
	}
	var g *supervisor.Group
	if widen {
		// The group takes the services it has not got; Start starts them,
		// and those of its own this up stopped (crashed, unhealthy).
		g = r.group
		err = g.Add(slices.DeleteFunc(slices.Clone(specs), func(s supervisor.Spec) bool { return !slices.Contains(adding, s.Name) }))
	} else {
		g, err = supervisor.NewGroup(specs, d.persister(w.ID))
	}
	if err != nil {
		failed(world.StateFailed, err.Error())
		return api.World{}, err
	}
	events, unsubscribe := g.Subscribe()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for ev := range events {
			emit(api.Event{World: w.Name, Service: ev.Status.Name, State: string(ev.Status.State), Message: ev.Status.Message})
		}
	}()
	started := time.Now()
	// Once services start, the up is finished even if its client goes
	// away (Ctrl-C, an MCP client's timeout): stopping healthy services
	// because nobody is listening would leave the world neither up nor
	// down. Each start is bounded by its health check's start period, but
	// a oneshot's is not: a down or a remove ends the start (r.starting).
	startCtx, endStart := context.WithCancelCause(context.WithoutCancel(ctx))
	r.starting.Store(&endStart)
	err = g.Start(startCtx)
	r.starting.Store(nil)
	cutOff := context.Cause(startCtx) // a down's or a remove's
	if err != nil && cutOff != nil {
		err = cutOff
	}
	endStart(nil)
	unsubscribe()
	<-drained // every event before the result, never after it
	if ctx.Err() != nil {
		d.log.Info("the client of up went away; the daemon finished the up", "world", w.Name, "project", w.Project, "err", err)
	}
	if err != nil && widen && runsAny(g) {
		// What ran before this up runs on (a failed start stops only what
		// it started). What it added and did not start leaves the group:
		// it is not the world's until an up of it succeeds, and the next
		// up, of another group, must not start it again.
		var failedNew []string
		for _, n := range adding {
			if st, ok := g.Status(n); ok && !isUp(st) {
				failedNew = append(failedNew, n)
			}
		}
		if rerr := g.Remove(failedNew); rerr != nil {
			d.log.Warn("a failed up's services stay in the world's group", "world", w.Name, "services", failedNew, "err", rerr)
		} else if len(failedNew) > 0 {
			// Gone from status too: their last state says why, once.
			_ = d.home.UpdateRecord(context.WithoutCancel(ctx), w.ID, func(rec *world.Record) error {
				for _, n := range failedNew {
					delete(rec.Services, n)
				}
				return nil
			})
		}
		r.setGroup(g, slices.DeleteFunc(slices.Clone(names), func(n string) bool { _, ok := g.Spec(n); return !ok }))
		admitted = holdsPlace(g)
		d.setState(w.ID, world.StateRunning, "")
		d.log.Info("up failed; the services that were running run on", "world", w.Name, "project", w.Project, "err", err)
		if cutOff != nil {
			return api.World{}, fmt.Errorf("%s %s: %w", cmd, w.Name, err) // a down or remove, which stops the rest
		}
		return api.World{}, fmt.Errorf("%s %s: %w (what it started was stopped; the services that were running run on)", cmd, w.Name, err)
	}
	if err != nil {
		g.Close()
		d.setState(w.ID, world.StateFailed, err.Error())
		d.log.Info("up failed", "world", w.Name, "project", w.Project, "err", err)
		if widen {
			r.setGroup(nil, nil)
			admitted = false
			return api.World{}, fmt.Errorf("%s %s: %w (nothing of the world runs now: 'git binky up' starts it again)", cmd, w.Name, err)
		}
		return api.World{}, fmt.Errorf("%s %s: %w (its other services were stopped)", cmd, w.Name, err)
	}
	failPoint(exitAtUpServices)
	r.setGroup(g, names)
	r.env = env
	if err := d.home.SaveCallerEnv(w.ID, env); err != nil {
		d.log.Warn("the world's environment was not kept: a daemon adopting its services would restart them with its own", "world", w.Name, "err", err)
	}
	// Its place is kept while a process of it runs: a world of slices
	// alone (or of oneshots, done) runs nothing, and eight of them held
	// every place while the next up waited.
	for _, s := range specs {
		admitted = admitted || !s.Oneshot
	}
	warnEveryInterface(w, rec, toStart(r, widen, names), emit)
	// Unsaved, the record would say "starting" for good, and the next
	// daemon would take the world for a cut-off up and stop it: a full
	// disk made "✓ up" of a world that the next daemon stop killed.
	err = d.step("up.record_running") // a failure on demand, for the tests
	if err == nil {
		err = d.saveState(w.ID, world.StateRunning, "")
	}
	if err != nil {
		d.log.Error("world up, its record not saved", "world", w.Name, "err", err)
		return api.World{}, unsavedRecord(cmd, w.Name, d.home.WorldsDir(), err)
	}
	d.log.Info("world up", "world", w.Name, "project", w.Project, "services", len(names), "took_ms", time.Since(started).Milliseconds())
	return d.describe(w.ID, r)
}

// unsavedRecord is the error of an up whose services run but whose record
// could not say so, with what to fix: the disk when it is full, the
// folder otherwise (its permissions, a read-only mount).
func unsavedRecord(cmd, name, worldsDir string, err error) error {
	fix := "fix " + worldsDir
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		fix = "free some disk space"
	}
	return fmt.Errorf("%s %s: its services run, but its record was not saved (%w): %s, then run 'git binky up' again to record it", cmd, name, err, fix)
}

func covers(have, want []string) bool {
	set := map[string]bool{}
	for _, n := range have {
		set[n] = true
	}
	for _, n := range want {
		if !set[n] {
			return false
		}
	}
	return true
}

func union(a, b []string) []string {
	set := map[string]bool{}
	var out []string
	for _, n := range append(append([]string{}, a...), b...) {
		if !set[n] {
			set[n] = true
			out = append(out, n)
		}
	}
	return out
}

// widens reports whether an up of a running world adds to its group
// rather than starting it again: the file approved now is the one its
// services started from, none of them is suspended, and each would start
// now as it runs (the same command, folder and environment; the caller's
// or an env_file's change restarts them all, as a reload does).
func (d *Daemon) widens(w *world.World, r *worldRun, approved string, env []string) bool {
	rec, err := d.home.LoadRecord(w.ID)
	if err != nil || rec.Approved != approved {
		return false
	}
	var have []string
	for _, st := range r.group.Statuses() {
		if st.State == supervisor.Suspended || w.Config.Services[st.Name] == nil {
			return false
		}
		have = append(have, st.Name)
	}
	return sameSpecs(w, rec, r, have, env)
}

// runsAsSpecified reports whether the running services of r would be
// started now as they run: same command, folder and environment. When not,
// it says what differs (variables by name only: their values may be
// secrets).
func runsAsSpecified(w *world.World, rec *world.Record, r *worldRun, env []string) (bool, []string) {
	var have []string
	for _, st := range r.group.Statuses() {
		if w.Config.Services[st.Name] != nil && isUp(st) {
			have = append(have, st.Name)
		}
	}
	diff := specsDiff(w, rec, r, have, env)
	return len(diff) == 0, diff
}

// sameSpecs reports whether the services names of r's group run as they
// would be started now from w, rec and env.
func sameSpecs(w *world.World, rec *world.Record, r *worldRun, names []string, env []string) bool {
	return len(specsDiff(w, rec, r, names, env)) == 0
}

// specsDiff is what differs between how the services names of r's group
// run and how they would be started now: "service S's command", "...'s
// folder", and the names of the variables that differ, set or unset, each
// once, sorted. Nil when nothing does.
func specsDiff(w *world.World, rec *world.Record, r *worldRun, names []string, env []string) []string {
	now, err := buildSpecs(w, rec, names, env)
	if err != nil {
		return []string{"the services' environment (" + err.Error() + ")"}
	}
	var diff []string
	vars := map[string]bool{}
	for _, s := range now {
		was, ok := r.group.Spec(s.Name)
		if !ok {
			diff = append(diff, "service "+s.Name+" is not in its group")
			continue
		}
		if was.Cmd != s.Cmd {
			diff = append(diff, "service "+s.Name+"'s command")
		}
		if was.Dir != s.Dir {
			diff = append(diff, "service "+s.Name+"'s folder")
		}
		before, after := envMap(materialEnv(was.Env)), envMap(materialEnv(s.Env))
		for k, v := range after {
			if b, ok := before[k]; !ok || b != v {
				vars[k] = true
			}
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				vars[k] = true
			}
		}
	}
	slices.Sort(diff)
	return append(diff, slices.Sorted(maps.Keys(vars))...)
}

// namesList joins names, at most max of them, saying how many more.
func namesList(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}

// envMap is a KEY=value list as a map (the last of a key wins, as exec's;
// an entry with no '=' is not one).
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// terminalVars are what names the terminal, pane or session a command ran
// in, not how a program runs: two terminals of one user differ in them.
var terminalVars = map[string]bool{
	"TMUX_PANE": true, "WINDOWID": true, "WINDOW": true, "STY": true, "TERM_SESSION_ID": true, "ITERM_SESSION_ID": true,
	"KITTY_WINDOW_ID": true, "WEZTERM_PANE": true, "ALACRITTY_WINDOW_ID": true, "KONSOLE_DBUS_WINDOW": true, "KONSOLE_DBUS_SESSION": true,
	"GNOME_TERMINAL_SCREEN": true, "SSH_TTY": true, "SSH_CLIENT": true, "SSH_CONNECTION": true, "GPG_TTY": true,
	"COLUMNS": true, "LINES": true, "VSCODE_GIT_IPC_HANDLE": true, "VSCODE_IPC_HOOK_CLI": true, "VSCODE_INJECTION": true,
	"TMUX": true, "TERM": true, "COLORTERM": true, "TERM_PROGRAM": true, "TERM_PROGRAM_VERSION": true, "WT_SESSION": true,
	"XDG_SESSION_ID": true, "XDG_VTNR": true, "SSH_AUTH_SOCK": true,
}

// materialEnv is env sorted, without what a shell changes on its own (a
// cd, a subshell, the last command) and what names its terminal: an up
// from another folder of the worktree, or another terminal, is the same
// world's.
func materialEnv(env []string) []string {
	// `git binky` is `binky` run by git, which puts its exec path first
	// on PATH (and in GIT_EXEC_PATH): the same caller either way (clients
	// since 2026-12-07 take it off themselves).
	out := slices.DeleteFunc(slices.Clone(world.WithoutGitExecPath(env)), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == "PWD" || k == "OLDPWD" || k == "SHLVL" || k == "_" || terminalVars[k]
	})
	slices.Sort(out)
	return out
}

// isUp reports whether a service of a running world is up as a plain up
// sees it: running (even starting or unhealthy) or a oneshot done.
func isUp(st supervisor.Status) bool {
	return st.State != supervisor.Stopped && st.State != supervisor.Crashed
}

// well reports whether a service runs as it should (healthy, running with
// no health check) or is a oneshot done: what an up that widens the world
// leaves as it is. One starting or unhealthy is started again, so that
// what this up adds, depending on it, waits for its health.
func well(st supervisor.Status) bool {
	return st.State == supervisor.Healthy || st.State == supervisor.Running || st.State == supervisor.Done
}

// runsAny reports whether any service of g is up (a oneshot done counts:
// it is part of a running world).
func runsAny(g *supervisor.Group) bool {
	return slices.ContainsFunc(g.Statuses(), isUp)
}

// holdsPlace reports whether a process of g runs: a world keeps its
// place in the admission queue while one does.
func holdsPlace(g *supervisor.Group) bool {
	for _, st := range g.Statuses() {
		if st.State != supervisor.Stopped && st.State != supervisor.Crashed && st.State != supervisor.Done {
			return true
		}
	}
	return false
}

// toStart is the names of an up whose ports must be free: all of them,
// or, widening, those not running well already (theirs are held by them).
func toStart(r *worldRun, widen bool, names []string) []string {
	if !widen {
		return names
	}
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool {
		st, ok := r.group.Status(n)
		return ok && well(st)
	})
}

// allUp reports whether every service of names is up in g.
func allUp(g *supervisor.Group, names []string) bool {
	for _, n := range names {
		if st, ok := g.Status(n); !ok || !isUp(st) {
			return false
		}
	}
	return true
}

// dataServices are the services of cfg an adapter provides, sorted.
func dataServices(cfg *world.Config) []string {
	var out []string
	for _, n := range cfg.ServiceNames() {
		if cfg.Services[n].Adapter != "" {
			out = append(out, n)
		}
	}
	return out
}

// stopOrphans stops the processes that carry the marks of w's services
// while this daemon supervises none of them (r.group is nil): a world
// whose record was lost or deleted (a corrupt file, which status says to
// delete) left its services running on its ports, no daemon knowing them,
// and its next up called them another program's. It reports whether it
// stopped any, and says so.
func (d *Daemon) stopOrphans(w *world.World, rec *world.Record, emit func(api.Event)) bool {
	var marks []string
	for _, n := range w.Config.ServiceNames() {
		if w.Config.Services[n].Adapter == "" {
			marks = append(marks, serviceMark(rec, d.home, n))
		}
	}
	if procgroup.CountMarked(marks...) == 0 {
		return false
	}
	procgroup.StopAllMarked(marks, 5*time.Second)
	msg := "stopped processes of this world's services that no daemon supervised (its record was lost)"
	emit(api.Event{World: w.Name, State: api.EventNotice, Message: msg})
	d.log.Warn("orphan services stopped", "world", w.Name)
	return true
}

// warnEveryInterface says which of the services an up started listen on
// every interface (0.0.0.0): other machines of the network reach them,
// and another world's service on the port at 127.0.0.1 would not be what
// answers. check warns of the addresses a config writes; this sees what a
// program does on its own (a dev server's default --host 0.0.0.0).
func warnEveryInterface(w *world.World, rec *world.Record, names []string, emit func(api.Event)) {
	for _, n := range names {
		for _, key := range w.Config.Services[n].PortKeys() {
			if p := rec.Ports[key]; p != 0 && world.ListensOnEveryInterface(p) {
				emit(api.Event{World: w.Name, Service: n, State: api.EventNotice, Message: fmt.Sprintf(
					"service %s listens on every interface (0.0.0.0:%d): other machines on your network reach it; have it listen on 127.0.0.1 (its --host or HOST)", n, p)})
			}
		}
	}
}

// checkPortsFree fails when a port the world holds is taken by a program
// that is not binky's: starting would only end in EADDRINUSE.
func checkPortsFree(rec *world.Record, names []string, cfg *world.Config) error {
	for _, n := range names {
		for _, key := range cfg.Services[n].PortKeys() {
			p := rec.Ports[key]
			if p != 0 && !world.FreeToStart(p) {
				return &api.Error{Code: api.CodeUsage, Message: fmt.Sprintf(
					"port %d of %s (service %s) is in use by another program: stop it (see 'ss -ltnp sport = :%d'), then up again", p, rec.Worktree, key, p)}
			}
		}
	}
	return nil
}

// persister keeps the world record's services current on every change, so
// that a new daemon can adopt them and `status` can tell the truth.
func (d *Daemon) persister(id string) func(supervisor.Status) {
	return func(st supervisor.Status) {
		if homeFate(d.gone.Load()) == homeDeleted {
			return // saving would make the deleted home again
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := d.home.UpdateRecord(ctx, id, func(r *world.Record) error {
			if r.Services == nil {
				r.Services = map[string]*world.ServiceState{}
			}
			r.Services[st.Name] = fromStatus(st)
			return nil
		})
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			d.log.Error("save service state", "world", id, "service", st.Name, "err", err)
		}
		d.routesChanged()
		if st.State == supervisor.Crashed || st.State == supervisor.Unhealthy {
			d.log.Warn("service "+string(st.State), "world", id, "service", st.Name, "restarts", st.Restarts, "message", st.Message)
		}
	}
}

func fromStatus(st supervisor.Status) *world.ServiceState {
	return &world.ServiceState{PID: st.PID, PGID: st.PGID, StartTick: st.StartTick, State: string(st.State),
		Restarts: st.Restarts, ExitCode: st.ExitCode, Started: st.Started, Message: st.Message}
}

func toStatus(name string, s *world.ServiceState) supervisor.Status {
	return supervisor.Status{Name: name, PID: s.PID, PGID: s.PGID, StartTick: s.StartTick, State: supervisor.State(s.State),
		Restarts: s.Restarts, ExitCode: s.ExitCode, Started: s.Started, Message: s.Message}
}

func (d *Daemon) setState(id string, state world.State, msg string) {
	_ = d.saveState(id, state, msg)
}

// saveState is setState saying whether the record was saved.
func (d *Daemon) saveState(id string, state world.State, msg string) error {
	if homeFate(d.gone.Load()) == homeDeleted {
		return nil // saving would make the deleted home again
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := d.home.UpdateRecord(ctx, id, func(r *world.Record) error {
		if !r.State.CanBecome(state) {
			// Logged, not refused: the table (world/state.go) is what the
			// daemon means to do, and a surprise here is a bug to see.
			d.log.Warn("world state transition not in world's table", "world", id, "from", r.State, "to", state)
		}
		r.State, r.Reason = state, msg
		if state != world.StateSuspended {
			r.SuspendedFrom, r.SuspendedReason = "", ""
		}
		return nil
	})
	if msg != "" {
		d.log.Info("world state", "world", id, "state", state, "message", msg)
	}
	d.routesChanged()
	return err
}

// Down stops a world's processes and keeps its ports, files and data.
func (d *Daemon) Down(ctx context.Context, req api.Request) (api.World, error) {
	desc, _, err := d.down(ctx, req, nil, nil)
	return desc, err
}

// down is Down, also returning the services the world's group ran. When
// check is set, it is asked, with those services, before anything stops;
// its error leaves the world as it is. When stopped is set, it runs once
// the world is stopped, still under the world's lock; its error is down's.
func (d *Daemon) down(ctx context.Context, req api.Request, check func(ran []string) error, stopped func(*world.World) error) (api.World, []string, error) {
	w, warning, err := d.openRecorded(req)
	if err != nil {
		return api.World{}, nil, err
	}
	if d.endQueuedUp(w.ID) && !d.home.HasRecord(w.ID) {
		return api.World{ID: w.ID, Project: w.Project, Worktree: w.Name, Path: w.Worktree.Path, State: world.StateStopped,
			Services: []api.Service{}, Message: "its up was waiting for its turn: taken out of the queue, nothing was started"}, nil, nil
	}
	// A new worktree's up (the hook's, the watcher's) that has not taken
	// the world's lock yet, waiting for adoption or its repository's lock:
	// a down now was answered "no world yet", and the up started it after.
	d.mu.Lock()
	born := d.bornUps[w.Worktree.AdminDir] || d.hookBorn[w.Worktree.AdminDir] > 0
	if born {
		d.downBorn[w.Worktree.AdminDir] = true
	}
	d.mu.Unlock()
	end := (*worldRun).endStart
	if restart(req) {
		end = func(r *worldRun) { r.endStartBecause(errEndedByRestart) }
	}
	r, err := d.lockRunEnding(ctx, w.ID, end)
	if err != nil {
		return api.World{}, nil, err
	}
	defer r.mu.Unlock()
	if !d.home.HasRecord(w.ID) && born {
		return api.World{ID: w.ID, Project: w.Project, Worktree: w.Name, Path: w.Worktree.Path, State: world.StateStopped,
			Services: []api.Service{}, Message: "the up git worktree add asked for had not started: it starts nothing now"}, nil, nil
	}
	if !d.home.HasRecord(w.ID) {
		return api.World{}, nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("%s has no world yet: nothing to stop (start one with: git binky up %s)", w.Name, world.ShellArg(w.Name))}
	}
	ran := r.names
	if check != nil {
		if err := check(ran); err != nil {
			return api.World{}, nil, err
		}
	}
	stop := d.stopLocked
	if restart(req) {
		stop = d.stopKeepingPlace
	}
	if err := stop(ctx, r); err != nil {
		return api.World{}, nil, err
	}
	d.setState(w.ID, world.StateStopped, "")
	if stopped != nil {
		if err := stopped(w); err != nil {
			return api.World{}, nil, err
		}
	}
	desc, err := d.describe(w.ID, r)
	if warning != "" {
		desc.Message = warning
	}
	return desc, ran, err
}

// errDaemonStopping ends an up waiting in the admission queue when the
// daemon is asked to stop: its client sends it again to the next daemon.
var errDaemonStopping = errors.New("the daemon stopped while it waited for its turn")

// stopping reports whether the daemon has been asked to stop.
func (d *Daemon) stopping() bool { return d.ctx != nil && d.ctx.Err() != nil }

// errDownCameFirst ends a new worktree's up when a down of it came before
// the up started anything.
var errDownCameFirst = errors.New("'git binky down' came before it started anything")

// errTakenOutOfQueue ends an up a down or a remove took out of the
// admission queue.
var errTakenOutOfQueue = errors.New("a down or remove took it out of the queue while it waited for its turn")

// endQueuedUp ends the up of world id while it waits in the admission
// queue, and reports whether there was one: a down or a remove of a
// queued world waited behind its up until a place freed, then stopped
// what the up had just started (an attack waited ten minutes).
func (d *Daemon) endQueuedUp(id string) bool {
	d.mu.Lock()
	_, queued := d.queued[id]
	r := d.worlds[id]
	d.mu.Unlock()
	if !queued || r == nil {
		return false
	}
	return r.endUp(errTakenOutOfQueue)
}

// errEndedByDown is why an up's start of its services ended when a down or
// a remove came meanwhile.
var errEndedByDown = errors.New("a down or remove came while its services started: what had started was stopped")

// errEndedByRestart is why an up's start of its services ended when a
// reload or a reset of the world came meanwhile: that one starts them.
var errEndedByRestart = errors.New("a reload or reset of the world came while its services started: what had started was stopped, for that one to start the world again ('git binky status' shows whether it did)")

// lockRunEnding is lockRunOf for what must not wait behind the world's
// up or service start (a down, a remove, a teardown): until it has the
// lock, it calls end on the world's run every 50 ms, since what holds the
// lock may reach its start (a oneshot that never ends) only after a first
// call.
func (d *Daemon) lockRunEnding(ctx context.Context, id string, end func(*worldRun)) (*worldRun, error) {
	have := make(chan struct{})
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			d.mu.Lock()
			r := d.worlds[id] // looked up, not made: none means no one holds it
			d.mu.Unlock()
			if r != nil {
				end(r)
			}
			select {
			case <-have:
				return
			case <-t.C:
			}
		}
	}()
	r, err := d.lockRunOf(ctx, id)
	close(have)
	return r, err
}

// endStart ends the start of services of the up that holds r's lock, if
// one is starting them, or the start of one service (service start or
// restart).
func (r *worldRun) endStart() { r.endStartBecause(errEndedByDown) }

// endStartBecause ends the start of the up that holds r's lock, if one is
// starting services, with cause.
func (r *worldRun) endStartBecause(cause error) {
	if end := r.starting.Load(); end != nil {
		(*end)(cause)
	}
}

// errHomeDeleted ends the starts under way when the daemon's home is
// deleted: what they start would be orphans.
var errHomeDeleted = errors.New("the daemon's home was deleted while its services started: what had started was stopped")

// endUp ends the up that holds r's lock, if one does, with cause (nil: its
// worktree was removed), and reports whether there was one.
func (r *worldRun) endUp(cause error) bool {
	if end := r.ending.Load(); end != nil {
		(*end)(cause)
		return true
	}
	return false
}

// openRecorded finds the world down and remove act on. When its binky.toml
// no longer loads (broken, or deleted), the machine record still says what
// runs and what to tear down, so a broken file never keeps a world
// running; warning then says the file is broken.
func (d *Daemon) openRecorded(req api.Request) (w *world.World, warning string, err error) {
	w, err = world.Open(d.home, req.Dir, req.Name)
	var ce *world.ConfigError
	if err == nil || !(errors.As(err, &ce) || errors.Is(err, world.ErrNoConfig) || errors.Is(err, world.ErrFolderGone)) {
		return w, "", classify(err)
	}
	repo, wt, lerr := world.Locate(req.Dir, req.Name)
	if lerr != nil {
		return nil, "", classify(err)
	}
	id := world.WorldID(repo.CommonDir, wt.AdminDir)
	rec, rerr := d.home.LoadRecord(id)
	if rerr != nil && errors.Is(err, world.ErrFolderGone) {
		// No world, and no folder: what is left is git's entry, which
		// remove clears (down finds nothing to stop).
		return &world.World{Home: d.home, Repo: repo, Worktree: wt, ID: id, Name: wt.Name}, fmt.Sprintf("the worktree's folder %s is gone", wt.Path), nil
	}
	if rerr != nil {
		return nil, "", classify(err)
	}
	w = &world.World{Home: d.home, Repo: repo, Worktree: wt, ID: id, Project: rec.Project, Name: rec.Worktree, Label: rec.Label}
	if errors.Is(err, world.ErrFolderGone) {
		// Deleted by hand (rm -rf): its services ran on in a folder that
		// is no more, and down and remove refused them until a prune.
		return w, fmt.Sprintf("the worktree's folder %s is gone, so binky acted from the machine record", wt.Path), nil
	}
	what := "is broken"
	if errors.Is(err, world.ErrNoConfig) {
		what = "is gone"
	}
	return w, fmt.Sprintf("%s %s, so binky acted from the machine record: %v", world.ConfigFile, what, err), nil
}

// stopUnwell stops the services of a widening world's group that do not
// run well (crashed and waiting out a restart's backoff, starting,
// unhealthy), dependents first: its Start starts them again.
func (d *Daemon) stopUnwell(ctx context.Context, r *worldRun) error {
	var stopped []string
	var errs []error
	statuses := r.group.Statuses()
	for i := len(statuses) - 1; i >= 0; i-- {
		if st := statuses[i]; !well(st) && st.State != supervisor.Stopped {
			if err := r.group.StopService(ctx, st.Name); err != nil {
				errs = append(errs, err)
			}
			stopped = append(stopped, st.Name)
		}
	}
	if len(stopped) > 0 {
		_ = d.home.UpdateRecord(ctx, r.id, func(rec *world.Record) error {
			for _, n := range stopped {
				if s := rec.Services[n]; s != nil {
					s.PID, s.PGID, s.StartTick = 0, 0, 0
				}
			}
			return nil
		})
	}
	return errors.Join(errs...)
}

// stopLocked stops the world's group, or, when this daemon holds none (the
// processes were left by a daemon that could not adopt them), their
// recorded process groups, checked by start time.
func (d *Daemon) stopLocked(ctx context.Context, r *worldRun) error {
	defer d.admission.Release(r.id)
	return d.stopKeepingPlace(ctx, r)
}

// stopKeepingPlace is stopLocked for a world that starts again at once
// (a reload, a reset, an up of another set of services): its place among
// the max_parallel running worlds stays its own, and its up does not wait
// behind the worlds queued meanwhile, whose turn it gave away. What fails
// before that up starts anything gives the place back (releaseIfStopped).
func (d *Daemon) stopKeepingPlace(ctx context.Context, r *worldRun) error {
	held := r.group != nil
	if r.group != nil {
		err := r.group.Stop(ctx)
		r.group.Close()
		r.setGroup(nil, nil)
		if err != nil {
			return err
		}
	}
	rec, err := d.home.LoadRecord(r.id)
	if err != nil {
		return nil
	}
	var errs []error
	for name, s := range rec.Services {
		if s.PID != 0 && procgroup.Alive(s.PID, s.StartTick) {
			if !procgroup.Stop(s.PGID, 5*time.Second) {
				errs = append(errs, fmt.Errorf("service %s: process group %d survived SIGKILL", name, s.PGID))
			}
		}
		// What left the group (a setsid) outlives it: stopped by its mark
		// (the group this daemon held stopped its own marked already).
		if !held && !procgroup.StopMarked(serviceMark(rec, d.home, name), 5*time.Second) {
			errs = append(errs, fmt.Errorf("service %s: a process it started outside its group survived SIGKILL", name))
		}
	}
	_ = d.home.UpdateRecord(ctx, r.id, func(rec *world.Record) error {
		for _, s := range rec.Services {
			if s.State != string(supervisor.Crashed) {
				s.State = string(supervisor.Stopped)
			}
			s.PID, s.PGID, s.StartTick = 0, 0, 0
		}
		return nil
	})
	return errors.Join(errs...)
}

// removeTurn waits until no other remove of world id runs, and takes the
// turn: release gives it back.
func (d *Daemon) removeTurn(ctx context.Context, id string) (release func(), err error) {
	for {
		d.mu.Lock()
		if d.removing == nil {
			d.removing = map[string]chan struct{}{}
		}
		busy, ok := d.removing[id]
		if !ok {
			mine := make(chan struct{})
			d.removing[id] = mine
			d.mu.Unlock()
			return func() {
				d.mu.Lock()
				delete(d.removing, id)
				d.mu.Unlock()
				close(mine)
			}, nil
		}
		d.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// dirtyRefusal is remove's answer for a worktree with uncommitted changes.
func dirtyRefusal(path string) error {
	return &api.Error{Code: api.CodeDirty, Message: fmt.Sprintf(
		"worktree %s has uncommitted changes: commit or stash them, or remove with --force to lose them", path)}
}

// Remove destroys a world: stops it, releases its ports, forgets it and
// removes its worktree. It refuses a worktree with uncommitted changes
// unless forced; the main worktree's folder is never removed.
func (d *Daemon) Remove(ctx context.Context, req api.Request) (api.World, error) {
	w, warning, err := d.openRecorded(req)
	if err != nil {
		if gone, ok := d.removeGone(ctx, req, err); ok {
			return gone, nil
		}
		return api.World{}, err
	}
	// One remove of a world at a time: a second one's git status, run
	// while the first deleted the tree, saw its files deleted and refused
	// the worktree as dirty, or failed on a folder gone.
	release, err := d.removeTurn(ctx, w.ID)
	if err != nil {
		return api.World{}, err
	}
	defer release()
	// Another home's world is that home's to remove: this one would delete
	// the worktree under it and leave its world to a watcher that may not
	// be running. (A stale world of this home for a removed worktree of
	// the name is retired first, so it does not pass for ownership.)
	d.retireReplacedOf(ctx, w)
	if err := d.home.CheckOwner(w); err != nil {
		return api.World{}, classify(err)
	}
	d.endQueuedUp(w.ID)
	if err := d.step("remove.opened"); err != nil {
		return api.World{}, err
	}
	recheck := false
	if !req.Force && !w.Worktree.Main && !w.Worktree.Missing {
		// Asked before the world's lock, so that a refusal does not end
		// a start under way. git could not read the worktree when
		// another remove was deleting it: asked again under the lock.
		dirty, err := gitx.Dirty(ctx, w.Worktree.Path)
		if err != nil {
			recheck = true
		} else if dirty {
			return api.World{}, dirtyRefusal(w.Worktree.Path)
		}
	}
	r, err := d.lockRunEnding(ctx, w.ID, (*worldRun).endStart)
	if err != nil {
		return api.World{}, err
	}
	defer r.mu.Unlock()
	// Another remove, or the user's own `git worktree remove`, may have
	// taken the worktree while this one waited.
	wtGone := !w.Worktree.Main && !w.Worktree.Missing && !exists(w.Worktree.AdminDir) && !exists(w.Worktree.Path)
	if wtGone {
		// Done, not "not removed, so its world was kept".
		if _, err := d.home.LoadRecord(w.ID); errors.Is(err, fs.ErrNotExist) {
			return api.World{ID: w.ID, Project: w.Project, Worktree: w.Name, Path: w.Worktree.Path, State: world.StateRemoved,
				Services: []api.Service{}, Ports: map[string]int{}, Message: "removed meanwhile by another remove"}, nil
		}
	}
	if recheck && !wtGone {
		dirty, err := gitx.Dirty(ctx, w.Worktree.Path)
		if err != nil {
			return api.World{}, err
		}
		if dirty {
			return api.World{}, dirtyRefusal(w.Worktree.Path)
		}
	}
	desc, derr := d.describe(w.ID, r)
	if derr != nil {
		// A worktree with no world (never up, or removed already): its
		// name all the same, not an empty one.
		desc = api.World{ID: w.ID, Project: w.Project, Worktree: w.Name, Path: w.Worktree.Path, Branch: w.Worktree.Branch,
			Services: []api.Service{}, Message: "it had no world: nothing to tear down"}
	}
	if err := d.stopLocked(ctx, r); err != nil {
		return api.World{}, err
	}
	// What names the slices' servers (${env.X} from the worktree's env
	// files), read while the worktree is still there.
	env := append([]string{}, req.Env...)
	if rec, err := d.home.LoadRecord(w.ID); err == nil && w.Config != nil {
		if pe, err := w.ProcessEnv(rec, req.Env, ""); err == nil {
			env = envList(pe)
		}
	}
	// The worktree goes before the world's data: git may refuse (a locked
	// worktree, one with submodules), and then nothing is lost. A crash
	// between the two leaves a record whose worktree is gone, which the
	// watcher tears down.
	if !w.Worktree.Main && !wtGone {
		if err := w.Repo.RemoveWorktree(ctx, w.Worktree, req.Force); err != nil {
			return api.World{}, fmt.Errorf("worktree %s was not removed, so its world was kept (its services are stopped: 'git binky up' starts them again): %w", w.Worktree.Path, err)
		}
	}
	// The worktree is gone: its world's data goes too, whether or not the
	// client waits for it (a Ctrl-C here left the world's role and
	// database behind with no record naming them).
	tctx, cancel := teardownContext(ctx)
	defer cancel()
	left, err := d.forget(tctx, w.ID, env)
	if err != nil {
		return api.World{}, err
	}
	d.retire(r)
	if warning != "" {
		left = append([]string{warning}, left...)
	}
	if derr != nil {
		left = append(left, desc.Message)
	}
	desc.State, desc.Message = world.StateRemoved, strings.Join(left, "; ")
	// The world as it is now: its processes stopped, its ports released,
	// its slices dropped. The result listed them as they were before,
	// healthy, with pids long gone.
	for i := range desc.Services {
		s := &desc.Services[i]
		*s = api.Service{Name: s.Name, State: string(supervisor.Stopped)}
	}
	desc.Ports, desc.Slices = map[string]int{}, nil
	d.log.Info("world removed", "world", w.Name, "project", w.Project)
	return desc, nil
}

// removeGone removes the world of a worktree git already removed, named
// by req (a remove the daemon's crash cut off after the worktree went, or
// a world the watcher has not torn down yet): remove of it finishes the
// job rather than say there is no such worktree. ok is false when no
// world of that name has a record whose worktree (its admin folder) is
// gone: then openErr stands.
func (d *Daemon) removeGone(ctx context.Context, req api.Request, openErr error) (api.World, bool) {
	if req.Name == "" || openErr == nil {
		return api.World{}, false
	}
	repo, _, err := gitx.Discover(req.Dir)
	if repo == nil || err != nil && !errors.Is(err, gitx.ErrNotWorktree) {
		return api.World{}, false
	}
	recs, _ := d.home.Records()
	for _, rec := range recs {
		if rec.CommonDir != repo.CommonDir || rec.Worktree != req.Name || rec.Main || exists(rec.AdminDir) {
			continue
		}
		desc := d.describeRecord(rec, nil)
		unlock := d.repoLock(repo.CommonDir)
		tctx, cancel := teardownContext(ctx)
		defer cancel()
		left := d.teardown(tctx, rec, "removed after its worktree was gone")
		unlock()
		desc.State, desc.Message = world.StateRemoved, strings.Join(append([]string{"its worktree was already gone"}, left...), "; ")
		return desc, true
	}
	return api.World{}, false
}

// teardownContext is the context of a world's teardown once its worktree
// is gone: the client going away (Ctrl-C, a closed MCP client) does not cut
// it off, which would leave slices no record names; a server that hangs
// does, after 5 minutes.
func teardownContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
}

// forget releases a world's ports and deletes its records. The leases go
// first: a lease is stale once its record is gone, so the other order could
// hand a port out twice for a moment.
func (d *Daemon) forget(ctx context.Context, id string, env []string) (left []string, err error) {
	unlock, err := d.home.LockWorld(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rec, err := d.home.LoadRecord(id)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// Slices first: if the daemon dies here, the record still names them.
	left = d.teardownSlices(ctx, rec, env)
	settings, _ := d.home.LoadSettings()
	d.home.NewAllocator(settings).Release(rec)
	defer d.routesChanged()
	return left, d.home.DeleteRecord(rec)
}

// queuedWorld is a world waiting for admission, as status lists it.
type queuedWorld struct {
	common string
	world  api.World
}

// Status describes every world on the machine (or the repository around
// req.Dir), with the live state of their services, and the worlds whose
// first up waits for its turn.
func (d *Daemon) Status(ctx context.Context, req api.Request) (api.Status, error) {
	recs, err := d.home.Records()
	var notes []string
	if u := (*world.UnreadableRecords)(nil); errors.As(err, &u) {
		// The rest are still listed; each bad one is named, with what to do.
		for _, e := range u.Errs {
			notes = append(notes, e.Error())
		}
	} else if err != nil {
		return api.Status{}, err
	}
	var common string
	if req.Project {
		repo, _, err := gitx.Discover(req.Dir)
		if repo == nil {
			return api.Status{}, classify(err)
		}
		common = repo.CommonDir
	}
	if _, err := d.home.LoadSettings(); err != nil {
		notes = append(notes, err.Error())
	}
	out := api.Status{Schema: 1, Daemon: d.hello(), Worlds: []api.World{}, Servers: d.servers.Status(), Notes: notes}
	for _, rec := range recs {
		if common != "" && rec.CommonDir != common {
			continue
		}
		d.mu.Lock()
		r := d.worlds[rec.ID]
		d.mu.Unlock()
		d.recheckTrust(rec)
		desc := d.describeRecord(rec, r)
		// A stopped world whose up waits for its turn: its record does
		// not know, the queue does.
		d.mu.Lock()
		qw, queued := d.queued[rec.ID]
		d.mu.Unlock()
		if queued && qw.world.Message != "" && desc.State != world.StateRunning {
			desc.State, desc.Message = world.StateQueued, qw.world.Message
		}
		out.Worlds = append(out.Worlds, desc)
	}
	// Worlds waiting for their turn that have no record yet (a new
	// worktree's first up): only the queue knows them.
	listed := map[string]bool{}
	for _, w := range out.Worlds {
		listed[w.ID] = true
	}
	for _, q := range d.admission.Queue() {
		d.mu.Lock()
		qw, ok := d.queued[q.ID]
		d.mu.Unlock()
		if ok && !listed[q.ID] && (common == "" || qw.common == common) {
			out.Worlds = append(out.Worlds, qw.world)
		}
	}
	// Asked from a worktree another home runs: say whose it is, since
	// this home lists nothing for it.
	if repo, wt, err := gitx.Discover(req.Dir); err == nil && wt != nil {
		if err := d.home.CheckWorktreeOwner(repo.CommonDir, wt.AdminDir, wt.Name); err != nil {
			out.Notes = append(out.Notes, err.Error())
		}
	}
	return out, nil
}

// editedUnapproved begins the reason of a running world whose binky.toml
// (or an env file it names) was edited in place and not approved.
const editedUnapproved = " (or an env_file it names) changed since its services started and is not approved"

// recheckTrust makes a running world whose worktree's config was edited
// since it started untrusted, as a checkout does, and a world made so
// running again once the file is back (or approved): an edit makes no
// event, so status looks.
func (d *Daemon) recheckTrust(rec *world.Record) {
	if rec.State != world.StateRunning && !(rec.State == world.StateUntrusted && strings.Contains(rec.Reason, editedUnapproved)) {
		return
	}
	path := filepath.Join(rec.Path, world.ConfigFile)
	cfg, err := world.LoadConfig(path)
	if err != nil {
		return // a broken or missing file: up and down say so
	}
	from, to, why := world.StateRunning, world.StateUntrusted, path+editedUnapproved+
		": they keep running the approved config ('git binky up' approves the new files, then 'git binky reload' runs them)"
	if d.home.TrustedConfig(cfg) {
		if rec.State == world.StateRunning {
			return
		}
		from, to, why = world.StateUntrusted, world.StateRunning, ""
	} else if rec.State == world.StateUntrusted {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = d.home.UpdateRecord(ctx, rec.ID, func(r *world.Record) error {
		// An up or down since the read decides, and so does an up that
		// approved the file meanwhile (asked again under the record's
		// lock: an up whose world was running leaves its state alone).
		if r.State == from && d.home.TrustedConfig(cfg) == (to == world.StateRunning) {
			r.State, r.Reason = to, why
		}
		rec.State, rec.Reason = r.State, r.Reason
		return nil
	})
}

func (d *Daemon) describe(id string, r *worldRun) (api.World, error) {
	rec, err := d.home.LoadRecord(id)
	if err != nil {
		return api.World{}, err
	}
	return d.describeRecord(rec, r), nil
}

// describeRecord merges a record with what the daemon knows live.
func (d *Daemon) describeRecord(rec *world.Record, r *worldRun) api.World {
	w := api.World{ID: rec.ID, Project: rec.Project, Worktree: rec.Worktree, Path: rec.Path, Branch: rec.Branch,
		State: rec.State, Message: rec.Reason, Ports: rec.Ports, Services: []api.Service{}}
	if _, err := os.Stat(rec.Path); err != nil {
		w.Missing = true
	}
	// The branch as checked out now: the record's is as of its last save,
	// and a `git branch -m` or a checkout saves nothing.
	gitDir := rec.AdminDir
	if rec.Main {
		gitDir = rec.CommonDir
	}
	if b, ok := gitx.HeadBranch(gitDir); ok && gitDir != "" && !w.Missing {
		w.Branch = b
	}
	live := map[string]supervisor.Status{}
	if r != nil {
		if g := r.live.Load(); g != nil {
			for _, st := range g.Statuses() {
				live[st.Name] = st
			}
		}
	}
	names := map[string]bool{}
	for n := range rec.Services {
		names[n] = true
	}
	for n := range live {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	now := time.Now()
	for _, n := range sorted {
		st, ok := live[n]
		if !ok {
			st = toStatus(n, rec.Services[n])
			// Not supervised by this daemon: trust the record only as far
			// as the process is really there.
			if st.PID != 0 && !procgroup.Alive(st.PID, st.StartTick) {
				st.State, st.PID, st.Message = supervisor.Crashed, 0, "died while no daemon was watching"
				if st.Started.After(d.started) {
					// This daemon started it, so a daemon was watching:
					// it is only no longer supervised (its up failed).
					st.Message = "its process is gone and no longer supervised"
				}
			}
		}
		s := api.Service{Name: n, State: string(st.State), PID: st.PID, Port: rec.Ports[n], Restarts: st.Restarts, ExitCode: st.ExitCode, Message: st.Message}
		for k, p := range rec.Ports {
			if svc, name, ok := strings.Cut(k, "."); ok && svc == n {
				if s.Ports == nil {
					s.Ports = map[string]int{}
				}
				s.Ports[name] = p
			}
		}
		if st.PID != 0 && !st.Started.IsZero() {
			t := st.Started
			s.Started = &t
			s.UptimeSeconds = now.Sub(t).Seconds()
		}
		w.Services = append(w.Services, s)
	}
	for _, sl := range rec.Slices {
		w.Slices = append(w.Slices, sliceView(sl))
	}
	return w
}

// adoptAll takes over the services earlier daemons left running, from the
// world records: each process is adopted only if its pid still has the
// recorded start time; the rest are marked as dead. Nothing is left
// running unowned.
func (d *Daemon) adoptAll(ctx context.Context) {
	recs, err := d.home.Records()
	if err != nil {
		d.log.Error("read world records", "err", err)
		if !world.OnlyUnreadable(err) {
			return
		}
	}
	for _, rec := range recs {
		d.adopt(ctx, rec)
	}
	if len(d.deadMarks) > 0 {
		procgroup.StopAllMarked(d.deadMarks, 5*time.Second)
		d.deadMarks = nil
	}
}

func (d *Daemon) adopt(ctx context.Context, rec *world.Record) {
	if len(rec.Adding) > 0 {
		d.adoptAdding(ctx, rec)
	}
	if rec.State == world.StateStarting {
		// Adoption runs before any request is served, so no up of this
		// daemon is in flight: the daemon that was starting this world
		// died during its up. Finish it as a failed up would: nothing left
		// half up, and a reason.
		d.endCutOffUp(ctx, rec)
		return
	}
	alive := map[string]*world.ServiceState{}
	for n, s := range rec.Services {
		if s.PID != 0 && procgroup.Alive(s.PID, s.StartTick) {
			alive[n] = s
		}
	}
	var dead []string
	for n, s := range rec.Services {
		if _, ok := alive[n]; !ok && s.PID != 0 {
			dead = append(dead, n)
		}
	}
	if len(dead) > 0 {
		_ = d.home.UpdateRecord(ctx, rec.ID, func(r *world.Record) error {
			for _, n := range dead {
				if s := r.Services[n]; s != nil {
					s.State, s.PID, s.PGID, s.StartTick, s.Message = string(supervisor.Crashed), 0, 0, 0, "died while no daemon was watching"
				}
			}
			return nil
		})
		d.log.Warn("services died while no daemon was watching", "world", rec.Worktree, "services", dead)
		// What they left running outside their group goes as it would
		// have with a daemon watching (it would hold their ports against
		// the next up): all worlds' in one look, once adoption is done.
		// Only this home's: a copied home's records name the original's.
		if id, err := d.home.ID(); err == nil && (rec.Home == "" || rec.Home == id) {
			for _, n := range dead {
				d.deadMarks = append(d.deadMarks, serviceMark(rec, d.home, n))
			}
		}
	}
	done := false // a oneshot that finished: part of the running world, with no process
	for _, s := range rec.Services {
		done = done || s.State == string(supervisor.Done)
	}
	// Only a running world's done oneshots are part of it: a failed or
	// stopped world's stay "done" in its record too.
	live := rec.State == world.StateRunning || rec.State == world.StateSuspended || rec.State == world.StateUntrusted
	if len(alive) == 0 && (len(dead) > 0 || !done || !live) {
		// Every process it ran is gone (the machine restarted, a kill):
		// the world is down, not running, until an up starts it again.
		// (A world of oneshots alone, all done, has none to lose.)
		if len(dead) > 0 && (rec.State == world.StateRunning || rec.State == world.StateSuspended) {
			d.setState(rec.ID, world.StateStopped, diedUnwatched)
		}
		return
	}
	if rec.State == world.StateSuspended {
		// Suspended for memory by the daemon before: adopted, it is resumed
		// (supervisor.Group.Adopt), whatever state a service was saved in.
		for _, s := range alive {
			s.State = string(supervisor.Suspended)
		}
	}
	// The environment their up gave them (its caller's, kept in the
	// home); a world an older binky started has none kept.
	caller, kept := d.home.CallerEnv(rec.ID)
	env := d.env
	if kept {
		env = caller
	}
	specs, untrusted := d.adoptSpecs(rec, alive, env)
	g, err := supervisor.NewGroup(specs, d.persister(rec.ID))
	if err != nil {
		d.log.Error("adopt", "world", rec.Worktree, "err", err)
		return
	}
	var names []string
	for _, s := range specs {
		if st, ok := alive[s.Name]; ok && g.Adopt(s.Name, toStatus(s.Name, st)) {
			names = append(names, s.Name)
		} else if st := rec.Services[s.Name]; !ok && st != nil && g.AdoptDone(s.Name, toStatus(s.Name, st)) {
			names = append(names, s.Name)
		}
	}
	// Those that crashed, or died while no daemon watched, are the
	// world's still, though no process of theirs is adopted: an up or a
	// reload starts them again, as it would had this daemon seen them
	// crash.
	for n, s := range rec.Services {
		if (s.State == string(supervisor.Crashed) || slices.Contains(dead, n)) && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	r := d.run(rec.ID)
	r.mu.Lock()
	r.setGroup(g, names)
	if kept {
		r.env = caller
	}
	r.mu.Unlock()
	if len(alive) > 0 { // a world of done oneshots runs nothing: no place
		d.admission.Admit(rec.ID)
	}
	switch {
	case untrusted != "":
		d.setState(rec.ID, world.StateUntrusted, untrusted)
	case rec.State == world.StateUntrusted, rec.State == world.StateSuspended:
		d.setState(rec.ID, world.StateRunning, "") // its file is approved again, or resumed
	}
	d.log.Info("adopted running services", "world", rec.Worktree, "project", rec.Project, "services", names)
}

// adoptAdding ends what a widening up, cut off with its daemon, was
// starting beside a running world: those services stop and leave the
// record (a oneshot whose exit nobody saw must not pass for done), and the
// world's own services are adopted as they run.
func (d *Daemon) adoptAdding(ctx context.Context, rec *world.Record) {
	for _, n := range rec.Adding {
		d.stopCutOff(rec, n)
		delete(rec.Services, n)
	}
	d.log.Warn("the daemon stopped during an up of another group: what it was starting was stopped", "world", rec.Worktree, "services", rec.Adding)
	adding := rec.Adding
	rec.Adding = nil
	_ = d.home.UpdateRecord(ctx, rec.ID, func(r *world.Record) error {
		for _, n := range adding {
			delete(r.Services, n)
		}
		r.Adding = nil
		return nil
	})
}

// stopCutOff stops what service name of a cut-off up left running: its
// recorded process group (checked by start time) and what it started
// outside it.
func (d *Daemon) stopCutOff(rec *world.Record, name string) {
	if s := rec.Services[name]; s != nil && s.PID != 0 && procgroup.Alive(s.PID, s.StartTick) && !procgroup.Stop(s.PGID, 5*time.Second) {
		d.log.Error("cut-off up: process group survived SIGKILL", "world", rec.Worktree, "service", name, "pgid", s.PGID)
	}
	procgroup.StopMarked(serviceMark(rec, d.home, name), 5*time.Second)
}

// doneAdding clears the record's note of what a widening up was adding,
// once the up has ended (its services the world's, or stopped).
func (d *Daemon) doneAdding(id string) {
	if homeFate(d.gone.Load()) == homeDeleted {
		return // saving would make the deleted home again
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = d.home.UpdateRecord(ctx, id, func(r *world.Record) error {
		r.Adding = nil
		return nil
	})
}

// diedUnwatched is why a world whose every service died while no daemon
// watched it is stopped.
const diedUnwatched = "its services died while no daemon was watching (the machine restarted, or they were killed): 'git binky up' starts them again on the same ports and data"

// endCutOffUp ends an up that a dying daemon left "starting": its services
// (those that had started) are stopped and the world is failed, saying why.
func (d *Daemon) endCutOffUp(ctx context.Context, rec *world.Record) {
	for name := range rec.Services {
		d.stopCutOff(rec, name)
	}
	reason := "the daemon stopped during up (killed or crashed), so the up did not finish: run 'git binky up' again"
	_ = d.home.UpdateRecord(ctx, rec.ID, func(r *world.Record) error {
		for _, s := range r.Services {
			if s.PID != 0 {
				s.State, s.Message = string(supervisor.Stopped), "stopped: its up was cut off"
			}
			s.PID, s.PGID, s.StartTick = 0, 0, 0
		}
		r.State, r.Reason = world.StateFailed, reason
		return nil
	})
	d.log.Warn("an up was cut off by the daemon's death; world failed", "world", rec.Worktree, "project", rec.Project)
}

// adoptSpecs rebuilds the specs of a world's running services, so adopted
// services are health-checked and restarted as before, from the config
// they were approved and started with (kept in the trust folder by its
// hash), never from whatever the worktree holds now: a branch checked out
// since must not get its commands run by a crash restart, and with env,
// the environment their up gave them. When the
// worktree's current config is neither that one nor approved, untrusted
// says why, for the world's state.
//
// Without the approved config (a record from an older binky), the current
// config is used only if it is approved. Otherwise (the worktree is gone,
// binky.toml is broken or unapproved) the services are adopted with a bare
// spec: shown by status, stopped by down, never restarted.
func (d *Daemon) adoptSpecs(rec *world.Record, alive map[string]*world.ServiceState, env []string) (specs []supervisor.Spec, untrusted string) {
	bare := func() []supervisor.Spec {
		var specs []supervisor.Spec
		for n := range alive {
			specs = append(specs, supervisor.Spec{Name: n, Restart: supervisor.RestartNo,
				LogPath: filepath.Join(world.LogDir(rec.AdminDir), n+".log"), Mark: serviceMark(rec, d.home, n)})
		}
		return specs
	}
	repo, wt, err := recordWorktree(rec)
	if err != nil {
		return bare(), ""
	}
	w, werr := world.FromWorktree(d.home, repo, wt)
	currentTrusted := false
	if werr == nil {
		w.PinEnvFiles()
		currentTrusted = d.home.TrustedWorld(w)
		if !currentTrusted {
			untrusted = fmt.Sprintf("%s (or an env_file it names) changed since its services started and is not approved: they keep running the approved config ('git binky up' approves the new files, then 'git binky reload' runs them)", w.Config.Path)
		}
	}
	cfg, err := d.home.ApprovedConfig(rec.Approved, filepath.Join(rec.Path, world.ConfigFile))
	switch {
	case err == nil:
		// Whatever the worktree's file says now (or if it does not load),
		// the approved one says how to run what was started; but the env
		// files it names come from the worktree, so they are pinned where
		// it is now and must be as approved, or a branch checked out since
		// gets its PATH or LD_PRELOAD into the next restart (a review's
		// attack: a health command ran its code after a daemon restart).
		if w, err = world.FromConfig(d.home, repo, wt, cfg); err != nil {
			return bare(), untrusted
		}
		w.PinEnvFiles()
		if !d.home.TrustedWorld(w) {
			d.log.Warn("adopted services will not be restarted: the env files their config names changed since it was approved", "world", rec.Worktree)
			// Not "they keep running the approved config": they keep
			// running, but nothing restarts or checks them now.
			untrusted = fmt.Sprintf("an env_file %s names changed since its services started and is not approved: they keep running, but are not restarted or health-checked ('git binky up' approves it, then 'git binky reload' runs it)", filepath.Join(wt.Path, world.ConfigFile))
			return bare(), untrusted
		}
	case werr != nil || !currentTrusted:
		d.log.Warn("adopted services will not be restarted: no approved config to run them with", "world", rec.Worktree, "err", err)
		if untrusted != "" {
			untrusted = fmt.Sprintf("%s (or an env_file it names) changed since its services started and is not approved, and the config they were started with is not kept: they keep running, but are not restarted or health-checked ('git binky up' approves the new files, then 'git binky reload' runs them)", w.Config.Path)
		}
		return bare(), untrusted
	}
	var names []string
	done := 0
	for _, n := range w.Config.ServiceNames() {
		s := w.Config.Services[n]
		if _, ok := alive[n]; ok && s.Adapter == "" {
			names = append(names, n)
		} else if st := rec.Services[n]; !ok && s.Oneshot && st != nil && st.State == string(supervisor.Done) {
			// Finished: the group has it, done, so that an up finds the
			// world whole and a 'service restart' finds the oneshot.
			names = append(names, n)
			done++
		}
	}
	specs, err = buildSpecs(w, rec, names, env)
	if err != nil || len(specs) != len(alive)+done {
		return bare(), untrusted
	}
	// Adopted services' dependencies may not be running; they are already
	// up, so they wait for nothing.
	for i := range specs {
		specs[i].DependsOn = nil
	}
	return specs, untrusted
}

func findByAdmin(repo *gitx.Repo, admin string) (*gitx.Worktree, error) {
	wts, err := repo.Worktrees()
	if err != nil {
		return nil, err
	}
	for i := range wts {
		if wts[i].AdminDir == admin {
			return &wts[i], nil
		}
	}
	return nil, gitx.ErrNoSuchWorktree
}

// closeAll lets go of every group without stopping its processes.
func (d *Daemon) closeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.worlds {
		if g := r.live.Load(); g != nil {
			g.Close()
		}
	}
}

// recordWorktree opens the repository and worktree a world record names.
func recordWorktree(rec *world.Record) (*gitx.Repo, *gitx.Worktree, error) {
	repo, err := gitx.Open(rec.CommonDir)
	if err != nil {
		return nil, nil, err
	}
	wt, err := findByAdmin(repo, rec.AdminDir)
	return repo, wt, err
}
