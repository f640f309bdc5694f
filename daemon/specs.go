package daemon

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/git-binky/git-binky/supervisor"
	"github.com/git-binky/git-binky/world"
)

// serviceNames returns the services to run for group ("" = the group
// named default when there is one, as init writes for compose profiles;
// else all), with their dependencies, in start order; adapter slices are
// not processes.
func serviceNames(cfg *world.Config, group string) ([]string, error) {
	var only []string
	if _, ok := cfg.Groups["default"]; ok && group == "" {
		group = "default"
	}
	if group != "" {
		g, err := cfg.Group(group)
		if err != nil {
			return nil, err
		}
		if len(g) == 0 {
			return nil, nil // an empty group starts nothing, not everything
		}
		only = g
	}
	order, err := cfg.Order(only)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range order {
		if cfg.Services[n].Adapter == "" {
			out = append(out, n)
		}
	}
	return out, nil
}

// startNames is what an up starts: group's services (see serviceNames)
// and those of also (what a restarted world ran) that cfg still has, with
// what they depend on, in depends_on order. With no group named, what the
// world ran is all it starts, unless the file has none of it left: a world
// that ran one group comes back with that group, not the default too.
func startNames(cfg *world.Config, group string, also []string) ([]string, error) {
	kept := slices.DeleteFunc(slices.Clone(also), func(n string) bool { return cfg.Services[n] == nil })
	var names []string
	if group != "" || len(kept) == 0 {
		var err error
		if names, err = serviceNames(cfg, group); err != nil {
			return nil, err
		}
	}
	if len(kept) == 0 {
		return names, nil
	}
	order, err := cfg.Order(append(names, kept...))
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(order, func(n string) bool { return cfg.Services[n].Adapter != "" }), nil
}

// noProbeSettle is how long a service binky cannot probe (no port, no
// health check: a worker) must run before its up counts it as up. A
// worker that dies at once (a bad command, a module missing, a password
// refused) failed nothing: its up said ✓ while it crash-looped.
const noProbeSettle = time.Second

// buildSpecs turns the world's services into supervisor specs; each
// process gets world.ProcessEnvFor, over coordinates worked out once.
func buildSpecs(w *world.World, rec *world.Record, names []string, callerEnv []string) ([]supervisor.Spec, error) {
	cfg := w.Config
	coords := w.Coordinates(rec)
	run := map[string]bool{}
	for _, n := range names {
		run[n] = true
	}
	var specs []supervisor.Spec
	var envs []map[string]string
	for _, name := range names {
		s := cfg.Services[name]
		env, err := w.ProcessEnvFor(coords, rec, callerEnv, name)
		if err != nil {
			return nil, fmt.Errorf("service %s: %w", name, err)
		}
		envs = append(envs, env)
		port := rec.Ports[name]
		lookup := w.Lookup(coords, name, env)
		dir := w.Worktree.Path
		if s.Cwd != "" {
			dir = filepath.Join(dir, world.Interpolate(s.Cwd, lookup))
		}
		cmdline, err := world.InterpolateShell(s.Cmd, lookup)
		if err != nil {
			return nil, fmt.Errorf("service %s: cmd: %w", name, err)
		}
		spec := supervisor.Spec{
			Name:        name,
			Cmd:         cmdline,
			Shown:       s.Cmd,
			Dir:         dir,
			Env:         world.SortedEnv(env),
			Restart:     supervisor.Policy(s.Restart),
			StopTimeout: s.StopTimeout.Duration,
			LogPath:     filepath.Join(world.LogDir(w.Worktree.AdminDir), name+".log"),
			Mark:        serviceMark(rec, w.Home, name),
			Oneshot:     s.Oneshot,
			PortsFree:   portsFree(rec, s),
		}
		for _, d := range s.DependsOn {
			if run[d] { // adapter slices are ready before any process starts
				spec.DependsOn = append(spec.DependsOn, d)
			}
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if s.Oneshot {
			// Ready when it exits 0: a probe of its port would fail it.
			specs = append(specs, spec)
			continue
		}
		if h := s.Health; h != nil {
			spec.Health = supervisor.Health{
				Interval: h.Interval.Duration, Timeout: h.Timeout.Duration,
				StartPeriod: h.StartPeriod.Duration, Retries: h.Retries,
			}
			switch {
			case h.HTTP != "":
				spec.Health.HTTP = "http://" + addr + world.Interpolate(h.HTTP, lookup)
			case h.TCP:
				spec.Health.TCP = addr
			case h.Cmd != "":
				if spec.Health.Cmd, err = world.InterpolateShell(h.Cmd, lookup); err != nil {
					return nil, fmt.Errorf("service %s: health cmd: %w", name, err)
				}
			default:
				if port != 0 {
					spec.Health.TCP = addr
				}
			}
		} else if port != 0 {
			// A service with a port is ready when it accepts connections.
			spec.Health.TCP = addr
		}
		if spec.Health.HTTP == "" && spec.Health.TCP == "" && spec.Health.Cmd == "" {
			spec.Settle = noProbeSettle
		}
		specs = append(specs, spec)
	}
	// What binky quotes of a service (its last output, a probe's) hides
	// the credentials of every environment built here: the world's
	// slices', its env files', the caller's. Made from those, not built
	// again (ProcessHider would build every service's environment anew).
	hide := world.HiderOf(envs...)
	for i := range specs {
		specs[i].Hide = hide
	}
	return specs, nil
}

// serviceMark is what every process of a world's service carries in its
// environment (supervisor.Spec.Mark): the same for the service whichever
// daemon of its home runs it, and no other service's. The home is in it:
// a world's id is its worktree's, and a stale world one home kept for a
// worktree removed and added again shared it with another home's live
// one, whose service the stale world's teardown then killed (an attack).
func serviceMark(rec *world.Record, home world.Home, service string) string {
	id := rec.Home
	if id == "" {
		id, _ = home.ID()
	}
	return id + "." + rec.ID + "." + service
}

// portsFree checks, before each start of service s, that no other program
// holds one of its ports (up checks them once, checkPortsFree; a restart
// or a 'service start' comes later).
func portsFree(rec *world.Record, s *world.Service) func() error {
	var ports []int
	for _, k := range s.PortKeys() {
		if p := rec.Ports[k]; p != 0 {
			ports = append(ports, p)
		}
	}
	if len(ports) == 0 {
		return nil
	}
	return func() error {
		for _, p := range ports {
			if !world.FreeToStart(p) {
				return fmt.Errorf("its port %d is in use by another program: stop it (see 'ss -ltnp sport = :%d'), then start the service again", p, p)
			}
		}
		return nil
	}
}
