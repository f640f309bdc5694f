package daemon

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/git-binky/git-binky/supervisor"
	"github.com/git-binky/git-binky/world"
)

// envMap turns KEY=value pairs into a map; later pairs win.
func envMap(pairs []string) map[string]string {
	m := make(map[string]string, len(pairs))
	for _, kv := range pairs {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

func envList(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// serviceNames returns the services to run for group ("" = all), with
// their dependencies, in start order; adapter slices are not processes.
func serviceNames(cfg *world.Config, group string) ([]string, error) {
	var only []string
	if group != "" {
		g, err := cfg.Group(group)
		if err != nil {
			return nil, err
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

// buildSpecs turns the world's services into supervisor specs. Each process
// gets the caller's environment, then the project and service env files,
// then the whole coordinate map, PORT, and its own env, in that order.
func buildSpecs(w *world.World, rec *world.Record, names []string, callerEnv []string) ([]supervisor.Spec, error) {
	cfg := w.Config
	coords := w.Coordinates(rec)
	base := envMap(callerEnv)
	if cfg.Project.EnvFile != "" {
		fileEnv, err := world.ReadEnvFile(filepath.Join(w.Worktree.Path, cfg.Project.EnvFile))
		if err != nil {
			return nil, fmt.Errorf("[project] %w", err)
		}
		for k, v := range fileEnv {
			base[k] = v
		}
	}
	run := map[string]bool{}
	for _, n := range names {
		run[n] = true
	}
	var specs []supervisor.Spec
	for _, name := range names {
		s := cfg.Services[name]
		env := make(map[string]string, len(base)+len(coords.Env)+len(s.Env)+1)
		for k, v := range base {
			env[k] = v
		}
		if s.EnvFile != "" {
			fileEnv, err := world.ReadEnvFile(filepath.Join(w.Worktree.Path, s.EnvFile))
			if err != nil {
				return nil, fmt.Errorf("service %s: %w", name, err)
			}
			for k, v := range fileEnv {
				env[k] = v
			}
		}
		for k, v := range coords.Env {
			env[k] = v
		}
		port := rec.Ports[name]
		if port != 0 {
			env["PORT"] = strconv.Itoa(port)
		}
		lookup := w.Lookup(coords, name, env)
		for _, k := range sortedKeys(s.Env) {
			env[k] = world.Interpolate(s.Env[k], lookup)
		}
		lookup = w.Lookup(coords, name, env)
		dir := w.Worktree.Path
		if s.Cwd != "" {
			dir = filepath.Join(dir, world.Interpolate(s.Cwd, lookup))
		}
		spec := supervisor.Spec{
			Name:        name,
			Cmd:         world.Interpolate(s.Cmd, lookup),
			Dir:         dir,
			Env:         envList(env),
			Restart:     supervisor.Policy(s.Restart),
			StopTimeout: s.StopTimeout.Duration,
			LogPath:     filepath.Join(world.LogDir(w.Worktree.AdminDir), name+".log"),
		}
		for _, d := range s.DependsOn {
			if run[d] { // adapter slices are ready before any process starts
				spec.DependsOn = append(spec.DependsOn, d)
			}
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
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
				spec.Health.Cmd = world.Interpolate(h.Cmd, lookup)
			default:
				if port != 0 {
					spec.Health.TCP = addr
				}
			}
		} else if port != 0 {
			// A service with a port is ready when it accepts connections.
			spec.Health.TCP = addr
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
