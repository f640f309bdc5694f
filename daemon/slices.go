package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/builtin"
	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/logfile"
	"github.com/git-binky/git-binky/procgroup"
	"github.com/git-binky/git-binky/world"
)

// goldenWorld marks golden templates: they belong to no world, and gc
// leaves them alone.
const goldenWorld = "golden"

// adminURL resolves where a slice's server is: the service's admin_url
// (interpolated with env), or, when it has none, binky's managed server for
// the kind, started if needed. ref is what the record keeps so teardown can
// find the server again: "managed:<kind>", the admin URL when it holds no
// password, else the admin_url as binky.toml writes it (${env.PG_ADMIN}),
// interpolated again when needed, so that no admin password is stored.
func (d *Daemon) adminURL(ctx context.Context, w *world.World, name string, env map[string]string) (url, ref string, err error) {
	svc := w.Config.Services[name]
	raw := world.Interpolate(svc.AdminURL, w.Lookup(world.Coordinates{}, "", env))
	if raw != "" && !strings.Contains(raw, "${") {
		// Kept as it is only when nothing in it can be a secret: no
		// password, no parameters (qdrant's ?api_key=, FerretDB's
		// ?postgres= with its own password), and it parses.
		if u, err := neturl.Parse(raw); err == nil && u.RawQuery == "" {
			if _, has := u.User.Password(); !has {
				return raw, raw, nil
			}
		}
		return raw, svc.AdminURL, nil
	}
	kind, ok := builtin.Managed(svc.Adapter)
	if !ok && builtin.External(svc.Adapter) {
		return "", "", nil // an external adapter owns its configuration
	}
	if !ok {
		if raw != "" {
			return "", "", fmt.Errorf("service %s: admin_url %q has a variable that is not set: export it before 'git binky up'", name, svc.AdminURL)
		}
		if k, ok := adapters.Lookup(svc.Adapter); ok && k.AdminURL != "" {
			return "", "", fmt.Errorf("service %s: adapter %q needs admin_url (binky cannot run that server itself): point it at yours, e.g. admin_url = \"${env.ADMIN_URL}\" with ADMIN_URL=%s", name, svc.Adapter, k.AdminURL)
		}
		return "", "", fmt.Errorf("service %s: adapter %q needs admin_url (binky cannot run that server itself)", name, svc.Adapter)
	}
	u, err := d.servers.AdminURL(ctx, kind)
	if err != nil {
		return "", "", fmt.Errorf("service %s: %w", name, err)
	}
	return u, "managed:" + kind, nil
}

// adminFromRef turns a stored reference back into an admin URL; an
// admin_url with ${env.X} is read again from env (the request's, then the
// daemon's own).
func (d *Daemon) adminFromRef(ctx context.Context, ref string, env []string) (string, error) {
	if kind, ok := strings.CutPrefix(ref, "managed:"); ok {
		return d.servers.AdminURL(ctx, kind)
	}
	if !strings.Contains(ref, "${") {
		return ref, nil
	}
	vars := map[string]string{}
	for _, list := range [][]string{d.env, env} {
		for _, kv := range list {
			if k, v, ok := strings.Cut(kv, "="); ok {
				vars[k] = v
			}
		}
	}
	u := world.Interpolate(ref, func(tok string) (string, bool) {
		name, ok := strings.CutPrefix(tok, "env.")
		if !ok {
			return "", false
		}
		v, ok := vars[name]
		return v, ok && v != ""
	})
	if strings.Contains(u, "${") {
		return "", fmt.Errorf("admin_url %s: a variable is not set in the daemon's environment or this command's: export it and run the command again (or 'git binky gc' later)", ref)
	}
	return u, nil
}

// envList is env as KEY=VALUE pairs, for adminFromRef.
func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// rememberRef keeps, for this daemon's life, the admin URL an admin_url
// reference with ${env.X} resolved to for a world (each worktree's env
// file may name another server): a teardown after the worktree, and the
// env file that named the server, is gone still finds the server. Nothing
// is written to disk: it holds a password.
func (d *Daemon) rememberRef(worldID, ref, admin string) {
	if strings.Contains(ref, "${") && admin != "" {
		d.refs.Store(worldID+"\x00"+ref, admin)
	}
}

// adminFor is adminFromRef for a slice of world worldID, falling back on
// what rememberRef kept when the environment no longer says.
func (d *Daemon) adminFor(ctx context.Context, worldID, ref string, env []string) (string, error) {
	u, err := d.adminFromRef(ctx, ref, env)
	if err != nil {
		if kept, ok := d.refs.Load(worldID + "\x00" + ref); ok {
			return kept.(string), nil
		}
	}
	return u, err
}

// hardener is an adapter that can close what a server binky runs itself
// leaves open to every role (Postgres: CONNECT on the postgres database).
type hardener interface {
	Harden(ctx context.Context, adminURL string) error
}

// provisionSlices gives the world every adapter slice its config declares,
// before any of its processes starts: provisioned (then migrated and
// seeded), or cloned from the golden template. Each slice is saved to the
// record before it is made, so teardown and gc always know of it, and is
// marked complete only when it is; an incomplete one (a crash, a failed
// migrate) is dropped and made again.
func (d *Daemon) provisionSlices(ctx context.Context, w *world.World, rec *world.Record, callerEnv []string, emit func(api.Event)) (*world.Record, error) {
	var names []string
	for _, n := range w.Config.ServiceNames() {
		if w.Config.Services[n].Adapter != "" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return rec, nil
	}
	ctx = d.withSteps(ctx)
	secret, err := d.home.Secret()
	if err != nil {
		return rec, err
	}
	homeID, err := d.home.ID()
	if err != nil {
		return rec, err
	}
	env, err := w.ProcessEnv(rec, callerEnv, "")
	if err != nil {
		return rec, err
	}
	// What ${env.X} in a recorded admin_url is read from: the same
	// variables adminURL used, env files included (a slice on a server
	// named in .env must be known as on that server again).
	refEnv := envList(env)
	for _, n := range names {
		svc := w.Config.Services[n]
		a, err := builtin.Lookup(svc.Adapter)
		if err != nil {
			return rec, fmt.Errorf("service %s: %w", n, err)
		}
		admin, ref, err := d.adminURL(ctx, w, n, env)
		if err != nil {
			return rec, err
		}
		d.rememberRef(w.ID, ref, admin)
		if h, ok := a.(hardener); ok && strings.HasPrefix(ref, "managed:") {
			if err := h.Harden(ctx, admin); err != nil {
				return rec, fmt.Errorf("service %s: %w", n, err)
			}
		}
		kind := adapters.Canonical(svc.Adapter)
		existing := findSlice(rec, n)
		if other := sharesSlice(rec, existing, func(a, b string) bool { return d.sameAdmin(ctx, a, b, refEnv) }); other != "" {
			// Made before slices of one kind took their service's name:
			// this service has used another's slice. It gets its own now;
			// the shared one stays the other service's.
			msg := fmt.Sprintf("service %s shared slice %s with service %s (an older binky made one for both): %s gets a slice of its own now, and %s keeps %s and its data",
				n, existing.Name, other, n, other, existing.Name)
			emit(api.Event{World: w.Name, Service: n, State: "slice", Message: msg})
			d.log.Warn("shared slice split", "world", w.Name, "service", n, "slice", existing.Name, "kept_by", other)
			existing = nil
		}
		name := sliceName(w, n, 0)
		if existing != nil {
			name = existing.Name
		}
		s := adapters.Slice{Name: name, World: w.ID, Home: homeID, AdminURL: admin, Config: options(w, n, env)}
		ready := existing != nil && existing.Ready && d.sameServer(ctx, existing, admin, refEnv)
		if ready {
			// Its database dropped by hand, or the server's data lost: the
			// up made it again empty, no migrate or seed, and status still
			// said "cloned". Made again as a new world's is, and said.
			if there, err := templateExists(ctx, a, admin, existing.Name); err == nil && !there {
				msg := fmt.Sprintf("service %s: its %s slice %s is gone from the server (dropped, or the server's data was lost): made again, as a new world's", n, kind, existing.Name)
				emit(api.Event{World: w.Name, Service: n, State: api.EventNotice, Message: msg})
				d.log.Warn("slice gone from its server: made again", "world", w.Name, "service", n, "slice", existing.Name)
				ready = false
			}
		}
		sl := world.SliceRecord{Service: n, Adapter: kind, Config: sliceConfig(ref, svc.Options), Ready: true}
		if ready {
			// Cheap and idempotent: brings back what a server restart lost
			// (a Redis ACL user) and rewrites an older binky's mark with
			// this home, without touching the data.
			s.Password = adapters.Password(secret, kind, s.Name)
			if err := a.Provision(ctx, s); err != nil {
				return rec, fmt.Errorf("service %s: %w", n, err)
			}
			sl.Made, sl.Template, sl.TookMS, sl.Completed, sl.Ran, sl.RanKnown = existing.Made, existing.Template, existing.TookMS, existing.Completed, existing.Ran, existing.RanKnown
			sl.Noted = existing.Noted
			if msg, key := staleSlice(w, n, existing, ref, homeID); msg != "" && key != existing.Noted {
				emit(api.Event{World: w.Name, Service: n, State: api.EventNotice, Message: msg})
				sl.Noted = key
			}
		} else {
			if existing != nil && !existing.Ready {
				// Never reused: a slice not complete may be an empty
				// database a failed up provisioned, or half a clone.
				d.dropIncomplete(ctx, *existing, w.ID, homeID, secret, refEnv)
			}
			start := time.Now()
			var made, tmpl string
			var migrated bool
			if s, made, tmpl, migrated, err = d.createSlice(ctx, w, rec, n, a, s, ref, secret, stepCallerEnv(ref, callerEnv), &start, emit); err != nil {
				return rec, err
			}
			sl.Made, sl.Template, sl.TookMS, sl.Completed = made, tmpl, time.Since(start).Milliseconds(), time.Now().UTC()
			if migrated {
				// The clone's migrate is in TookMS too: status says so.
				sl.Ran, sl.RanKnown = []string{"migrate"}, true
			}
			if made == world.MadeProvisioned {
				sl.RanKnown = true
				for _, step := range []struct{ name, cmd string }{{"migrate", svc.Migrate}, {"seed", svc.Seed}} {
					if step.cmd != "" {
						sl.Ran = append(sl.Ran, step.name)
					}
				}
			}
		}
		addr, err := a.Resolve(ctx, s)
		if err != nil {
			return rec, fmt.Errorf("service %s: %w", n, err)
		}
		sl.Name = s.Name
		sl.SetAddress(addr, s.Password)
		if rec, err = d.saveSlice(ctx, w, sl); err != nil {
			return rec, err
		}
	}
	return rec, nil
}

// buildGoldens builds (or finds) the golden templates the services names
// would be cloned from by an up now, before anything of the world is
// stopped or dropped: a reset that would drop a database and then find
// the branch's migrations broken left the world with no data at all. Only
// a failed migrate or seed refuses: what else fails a build (a name
// taken, the server) the up falls back from, as ever. A service not
// cloned from a golden template has nothing to build ahead.
func (d *Daemon) buildGoldens(ctx context.Context, w *world.World, names, callerEnv []string, emit func(api.Event)) error {
	ctx = d.withSteps(ctx)
	var cloned []string
	for _, n := range names {
		svc := w.Config.Services[n]
		if a, err := builtin.Lookup(svc.Adapter); err == nil && svc.CloneFrom == "golden" {
			if _, ok := a.(adapters.Cloner); ok {
				cloned = append(cloned, n)
			}
		}
	}
	if len(cloned) == 0 {
		return nil
	}
	secret, err := d.home.Secret()
	if err != nil {
		return err
	}
	homeID, err := d.home.ID()
	if err != nil {
		return err
	}
	rec, err := d.home.LoadRecord(w.ID)
	if err != nil {
		return err
	}
	env, err := w.ProcessEnv(rec, callerEnv, "")
	if err != nil {
		return err
	}
	for _, n := range cloned {
		a, _ := builtin.Lookup(w.Config.Services[n].Adapter)
		admin, ref, err := d.adminURL(ctx, w, n, env)
		if err != nil {
			return err
		}
		if h, ok := a.(hardener); ok && strings.HasPrefix(ref, "managed:") {
			if err := h.Harden(ctx, admin); err != nil {
				return fmt.Errorf("service %s: %w", n, err)
			}
		}
		_, err = d.golden(ctx, w, rec, n, a, admin, ref, homeID, secret, stepCallerEnv(ref, callerEnv), emit)
		var failed stepFailed
		switch {
		case errors.As(err, &failed), ctx.Err() != nil:
			return err
		case err != nil:
			// Not the branch's code (a name taken, the server): the up
			// after the drop provisions, migrates and seeds instead, as
			// any up does when its template cannot be built.
			emit(api.Event{World: w.Name, Service: n, State: api.EventNotice,
				Message: fmt.Sprintf("service %s: its golden template was not built (%v): its new slice is provisioned, migrated and seeded instead", n, err)})
		}
	}
	return nil
}

// sliceName is the name of service n's slice: <project>_<worktree>, and
// the service's name after it when the world has another slice of the
// same kind. Marks name the world, not the service, so without it two
// services (db and analytics, both postgres) would be one database.
func sliceName(w *world.World, n string, salt int) string {
	kind := adapters.Canonical(w.Config.Services[n].Adapter)
	mine := adapters.FoldName(n, "", 0, 63)
	shared, clash := false, false
	for _, other := range w.Config.ServiceNames() {
		if a := w.Config.Services[other].Adapter; other != n && a != "" && adapters.Canonical(a) == kind {
			shared = true
			// db_1 and db-1 fold alike: a hash of each keeps them apart.
			clash = clash || adapters.FoldName(other, "", 0, 63) == mine
		}
	}
	if !shared {
		return adapters.SliceName(w.Project, w.Name, w.ID, salt)
	}
	if clash {
		salt++
	}
	return adapters.FoldName(w.Project+"_"+w.Name+"_"+n, w.ID+"\x00"+n, salt, 63)
}

// sharesSlice returns the service that sorts before sl's, of the same
// kind on the same server, whose recorded slice is sl too: one slice for
// two services, as an older binky made them. "" when there is none.
// sameServer tells whether two recorded admin_url references name one
// server: ${env.A} and ${env.B} may be the same URL.
func sharesSlice(rec *world.Record, sl *world.SliceRecord, sameServer func(a, b string) bool) string {
	if sl == nil {
		return ""
	}
	server, _ := sl.Config["admin"].(string)
	for _, o := range rec.Slices {
		if o.Service >= sl.Service || o.Name != sl.Name || o.Adapter != sl.Adapter {
			continue
		}
		if other, _ := o.Config["admin"].(string); other == server || sameServer(other, server) {
			return o.Service
		}
	}
	return ""
}

// sameAdmin reports whether two admin_url references resolve to the same
// admin URL now (in the daemon's environment and env).
func (d *Daemon) sameAdmin(ctx context.Context, a, b string, env []string) bool {
	ua, err := d.adminFromRef(ctx, a, env)
	if err != nil {
		return false
	}
	ub, err := d.adminFromRef(ctx, b, env)
	return err == nil && ua == ub
}

// options are the service's adapter options with their ${...} tokens
// interpolated as admin_url's are, so that keys can be named by
// ${env.NAME} rather than written into binky.toml. The record keeps them as
// written (sliceConfig).
func options(w *world.World, n string, env map[string]string) map[string]any {
	raw := w.Config.Services[n].Options
	if len(raw) == 0 {
		return raw
	}
	lookup := w.Lookup(world.Coordinates{}, "", env)
	out := make(map[string]any, len(raw))
	for k, v := range raw {
		if str, ok := v.(string); ok {
			v = world.Interpolate(str, lookup)
		}
		out[k] = v
	}
	return out
}

// sameServer reports whether a recorded slice is on the server the config
// names now: its reference resolves to the same admin URL. (The same
// reference is not enough: ${env.PG_ADMIN} may name another server today;
// and a record an older binky wrote kept the interpolated URL.)
func (d *Daemon) sameServer(ctx context.Context, sl *world.SliceRecord, admin string, env []string) bool {
	old, _ := sl.Config["admin"].(string)
	u, err := d.adminFromRef(ctx, old, env)
	return err == nil && u == admin
}

// dropIncomplete tears down a slice the record names but never saw
// complete. A slice that is not (or no longer) this world's is left alone:
// the new one gets another name.
func (d *Daemon) dropIncomplete(ctx context.Context, sl world.SliceRecord, worldID, homeID string, secret []byte, env []string) {
	a, err := builtin.Lookup(sl.Adapter)
	if err != nil {
		return
	}
	if d.sliceHeldByAnother(ctx, worldID, sl, env) {
		// Named here by an up cut off while it looked for a free name:
		// the name is another world's, and so is what the server holds.
		d.log.Warn("incomplete slice not dropped: another world's record names it", "slice", sl.Name)
		return
	}
	ref, _ := sl.Config["admin"].(string)
	admin, err := d.adminFromRef(ctx, ref, env)
	if err != nil {
		d.log.Warn("incomplete slice not dropped: server", "slice", sl.Name, "err", err)
		return
	}
	options, _ := sl.Config["options"].(map[string]any)
	err = a.Teardown(ctx, adapters.Slice{Name: sl.Name, World: worldID, Home: homeID, AdminURL: admin,
		Password: adapters.Password(secret, sl.Adapter, sl.Name), Config: options})
	d.log.Info("incomplete slice dropped to be made again", "slice", sl.Name, "err", err)
}

// sliceConfig is what teardown needs of a slice after its worktree (and
// binky.toml) is gone: where its server is, and the adapter's options.
func sliceConfig(adminRef string, options map[string]any) map[string]any {
	c := map[string]any{"admin": adminRef}
	if len(options) > 0 {
		c["options"] = options
	}
	return c
}

// sliceView is a slice as status shows it: how it was made.
func sliceView(sl world.SliceRecord) api.Slice {
	v := api.Slice{Service: sl.Service, Adapter: sl.Adapter, Name: sl.Name, Made: sl.Made, Template: sl.Template, TookMS: sl.TookMS,
		Isolation: sl.Address["isolation"], Ran: sl.Ran}
	if sl.Ready && v.Made == "" {
		v.Made = "ready" // made by an older binky, which did not say how
	}
	return v
}

func findSlice(rec *world.Record, service string) *world.SliceRecord {
	for i := range rec.Slices {
		if rec.Slices[i].Service == service {
			return &rec.Slices[i]
		}
	}
	return nil
}

func (d *Daemon) saveSlice(ctx context.Context, w *world.World, sl world.SliceRecord) (*world.Record, error) {
	return w.Update(ctx, func(r *world.Record) error {
		if cur := findSlice(r, sl.Service); cur != nil {
			*cur = sl
		} else {
			r.Slices = append(r.Slices, sl)
		}
		return nil
	})
}

// createSlice makes a new slice: a clone of the golden template where the
// config asks and the adapter can, else provision + migrate + seed (the
// provision a copy of the blank template where there is one: blank.go).
// Any clone failure falls back to a provision: correctness never depends
// on cloning, only speed does. It returns how the slice was made, and from
// which template; since is moved to when the template was ready (built,
// or waited for), where the slice's own time starts.
func (d *Daemon) createSlice(ctx context.Context, w *world.World, rec *world.Record, n string, a adapters.Adapter, s adapters.Slice,
	ref string, secret []byte, callerEnv []string, since *time.Time, emit func(api.Event)) (adapters.Slice, string, string, bool, error) {
	svc := w.Config.Services[n]
	kind := adapters.Canonical(svc.Adapter)
	for salt := 0; ; salt++ {
		if salt > 0 {
			s.Name = sliceName(w, n, salt)
		}
		s.Password = adapters.Password(secret, kind, s.Name)
		// Record the slice before it exists: a crash from here on leaves a
		// record that teardown acts on (and the next up drops and makes
		// again: it is not Ready), and the adapters make every step of
		// theirs recognisable as this slice's.
		pending := world.SliceRecord{Service: n, Adapter: kind, Name: s.Name, Config: sliceConfig(ref, svc.Options)}
		// Another world of this home holds a slice of this name on this
		// server (ab-c's, for ab_c): the next name, whatever the server
		// says. A Redis killed before it saved its keys lost the marker
		// that said whose it was, and its user, which this home's secret
		// made, passed for the asking world's: the two worlds shared one
		// slice, and removing one dropped the other's data. Looked at
		// before this record names it, and again once it does (as the
		// other world's did before it provisioned), so that of two ups at
		// once at least one sees the other.
		if d.sliceHeldByAnother(ctx, w.ID, pending, callerEnv) {
			if salt >= maxSalt {
				return s, "", "", false, fmt.Errorf("service %s: every name binky tried for its slice (%s...) is another world's", n, sliceName(w, n, 0))
			}
			continue
		}
		if _, err := d.saveSlice(ctx, w, pending); err != nil {
			return s, "", "", false, err
		}
		if d.sliceHeldByAnother(ctx, w.ID, pending, callerEnv) {
			if salt >= maxSalt {
				return s, "", "", false, fmt.Errorf("service %s: every name binky tried for its slice (%s...) is another world's", n, sliceName(w, n, 0))
			}
			continue
		}
		if err := d.step("slice.pending_saved"); err != nil {
			return s, "", "", false, err
		}
		cloner, canClone := a.(adapters.Cloner)
		if svc.CloneFrom == "golden" && canClone {
			origin, err := d.golden(ctx, w, rec, n, a, s.AdminURL, ref, s.Home, secret, callerEnv, emit)
			// The slice's own time starts once its template is there:
			// status said "cloned ... in 5000 ms" for the template's build.
			*since = time.Now()
			tmpl := origin.Name
			// A template's ErrTaken is not about the slice's name: no salt.
			nameTaken := false
			if err == nil {
				emit(api.Event{World: w.Name, Service: n, State: "cloning", Message: "cloning " + tmpl})
				start := time.Now()
				if os.Getenv("BINKY_TEST_FAIL_CLONE") != "" {
					// A failure on demand, to exercise the fallback for real.
					err = errors.New("clone failed on purpose (BINKY_TEST_FAIL_CLONE is set)")
				} else if err = cloner.Clone(ctx, tmpl, s); err == nil {
					copied := time.Since(start)
					migrated, err := d.migrateClone(ctx, w, rec, n, a, s, origin, callerEnv, emit)
					if err != nil {
						return s, "", "", false, err
					}
					if err = d.step("slice.cloned"); err != nil {
						return s, "", "", false, err
					}
					// took_ms is the copy and the clone's migrate; clone_ms the copy alone.
					d.log.Info("slice cloned", "world", w.Name, "service", n, "slice", s.Name, "template", tmpl,
						"took_ms", time.Since(start).Milliseconds(), "clone_ms", copied.Milliseconds())
					return s, world.MadeCloned, tmpl, migrated, nil
				}
				nameTaken = errors.Is(err, adapters.ErrTaken)
			}
			if nameTaken && salt < 3 {
				continue
			}
			d.log.Warn("clone_fallback", "world", w.Name, "service", n, "slice", s.Name, "err", err)
			emit(api.Event{World: w.Name, Service: n, State: "clone_fallback", Message: "clone failed (" + err.Error() + "); provisioning, migrating and seeding instead"})
			// The failed clone may have left a half-made slice of ours.
			_ = a.Teardown(ctx, s)
		}
		if svc.CloneFrom == "" && canClone {
			if blank, release := d.blankTemplate(ctx, a, kind, ref, s, secret); blank != "" {
				start := time.Now()
				var err error
				if os.Getenv("BINKY_TEST_FAIL_CLONE") != "" {
					// A failure on demand, to exercise the fallback for real.
					err = errors.New("clone failed on purpose (BINKY_TEST_FAIL_CLONE is set)")
				} else {
					err = cloner.Clone(ctx, blank, s)
				}
				release()
				if err == nil {
					d.log.Info("slice made from the blank template", "world", w.Name, "service", n, "slice", s.Name, "template", blank,
						"took_ms", time.Since(start).Milliseconds())
					return d.migrateProvisioned(ctx, w, rec, n, a, s, callerEnv, emit)
				}
				if errors.Is(err, adapters.ErrTaken) && salt < 3 {
					continue
				}
				d.log.Warn("blank template not copied: making the database from template1", "world", w.Name, "service", n, "slice", s.Name, "err", err)
				_ = a.Teardown(ctx, s)
			}
		}
		err := a.Provision(ctx, s)
		if errors.Is(err, adapters.ErrTaken) && salt < 3 {
			continue
		}
		if err != nil {
			return s, "", "", false, fmt.Errorf("service %s: provision %s: %w", n, s.Name, err)
		}
		return d.migrateProvisioned(ctx, w, rec, n, a, s, callerEnv, emit)
	}
}

// maxSalt bounds the names createSlice tries for one slice.
const maxSalt = 8

// sliceHeldByAnother reports whether a world of this home other than id
// records a slice named as sl, of its kind, on its server (two references
// to one server count: ${env.REDIS_URL} and the URL it holds), unreadable
// records aside: a name is only held by what is known.
func (d *Daemon) sliceHeldByAnother(ctx context.Context, id string, sl world.SliceRecord, env []string) bool {
	recs, _ := d.home.Records()
	ref, _ := sl.Config["admin"].(string)
	for _, rec := range recs {
		if rec.ID == id {
			continue
		}
		for _, o := range rec.Slices {
			if o.Name != sl.Name || adapters.Canonical(o.Adapter) != adapters.Canonical(sl.Adapter) {
				continue
			}
			if other, _ := o.Config["admin"].(string); other == ref || d.sameAdmin(ctx, other, ref, env) {
				return true
			}
		}
	}
	return false
}

// migrateProvisioned runs the migrate and seed of a slice made new (by
// Provision, or from the blank template), which holds nothing of them.
func (d *Daemon) migrateProvisioned(ctx context.Context, w *world.World, rec *world.Record, n string, a adapters.Adapter, s adapters.Slice,
	callerEnv []string, emit func(api.Event)) (adapters.Slice, string, string, bool, error) {
	if err := d.step("slice.provisioned"); err != nil {
		return s, "", "", false, err
	}
	addr, err := a.Resolve(ctx, s)
	if err != nil {
		return s, "", "", false, err
	}
	if err := d.migrate(ctx, w, rec, n, addr, "slice", callerEnv, emit); err != nil {
		return s, "", "", false, err
	}
	return s, world.MadeProvisioned, "", false, nil
}

// migrate runs the service's migrate and seed commands in the worktree,
// with the world's environment in which this slice resolves to addr.
// phase ("slice" or "golden") names its failure points.
func (d *Daemon) migrate(ctx context.Context, w *world.World, rec *world.Record, n string, addr adapters.Address, phase string, callerEnv []string, emit func(api.Event)) error {
	svc := w.Config.Services[n]
	if svc.Migrate == "" && svc.Seed == "" {
		return nil
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
		return err
	}
	lookup := w.Lookup(w.Coordinates(&tmp), "", env)
	logPath := filepath.Join(world.LogDir(w.Worktree.AdminDir), n+".log")
	for _, step := range []struct{ what, cmd, done string }{{"migrate", svc.Migrate, "migrated"}, {"seed", svc.Seed, "seeded"}} {
		if step.cmd == "" {
			if phase == "slice" {
				if err := d.step(phase + "." + step.done); err != nil {
					return err
				}
			}
			continue
		}
		// Messages show the command as written: interpolated, it can hold
		// the slice's password (${db.url}).
		emit(api.Event{World: w.Name, Service: n, State: step.what, Message: step.what + ": " + step.cmd})
		line, err := world.InterpolateShell(step.cmd, lookup)
		if err != nil {
			return fmt.Errorf("service %s: %s: %w", n, step.what, err)
		}
		if err := d.runStep(ctx, w.Worktree.Path, world.SortedEnv(env), line, step.cmd, logPath); err != nil {
			return stepFailed{fmt.Errorf("service %s: %s %q failed: %w\n  (all of it: git binky logs %s --service %s)", n, step.what, step.cmd, err, w.Name, n)}
		}
		if phase == "slice" {
			if err := d.step(phase + "." + step.done); err != nil {
				return err
			}
		}
	}
	return nil
}

// stepFailed is a migrate or seed command that failed (not the server, nor
// binky): what the user fixes in their code.
type stepFailed struct{ error }

func (e stepFailed) Unwrap() error { return e.error }

// runStep runs one migrate or seed command, its output appended to the
// service's log, and says how it ended with its last lines.
func (d *Daemon) runStep(ctx context.Context, dir string, env []string, cmdline, shown, logPath string) error {
	// The worktree first, as a service's start does (supervisor): a log
	// made after git deleted its files keeps git from deleting its admin
	// folder.
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("the worktree %s is gone", dir)
	}
	f, err := logfile.Open(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(f, "=== binky %s: %s\n", time.Now().Format(time.RFC3339), shown)
	cmd := procgroup.Command(ctx, cmdline)
	mark, unmark := d.markStep()
	defer unmark()
	cmd.Dir = dir
	marked := procgroup.Mark(cmd, env, mark)
	cmd.Stdout, cmd.Stderr = f, f
	// A step outlived a killed daemon and wrote into the database the next
	// daemon made again (or into a template): the kernel kills its shell
	// with the daemon, so it starts nothing more. Its thread is held until
	// it is done, since the signal follows the thread that started it.
	procgroup.DieWithParent(cmd)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = cmd.Start()
	marked() // the daemon's copy of the mark goes at once
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		// What it started in the background, or in a session of its own,
		// goes with it: a failed or cut-off step writes nothing more.
		procgroup.KillMarked(mark)
		// Only this run's output: what follows the last marker, not what
		// an earlier run left above it; its credentials hidden, since what
		// it printed can hold its own URL and the error reaches a terminal,
		// and an agent's transcript through MCP.
		hide := world.Hider(envMap(env))
		// 20 lines, as a service's: an error's own line is often above
		// its stack's or its library's last five (a real app's migrate).
		var run []string
		for _, l := range logfile.Tail(logPath, 200) {
			l = hide(l)
			if strings.HasPrefix(l, "=== binky ") {
				run = run[:0]
				continue
			}
			run = append(run, l)
		}
		tail := run[max(0, len(run)-20):]
		msg := fmt.Sprintf("%v; last output:\n    %s", err, strings.Join(tail, "\n    "))
		if first := firstErrorLine(run[:len(run)-len(tail)]); first != "" && firstErrorLine(tail) == "" {
			// A Node stack trace of 30 lines put the error itself
			// ("relation "nope" does not exist") above the last 20.
			msg = fmt.Sprintf("%v; its first error line:\n    %s\n  last output:\n    %s", err, first, strings.Join(tail, "\n    "))
		}
		return errors.New(msg)
	}
	return nil
}

// firstErrorLine is the first of lines that reads as an error's own
// ("error" or "fatal" in any case), "" when none does.
func firstErrorLine(lines []string) string {
	for _, l := range lines {
		low := strings.ToLower(l)
		if strings.Contains(low, "error") || strings.Contains(low, "fatal") {
			return l
		}
	}
	return ""
}

// templateOrigin is a golden template and the worktree its data came
// from, for migrateClone to tell whether a clone's migrate could apply
// anything.
type templateOrigin struct {
	Name string
	// Commit is the clean builder's, as its marker keeps it ("" when
	// the builder had changes, or is unknown).
	Commit string
}

// golden returns the golden template for the service, building it once:
// provision, migrate, seed. It is named from a hash of the migrate and seed
// commands, so changing either builds a new one; a file lock makes
// parallel ups (in any process) build it once and wait for it.
func (d *Daemon) golden(ctx context.Context, w *world.World, rec *world.Record, n string, a adapters.Adapter, admin, ref, homeID string,
	secret []byte, callerEnv []string, emit func(api.Event)) (templateOrigin, error) {
	svc := w.Config.Services[n]
	kind := adapters.Canonical(svc.Adapter)
	name, err := goldenName(w, n, ref, homeID)
	if err != nil {
		return templateOrigin{}, err
	}
	if err := os.MkdirAll(d.home.GoldenDir(), 0o700); err != nil {
		return templateOrigin{}, err
	}
	marker := filepath.Join(d.home.GoldenDir(), name+".json")
	unlock, err := world.Lock(ctx, filepath.Join(d.home.GoldenDir(), name+".lock"))
	if err != nil {
		return templateOrigin{}, err
	}
	defer unlock()
	env, err := w.ProcessEnv(rec, callerEnv, "")
	if err != nil {
		return templateOrigin{}, err
	}
	gs := adapters.Slice{Name: name, World: goldenWorld, Home: homeID, AdminURL: admin, Password: adapters.Password(secret, kind, name), Config: options(w, n, env), Template: true}
	// Under the golden lock: preparing a template twice at once conflicts.
	prepare := func() error { return prepareTemplate(ctx, a, admin, name) }
	if b, err := os.ReadFile(marker); err == nil && templateThere(ctx, a, admin, name) {
		// The marker's time is the template's last use: the templates of
		// a service used least lately are the ones superseded.
		now := time.Now()
		_ = os.Chtimes(marker, now, now)
		var m goldenMarker
		_ = json.Unmarshal(b, &m) // unreadable: nothing known of its builder
		return templateOrigin{Name: name, Commit: m.Commit}, prepare()
	}
	// Absent, or left half-built by a crash: build it (again). A marker of
	// a template the server lost goes first: one left beside a rebuild a
	// crash cut off would pass the half-built template for complete.
	if err := os.Remove(marker); err != nil && !os.IsNotExist(err) {
		return templateOrigin{}, err
	}
	_ = a.Teardown(ctx, gs)
	// Which server the build is on, for gc, should it not finish and no
	// later up of this key come to drop it.
	building := filepath.Join(d.home.GoldenDir(), name+buildingSuffix)
	bm, _ := json.Marshal(goldenMarker{Name: name, Adapter: kind, Project: w.Project, Admin: ref})
	if err := world.WriteFileAtomic(building, bm, 0o600); err != nil {
		return templateOrigin{}, err
	}
	emit(api.Event{World: w.Name, Service: n, State: "golden", Message: fmt.Sprintf("building golden template %s (migrate + seed once; later worlds copy it)", name)})
	start := time.Now()
	// What the migrate and seed read, for clone_migrate = "changed" (now
	// or once it is set): the worktree's commit and whether its files are
	// that commit's, asked beside the provision and again once the seed
	// is done. A worktree that changed in between (a checkout during a
	// slow migrate, and back: its index is written again) is not one a
	// later clone can be said to match.
	before := make(chan worktreeState, 1)
	go func() { before <- snapshot(ctx, w.Worktree) }()
	if err := a.Provision(ctx, gs); err != nil {
		d.dropHalfBuilt(ctx, a, gs)
		return templateOrigin{}, fmt.Errorf("golden template %s: %w", name, err)
	}
	if err := d.step("golden.provisioned"); err != nil {
		return templateOrigin{}, err
	}
	addr, err := a.Resolve(ctx, gs)
	if err != nil {
		d.dropHalfBuilt(ctx, a, gs)
		return templateOrigin{}, fmt.Errorf("golden template %s: %w", name, err)
	}
	if err := d.migrate(ctx, w, rec, n, addr, "golden", callerEnv, emit); err != nil {
		d.dropHalfBuilt(ctx, a, gs)
		return templateOrigin{}, fmt.Errorf("golden template %s: %w", name, err)
	}
	if err := d.step("golden.migrated"); err != nil {
		return templateOrigin{}, err
	}
	if err := prepare(); err != nil {
		d.dropHalfBuilt(ctx, a, gs)
		return templateOrigin{}, err
	}
	// A crash from here on leaves a template with no marker file: the next
	// up builds it again, dropping this one first.
	if err := d.step("golden.prepared"); err != nil {
		return templateOrigin{}, err
	}
	built := goldenMarker{Name: name, Adapter: kind, Project: w.Project, Migrate: svc.Migrate, Seed: svc.Seed, Built: time.Now().UTC(), Admin: ref, Service: n}
	if b, after := <-before, snapshot(ctx, w.Worktree); b.clean && b == after {
		built.Commit = b.head
	}
	b, _ := json.Marshal(built)
	if err := world.WriteFileAtomic(marker, b, 0o600); err != nil {
		return templateOrigin{}, err
	}
	os.Remove(building)
	d.log.Info("golden template built", "name", name, "took_ms", time.Since(start).Milliseconds())
	// On this up's path, once per key change: a drop or two, where a
	// goroutine would outlive the request (a hook's up is none the
	// daemon's stop waits for).
	d.pruneGoldens(ctx, built, envList(env))
	emit(api.Event{World: w.Name, Service: n, State: "golden", Message: fmt.Sprintf("golden template %s built in %s", name, time.Since(start).Round(time.Millisecond))})
	return templateOrigin{Name: name, Commit: built.Commit}, nil
}

// keptGoldens is how many templates of one service a home keeps: the one
// just built and the ones used last before it, so that worktrees of two or
// three branches whose migrations differ (golden_key) do not rebuild each
// other's templates in turn.
const keptGoldens = 3

// supersededAfter is how long a template must have gone unused before it
// is dropped as superseded: an up copies its template after it let go of
// the template's lock, and must not find it gone.
const supersededAfter = 10 * time.Minute

// pruneGoldens drops this home's templates of built's service (same
// project, adapter and server) beyond the keptGoldens used last, each
// only if its lock is free and it has not been used for supersededAfter.
// Templates an older binky built (whose markers name no service) stay
// until 'git binky golden drop'.
func (d *Daemon) pruneGoldens(ctx context.Context, built goldenMarker, env []string) {
	var same []markerFile
	for _, mf := range d.goldenMarkers() {
		m := mf.goldenMarker
		if m.Name != built.Name && m.Service == built.Service && m.Project == built.Project && m.Adapter == built.Adapter && m.adminRef() == built.adminRef() {
			same = append(same, mf)
		}
	}
	sort.Slice(same, func(i, j int) bool { return same[i].used.After(same[j].used) })
	for i, u := range same {
		if i < keptGoldens-1 || time.Since(u.used) < supersededAfter {
			continue
		}
		unlock, ok := d.tryGoldenLock(ctx, u.Name)
		if !ok {
			continue
		}
		// Used again since it was listed: kept.
		if fi, err := os.Stat(u.path); err != nil || time.Since(fi.ModTime()) < supersededAfter {
			unlock()
			continue
		}
		err := d.dropGolden(ctx, u.goldenMarker, u.path, env)
		unlock()
		if err != nil {
			d.log.Warn("superseded golden template not dropped", "name", u.Name, "err", err)
			continue
		}
		d.log.Info("superseded golden template dropped", "name", u.Name, "service", built.Service, "newest", built.Name)
	}
}

// goldenName is the name of service n's golden template: a hash of the
// project, the kind, the migrate and seed commands, the server, the home
// and the files golden_key names.
func goldenName(w *world.World, n, ref, homeID string) (string, error) {
	svc := w.Config.Services[n]
	kind := adapters.Canonical(svc.Adapter)
	files, err := w.GoldenKeyHash(n)
	if err != nil {
		return "", err
	}
	// The home is in the name: a template is marked as its home's, and
	// two homes sharing a server must not take (or drop) each other's.
	sum := sha256.Sum256([]byte(w.Project + "\x00" + kind + "\x00" + svc.Migrate + "\x00" + svc.Seed + "\x00" + ref + "\x00" + homeID + files))
	key := hex.EncodeToString(sum[:5])
	proj := adapters.SliceName(w.Project, "", "", 0)
	if len(proj) > 30 {
		proj = proj[:30]
	}
	return "binky_golden_" + strings.Trim(proj, "_") + "_" + key, nil
}

// staleSlice says, for a slice an up reuses, when its data may lack the
// branch's migrations: a clone of another template than this branch's
// migrate, seed and golden_key make, or a slice made before its service
// had a migrate. "" when neither. key names what it said (the template
// wanted, or "migrate"): up says it once per key (SliceRecord.Noted).
func staleSlice(w *world.World, n string, sl *world.SliceRecord, ref, homeID string) (msg, key string) {
	const once = " (said once: up does not repeat it until the branch's migrations change again)"
	if svc := w.Config.Services[n]; sl.Made == world.MadeProvisioned && sl.RanKnown && svc.Migrate != "" && !slices.Contains(sl.Ran, "migrate") {
		return fmt.Sprintf("%s was made before service %s had a migrate, which has not run on it: run it against %s_URL ('git binky env'), or 'git binky reset --service %s' to make the slice again (its data is lost)"+once,
			sl.Name, n, world.EnvName(n), n), "migrate"
	}
	if sl.Made != world.MadeCloned || sl.Template == "" || w.Config.Services[n].CloneFrom != "golden" {
		return "", ""
	}
	if want, err := goldenName(w, n, ref, homeID); err == nil && want != sl.Template {
		return fmt.Sprintf("%s was cloned from %s, but this branch's migrate, seed or golden_key files make %s: its data may lack this branch's migrations. Run them against %s_URL ('git binky env'), or 'git binky reset --service %s' to clone the new template (its data is lost)"+once,
			sl.Name, sl.Template, want, world.EnvName(n), n), want
	}
	return "", ""
}

// noteStaleSlices tells emit's client of every ready slice of rec that
// staleSlice finds behind this branch: an up of a running world provisions
// nothing, and said nothing of it.
func (d *Daemon) noteStaleSlices(w *world.World, rec *world.Record, emit func(api.Event)) {
	homeID, err := d.home.ID()
	if err != nil {
		return
	}
	for i := range rec.Slices {
		sl := &rec.Slices[i]
		ref, _ := sl.Config["admin"].(string)
		if _, ok := w.Config.Services[sl.Service]; !ok || !sl.Ready {
			continue
		}
		if msg, key := staleSlice(w, sl.Service, sl, ref, homeID); msg != "" && key != sl.Noted {
			emit(api.Event{World: w.Name, Service: sl.Service, State: api.EventNotice, Message: msg})
			service := sl.Service
			_ = d.home.UpdateRecord(context.Background(), rec.ID, func(r *world.Record) error {
				if cur := findSlice(r, service); cur != nil && cur.Name == sl.Name {
					cur.Noted = key
				}
				return nil
			})
		}
	}
}

// dropHalfBuilt drops a template whose build failed. The failure is often
// the up's context ending (a remove of its worktree, a daemon stopping),
// and a teardown on that context does nothing: the template, with no
// marker naming it, was left for good. So it runs on a context of its own;
// what it still cannot drop, gc finds (an unmarked template of this home).
func (d *Daemon) dropHalfBuilt(ctx context.Context, a adapters.Adapter, gs adapters.Slice) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := a.Teardown(cctx, gs); err == nil || errors.Is(err, adapters.ErrKept) {
		os.Remove(filepath.Join(d.home.GoldenDir(), gs.Name+buildingSuffix))
	}
}

// buildingSuffix names the file that says a template is being built, and
// on which server: written before the build, removed when it is done or
// dropped. One left with the template's lock free is a build a crash cut
// off.
const buildingSuffix = ".building"

// teardownSlices drops every slice of a world, each only if it is the
// world's. A server that cannot be reached leaves its slice for gc. A slice
// an older binky marked without the home is re-marked first (Provision
// upgrades a mark of this world), since this home's record names it. It
// returns what it left behind, a line each, for remove to say.
func (d *Daemon) teardownSlices(ctx context.Context, rec *world.Record, env []string) (left []string) {
	ctx = d.withSteps(ctx)
	homeID, err := d.home.ID()
	if err != nil {
		d.log.Error("teardown slices: home id", "err", err)
		return []string{fmt.Sprintf("no slice was dropped: %v (git binky gc drops them later)", err)}
	}
	secret, err := d.home.Secret()
	if err != nil {
		d.log.Error("teardown slices: secret", "err", err)
		return []string{fmt.Sprintf("no slice was dropped: %v (git binky gc drops them later)", err)}
	}
	for _, sl := range rec.Slices {
		note, res := d.teardownSlice(ctx, rec, sl, env, homeID, secret)
		if note != "" {
			left = append(left, note)
		}
		if res == sliceUntouched {
			continue // left alone before the server was asked: no step passed
		}
		if err := d.step("teardown.slice_dropped"); err != nil {
			d.log.Error("teardown", "err", err)
			return append(left, err.Error())
		}
	}
	return left
}

// teardown is what became of a slice teardownSlice was asked to drop.
type teardown int

const (
	sliceDropped   teardown = iota // gone from its server (what it kept beside it said)
	sliceUntouched                 // left alone before the server was asked: another world's, its server unknown
	sliceNotOurs                   // the server says it is not marked as this world's: left alone
	sliceCut                       // a step failed: the slice may be half gone
)

// teardownSlice drops one slice of rec, and reports what became of it and
// what the user should know: why it was not dropped, or what was kept
// beside it ("" when nothing).
func (d *Daemon) teardownSlice(ctx context.Context, rec *world.Record, sl world.SliceRecord, env []string, homeID string, secret []byte) (string, teardown) {
	a, err := builtin.Lookup(sl.Adapter)
	if err != nil {
		d.log.Error("teardown slice", "slice", sl.Name, "err", err)
		return fmt.Sprintf("%s slice %s was not dropped: %v", sl.Adapter, sl.Name, err), sliceUntouched
	}
	if d.sliceHeldByAnother(ctx, rec.ID, sl, env) {
		// Another world's record names it too (an up cut off while it
		// looked for a free name, or worlds an older binky let share
		// one): dropping it would drop the other world's data.
		d.log.Warn("slice not dropped: another world's record names it", "world", rec.Worktree, "slice", sl.Name)
		return fmt.Sprintf("%s slice %s was left alone: another world of this home names it", sl.Adapter, sl.Name), sliceUntouched
	}
	ref, _ := sl.Config["admin"].(string)
	admin, err := d.adminFor(ctx, rec.ID, ref, env)
	if err != nil {
		d.log.Error("teardown slice: server", "slice", sl.Name, "err", err, "hint", "git binky gc drops it later")
		return fmt.Sprintf("%s slice %s was not dropped: %v (git binky gc drops it later)", sl.Adapter, sl.Name, err), sliceUntouched
	}
	options, _ := sl.Config["options"].(map[string]any)
	s := adapters.Slice{Name: sl.Name, World: rec.ID, Home: homeID, AdminURL: admin,
		Password: adapters.Password(secret, sl.Adapter, sl.Name), Config: options}
	err = a.Teardown(ctx, s)
	if errors.Is(err, adapters.ErrNotOurs) && d.legacyOf(ctx, a, admin, s) {
		if perr := a.Provision(ctx, s); perr == nil {
			err = a.Teardown(ctx, s)
		}
	}
	switch {
	case errors.Is(err, adapters.ErrKept):
		d.log.Warn("slice dropped, something beside it kept", "world", rec.Worktree, "slice", sl.Name, "adapter", sl.Adapter, "err", err)
		return err.Error(), sliceDropped
	case errors.Is(err, adapters.ErrNotOurs):
		// Before any drop: an adapter that drops part of a slice says so
		// with ErrKept (Postgres, a database of this world's whose role
		// is not).
		d.log.Warn("slice not dropped: not marked as this world's", "slice", sl.Name, "err", err)
		return fmt.Sprintf("%s slice %s was left alone: %v", sl.Adapter, sl.Name, err), sliceNotOurs
	case err != nil:
		d.log.Error("teardown slice", "slice", sl.Name, "err", err, "hint", "git binky gc drops it later")
		return fmt.Sprintf("%s slice %s was not dropped: %v (git binky gc drops it later)", sl.Adapter, sl.Name, err), sliceCut
	}
	d.log.Info("slice dropped", "world", rec.Worktree, "slice", sl.Name, "adapter", sl.Adapter)
	return "", sliceDropped
}

// legacyOf reports whether the server holds an object of s marked by an
// older binky (no home) for s's world.
func (d *Daemon) legacyOf(ctx context.Context, a adapters.Adapter, admin string, s adapters.Slice) bool {
	l, ok := a.(adapters.Lister)
	if !ok {
		return false
	}
	found, err := l.List(ctx, admin)
	if err != nil {
		return false
	}
	for _, o := range found {
		if o.Slice == s.Name && o.Owner.Legacy() && o.Owner.World == s.World {
			return true
		}
	}
	return false
}

// remarkSlices rewrites, on daemon start, the marks an older binky wrote
// (naming no home) on the slices of this home's records, so that from now
// on they read as this home's. Only servers already reachable are asked: a
// managed server that is not running is re-marked at its world's next up.
func (d *Daemon) remarkSlices(ctx context.Context) {
	// Requests wait for this: a server that does not answer must not hold
	// them long.
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	recs, err := d.home.Records()
	if !world.OnlyUnreadable(err) || len(recs) == 0 {
		return
	}
	homeID, err := d.home.ID()
	if err != nil {
		return
	}
	secret, err := d.home.Secret()
	if err != nil {
		return
	}
	running := map[string]bool{}
	for _, s := range d.servers.Status() {
		running[s.Kind] = s.Running
	}
	listed := map[string][]adapters.Owned{}
	for _, rec := range recs {
		for _, sl := range rec.Slices {
			ref, _ := sl.Config["admin"].(string)
			if kind, ok := strings.CutPrefix(ref, "managed:"); ok && !running[kind] {
				continue
			}
			a, err := builtin.Lookup(sl.Adapter)
			if err != nil {
				continue
			}
			l, ok := a.(adapters.Lister)
			if !ok {
				continue
			}
			admin, err := d.adminFromRef(ctx, ref, nil)
			if err != nil {
				continue
			}
			found, seen := listed[admin]
			if !seen {
				if found, err = l.List(ctx, admin); err != nil {
					d.log.Warn("re-mark slices: list", "server", adapters.Redact(admin), "err", err)
				}
				listed[admin] = found
			}
			for _, o := range found {
				if o.Slice != sl.Name || !o.Owner.Legacy() || o.Owner.World != rec.ID {
					continue
				}
				options, _ := sl.Config["options"].(map[string]any)
				s := adapters.Slice{Name: sl.Name, World: rec.ID, Home: homeID, AdminURL: admin,
					Password: adapters.Password(secret, sl.Adapter, sl.Name), Config: options}
				if err := a.Provision(ctx, s); err != nil {
					d.log.Warn("re-mark slice", "slice", sl.Name, "err", err)
				} else {
					d.log.Info("slice re-marked with this home", "slice", sl.Name, "adapter", sl.Adapter)
				}
				break
			}
		}
	}
}

// GC lists (and unless dryRun, drops) slices marked as this home's whose
// world no longer exists: what a crash between provision and record left.
// Another home's slices are not looked at (their worlds are in that home's
// records, not this one's); a mark an older binky wrote, which names no
// home, is reported and left alone: it may be another home's.
func (d *Daemon) GC(ctx context.Context, req api.Request) (api.GC, error) {
	ctx = d.withSteps(ctx)
	servers := map[string]string{} // admin URL → adapter
	for _, s := range d.servers.Status() {
		if u, err := d.servers.AdminURL(ctx, s.Kind); err == nil {
			servers[u] = s.Kind
		}
	}
	recs, recErr := d.home.Records()
	live := map[string]bool{} // adapter + slice name of every recorded slice
	for _, r := range recs {
		for _, sl := range r.Slices {
			live[sl.Adapter+"\x00"+sl.Name] = true
			if ref, _ := sl.Config["admin"].(string); ref != "" {
				if u, err := d.adminFromRef(ctx, ref, req.Env); err == nil {
					servers[u] = sl.Adapter
				}
			}
		}
	}
	// Templates whose build did not finish, and their servers: gc looks
	// there even when no world names that server any more.
	unfinished := d.unfinishedGoldens()
	kept := map[string]bool{} // half-built templates gc did not drop, or could not look for
	for _, m := range unfinished {
		if u, err := d.adminFromRef(ctx, m.adminRef(), req.Env); err == nil {
			servers[u] = m.Adapter
		} else {
			kept[m.Name] = true
		}
	}
	homeID, err := d.home.ID()
	if err != nil {
		return api.GC{}, err
	}
	secret, err := d.home.Secret()
	if err != nil {
		return api.GC{}, err
	}
	out := api.GC{DryRun: req.DryRun, Orphans: []api.Orphan{}}
	urls := make([]string, 0, len(servers))
	for u := range servers {
		urls = append(urls, u)
	}
	sort.Strings(urls)
	for _, u := range urls {
		a, err := builtin.Lookup(servers[u])
		if err != nil {
			continue
		}
		lister, ok := a.(adapters.Lister)
		if !ok {
			continue
		}
		found, err := lister.List(ctx, u)
		if err != nil {
			out.Errors = append(out.Errors, fmt.Sprintf("%s at %s: %v", servers[u], adapters.Redact(u), err))
			continue
		}
		// One teardown per slice, however many objects (database, role...)
		// it has.
		slices := map[string]adapters.Owner{}
		legacy := map[string]adapters.Owner{}
		halfBuilt := map[string]bool{}
		unmarked := map[string]bool{}
		for _, obj := range found {
			switch {
			case obj.Unmarked:
				// Its mark is gone: this home's only if it has the password
				// this home derives for it, an orphan only if no world of
				// this home records it (none unread: one might).
				cc, ok := a.(adapters.CredentialChecker)
				if !ok || live[servers[u]+"\x00"+obj.Slice] || recErr != nil {
					continue
				}
				if mine, err := cc.HasCredential(ctx, adapters.Slice{Name: obj.Slice, AdminURL: u, Password: adapters.Password(secret, servers[u], obj.Slice)}); err == nil && mine {
					slices[obj.Slice] = adapters.Owner{Home: homeID}
					unmarked[obj.Slice] = true
				}
			case obj.Owner.World == goldenWorld:
				if obj.Owner.Home == homeID && !d.goldenMarked(obj.Slice) {
					halfBuilt[strings.TrimSuffix(obj.Slice, adapters.SpareSuffix)] = true
				}
			case d.home.HasRecord(obj.Owner.World):
			case obj.Owner.Legacy():
				legacy[obj.Slice] = obj.Owner
			case obj.Owner.Home == homeID:
				slices[obj.Slice] = obj.Owner
			}
		}
		for name, owner := range legacy {
			if _, ours := slices[name]; ours {
				continue
			}
			out.Orphans = append(out.Orphans, api.Orphan{Adapter: servers[u], Name: name, World: owner.World, Server: adapters.Redact(u),
				Note: "marked by an older binky, which did not record the home: it may be another home's live slice; drop it by hand if it is not"})
		}
		for name := range halfBuilt {
			o, ok := d.gcHalfBuilt(ctx, a, servers[u], u, name, homeID, secret, out.DryRun)
			if ok {
				out.Orphans = append(out.Orphans, o)
			}
			if !ok || !o.Dropped {
				kept[name] = true
			}
		}
		for name, owner := range slices {
			o := api.Orphan{Adapter: servers[u], Name: name, World: owner.World, Server: adapters.Redact(u)}
			if unmarked[name] {
				o.Note = "its mark was gone (a server stopped before it saved it); this home's by the password it derives for it"
			}
			if !out.DryRun {
				err := a.Teardown(ctx, adapters.Slice{Name: name, World: owner.World, Home: owner.Home, AdminURL: u,
					Password: adapters.Password(secret, servers[u], name)})
				switch {
				case errors.Is(err, adapters.ErrKept):
					o.Dropped, o.Note = true, err.Error()
				case err != nil:
					o.Error = err.Error()
				default:
					o.Dropped = true
					d.log.Info("gc dropped an orphaned slice", "slice", name, "adapter", servers[u], "world", owner.World)
				}
			}
			out.Orphans = append(out.Orphans, o)
		}
	}
	sort.Slice(out.Orphans, func(i, j int) bool { return out.Orphans[i].Name < out.Orphans[j].Name })
	if !out.DryRun {
		d.forgetUnfinished(ctx, unfinished, kept, len(out.Errors) == 0)
		if n := d.home.SweepLocks(); n > 0 {
			d.log.Info("gc deleted the lock files of forgotten worlds", "files", n)
		}
	}
	return out, nil
}

// tryGoldenLock takes a template's lock if it is free now: a build holds it
// for its whole length, and gc does not wait for one.
func (d *Daemon) tryGoldenLock(ctx context.Context, name string) (unlock func(), ok bool) {
	lctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	unlock, err := world.Lock(lctx, filepath.Join(d.home.GoldenDir(), name+".lock"))
	return unlock, err == nil
}

// unfinishedGoldens reads the building files: templates whose build began
// and is not known to have ended (a build under way has one too; its
// callers take the template's lock before acting on it).
func (d *Daemon) unfinishedGoldens() []goldenMarker {
	files, _ := filepath.Glob(filepath.Join(d.home.GoldenDir(), "*"+buildingSuffix))
	var out []goldenMarker
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var m goldenMarker
		if json.Unmarshal(b, &m) != nil || m.Name == "" || m.Name+buildingSuffix != filepath.Base(f) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// forgetUnfinished removes the building files gc has dealt with: those of
// templates that got built since, and, once every server answered, those
// whose template gc dropped or found nothing of (the build failed before
// it made anything). Each under the template's lock, not waited for.
func (d *Daemon) forgetUnfinished(ctx context.Context, unfinished []goldenMarker, kept map[string]bool, allAnswered bool) {
	for _, m := range unfinished {
		func() {
			unlock, ok := d.tryGoldenLock(ctx, m.Name)
			if !ok {
				return
			}
			defer unlock()
			if d.goldenMarked(m.Name) || allAnswered && !kept[m.Name] {
				os.Remove(filepath.Join(d.home.GoldenDir(), m.Name+buildingSuffix))
			}
		}()
	}
}

// goldenMarked reports whether a golden-marked object belongs to a
// template whose build finished: its marker file names it, or names the
// template it is the spare of.
func (d *Daemon) goldenMarked(name string) bool {
	for _, n := range []string{name, strings.TrimSuffix(name, adapters.SpareSuffix)} {
		if _, err := os.Stat(filepath.Join(d.home.GoldenDir(), n+".json")); err == nil {
			return true
		}
	}
	return false
}

// gcHalfBuilt reports (and unless dryRun, drops) a template of this home
// that has no marker: a build a crash or a cancelled up cut off. One being
// built holds the template's lock for its whole build, so a lock not had
// at once means a build in progress: it is left alone, and not reported.
func (d *Daemon) gcHalfBuilt(ctx context.Context, a adapters.Adapter, kind, admin, name, homeID string, secret []byte, dryRun bool) (api.Orphan, bool) {
	unlock, ok := d.tryGoldenLock(ctx, name)
	if !ok {
		return api.Orphan{}, false
	}
	defer unlock()
	if d.goldenMarked(name) {
		return api.Orphan{}, false // built meanwhile
	}
	o := api.Orphan{Adapter: kind, Name: name, World: goldenWorld, Server: adapters.Redact(admin),
		Why: "a golden template whose build did not finish"}
	if dryRun {
		return o, true
	}
	err := a.Teardown(ctx, adapters.Slice{Name: name, World: goldenWorld, Home: homeID, AdminURL: admin, Password: adapters.Password(secret, kind, name)})
	switch {
	case errors.Is(err, adapters.ErrKept):
		o.Dropped, o.Note = true, err.Error()
	case err != nil:
		o.Error = err.Error()
	default:
		o.Dropped = true
		d.log.Info("gc dropped a half-built golden template", "name", name, "adapter", kind)
	}
	return o, true
}
