package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/builtin"
	"github.com/git-binky/git-binky/adapters/managed"
	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/world"
)

// Servers is `git binky servers [stop|start] [kind]`: the managed shared
// servers, listed, stopped (their data kept) or started, so that nobody
// needs pg_ctl or redis-cli shutdown to do it.
func (d *Daemon) Servers(ctx context.Context, req api.Request) ([]api.Server, error) {
	var kinds []string
	if req.Name == "" {
		for _, s := range d.servers.Status() {
			kinds = append(kinds, s.Kind)
		}
		if req.Action == "start" {
			// Start every kind this home's worlds use.
			seen := map[string]bool{}
			recs, _ := d.home.Records()
			for _, r := range recs {
				for _, sl := range r.Slices {
					ref, _ := sl.Config["admin"].(string)
					if k, ok := strings.CutPrefix(ref, "managed:"); ok {
						seen[k] = true
					}
				}
			}
			for _, k := range kinds {
				seen[k] = true
			}
			kinds = kinds[:0]
			for k := range seen {
				kinds = append(kinds, k)
			}
			sort.Strings(kinds)
		}
	} else if k, ok := builtin.Managed(req.Name); ok {
		kinds = []string{k}
	} else {
		return nil, &api.Error{Code: api.CodeUsage, Message: fmt.Sprintf("binky runs no %s server itself: it runs %s", req.Name, strings.Join(managed.Kinds(), ", "))}
	}
	for _, k := range kinds {
		switch req.Action {
		case "":
		case "stop":
			if err := d.servers.Stop(ctx, k); err != nil {
				return nil, err
			}
			d.log.Info("managed server stopped", "kind", k)
		case "start":
			if _, err := d.servers.Start(ctx, k); err != nil {
				return nil, err
			}
			d.log.Info("managed server started", "kind", k)
		default:
			return nil, &api.Error{Code: api.CodeUsage, Message: fmt.Sprintf("unknown action %q: stop or start", req.Action)}
		}
	}
	out := []api.Server{}
	users := d.serverUsers()
	for _, s := range d.servers.Status() {
		s.Worlds = users[s.Kind]
		out = append(out, s)
	}
	return out, nil
}

// ServersWithoutDaemon is Servers for `git binky servers [stop] [kind]`
// when no daemon runs (`binkyd servers`). Binky's own servers outlive a
// daemon killed -9, and are found and stopped from their pid files under
// the kind's lock, which holds across processes: a daemon started
// meanwhile waits for it. Starting one is left to a daemon, whose worlds
// need it next.
func ServersWithoutDaemon(ctx context.Context, home world.Home, log *slog.Logger, req api.Request) ([]api.Server, error) {
	if req.Action == "start" {
		return nil, &api.Error{Code: api.CodeUsage, Message: "a shared server is started by the daemon: 'git binky servers start' starts one"}
	}
	d := &Daemon{home: home, log: log, servers: managed.New(home)}
	return d.Servers(ctx, req)
}

// serverUsers names, by kind, this home's worlds with processes that
// may be connected to binky's own server of that kind: running, starting,
// suspended (they resume) or untrusted (adopted services run on).
func (d *Daemon) serverUsers() map[string][]string {
	users := map[string][]string{}
	recs, _ := d.home.Records()
	id, _ := d.home.ID()
	for _, r := range recs {
		switch r.State {
		case world.StateRunning, world.StateStarting, world.StateSuspended, world.StateUntrusted:
		default:
			continue
		}
		if r.Home != "" && r.Home != id {
			continue
		}
		seen := map[string]bool{}
		for _, sl := range r.Slices {
			ref, _ := sl.Config["admin"].(string)
			if k, ok := strings.CutPrefix(ref, "managed:"); ok && !seen[k] {
				seen[k] = true
				users[k] = append(users[k], r.Worktree)
			}
		}
	}
	for _, names := range users {
		sort.Strings(names)
	}
	return users
}

// goldenMarker is a template's file under $BINKY_HOME/golden: written once
// the template is complete.
type goldenMarker struct {
	Name    string    `json:"name"`
	Adapter string    `json:"adapter"`
	Project string    `json:"project"`
	Migrate string    `json:"migrate"`
	Seed    string    `json:"seed"`
	Built   time.Time `json:"built"`
	// Admin is where its server is, as slice records keep it; absent in
	// markers of an older binky, which only built on the managed server.
	Admin string `json:"admin"`
	// Service is the service whose template it is; absent in markers of
	// an older binky, whose templates are never dropped as superseded.
	Service string `json:"service,omitempty"`
	// Commit is the HEAD of the worktree whose migrate and seed built it,
	// kept only when that worktree had no changes and no untracked files
	// from before its migrate to after its seed: a clone into a clean
	// worktree at the same commit has no migration the template lacks.
	// Absent otherwise, and in an older binky's markers.
	Commit string `json:"commit,omitempty"`
	// Blank marks a blank template, the copy of template1 plain slices
	// on binky's own server are cloned from (blank.go): no project, no
	// service, no migrate or seed.
	Blank bool `json:"blank,omitempty"`
}

// markerFile is a golden template's marker as read from its file, whose
// time is the template's last use.
type markerFile struct {
	goldenMarker
	path string
	used time.Time
}

// goldenMarkers reads this home's template markers, in file name order;
// one that cannot be read is left out.
func (d *Daemon) goldenMarkers() []markerFile {
	files, _ := filepath.Glob(filepath.Join(d.home.GoldenDir(), "*.json"))
	sort.Strings(files)
	var out []markerFile
	for _, f := range files {
		b, err := os.ReadFile(f)
		fi, serr := os.Stat(f)
		var m goldenMarker
		if err != nil || serr != nil || json.Unmarshal(b, &m) != nil || m.Name == "" {
			continue
		}
		out = append(out, markerFile{m, f, fi.ModTime()})
	}
	return out
}

// dropGolden tears down the template m (only if it is marked as this
// home's golden template), its spare with it, then removes its marker at
// path, so the next up of its key builds it again. Call it holding the
// template's lock.
func (d *Daemon) dropGolden(ctx context.Context, m goldenMarker, path string, env []string) error {
	a, err := builtin.Lookup(m.Adapter)
	if err != nil {
		return err
	}
	admin, err := d.adminFromRef(ctx, m.adminRef(), env)
	if err != nil {
		return fmt.Errorf("golden template %s: %w", m.Name, err)
	}
	homeID, err := d.home.ID()
	if err != nil {
		return err
	}
	secret, err := d.home.Secret()
	if err != nil {
		return err
	}
	gs := adapters.Slice{Name: m.Name, World: goldenWorld, Home: homeID, AdminURL: admin, Password: adapters.Password(secret, m.Adapter, m.Name)}
	if err := a.Teardown(ctx, gs); errors.Is(err, adapters.ErrKept) {
		d.log.Warn("golden template dropped, something beside it kept", "name", m.Name, "err", err)
	} else if err != nil {
		if errors.Is(err, adapters.ErrNotOurs) {
			return fmt.Errorf("golden template %s is not marked as this home's: left alone: %w", m.Name, err)
		}
		return fmt.Errorf("drop golden template %s: %w", m.Name, err)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// adminRef is where the template's server is, as adminFromRef reads it.
func (m goldenMarker) adminRef() string {
	if m.Admin == "" {
		return "managed:" + m.Adapter
	}
	return m.Admin
}

// Golden is `git binky golden [drop NAME]`: the golden templates this home
// built, from their markers; drop tears one down (only if it is marked as
// this home's golden template) and removes its marker, so the next up
// builds it again.
func (d *Daemon) Golden(ctx context.Context, req api.Request) ([]api.Golden, error) {
	out := []api.Golden{}
	var found *goldenMarker
	var foundPath string
	for _, mf := range d.goldenMarkers() {
		m := mf.goldenMarker
		if req.Action == "drop" && m.Name == req.Name {
			found, foundPath = &m, mf.path
		}
		out = append(out, api.Golden{Name: m.Name, Adapter: m.Adapter, Project: m.Project, Migrate: m.Migrate, Seed: m.Seed, Built: m.Built, Blank: m.Blank})
	}
	switch req.Action {
	case "":
		return out, nil
	case "drop":
	default:
		return nil, &api.Error{Code: api.CodeUsage, Message: fmt.Sprintf("unknown action %q: drop", req.Action)}
	}
	if found == nil {
		return nil, &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no golden template %q in %s: 'git binky golden' lists them", req.Name, d.home.GoldenDir())}
	}
	unlock, err := world.Lock(ctx, filepath.Join(d.home.GoldenDir(), found.Name+".lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := d.dropGolden(ctx, *found, foundPath, req.Env); err != nil {
		return nil, err
	}
	d.log.Info("golden template dropped", "name", found.Name, "adapter", found.Adapter)
	for i := range out {
		if out[i].Name == found.Name {
			out[i].Dropped = true
		}
	}
	return out, nil
}
