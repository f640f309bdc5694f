package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/world"
)

// A plain PostgreSQL slice (no clone_from) is a copy of template1: its up
// waited for CREATE DATABASE (80-100 ms through the WAL on the bench VM)
// and a connection into the new database to hand its schema public over,
// ~100 ms of a ~250 ms up (docs/performance.md, round 22). On the server
// binky runs itself, plain slices are instead cloned from a blank
// template: a database made from template1 once per home, whose spares
// (adapters/postgres) are made in the background, so that a plain world's
// up renames a prepared copy, as a golden clone's does. The migrate and
// seed still run on every plain world: the blank carries nothing of them.
//
// Only there: template1 on a server of the user's may change (an
// extension added for every new database), and a blank made before the
// change would keep worlds from it. binky's own server closes template1
// to every role (Harden); only someone using its admin password changes
// it, and then 'git binky golden drop' of the blank brings the change to
// later plain worlds.
//
// The first plain world of a home makes its database the old way, and the
// blank is built once no up is under way: no up waits for it or its first
// copy, nor runs beside them. Later ones take the blank's spare once it
// exists.

// blankName is the name of the blank template of kind on the server ref,
// this home's: the home is in it, as in a golden template's.
func blankName(kind, ref, homeID string) string {
	sum := sha256.Sum256([]byte("blank\x00" + kind + "\x00" + ref + "\x00" + homeID))
	return "binky_blank_" + hex.EncodeToString(sum[:5])
}

// copiesTemplate1 reports whether a new slice of kind is a copy the
// server makes of a template database while the up waits: PostgreSQL's
// CREATE DATABASE. A MySQL database or a Redis prefix costs nothing to
// make.
func copiesTemplate1(kind string) bool { return kind == "postgres" }

// blankTemplate returns the name of the blank template a plain slice s of
// kind may be cloned from now, and the release of this up's turn at it;
// else "", after asking for what is missing (the blank's build, its
// spare). Only for binky's own server (ref "managed:<kind>").
//
// The blank is worth taking only as its spare, renamed: with none made or
// being made, its clone would start one and wait for its whole copy (two
// checkpoints, 200-400 ms here), where template1's copy is 80-100 ms. And
// one up at a time takes it: ups that arrived together each waited for the
// spare made behind the one before (six at once: their copies 9, 411, 876,
// 948, 940 and 1072 ms), where copies of template1 run side by side. The
// others make their databases from template1, as before.
func (d *Daemon) blankTemplate(ctx context.Context, a adapters.Adapter, kind, ref string, s adapters.Slice, secret []byte) (string, func()) {
	sp, ok := a.(adapters.Sparer)
	if !copiesTemplate1(kind) || !strings.HasPrefix(ref, "managed:") || !ok {
		return "", nil
	}
	name := blankName(kind, ref, s.Home)
	build := func() { d.buildBlankLater(a, kind, ref, name, s.Home, s.AdminURL, secret) }
	marker := filepath.Join(d.home.GoldenDir(), name+".json")
	if _, err := os.Stat(marker); err != nil {
		d.wantBlank(name, build)
		return "", nil
	}
	// Under its lock, as a golden template is prepared: two preparations
	// at once conflict. Held by a build or a drop, it is waited for 100 ms
	// at most.
	unlock, ok := d.tryGoldenLock(ctx, name)
	if !ok {
		return "", nil
	}
	defer unlock()
	switch there, err := templateExists(ctx, a, s.AdminURL, name); {
	case err != nil:
		// Not known: left as it is, and not used this time.
		d.log.Warn("blank template not used: cannot tell whether it is on its server", "name", name, "err", err)
		return "", nil
	case !there:
		// Dropped from its server (or the server made again): built anew.
		d.wantBlank(name, build)
		return "", nil
	}
	if has, err := sp.HasSpare(ctx, s.AdminURL, name); err != nil || !has {
		// Made now for the next up; this one copies template1.
		sp.MakeSpare(s.AdminURL, name)
		return "", nil
	}
	release, ok := d.blankTurn(name)
	if !ok {
		return "", nil
	}
	// The marker's time is the template's last use, as a golden one's.
	now := time.Now()
	_ = os.Chtimes(marker, now, now)
	if err := prepareTemplate(ctx, a, s.AdminURL, name); err != nil {
		d.log.Warn("blank template not used: not prepared for copying", "name", name, "err", err)
		release()
		return "", nil
	}
	return name, release
}

// blankTurn takes the turn at cloning the blank template name, and
// returns its release; false when another up holds it.
func (d *Daemon) blankTurn(name string) (release func(), ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.blankTurns[name] {
		return nil, false
	}
	if d.blankTurns == nil {
		d.blankTurns = map[string]bool{}
	}
	d.blankTurns[name] = true
	return func() {
		d.mu.Lock()
		delete(d.blankTurns, name)
		d.mu.Unlock()
	}, true
}

// wantBlank asks for the blank template name to be built once no up is
// under way (startWantedBlanks): built beside the first plain world's
// migrate, its copies and checkpoints made that up ~170 ms slower.
func (d *Daemon) wantBlank(name string, build func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.blankWanted == nil {
		d.blankWanted = map[string]func(){}
	}
	d.blankWanted[name] = build
}

// upStarted counts an up under way; the func it returns ends it, and
// starts the blank builds asked for once none is.
func (d *Daemon) upStarted() (ended func()) {
	d.mu.Lock()
	d.upsUnderWay++
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		d.upsUnderWay--
		d.mu.Unlock()
		d.startWantedBlanks()
	}
}

// startWantedBlanks starts the builds wantBlank asked for, once no up is
// under way.
func (d *Daemon) startWantedBlanks() {
	d.mu.Lock()
	if d.upsUnderWay > 0 {
		d.mu.Unlock()
		return
	}
	wanted := d.blankWanted
	d.blankWanted = nil
	d.mu.Unlock()
	for _, build := range wanted {
		build()
	}
}

// buildBlankLater builds the blank template in the background, once at a
// time here (its lock orders builds across processes). A build that fails
// is logged; the next plain up tries again.
func (d *Daemon) buildBlankLater(a adapters.Adapter, kind, ref, name, home, adminURL string, secret []byte) {
	// Counted as a request: the daemon's stop waits for it (and none
	// starts once the stop waits).
	d.mu.Lock()
	if d.blanksBuilding[name] || d.draining {
		d.mu.Unlock()
		return
	}
	if d.blanksBuilding == nil {
		d.blanksBuilding = map[string]bool{}
	}
	d.blanksBuilding[name] = true
	d.requests.Add(1)
	d.mu.Unlock()
	base := d.ctx // the daemon's life: its stop cuts the build off
	if base == nil {
		base = context.Background()
	}
	go func() {
		defer d.requests.Done()
		defer func() {
			d.mu.Lock()
			delete(d.blanksBuilding, name)
			d.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(d.withSteps(base), 2*time.Minute)
		defer cancel()
		gs := adapters.Slice{Name: name, World: goldenWorld, Home: home, AdminURL: adminURL,
			Password: adapters.Password(secret, kind, name), Template: true}
		if err := d.buildBlank(ctx, a, kind, ref, gs); err != nil {
			d.log.Warn("blank template not built: plain worlds make their databases from template1 meanwhile", "name", name, "err", err)
		}
	}()
}

// buildBlank makes the blank template gs under its lock, as golden builds
// a template with nothing to migrate or seed: a building file first (gc
// drops what a crash leaves), the database, then the marker.
func (d *Daemon) buildBlank(ctx context.Context, a adapters.Adapter, kind, ref string, gs adapters.Slice) error {
	if err := os.MkdirAll(d.home.GoldenDir(), 0o700); err != nil {
		return err
	}
	unlock, err := world.Lock(ctx, filepath.Join(d.home.GoldenDir(), gs.Name+".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	marker := filepath.Join(d.home.GoldenDir(), gs.Name+".json")
	if _, err := os.Stat(marker); err == nil {
		// Built by another up meanwhile, or there and not known to be: a
		// server that cannot say does not lose a good blank for it.
		if there, err := templateExists(ctx, a, gs.AdminURL, gs.Name); there || err != nil {
			return err
		}
	}
	if err := os.Remove(marker); err != nil && !os.IsNotExist(err) {
		return err
	}
	_ = a.Teardown(ctx, gs)
	building := filepath.Join(d.home.GoldenDir(), gs.Name+buildingSuffix)
	bm, _ := json.Marshal(goldenMarker{Name: gs.Name, Adapter: kind, Admin: ref, Blank: true})
	if err := world.WriteFileAtomic(building, bm, 0o600); err != nil {
		return err
	}
	start := time.Now()
	if err := a.Provision(ctx, gs); err != nil {
		d.dropHalfBuilt(ctx, a, gs)
		return err
	}
	if err := d.step("blank.provisioned"); err != nil {
		d.dropHalfBuilt(ctx, a, gs)
		return err
	}
	if err := prepareTemplate(ctx, a, gs.AdminURL, gs.Name); err != nil {
		d.dropHalfBuilt(ctx, a, gs)
		return err
	}
	// A crash from here on leaves a template with no marker: the next
	// plain up builds it again, dropping this one first.
	if err := d.step("blank.prepared"); err != nil {
		d.dropHalfBuilt(ctx, a, gs)
		return err
	}
	b, _ := json.Marshal(goldenMarker{Name: gs.Name, Adapter: kind, Admin: ref, Blank: true, Built: time.Now().UTC()})
	if err := world.WriteFileAtomic(marker, b, 0o600); err != nil {
		d.dropHalfBuilt(ctx, a, gs)
		return err
	}
	os.Remove(building)
	d.log.Info("blank template built", "name", gs.Name, "took_ms", time.Since(start).Milliseconds())
	// Its first spare now, not on the next plain up's path.
	if sp, ok := a.(adapters.Sparer); ok {
		sp.MakeSpare(gs.AdminURL, gs.Name)
	}
	return nil
}

// templateThere reports whether the template name is known to be on its
// server (an adapter that cannot say is taken at its marker).
func templateThere(ctx context.Context, a adapters.Adapter, adminURL, name string) bool {
	there, err := templateExists(ctx, a, adminURL, name)
	return err == nil && there
}

// templateExists asks the adapter whether the template name is on its
// server; an adapter that cannot say is taken at the template's marker.
func templateExists(ctx context.Context, a adapters.Adapter, adminURL, name string) (bool, error) {
	ex, ok := a.(interface {
		Exists(ctx context.Context, adminURL, name string) (bool, error)
	})
	if !ok {
		return true, nil
	}
	return ex.Exists(ctx, adminURL, name)
}

// prepareTemplate readies the template name for copying, where the
// adapter has something to do for it (PostgreSQL: hand it to the admin,
// lock its role).
func prepareTemplate(ctx context.Context, a adapters.Adapter, adminURL, name string) error {
	if tp, ok := a.(interface {
		PrepareTemplate(ctx context.Context, adminURL, name string) error
	}); ok {
		return tp.PrepareTemplate(ctx, adminURL, name)
	}
	return nil
}
