// Package doctor checks a git-binky install and says, for each finding,
// what to do. It reads; it changes nothing.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/client"
	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/hooks"
	"github.com/git-binky/git-binky/world"
)

// Levels of a finding. Only a problem makes doctor exit non-zero; a warning
// is something that works around itself or only some setups need.
const (
	OK      = "ok"
	Warning = "warning"
	Problem = "problem"
)

// Finding is one check's outcome.
type Finding struct {
	Check  string `json:"check"`
	Level  string `json:"level"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// minGit is the oldest git binky works with.
const minGit = "2.31"

// gitOlder reports whether `git --version` output v names a release
// older than major.minor; a version it cannot read is not called older.
func gitOlder(v string, major, minor int) bool {
	f := strings.Fields(v)
	if len(f) < 3 {
		return false
	}
	parts := strings.SplitN(f[2], ".", 3)
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma < major || ma == major && mi < minor
}

// rootDataDir is world.RootDataDir, where the tests put a folder of their
// own.
var rootDataDir = world.RootDataDir

// Run performs every check from dir.
func Run(ctx context.Context, c *client.Client, dir string) []Finding {
	var out []Finding
	add := func(check, level, detail, fix string) {
		out = append(out, Finding{Check: check, Level: level, Detail: detail, Fix: fix})
	}

	// git's version anywhere: from a folder that is gone (a removed
	// worktree), the error was chdir's and the fix "install git".
	versionDir := dir
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		versionDir = "/"
	}
	if v, err := gitx.Git(ctx, versionDir, "--version"); err != nil {
		add("git", Problem, err.Error(), "install git "+minGit+" or newer")
	} else if gitOlder(v, 2, 31) {
		add("git", Problem, v+": binky needs "+minGit+" or newer (rev-parse --path-format, which hooks and worktrees use)", "install git "+minGit+" or newer")
	} else {
		add("git", OK, v, "")
	}
	add("git-binky", OK, "version "+c.Version, "")
	gitBinky(ctx, dir, add)
	if p, err := client.DaemonPath(); err != nil {
		add("binkyd", Problem, err.Error(), "make install (or go install ./cmd/...) puts binkyd beside binky")
	} else {
		add("binkyd", OK, p, "")
	}

	if note := c.Home.CopiedNote(); note != "" {
		add("home", Warning, note, "nothing to do while the home it was copied from lives; if it is gone for good, drop the slices its marks name by hand on their servers")
	}

	if why := c.Home.SecretDamaged(); why != "" {
		add("home", Problem, why, "restore it from a backup of "+c.Home.Dir+" (a new one would not match the worlds made with it)")
	}

	settings, err := c.Home.LoadSettings()
	if err != nil {
		add("settings", Problem, err.Error(), "fix "+c.Home.SettingsPath())
	} else {
		add("settings", OK, c.Home.SettingsPath(), "")
	}

	probe := *c
	probe.NoStart = true
	var h api.Hello
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = probe.Call(hctx, api.Request{Op: api.OpHello}, nil, &h)
	cancel()
	switch {
	case errors.Is(err, client.ErrNoDaemon):
		add("daemon", Problem, "not running, so nothing watches worktrees and no proxy answers", "git binky daemon start (any command that needs it also starts it)")
	case err != nil:
		add("daemon", Problem, err.Error(), "see "+c.Home.LogPath())
	case h.Version != c.Version:
		add("daemon", Problem, fmt.Sprintf("pid %d runs version %s, this git-binky is %s", h.PID, h.Version, c.Version), "git binky daemon start replaces it (services keep running)")
	default:
		add("daemon", OK, fmt.Sprintf("pid %d, version %s, %d worlds", h.PID, h.Version, h.Worlds), "")
		for _, p := range h.Problems {
			if p != c.Home.ProxyDown() { // said once, under proxy
				add("daemon", Problem, p, "")
			}
		}
	}

	if err == nil {
		if st, serr := probe.Status(ctx, dir, false); serr == nil {
			for _, srv := range st.Servers {
				if srv.Running {
					add("server", OK, fmt.Sprintf("shared %s on 127.0.0.1:%d (%s)", srv.Kind, srv.Port, srv.Where()), "")
				} else {
					add("server", Warning, fmt.Sprintf("shared %s is stopped (%s)", srv.Kind, srv.Where()), "none needed: it starts again when a world needs it")
				}
			}
		}
		if why := c.Home.ProxyDown(); why != "" {
			// Something may answer on the port: another program, which is
			// why binky's proxy is down; never "ok" then.
			add("proxy", Problem, "binky's proxy is down: "+why, fmt.Sprintf("stop what holds 127.0.0.1:%d, or 'git binky port --proxy N' picks another port", settings.ProxyPort))
		} else if conn, derr := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", settings.ProxyPort), time.Second); derr != nil {
			add("proxy", Problem, fmt.Sprintf("nothing answers on 127.0.0.1:%d", settings.ProxyPort), "git binky port --proxy N picks another port")
		} else {
			conn.Close()
			add("proxy", OK, fmt.Sprintf("127.0.0.1:%d", settings.ProxyPort), "")
		}
	}
	// Every kind of the adapter table binky can run itself: whether it can
	// here, or what to install (services of that kind then need admin_url).
	// Inside a project, a kind it does not ask binky to run is no warning.
	used, inProject := projectKinds(dir)
	for _, k := range adapters.Kinds {
		if k.Server == nil {
			continue
		}
		switch {
		case k.Server.Installed():
			add("server", OK, fmt.Sprintf("%s: can run a shared server (%s)", k.Name, strings.Join(k.Server.Binaries, ", ")), "")
		case inProject && !used[k.Name]:
			add("server", OK, fmt.Sprintf("%s: cannot run a shared server (%s not found); this project has no %s service for binky to run one for", k.Name, strings.Join(k.Server.Binaries, ", "), k.Name), "")
		default:
			add("server", Warning, fmt.Sprintf("%s: cannot run a shared server, %s not found", k.Name, strings.Join(k.Server.Binaries, ", ")),
				k.Server.Install+", or give each "+k.Name+" service an admin_url")
		}
	}
	if addrs, lerr := net.DefaultResolver.LookupHost(ctx, "binky-doctor.localhost"); lerr != nil || !loopback(addrs) {
		add("*.localhost", Warning, "this machine's resolver does not map *.localhost to loopback (browsers and curl do it themselves)",
			"between services use ${svc.direct_url}; for other tools install nss-myhostname (systemd-resolved) or use 'git binky curl'")
	} else {
		add("*.localhost", OK, "resolves to loopback", "")
	}

	if repo, wt, derr := gitx.Discover(dir); repo != nil && derr == nil {
		if _, serr := os.Stat(filepath.Join(wt.Path, world.ConfigFile)); serr == nil {
			if ok, where := hooks.Installed(ctx, dir); ok {
				add("hook", OK, "post-checkout: "+where, "")
			} else {
				add("hook", Problem, "this repository has a binky.toml but no git-binky post-checkout hook: 'git worktree add' will not bring worlds up", "git binky install")
			}
			registered := false
			repos, _ := c.Home.Repos()
			for _, r := range repos {
				registered = registered || r.CommonDir == repo.CommonDir
			}
			if !registered {
				add("watcher", Problem, "this repository is not watched: removing a worktree will not tear its world down", "git binky install")
			} else {
				add("watcher", OK, "watching "+repo.CommonDir, "")
			}
		}
	}

	leases, _ := c.Home.Leases()
	stale, held, outside := 0, 0, 0
	for _, l := range leases {
		switch {
		case l.Stale:
			stale++
		case l.Port < settings.Ports.Min || l.Port > settings.Ports.Max:
			outside++ // held since before [ports] was narrowed
		default:
			held++
		}
	}
	size := settings.Ports.Max - settings.Ports.Min + 1
	free := size - held
	if outside > 0 {
		add("ports", OK, fmt.Sprintf("%d ports held outside %d-%d (leased before [ports] changed): their worlds keep them until removed", outside, settings.Ports.Min, settings.Ports.Max), "")
	}
	switch {
	case free < size/10:
		add("ports", Problem, fmt.Sprintf("%d of %d ports in %d-%d are free", free, size, settings.Ports.Min, settings.Ports.Max), "remove worlds you no longer need, or widen [ports] in "+c.Home.SettingsPath())
	default:
		add("ports", OK, fmt.Sprintf("%d of %d ports in %d-%d are free", free, size, settings.Ports.Min, settings.Ports.Max), "")
	}
	if stale > 0 {
		add("leases", Warning, fmt.Sprintf("%d stale leases (their world is gone)", stale), "none needed: the allocator reclaims them when it reaches them")
	}

	recs, err := c.Home.Records()
	if u := (*world.UnreadableRecords)(nil); errors.As(err, &u) {
		for _, e := range u.Errs {
			add("records", Problem, e.Error(), "if the world's worktree still exists, 'git binky up' there after deleting the file makes its record again and takes back its slices (their marks name the world)")
		}
	}
	var orphans []string
	for _, r := range recs {
		if _, err := os.Stat(r.AdminDir); err != nil {
			orphans = append(orphans, r.Project+"/"+r.Worktree)
		}
	}
	if len(orphans) > 0 {
		add("records", Problem, fmt.Sprintf("%d world records whose worktree git no longer has: %s", len(orphans), strings.Join(orphans, ", ")),
			"git binky install in their repository (the watcher tears them down), or delete the files under "+c.Home.WorldsDir())
	} else {
		add("records", OK, fmt.Sprintf("%d worlds recorded", len(recs)), "")
	}
	// As root, a deleted home's shared servers keep their files (and run,
	// if they ran) under /var/lib/git-binky: nothing of binky's reaches
	// them any more, and their admin passwords went with the home. Its
	// path may only be unmounted now, so the fix says when it applies.
	roots, _ := world.RootOrphans(rootDataDir)
	for _, o := range roots {
		what := "server files"
		if len(o.Kinds) > 0 {
			what = strings.Join(o.Kinds, ", ") + " files"
		}
		detail := fmt.Sprintf("%s holds the %s of a home no longer at %s", o.Folder, what, o.Home)
		fix := "rm -rf " + o.Folder
		if len(o.Running) > 0 {
			var names, pids []string
			for _, p := range o.Running {
				names = append(names, fmt.Sprintf("%s (pid %d)", p.Name, p.PID))
				pids = append(pids, strconv.Itoa(p.PID))
			}
			detail += "; still running from it: " + strings.Join(names, ", ")
			fix = "kill -INT " + strings.Join(pids, " ") + ", and once they have exited, " + fix
		}
		add("server files", Warning, detail, "if that home is gone for good (not on a disk unmounted now): "+fix)
	}
	if _, err := exec.LookPath("caddy"); err != nil && settings.HTTPS {
		add("https", Problem, "https is on but caddy is not on PATH", "install Caddy, or git binky port --tls off")
	}
	return out
}

func loopback(addrs []string) bool {
	if len(addrs) == 0 {
		return false
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}

// gitBinky checks what git runs for `git binky`: the git-binky in git's
// exec-path or on PATH, the launcher, which runs the binky beside it. One
// beside another binky than this may run another build.
func gitBinky(ctx context.Context, dir string, add func(check, level, detail, fix string)) {
	const check = "git binky"
	found := ""
	if d, err := gitx.Git(ctx, dir, "--exec-path"); err == nil {
		name := "git-binky"
		if runtime.GOOS == "windows" {
			name += ".exe"
		}
		if p := filepath.Join(strings.TrimSpace(d), name); isExecutable(p) {
			found = p
		}
	}
	if found == "" {
		p, err := exec.LookPath("git-binky")
		if err != nil {
			add(check, Problem, "no git-binky in git's exec-path or on PATH, so git cannot run 'git binky' ('binky' works without it)",
				"make install (or go install ./cmd/...) puts git-binky beside binky: put that folder on PATH")
			return
		}
		found = p
	}
	self, err1 := os.Executable()
	launcher, err2 := filepath.EvalSymlinks(found)
	if err1 == nil && err2 == nil {
		if self, err := filepath.EvalSymlinks(self); err == nil && !runsThis(filepath.Dir(launcher), self) {
			add(check, Warning, found+" runs the binky beside it, not this one ("+self+"): it may be another build",
				"install them together with 'make install', or put "+filepath.Dir(self)+" first on PATH")
			return
		}
	}
	add(check, OK, found, "")
}

// runsThis reports whether the launcher in dir ends up running self: the
// binky beside it, or, when self is the daemon's binary (doctor asked
// through `git binky mcp`, which binky hands to binkyd), the binkyd that
// binky finds.
func runsThis(dir, self string) bool {
	if strings.TrimSuffix(filepath.Base(self), ".exe") != client.DaemonBinary {
		return filepath.Dir(self) == dir
	}
	p, err := client.DaemonPathFrom(dir)
	if err != nil {
		return false
	}
	a, err1 := os.Stat(p)
	b, err2 := os.Stat(self)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	// Windows has no mode bits for running: a .exe runs.
	return err == nil && fi.Mode().IsRegular() && (runtime.GOOS == "windows" || fi.Mode()&0o111 != 0)
}

// projectKinds are the kinds of the services of the binky.toml around dir
// that binky would run a server for (an adapter and no admin_url), and
// whether there is one binky can read.
func projectKinds(dir string) (map[string]bool, bool) {
	_, wt, err := gitx.Discover(dir)
	if err != nil {
		return nil, false
	}
	path := filepath.Join(wt.Path, world.ConfigFile)
	src, err := world.ReadConfigFile(path)
	if err != nil {
		return nil, false
	}
	cfg, diags := world.ParseConfig(path, src)
	if cfg == nil {
		return nil, false
	}
	for _, d := range diags {
		if d.Severity == world.SeverityError {
			return nil, false // (a misspelled adapter key would hide a kind)
		}
	}
	kinds := map[string]bool{}
	for _, n := range cfg.ServiceNames() {
		svc := cfg.Services[n]
		// An admin_url from the environment falls back to binky's own
		// server where the variable is unset or empty.
		if svc.Adapter != "" && (svc.AdminURL == "" || strings.Contains(svc.AdminURL, "${env.")) {
			kinds[adapters.Canonical(svc.Adapter)] = true
		}
	}
	return kinds, true
}
