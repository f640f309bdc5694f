package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/fsnotify/fsnotify"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/hooks"
	"github.com/git-binky/git-binky/world"
)

// reconcileEvery is how often every watched repository is compared with the
// world records, whatever fsnotify said: events can be lost, and the daemon
// can be down when a worktree goes.
const reconcileEvery = 30 * time.Second

// debounce is how long after the last event in a repository it is
// reconciled: long enough to take one `git worktree add`'s burst of writes
// as one change.
const debounce = 50 * time.Millisecond

// watcher turns changes under <common>/worktrees/ of registered repositories
// into reconciliations, debounced per repository.
type watcher struct {
	d  *Daemon
	fs *fsnotify.Watcher

	mu      sync.Mutex
	pending map[string]*time.Timer // common dir → debounce timer
	watched map[string]bool

	sweeping atomic.Bool // a reconcileAll of the loop's is at work
}

// newWatcher makes the watcher; it is set on the daemon before any request
// is served, so requests never race its creation.
func (d *Daemon) newWatcher() error {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	d.watch = &watcher{d: d, fs: fw, pending: map[string]*time.Timer{}, watched: map[string]bool{}}
	return nil
}

// start watches the registered repositories and reconciles them, from now
// on and every reconcileEvery.
func (w *watcher) start(ctx context.Context) {
	w.refresh()
	go w.loop(ctx)
	w.reconcileAll(ctx)
}

// refresh adds watches for every registered repository and its worktrees.
func (w *watcher) refresh() {
	repos, err := w.d.home.Repos()
	if err != nil {
		w.d.log.Error("read registered repositories", "err", err)
		return
	}
	for _, r := range repos {
		w.add(r.CommonDir)
		w.add(filepath.Join(r.CommonDir, "worktrees"))
		entries, _ := os.ReadDir(filepath.Join(r.CommonDir, "worktrees"))
		for _, e := range entries {
			if e.IsDir() {
				// The admin dir's gitdir file changes on `git worktree move`.
				w.add(filepath.Join(r.CommonDir, "worktrees", e.Name()))
			}
		}
	}
}

func (w *watcher) add(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watched[path] {
		return
	}
	if err := w.fs.Add(path); err == nil {
		w.watched[path] = true
	}
}

func (w *watcher) forget(path string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.watched, path)
}

func (w *watcher) loop(ctx context.Context) {
	defer w.fs.Close()
	tick := time.NewTicker(reconcileEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.fs.Events:
			if !ok {
				return
			}
			if ev.Op&fsnotify.Remove != 0 {
				w.forget(ev.Name)
			}
			if common := worktreesEvent(ev.Name); common != "" {
				w.schedule(ctx, common)
			}
		case err, ok := <-w.fs.Errors:
			if !ok {
				return
			}
			// An overflow means lost events: look at everything.
			w.d.log.Warn("watcher error; reconciling all", "err", err)
			w.reconcileAllAside(ctx)
		case <-tick.C:
			w.reconcileAllAside(ctx)
		}
	}
}

// worktreesEvent returns the common dir of an event about worktrees:
// <common>/worktrees itself (created or removed) or anything inside it. It
// returns "" for the rest of the common dir (the index, refs, the main
// worktree's own binky folder), which says nothing about worktrees.
func worktreesEvent(path string) string {
	for p := path; p != "/" && p != "."; p = filepath.Dir(p) {
		if filepath.Base(p) == "worktrees" {
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), "HEAD")); err == nil || !exists(filepath.Dir(p)) {
				return filepath.Dir(p)
			}
		}
	}
	return ""
}

// schedule reconciles common a moment after the last event, so that the
// burst of writes of one `git worktree add` is handled once.
func (w *watcher) schedule(ctx context.Context, common string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.pending[common]; ok {
		t.Reset(debounce)
		return
	}
	w.pending[common] = time.AfterFunc(debounce, func() {
		w.mu.Lock()
		delete(w.pending, common)
		w.mu.Unlock()
		// Watched first: a worktree born now is started below, which can
		// take minutes, and a move during its up (a write to its admin
		// folder) must not wait for the periodic look to be seen.
		w.refresh()
		w.d.reconcileRepo(ctx, common)
		w.refresh()
	})
}

// reconcileAllAside runs reconcileAll beside the event loop, one at a
// time: a world it starts can wait in the admission queue or build a
// golden template for minutes, and the loop must go on turning removals
// into teardowns meanwhile.
func (w *watcher) reconcileAllAside(ctx context.Context) {
	if !w.sweeping.CompareAndSwap(false, true) {
		return // the last sweep is still at work; the next tick will do
	}
	go func() {
		defer w.sweeping.Store(false)
		w.reconcileAll(ctx)
	}()
}

// reconcileAll reconciles every registered repository, and every other
// one a world record names: a repository uninstalled (or never
// registered: a world only `env` made) still has its worlds torn down when
// their worktrees go, though nothing new is born of it.
func (w *watcher) reconcileAll(ctx context.Context) {
	var commons []string
	repos, _ := w.d.home.Repos()
	for _, r := range repos {
		commons = append(commons, r.CommonDir)
	}
	recs, _ := w.d.home.Records()
	for _, rec := range recs {
		if rec.CommonDir != "" && !slices.Contains(commons, rec.CommonDir) {
			commons = append(commons, rec.CommonDir)
		}
	}
	for _, common := range commons {
		w.d.reconcileRepo(ctx, common)
	}
	w.refresh()
}

// reconcileRepo makes the worlds of one repository match git's worktrees:
// a worktree born since we last looked is provisioned per [project] auto; a
// world whose admin folder is gone is torn down from its machine record; a
// world whose worktree moved follows it.
func (d *Daemon) reconcileRepo(ctx context.Context, common string) {
	d.endQueuedOfGone(common)
	repo, born := d.reconcileRecords(ctx, common)
	// Starting a world can take a while; it happens outside the repository
	// lock so that another worktree's removal is not held up by it. Worlds
	// born together (added while no daemon ran, or lost by one that died)
	// start at once, as their hooks would have started them: admission
	// queues them past max_parallel, not one whole up after another.
	var wg sync.WaitGroup
	for _, wt := range born {
		d.log.Info("worktree born", "repo", common, "worktree", wt.Name, "no_checkout", wt.NoCheckout)
		env := d.watcherEnv(common)
		if saved, ok := d.lostUpEnv(common, wt); ok {
			env = saved // the environment its hook gave the up a daemon lost
		}
		// Counted as a request, so that a stop finishes it; one seen
		// while the daemon stops is the next daemon's.
		if !d.background() {
			d.markLost(repo, &wt, env)
			continue
		}
		wg.Go(func() {
			defer d.requests.Done()
			d.autoBorn(context.WithoutCancel(ctx), repo, &wt, env)
		})
	}
	wg.Wait()
}

// endQueuedOfGone ends the queued ups of common's worktrees whose folder
// is gone: with no record yet, teardown does not see them, and a removed
// worktree's up stood first in the queue until a place freed.
func (d *Daemon) endQueuedOfGone(common string) {
	d.mu.Lock()
	var runs []*worldRun
	for id, q := range d.queued {
		if r := d.worlds[id]; r != nil && q.common == common && q.world.Path != "" && !exists(q.world.Path) {
			runs = append(runs, r)
		}
	}
	d.mu.Unlock()
	for _, r := range runs {
		r.endUp(nil) // its up says its worktree was removed while it waited
	}
}

// reconcileRecords tears down and moves worlds to match git, under the
// repository's lock, and returns the worktrees born since the last look.
func (d *Daemon) reconcileRecords(ctx context.Context, common string) (*gitx.Repo, []gitx.Worktree) {
	defer d.repoLock(common)()
	repo, err := gitx.Open(common)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || !exists(common) {
			d.repoGone(ctx, common)
		}
		return nil, nil
	}
	d.mu.Lock()
	delete(d.repoMissing, common)
	d.mu.Unlock()
	wts, err := repo.Worktrees()
	if err != nil {
		d.log.Error("list worktrees", "repo", common, "err", err)
		return nil, nil
	}
	byAdmin := map[string]gitx.Worktree{}
	for _, wt := range wts {
		byAdmin[wt.AdminDir] = wt
	}
	d.forgetUnchecked(common, byAdmin)
	recs, _ := d.home.Records()
	var reborn []string
	for _, rec := range recs {
		if rec.CommonDir != common {
			continue
		}
		wt, ok := byAdmin[rec.AdminDir]
		switch {
		case !ok:
			d.teardown(ctx, rec, "its worktree was removed")
		case d.retireReplaced(ctx, rec):
			// Removed and made again under its name while nobody
			// looked: the new worktree is born, with a world of its own.
			reborn = append(reborn, wt.Name)
		case wt.Path != rec.Path && !wt.Missing:
			d.follow(ctx, rec, repo, wt)
		}
	}
	reg, registered := d.repoRecord(common)
	if !registered {
		// Uninstalled while watched: its worlds are still torn down and
		// followed above, but nothing new is born of it, and it is not
		// registered again behind the user's back (an up registers it).
		return repo, nil
	}
	var born []gitx.Worktree
	var names []string
	for _, wt := range wts {
		if wt.Main {
			continue
		}
		if wt.NoCheckout && !slices.Contains(reg.Seen, wt.Name) && !d.home.HasRecord(world.WorldID(common, wt.AdminDir)) && d.stillCheckingOut(ctx, common, wt) {
			continue // not seen yet: looked at again in a moment
		}
		d.mu.Lock()
		lost := d.lost[wt.AdminDir]
		d.mu.Unlock()
		if !lost && !slices.Contains(reg.Seen, wt.Name) && !d.home.HasRecord(world.WorldID(common, wt.AdminDir)) && d.hookOnItsWay(ctx, common, wt) {
			continue // not seen yet: its hook may claim it first
		}
		names = append(names, wt.Name)
		d.mu.Lock()
		delete(d.lost, wt.AdminDir)
		d.mu.Unlock()
		if (lost || slices.Contains(reborn, wt.Name) || !slices.Contains(reg.Seen, wt.Name)) && !d.home.HasRecord(world.WorldID(common, wt.AdminDir)) {
			if !utf8.ValidString(wt.Path) {
				// Its world could not be reached from its own folder (the
				// client sends paths as JSON, which is UTF-8): not started.
				d.log.Warn("worktree born with a path not in UTF-8: its world is not started", "worktree", world.Inert(wt.Path))
				continue
			}
			born = append(born, wt)
		}
	}
	// Seen becomes exactly the worktrees that exist: a name git reuses
	// after a removal is a new worktree again.
	if !slices.Equal(reg.Seen, names) {
		reg.Seen = names
		_ = d.home.SaveRepo(reg)
	}
	return repo, born
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// lostEnvPath is where the environment of a world's automatic up is kept
// while the up is under way (auto), for the daemon that finds it lost.
func (d *Daemon) lostEnvPath(id string) string {
	return filepath.Join(d.home.Dir, "pending-ups", id+".env")
}

// lostUpEnv is the environment an automatic up of wt that a daemon lost
// was given, if one was kept.
func (d *Daemon) lostUpEnv(common string, wt gitx.Worktree) ([]string, bool) {
	if !exists(pendingUpPath(wt.AdminDir)) {
		return nil, false
	}
	b, err := os.ReadFile(d.lostEnvPath(world.WorldID(common, wt.AdminDir)))
	if err != nil {
		return nil, false
	}
	var env []string
	if json.Unmarshal(b, &env) != nil {
		return nil, false
	}
	return env, true
}

// findLost notes the worktrees of registered repositories whose automatic
// up a daemon before this one began and never ended (its mark is there,
// pendingUpPath) and that have no world (lost): a queued up is only in its
// daemon's memory, and one a daemon that died or stopped had queued was
// lost for good (an attack found it). It runs before any up of this
// daemon can begin, so none of them is an up under way here; auto() then
// does what their config says, as it would have when they were born. A
// worktree that merely has no world (one that was there when its
// repository was registered) has no mark, and is left alone.
func (d *Daemon) findLost() {
	repos, err := d.home.Repos()
	if err != nil {
		return
	}
	for _, reg := range repos {
		repo, err := gitx.Open(reg.CommonDir)
		if err != nil {
			continue
		}
		wts, err := repo.Worktrees()
		if err != nil {
			continue
		}
		for _, wt := range wts {
			if wt.Main || !exists(pendingUpPath(wt.AdminDir)) {
				continue
			}
			if id := world.WorldID(reg.CommonDir, wt.AdminDir); d.home.HasRecord(id) {
				os.Remove(pendingUpPath(wt.AdminDir)) // it got its world after all
				os.Remove(d.lostEnvPath(id))
				continue
			}
			d.mu.Lock()
			d.lost[wt.AdminDir] = true
			d.mu.Unlock()
		}
	}
}

// noCheckoutWait is how long a new worktree without an index may be git
// about to check its files out before the watcher takes it for `git
// worktree add --no-checkout`, which only provisions its world; while git
// holds the worktree's index.lock (checking out a large tree), it waits
// on, up to checkoutLockWait.
const (
	noCheckoutWait   = 3 * time.Second
	checkoutLockWait = 10 * time.Minute
)

// stillCheckingOut reports whether wt, new and with no files checked out
// yet, may still be getting them: then the watcher looks at the repository
// again in a moment rather than decide (an index written after the add's
// first events can go unseen, and the world would never start). One look
// again at a time per worktree.
func (d *Daemon) stillCheckingOut(ctx context.Context, common string, wt gitx.Worktree) bool {
	d.mu.Lock()
	u, ok := d.unchecked[wt.AdminDir]
	if !ok {
		u = &unchecked{first: time.Now()}
		d.unchecked[wt.AdminDir] = u
	}
	age := time.Since(u.first)
	waiting := age < d.noCheckoutAfter || (age < checkoutLockWait && exists(filepath.Join(wt.AdminDir, "index.lock")))
	arm := waiting && !u.armed
	if arm {
		u.armed = true
	}
	if !waiting {
		delete(d.unchecked, wt.AdminDir)
	}
	every := d.recheckEvery
	d.mu.Unlock()
	if arm {
		d.lookAgain(ctx, common, u, every)
	}
	return waiting
}

// lookAgain reconciles common's worktrees again after d, for a worktree
// whose look again (u, armed by the caller) it is.
func (d *Daemon) lookAgain(ctx context.Context, common string, u *unchecked, after time.Duration) {
	time.AfterFunc(after, func() {
		d.mu.Lock()
		u.armed = false
		d.mu.Unlock()
		if ctx.Err() == nil {
			d.reconcileRepo(ctx, common)
		}
	})
}

// hookGrace is how long the watcher leaves a new worktree to the hook of
// its add. The hook runs once git has checked the files out, and its
// event can come after the watcher's look (a busy machine): the world
// then started with the daemon's environment, not the shell's, and an
// ${env.X} only the shell had failed its up.
const hookGrace = time.Second

// hookOnItsWay reports whether wt, new to the watcher, may still get its
// hook's event: then the repository is looked at again in a moment, and
// by then the hook has marked it seen and started it, or the watcher does.
func (d *Daemon) hookOnItsWay(ctx context.Context, common string, wt gitx.Worktree) bool {
	d.mu.Lock()
	u, ok := d.awaitingHook[wt.AdminDir]
	if !ok {
		u = &unchecked{first: time.Now()}
		d.awaitingHook[wt.AdminDir] = u
	}
	wait := d.hookAfter
	waiting := time.Since(u.first) < wait
	arm := waiting && !u.armed
	if arm {
		u.armed = true
	}
	if !waiting {
		delete(d.awaitingHook, wt.AdminDir)
	}
	d.mu.Unlock()
	if arm {
		d.lookAgain(ctx, common, u, wait-time.Since(u.first)+10*time.Millisecond)
	}
	return waiting
}

// unchecked is a new worktree seen without its files: since when, and
// whether a look again is on its way.
type unchecked struct {
	first time.Time
	armed bool
}

// forgetUnchecked drops what stillCheckingOut kept of common's worktrees
// that have their files now, or are gone: a worktree made again under the
// same name later must wait afresh.
func (d *Daemon) forgetUnchecked(common string, byAdmin map[string]gitx.Worktree) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for admin := range d.unchecked {
		if filepath.Dir(filepath.Dir(admin)) != common {
			continue
		}
		if wt, ok := byAdmin[admin]; !ok || !wt.NoCheckout {
			delete(d.unchecked, admin)
		}
	}
	for admin := range d.awaitingHook {
		if _, ok := byAdmin[admin]; !ok && filepath.Dir(filepath.Dir(admin)) == common {
			delete(d.awaitingHook, admin)
		}
	}
}

// repoRecord is the registry's record of a repository, and whether it is
// registered (if not, a new record to register it with).
func (d *Daemon) repoRecord(common string) (world.Repo, bool) {
	repos, _ := d.home.Repos()
	for _, r := range repos {
		if r.CommonDir == common {
			return r, true
		}
	}
	return world.Repo{CommonDir: common, Registered: time.Now().UTC()}, false
}

// auto does what [project] auto says for a worktree that appeared: start
// its world ("up"), only allocate ports and slices ("provision"), or
// nothing ("off"). Only a config the user approved is acted on.
func (d *Daemon) auto(ctx context.Context, repo *gitx.Repo, wt *gitx.Worktree, env []string) {
	// Until the up has made the world's record (it may wait its turn for
	// long), only this daemon's memory knows of it: a mark on disk says so
	// to the next daemon should this one die or stop meanwhile (findLost).
	// However auto ends, the mark goes (a lost up found again whose config
	// says off, or is not approved, is not lost again at every start),
	// unless this daemon's own stop cut the up off: the next daemon does
	// it. Kept with a world made after all, findLost drops it then.
	pending := pendingUpPath(wt.AdminDir)
	savedEnv := d.lostEnvPath(world.WorldID(repo.CommonDir, wt.AdminDir))
	defer func() {
		if ctx.Err() == nil && !d.stopping() {
			os.Remove(pending)
			os.Remove(savedEnv)
		}
	}()
	w, err := world.FromWorktree(d.home, repo, wt)
	if err != nil {
		if !errors.Is(err, world.ErrNoConfig) {
			d.log.Warn("new worktree has a config binky cannot use", "worktree", wt.Path, "err", err)
		}
		return
	}
	mode := w.Config.Project.Auto
	if mode == "off" {
		return
	}
	// Read once: a provision's migrate and seed get the bytes judged here
	// (an up pins them again itself).
	w.PinEnvFiles()
	if !d.home.TrustedWorld(w) {
		_, _ = w.Note(ctx, func(r *world.Record) error {
			r.State, r.Reason = world.StateUntrusted, untrustedReason(d.home, w)
			return nil
		})
		d.log.Info("not starting a world whose binky.toml is not trusted", "worktree", wt.Path)
		return
	}
	if mode == "provision" || wt.NoCheckout {
		rec, err := w.Update(ctx, func(r *world.Record) error {
			if r.State == world.StateNew || r.State == world.StateUntrusted {
				r.State = world.StateProvisioned
			}
			return nil
		})
		// Slices need the worktree's files (migrate and seed run there).
		if err == nil && !wt.NoCheckout {
			_, err = d.provisionSlices(ctx, w, rec, env, func(api.Event) {})
			d.startWantedBlanks()
		}
		if err != nil {
			d.log.Error("provision", "worktree", wt.Path, "err", err)
			d.noteAutoFailed(w, "its automatic provision", err)
		}
		return
	}
	d.markLost(repo, wt, env)
	if _, err := d.up(ctx, api.OpUp, w, "", nil, env, func(api.Event) {}); err != nil {
		d.log.Error("auto up failed", "worktree", wt.Path, "err", err)
		d.noteAutoFailed(w, "its automatic up", err)
	}
}

// noteAutoFailed records why the start git worktree add asked for failed,
// when the up did not get as far as saying so itself (an unset
// ${env.X}, a group the file lacks): nobody waits on that up, and status
// showed the world "new", with its reason in daemon.log alone.
func (d *Daemon) noteAutoFailed(w *world.World, what string, err error) {
	if d.stopping() || errors.Is(err, errDownCameFirst) || errors.Is(err, errTakenOutOfQueue) || errors.Is(err, context.Canceled) {
		return // the next daemon takes the up; or a down ended it, as asked
	}
	_, _ = w.Note(context.Background(), func(r *world.Record) error {
		if r.State == world.StateNew || r.State == world.StateProvisioned || r.State == "" {
			r.State, r.Reason = world.StateFailed, fmt.Sprintf("%s (after git worktree add) failed: %v", what, err)
		}
		return nil
	})
}

// markLost marks a new worktree as one whose up only this daemon knows of
// (findLost), with the environment it starts with: the shell's that ran
// `git worktree add`, kept in the home beside the other copies of worlds'
// secrets, never in the repository, since the next daemon's up of it would
// otherwise have whichever command woke that daemon's.
func (d *Daemon) markLost(repo *gitx.Repo, wt *gitx.Worktree, env []string) {
	if _, err := world.MakeStateDir(wt.AdminDir, wt.Path); err == nil {
		_ = os.WriteFile(pendingUpPath(wt.AdminDir), nil, 0o600)
	}
	savedEnv := d.lostEnvPath(world.WorldID(repo.CommonDir, wt.AdminDir))
	if b, err := json.Marshal(env); err == nil && os.MkdirAll(filepath.Dir(savedEnv), 0o700) == nil {
		_ = world.WriteFileAtomic(savedEnv, b, 0o600)
	}
}

// deferHook leaves a git event that came while the daemon stops to the
// next daemon: a new worktree is marked as one whose up is lost, which the
// next daemon starts with the environment of the command that made it.
// (A checkout's reload, or a start after an approval, is the next up's.)
func (d *Daemon) deferHook(req api.Request) {
	repo, wt, err := gitx.Discover(req.Dir)
	if err != nil || req.Event != api.EventBorn || wt.Main {
		d.log.Info("a git event came while the daemon stops: left to the next up", "event", req.Event, "dir", world.Inert(req.Dir))
		return
	}
	d.markLost(repo, wt, hookEnv(req, d.env))
	d.log.Info("a new worktree came while the daemon stops: the next daemon starts its world", "worktree", world.Inert(wt.Path))
}

// autoBorn is auto for a worktree seen born, once however many saw it:
// a second up queued behind the first started its services again, or,
// the worktree removed meanwhile, stood queued in status for a removed
// worktree (an attack: the hook and the watcher at once, max_parallel
// full).
func (d *Daemon) autoBorn(ctx context.Context, repo *gitx.Repo, wt *gitx.Worktree, env []string) {
	d.mu.Lock()
	if d.bornUps[wt.AdminDir] {
		d.mu.Unlock()
		d.log.Info("worktree born: its up is already under way", "worktree", wt.Path)
		return
	}
	d.bornUps[wt.AdminDir] = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.bornUps, wt.AdminDir)
		d.forgetDownBornLocked(wt.AdminDir)
		d.mu.Unlock()
	}()
	d.auto(context.WithValue(ctx, bornUp{}, wt.AdminDir), repo, wt, env)
}

// forgetDownBornLocked drops a down's word for admin's born up once no up
// of it is under way (d.mu held): a later worktree of that folder must not
// have its up ended by it.
func (d *Daemon) forgetDownBornLocked(admin string) {
	if d.hookBorn[admin] == 0 && !d.bornUps[admin] {
		delete(d.downBorn, admin)
	}
}

// bornUp is the context key of an up for a worktree being born: its admin
// folder.
type bornUp struct{}

// downBeforeBornUp reports whether a down named the worktree of ctx's
// born up before that up took the world's lock: the up then starts
// nothing. (A down that came later found the world and stopped it.)
func (d *Daemon) downBeforeBornUp(ctx context.Context) bool {
	admin, _ := ctx.Value(bornUp{}).(string)
	if admin == "" {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.downBorn[admin]
}

// pendingUpPath marks a worktree whose automatic up has begun and not
// ended.
func pendingUpPath(adminDir string) string { return filepath.Join(adminDir, "binky", "pending-up") }

func untrustedReason(h world.Home, w *world.World) string {
	// Which file, and how: a new worktree without the uncommitted .env
	// its approval saw is told to copy it in, not that binky.toml changed.
	return fmt.Sprintf("%s is not approved on this machine: %s. 'git binky up' in the worktree approves what is there and starts the world", w.Config.Path, h.Untrusted(w.Config.Source, w.Config.Path))
}

// retireReplaced tears down rec's world when its admin folder now belongs
// to another worktree (world.AdminFolderReplaced), and reports whether it
// did. Without it a new worktree that git gave a removed one's name would
// be handed the old world, its ports and its data.
func (d *Daemon) retireReplaced(ctx context.Context, rec *world.Record) bool {
	replaced, err := d.home.AdminFolderReplaced(ctx, rec.ID)
	if err != nil || !replaced {
		return false
	}
	d.teardown(ctx, rec, "its worktree was removed; a new worktree took its name")
	return true
}

// teardown destroys a world whose worktree git already removed: the machine
// record says what to stop and release.
//
// It runs under the repository's lock (a new worktree of the same name,
// which would be the same world, waits for it), so it does not wait behind
// an up of the world either: an up that holds the world's lock (queued for
// admission, provisioning) is ended, again until the lock is had (the up
// may not have said how to end it yet).
func (d *Daemon) teardown(ctx context.Context, rec *world.Record, why string) (left []string) {
	r, err := d.lockRunEnding(ctx, rec.ID, func(r *worldRun) {
		r.endUp(nil)
		r.endStart() // a oneshot that never ends must not hold a removed worktree's world
	})
	if err != nil {
		return []string{fmt.Sprintf("world %s was not torn down: %v", rec.Worktree, err)}
	}
	defer r.mu.Unlock()
	if cur, err := d.home.LoadRecord(rec.ID); err == nil && !cur.Created.Equal(rec.Created) {
		return nil // another world of the same id since: not the one whose worktree went
	}
	if err := d.stopLocked(ctx, r); err != nil {
		d.log.Error("teardown: stop", "world", rec.Worktree, "err", err)
	}
	left, err = d.forget(ctx, rec.ID, nil) // teardownSlices logged what it left
	if err != nil {
		d.log.Error("teardown: forget", "world", rec.Worktree, "err", err)
		return append(left, err.Error())
	}
	d.retire(r)
	d.log.Info("world torn down", "world", rec.Worktree, "project", rec.Project, "why", why)
	return left
}

// repoGoneGrace is how long a watched repository must stay missing before
// its worlds are torn down: a folder renamed and back, or a disk unmounted
// for a while, costs no world its data. It is time alone: past it, a moved
// repository's main world (its folder went with it) is torn down; its
// linked worktrees' worlds are kept while their folders are there (and
// wait for `git worktree repair`).
const repoGoneGrace = 10 * time.Minute

// repoGone acts on a look that found the repository common missing. The
// first look only notes it; once it has been missing on every look for
// repoGoneAfter, the worlds whose worktree folder is gone too are torn
// down. A world whose folder is still there (a linked worktree outside a
// moved repository) is kept: its data waits for the repository to come
// back, and `git binky remove` or gc drops it if it never does.
func (d *Daemon) repoGone(ctx context.Context, common string) {
	d.mu.Lock()
	m, seen := d.repoMissing[common]
	if !seen {
		m = &missingRepo{since: time.Now()}
		d.repoMissing[common] = m
	}
	due := time.Since(m.since) >= d.repoGoneAfter
	d.mu.Unlock()
	if !seen {
		d.log.Warn("watched repository is missing; its worlds are kept for now", "repo", common, "torn_down_if_still_missing_after", d.repoGoneAfter.String())
	}
	if !seen || !due {
		return
	}
	recs, _ := d.home.Records()
	kept := 0
	for _, rec := range recs {
		if rec.CommonDir != common {
			continue
		}
		if rec.Path != "" && exists(rec.Path) {
			kept++
			continue
		}
		d.teardown(ctx, rec, "its repository and its worktree are gone")
	}
	if kept > 0 {
		d.mu.Lock()
		said := m.saidKept
		m.saidKept = true
		d.mu.Unlock()
		if !said {
			d.log.Warn("repository gone, but worktrees of it are still there; their worlds are kept", "repo", common, "kept", kept)
		}
		return
	}
	d.log.Warn("watched repository is gone; its worlds were torn down", "repo", common)
	_ = d.home.UnregisterRepo(common)
	d.mu.Lock()
	delete(d.repoMissing, common)
	d.mu.Unlock()
}

// missingRepo is a watched repository seen missing: since when, and
// whether the worlds kept for worktrees still there were reported.
type missingRepo struct {
	since    time.Time
	saidKept bool
}

// follow moves a world's record to its worktree's new path (`git worktree
// move`) and restarts its running services there.
func (d *Daemon) follow(ctx context.Context, rec *world.Record, repo *gitx.Repo, wt gitx.Worktree) {
	// An up under way when the worktree moved fails at the old path (its
	// services' folder is gone) and leaves no group: the world was meant
	// to run all the same, and so was one whose up failed just before
	// this saw the move.
	d.mu.Lock()
	upping := d.worlds[rec.ID] != nil && d.worlds[rec.ID].ending.Load() != nil
	d.mu.Unlock()
	r, err := d.lockRunOf(ctx, rec.ID)
	if err != nil {
		return
	}
	running := r.group != nil || upping || d.failedByMove(rec.ID, wt)
	env, ran := r.env, r.names
	w, err := world.FromWorktree(d.home, repo, &wt)
	untrusted := err == nil && !d.home.TrustedConfig(w.Config)
	if running && untrusted && rec.Approved != "" {
		// The moved worktree's binky.toml is not the approved one: the
		// services restart there on the config approved before, as a
		// crash restart does, and the world says the file is not it.
		if cfg, err := d.home.ApprovedConfig(rec.Approved, w.Config.Path); err == nil {
			msg := fmt.Sprintf("moved to %s, where %s is not the approved config: the services run the approved one ('git binky up' approves the new file, then 'git binky reload' runs it)", wt.Path, w.Config.Path)
			w.Config, untrusted = cfg, false
			defer d.setState(w.ID, world.StateUntrusted, msg)
		}
	}
	if running && untrusted {
		// No approved config to restart on: a restart would refuse the
		// file and leave the world stopped, so the services keep running
		// as they were (their folder moved with them). Recorded without
		// allocating: the unapproved file's ports are not to be held.
		_, err = w.Note(ctx, func(*world.Record) error { return nil })
		r.mu.Unlock()
		if err != nil {
			d.log.Error("move: update record", "world", rec.Worktree, "err", err)
			return
		}
		d.setState(w.ID, world.StateUntrusted, fmt.Sprintf("moved to %s; %s is not approved, so the services keep running as they were ('git binky up' approves it, then 'git binky reload' restarts them there)", wt.Path, w.Config.Path))
		d.log.Info("world followed its worktree", "world", rec.Worktree, "from", rec.Path, "to", wt.Path, "restart", false, "untrusted", true)
		return
	}
	if running {
		if err := d.stopLocked(ctx, r); err != nil {
			d.log.Error("move: stop", "world", rec.Worktree, "err", err)
		}
	}
	switch {
	case err == nil && untrusted:
		// An unapproved world holds no ports (a review moved eight worktrees
		// of a branch asking for 128 each and took the whole range).
		_, err = w.Note(ctx, func(*world.Record) error { return nil })
	case err == nil:
		_, err = w.Update(ctx, func(*world.Record) error { return nil })
	}
	r.mu.Unlock()
	if err != nil {
		d.log.Error("move: update record", "world", rec.Worktree, "err", err)
		return
	}
	d.log.Info("world followed its worktree", "world", rec.Worktree, "from", rec.Path, "to", wt.Path, "restart", running)
	if running {
		if env == nil {
			env = d.env
		}
		if _, err := d.up(ctx, api.OpUp, w, "", ran, env, func(api.Event) {}); err != nil {
			d.log.Error("move: restart", "world", rec.Worktree, "err", err)
		}
	}
}

// failedByMove reports whether a world's up failed after its worktree
// moved (its last save, which said failed, came after git rewrote the
// admin folder's gitdir for the move): one that failed before is not
// started by a move.
func (d *Daemon) failedByMove(id string, wt gitx.Worktree) bool {
	cur, err := d.home.LoadRecord(id)
	if err != nil || cur.State != world.StateFailed {
		return false
	}
	moved, err := os.Stat(filepath.Join(wt.AdminDir, "gitdir"))
	return err == nil && !cur.Updated.Before(moved.ModTime())
}

// hook handles a git event the post-checkout hook handed over.
func (d *Daemon) hook(ctx context.Context, req api.Request) {
	if req.Event == api.EventBorn {
		// Known at once, before the waits below: a down that comes during
		// them ends this up before it starts anything.
		if _, wt, err := gitx.Discover(req.Dir); err == nil && wt != nil && !wt.Main {
			d.mu.Lock()
			d.hookBorn[wt.AdminDir]++
			d.mu.Unlock()
			defer func() {
				d.mu.Lock()
				if d.hookBorn[wt.AdminDir]--; d.hookBorn[wt.AdminDir] <= 0 {
					delete(d.hookBorn, wt.AdminDir)
				}
				d.forgetDownBornLocked(wt.AdminDir)
				d.mu.Unlock()
			}()
		}
	}
	<-d.adopted
	repo, wt, err := gitx.Discover(req.Dir)
	if err != nil {
		return
	}
	switch req.Event {
	case api.EventBorn, api.EventTrusted:
		if wt.Main && req.Event == api.EventBorn {
			return
		}
		// A removed worktree's name given to this one: the old world is
		// not this worktree's.
		if rec, err := d.home.LoadRecord(world.WorldID(repo.CommonDir, wt.AdminDir)); err == nil && !wt.Main {
			func() {
				defer d.repoLock(repo.CommonDir)()
				d.retireReplaced(ctx, rec)
			}()
		}
		// Seen is updated under the repository's lock; starting the world
		// happens outside it, so a slow start holds up no removal.
		d.markSeen(repo.CommonDir, wt)
		if req.Event == api.EventBorn {
			d.autoBorn(ctx, repo, wt, hookEnv(req, d.env))
		} else {
			d.auto(ctx, repo, wt, hookEnv(req, d.env))
		}
	case api.EventCheckout:
		w, err := world.FromWorktree(d.home, repo, wt)
		if err != nil {
			return
		}
		if !d.home.TrustedConfig(w.Config) {
			// The running services keep the approved config (a crash
			// restart runs it); status says the worktree's file is not it.
			if d.running(w.ID) {
				d.setState(w.ID, world.StateUntrusted, fmt.Sprintf("%s (or an env_file it names) changed (checkout) and is not approved: the services keep running the approved config ('git binky up' approves the new file, then 'git binky reload' runs it)", w.Config.Path))
			}
			return
		}
		if rec, err := d.home.LoadRecord(w.ID); err == nil && rec.State == world.StateUntrusted && d.running(w.ID) {
			d.setState(w.ID, world.StateRunning, "") // back on an approved file
		}
		if !w.Config.Project.ReloadOnCheckout {
			return
		}
		gitDir := wt.AdminDir
		if wt.Main {
			gitDir = repo.CommonDir
		}
		if exists(filepath.Join(gitDir, "rebase-merge")) || exists(filepath.Join(gitDir, "rebase-apply")) {
			// A rebase checks out a detached HEAD first, then picks, then
			// moves the branch with no checkout: a reload here ran the
			// services on a half-rebased tree with BINKY_BRANCH empty, and
			// nothing reloaded them after. The branch is the same at its
			// end: the world runs on.
			d.log.Info("reload on checkout skipped: a rebase is in progress", "worktree", wt.Path)
			return
		}
		r, err := d.lockRunOf(ctx, w.ID)
		if err != nil {
			return
		}
		running := r.group != nil
		env, ran := r.env, r.names
		if running {
			_ = d.stopLocked(ctx, r)
		}
		r.mu.Unlock()
		if running {
			if env == nil {
				env = d.env
			}
			if _, err := d.up(ctx, api.OpUp, w, "", ran, env, func(api.Event) {}); err != nil {
				d.log.Error("reload on checkout", "worktree", wt.Path, "err", err)
			}
		}
	}
}

// markSeen records that a worktree has been accounted for, so the watcher
// does not treat it as born a second time.
func (d *Daemon) markSeen(common string, wt *gitx.Worktree) {
	defer d.repoLock(common)()
	reg, _ := d.repoRecord(common)
	d.addSeen(reg, wt)
}

// markSeenLocked is markSeen for a caller that holds the repository's
// lock, in a repository that is registered already (in one that is not,
// the watcher sees nothing born, and the up registers it with every
// worktree it has then as seen).
func (d *Daemon) markSeenLocked(common string, wt *gitx.Worktree) {
	if reg, ok := d.repoRecord(common); ok {
		d.addSeen(reg, wt)
	}
}

func (d *Daemon) addSeen(reg world.Repo, wt *gitx.Worktree) {
	// Taken: a worktree made again under this name later waits afresh.
	d.mu.Lock()
	delete(d.awaitingHook, wt.AdminDir)
	d.mu.Unlock()
	if !wt.Main && !slices.Contains(reg.Seen, wt.Name) {
		reg.Seen = append(reg.Seen, wt.Name)
		_ = d.home.SaveRepo(reg)
	}
}

// registerRepo installs the hook and registers the repository of w for the
// watcher, once; `up` does this so that a user who never ran install still
// gets teardown on `git worktree remove`.
//
// Installing the hook runs git twice (~40 ms): it goes on beside the up,
// which waits for it (the returned func) before it answers.
func (d *Daemon) registerRepo(ctx context.Context, w *world.World) (wait func()) {
	var seen []string
	wts, _ := w.Repo.Worktrees()
	for _, wt := range wts {
		if !wt.Main {
			seen = append(seen, wt.Name)
		}
	}
	added, err := d.home.RegisterRepo(w.Repo.CommonDir, seen)
	if err != nil || !added {
		return func() {}
	}
	if d.watch != nil {
		d.watch.refresh()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Not cut off with its up's client, but bounded: a git stuck on a
		// lock must not hold the up's answer for good.
		ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := hooks.Install(ictx, w.Worktree.Path); err != nil {
			d.log.Warn("could not install the post-checkout hook", "repo", w.Repo.CommonDir, "err", err)
		}
	}()
	return func() { <-done }
}

// running reports whether this daemon supervises services of the world.
func (d *Daemon) running(id string) bool {
	r := d.run(id)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.group != nil
}
