package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/procgroup"
	"github.com/git-binky/git-binky/world"
)

// stepEnv is the environment a slice's migrate and seed commands run with:
// the world's (the caller's environment, env files, every coordinate), then
// the names the kind's tools read, filled from this slice's address
// (DATABASE_URL, PGHOST... for Postgres; REDIS_URL for Redis: the table's
// Env column), then the slice service's own env table, which wins. A tool
// such as `miniflux -migrate` or `alembic upgrade head` reads
// DATABASE_URL, not binky's DB_URL.
func stepEnv(w *world.World, rec *world.Record, n string, addr adapters.Address, callerEnv []string) (map[string]string, error) {
	env, err := w.ProcessEnv(rec, callerEnv, n)
	if err != nil {
		return nil, err
	}
	own := w.Config.Services[n].Env
	for k, v := range conventionalEnv(w.Config.Services[n].Adapter, addr) {
		if _, set := own[k]; !set {
			env[k] = v
		}
	}
	return env, nil
}

// stepCallerEnv is the caller's environment for the migrate and seed of a
// slice on the server ref names: on a server binky runs itself, the folder
// of that server's own client programs comes first on PATH, so psql and
// pg_dump are the server's release and, on Debian, skip postgresql-common's
// Perl wrapper (~50-70 ms a call; an up runs migrate on every clone). A
// service's own env table can still set PATH.
func stepCallerEnv(ref string, callerEnv []string) []string {
	kind, ok := strings.CutPrefix(ref, "managed:")
	if !ok {
		return callerEnv
	}
	k, ok := adapters.Lookup(kind)
	if !ok {
		return callerEnv
	}
	return prependPath(callerEnv, k.Server.ClientDir())
}

// prependPath returns env with dir first on its PATH (a copy; env is not
// changed). An env without PATH, or whose PATH starts with dir, is
// returned as it is.
func prependPath(env []string, dir string) []string {
	if dir == "" {
		return env
	}
	for i, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		// Windows spells it Path and matches names in any case; elsewhere
		// a "path" is another variable.
		if k != "PATH" && (runtime.GOOS != "windows" || !strings.EqualFold(k, "PATH")) {
			continue
		}
		if first, _, _ := strings.Cut(v, string(filepath.ListSeparator)); first == dir {
			return env
		}
		out := slices.Clone(env)
		out[i] = k + "=" + dir + string(filepath.ListSeparator) + v
		return out
	}
	return env
}

// conventionalEnv maps the names apps read for a kind (its row's Env
// column) to this slice's address fields; a field the address lacks is
// left out.
func conventionalEnv(adapter string, addr adapters.Address) map[string]string {
	out := map[string]string{}
	k, ok := adapters.Lookup(adapter)
	if !ok {
		return out
	}
	for _, e := range k.Env {
		if v := addr[e.Field]; v != "" {
			if _, done := out[e.Name]; !done {
				out[e.Name] = v
			}
		}
	}
	return out
}

// migrateClone runs the service's migrate command (not seed) on a slice
// just cloned from the golden template: the template was built at the
// migrations of whichever branch built it first, and this branch may add
// some. Migration tools make that a no-op when nothing is pending.
//
// With clone_migrate = "changed" it does not run where the worktree holds
// exactly the files the template was built from (migrateNeedless): each
// run costs a process and a connection (~65 ms here), and seconds for a
// framework's migrate (Rails, Django), on every new worktree of a commit.
// It reports whether the migrate ran.
func (d *Daemon) migrateClone(ctx context.Context, w *world.World, rec *world.Record, n string, a adapters.Adapter, s adapters.Slice,
	origin templateOrigin, callerEnv []string, emit func(api.Event)) (bool, error) {
	svc := w.Config.Services[n]
	if svc.Migrate == "" {
		return false, nil
	}
	if skip, why := migrateNeedless(ctx, w, n, origin); skip {
		emit(api.Event{World: w.Name, Service: n, State: "migrate", Message: "migrate on the clone " + why})
		d.log.Info("clone migrate skipped", "world", w.Name, "service", n, "template", origin.Name, "why", why)
		return false, nil
	} else if why != "" {
		emit(api.Event{World: w.Name, Service: n, State: api.EventNotice, Message: "migrate on the clone " + why})
	}
	addr, err := a.Resolve(ctx, s)
	if err != nil {
		return false, fmt.Errorf("service %s: %w", n, err)
	}
	tmp := *rec
	tmp.Slices = append([]world.SliceRecord(nil), rec.Slices...)
	if cur := findSlice(&tmp, n); cur != nil {
		cur.Address = addr
	} else {
		tmp.Slices = append(tmp.Slices, world.SliceRecord{Service: n, Address: addr})
	}
	env, err := stepEnv(w, &tmp, n, addr, callerEnv)
	if err != nil {
		return false, err
	}
	lookup := w.Lookup(w.Coordinates(&tmp), "", env)
	emit(api.Event{World: w.Name, Service: n, State: "migrate", Message: "migrate (on the clone, for this branch's migrations): " + svc.Migrate})
	logPath := filepath.Join(world.LogDir(w.Worktree.AdminDir), n+".log")
	line, err := world.InterpolateShell(svc.Migrate, lookup)
	if err != nil {
		return false, fmt.Errorf("service %s: migrate: %w", n, err)
	}
	if err := d.runStep(ctx, w.Worktree.Path, world.SortedEnv(env), line, svc.Migrate, logPath); err != nil {
		return false, fmt.Errorf("service %s: migrate %q on the clone of the golden template failed: %w", n, svc.Migrate, err)
	}
	return true, nil
}

// migrateNeedless says, for a service with clone_migrate = "changed",
// whether a migrate on a clone of origin into w's worktree can be skipped
// (the worktree is, now, clean at the commit of the clean worktree that
// built the template) and why, either way; with the default ("always")
// it is never skipped and nothing is said.
func migrateNeedless(ctx context.Context, w *world.World, n string, origin templateOrigin) (skip bool, why string) {
	if svc := w.Config.Services[n]; svc == nil || svc.CloneMigrate != world.CloneMigrateChanged {
		return false, ""
	}
	switch now := snapshot(ctx, w.Worktree); {
	case origin.Commit == "":
		return false, fmt.Sprintf("run: nothing is known of the worktree that built %s (an older binky's, or one with changes): 'git binky golden drop %s' has the next up build it again", origin.Name, origin.Name)
	case !now.clean:
		return false, "run: this worktree has changes or untracked files"
	case now.head != origin.Commit:
		return false, fmt.Sprintf("run: this worktree is at %.12s, the template was built at %.12s", now.head, origin.Commit)
	}
	return true, fmt.Sprintf("not run: this worktree is at %.12s with no changes, as the worktree that built %s was (clone_migrate = \"changed\")", origin.Commit, origin.Name)
}

// worktreeState is a worktree's commit, whether its files are that
// commit's (a status that fails reads as not clean), and its index file's
// identity, which any checkout writes anew.
type worktreeState struct {
	head  string
	clean bool
	index indexStamp
}

type indexStamp struct{ size, mtime int64 }

func snapshot(ctx context.Context, wt *gitx.Worktree) worktreeState {
	head, clean, err := gitx.Snapshot(ctx, wt.Path)
	st := worktreeState{head: head, clean: err == nil && clean && head != ""}
	if fi, err := os.Stat(filepath.Join(wt.AdminDir, "index")); err == nil {
		st.index = indexStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	}
	return st
}

// hookEnv is the environment a world the hook (or `trust`) starts runs
// with: the caller's, which the hook hands over as an explicit up does, so
// ${env.X} reads the shell that ran `git worktree add`, not the daemon's.
// An older hook that sends none gets the daemon's own.
func hookEnv(req api.Request, own []string) []string {
	if len(req.Env) > 0 {
		return req.Env
	}
	return own
}

// unsetEnv refuses an up whose services (and slices, all of which every up
// provisions) read ${env.X}, with no default, that the caller's
// environment and env files do not set: left literal, such a token would
// become an app's password or a server's address.
func unsetEnv(w *world.World, names []string, env []string) error {
	check := append([]string(nil), names...)
	for _, n := range w.Config.ServiceNames() {
		if w.Config.Services[n].Adapter != "" && !slices.Contains(check, n) {
			check = append(check, n)
		}
	}
	var errs []error
	for _, n := range check {
		// (A missing env_file is reported where it is read.)
		if err := w.UnsetEnv(&world.Record{}, env, n); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &api.Error{Code: api.CodeConfig, Message: errors.Join(errs...).Error()}
}

// watcherEnv is the environment for a world the watcher starts (a worktree
// born with no hook to hand over its shell's): that of the last explicit
// up of another world of the same repository this daemon still runs, the
// nearest thing to "the caller"; else the daemon's own. (An unset
// ${env.X} still fails the up, naming it, rather than start a literal.)
func (d *Daemon) watcherEnv(common string) []string {
	recs, err := d.home.Records()
	if !world.OnlyUnreadable(err) {
		return d.env
	}
	for _, rec := range recs {
		if rec.CommonDir != common {
			continue
		}
		r := d.run(rec.ID)
		if !r.mu.TryLock() {
			continue // busy with an up or down: never hold the watcher on it
		}
		env := r.env
		r.mu.Unlock()
		if env != nil {
			return env
		}
	}
	return d.env
}

// A migrate or seed step is marked while it runs: a file under the home
// names it, and every process it starts carries step.<its id> as its mark
// (procgroup.MarkVar). The kernel kills a step's shell with a killed
// daemon (DieWithParent), but not what the shell started: a migration
// tool run by make lived on and wrote into the database the next daemon
// dropped and made again. The next daemon kills whatever still carries
// the mark of a step whose daemon is gone (reapSteps).
func (d *Daemon) stepsDir() string { return filepath.Join(d.home.Dir, "steps") }

// markStep returns the mark of one step's processes, and the function
// that forgets it once the step is over.
func (d *Daemon) markStep() (mark string, unmark func()) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", func() {}
	}
	id := hex.EncodeToString(b[:])
	path := filepath.Join(d.stepsDir(), id)
	self := os.Getpid()
	tick := uint64(0)
	if info, err := procgroup.ReadProc(self); err == nil {
		tick = info.StartTick
	}
	if err := os.MkdirAll(d.stepsDir(), 0o700); err == nil {
		_ = os.WriteFile(path, fmt.Appendf(nil, "%d %d\n", self, tick), 0o600)
	}
	return "step." + id, func() { os.Remove(path) }
}

// reapSteps kills what the steps of a dead daemon left running, once, as
// a daemon starts (before it adopts any world: a world whose up was cut
// off is then made again with nothing writing into it).
func (d *Daemon) reapSteps() {
	entries, err := os.ReadDir(d.stepsDir())
	if err != nil {
		return
	}
	for _, e := range entries {
		path := filepath.Join(d.stepsDir(), e.Name())
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var pid int
		var tick uint64
		if _, err := fmt.Sscan(string(b), &pid, &tick); err == nil && pid != os.Getpid() && procgroup.Alive(pid, tick) {
			continue // a daemon still running it (the one this one replaces)
		}
		if n := procgroup.KillMarked("step." + e.Name()); n > 0 {
			d.log.Warn("killed what a migrate or seed step left running when its daemon died", "processes", n)
		}
		os.Remove(path)
	}
}
