package hooks

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/world"
)

// Daemon is what the hook commands need of binky's daemon: one request.
// (*client.Client satisfies it.)
type Daemon interface {
	Call(ctx context.Context, req api.Request, onEvent func(api.Event), result any) error
}

// Setup is `git binky install` for the repository around dir: the hook,
// the repository in the watcher's registry (its worktrees as they are now
// are not "born"), approval of the binky.toml of the worktree dir is in,
// and a nudge to a running daemon to watch it. d may be nil (no daemon:
// it watches what is registered when it starts).
func Setup(ctx context.Context, home world.Home, dir string, d Daemon) (Result, error) {
	repo, wt, err := gitx.Discover(dir)
	if repo == nil {
		return Result{}, err
	}
	res, err := Install(ctx, dir)
	if err != nil {
		return res, err
	}
	var seen []string
	wts, _ := repo.Worktrees()
	for _, w := range wts {
		if !w.Main {
			seen = append(seen, w.Name)
		}
	}
	if _, err := home.RegisterRepo(repo.CommonDir, seen); err != nil {
		return res, err
	}
	if wt != nil {
		path := filepath.Join(wt.Path, world.ConfigFile)
		if src, err := world.ReadConfigFile(path); err == nil {
			if _, diags := world.ParseConfig(path, src); world.HasErrors(diags) {
				res.NotApproved = (&world.ConfigError{Diagnostics: diags}).Error()
			} else if err := home.Trust(src, path); err != nil {
				return res, err
			}
		}
	}
	if d != nil {
		_ = d.Call(ctx, api.Request{Op: api.OpWatch, Dir: dir}, nil, nil)
	}
	return res, nil
}

// Teardown is `git binky uninstall`: binky's hook goes (only its own
// lines) and the repository leaves the watcher's registry. Worlds already
// up keep running.
func Teardown(ctx context.Context, home world.Home, dir string) (Result, error) {
	repo, _, err := gitx.Discover(dir)
	if repo == nil {
		return Result{}, err
	}
	res, err := Uninstall(ctx, dir)
	if err != nil {
		return res, err
	}
	return res, home.UnregisterRepo(repo.CommonDir)
}

// Checkout is one run of the installed post-checkout hook.
type Checkout struct {
	Home world.Home
	// Dir is where git ran the hook: the worktree checked out.
	Dir string
	// Args are git's: previous HEAD, new HEAD, and 1 for a branch checkout.
	Args   []string
	Daemon Daemon
	// Err is where the user is told what binky did not do, and why.
	Err io.Writer
}

// PostCheckout hands a checkout to the daemon: "born" when git worktree add
// made the worktree (a null previous HEAD), "checkout" for a branch switch,
// nothing for a file checkout or a branch without a binky.toml. It never
// fails and returns within seconds: a hook must never fail or stall a
// checkout.
func PostCheckout(ctx context.Context, c Checkout) {
	defer func() { _ = recover() }() // a hook must never fail a checkout
	prev, flag := "", ""
	if len(c.Args) >= 1 {
		prev = c.Args[0]
	}
	if len(c.Args) >= 3 {
		flag = c.Args[2]
	}
	event := ""
	switch {
	case IsNullRef(prev):
		event = api.EventBorn
	case flag == "1":
		event = api.EventCheckout
	default:
		return // a file checkout
	}
	if event == api.EventBorn && os.Getenv(gitx.AddingEnv) != "" {
		// binky's own up made this worktree (a hook block from before
		// the shell checked this runs us anyway): that up starts it.
		return
	}
	_, wt, err := gitx.Discover(c.Dir)
	if err != nil || (event == api.EventBorn && wt.Main) {
		return
	}
	src, err := world.ReadConfigFile(filepath.Join(wt.Path, world.ConfigFile))
	if err != nil {
		return // no binky.toml on this branch (or none binky reads): nothing to do
	}
	if event == api.EventBorn {
		if _, diags := world.ParseConfig(filepath.Join(wt.Path, world.ConfigFile), src); world.HasErrors(diags) {
			// Neither an approval nor the daemon can start it: the daemon
			// only logged why, and a trust said it was starting.
			fmt.Fprintf(c.Err, "git-binky: %s: its binky.toml cannot be used, so its world is not started: %s\n"+
				"git-binky: fix it ('git binky check' in %s lists every problem), then run 'git binky up' there.\n",
				world.Inert(wt.Name), world.Inert((&world.ConfigError{Diagnostics: diags}).Error()), world.Inert(wt.Path))
			return
		}
	}
	if event == api.EventBorn && !c.Home.TrustedHere(src, filepath.Join(wt.Path, world.ConfigFile)) {
		fmt.Fprintf(c.Err, "git-binky: %s: %s, so its world is not started.\n"+
			"git-binky: read it, then run 'git binky trust' in %s to approve and start it.\n", world.Inert(wt.Name), c.Home.Untrusted(src, filepath.Join(wt.Path, world.ConfigFile)), world.Inert(wt.Path))
	}
	if c.Daemon == nil {
		return
	}
	if !utf8.ValidString(wt.Path) {
		fmt.Fprintf(c.Err, "git-binky: %s is not named in UTF-8, which binky needs to manage a world from its folder: its world is not started; rename the folder ('git worktree move') to start it\n", world.Inert(wt.Path))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := c.Daemon.Call(ctx, api.Request{Op: api.OpHook, Event: event, Dir: wt.Path, Env: CallerEnv(os.Environ())}, nil, nil); err != nil {
		fmt.Fprintf(c.Err, "git-binky: could not reach the daemon (%s); 'git binky up' in %s starts the world by hand\n",
			world.Inert(strings.TrimSpace(err.Error())), world.Inert(wt.Path))
	}
}
