package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/hooks"
	"github.com/git-binky/git-binky/world"
)

func newInstallCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "install",
		Short: "Install the post-checkout hook and watch this repository (once per repository)",
		Long: `Install git-binky's post-checkout hook in the hooks folder git really uses
(core.hooksPath honoured), keeping any hook already there, and register the
repository with the daemon's watcher: from then on 'git worktree add' brings
a world up (per [project] auto) and removing a worktree tears it down.
It also approves the binky.toml you stand in for automatic starts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			home, err := app.Home()
			if err != nil {
				return err
			}
			repo, wt, err := gitx.Discover(app.Dir)
			if repo == nil {
				return err
			}
			res, err := hooks.Install(ctx, app.Dir)
			if err != nil {
				return err
			}
			var seen []string
			wts, _ := repo.Worktrees()
			for _, w := range wts {
				if !w.Main {
					seen = append(seen, w.Name)
				}
			}
			if _, err := home.RegisterRepo(repo.CommonDir, seen); err != nil {
				return err
			}
			if wt != nil {
				if src, err := os.ReadFile(filepath.Join(wt.Path, world.ConfigFile)); err == nil {
					if err := home.Trust(src, filepath.Join(wt.Path, world.ConfigFile)); err != nil {
						return err
					}
				}
			}
			if c, err := app.Client(); err == nil {
				_ = c.Call(ctx, api.Request{Op: api.OpWatch, Dir: app.Dir}, nil, nil)
			}
			st := app.Style()
			switch {
			case res.Method == "config":
				fmt.Fprintln(app.Out, st.ok("installed: hook.git-binky.command in this repository's config (post-checkout)"))
			case res.Changed:
				fmt.Fprintln(app.Out, st.ok("installed: "+res.Path))
			default:
				fmt.Fprintln(app.Out, st.ok("already installed: "+res.Path))
			}
			return nil
		},
	}
}

func newUninstallCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "uninstall",
		Short: "Remove git-binky's hook (only its own lines) and stop watching this repository",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			home, err := app.Home()
			if err != nil {
				return err
			}
			repo, _, err := gitx.Discover(app.Dir)
			if repo == nil {
				return err
			}
			res, err := hooks.Uninstall(cmd.Context(), app.Dir)
			if err != nil {
				return err
			}
			if err := home.UnregisterRepo(repo.CommonDir); err != nil {
				return err
			}
			st := app.Style()
			if res.Changed {
				fmt.Fprintln(app.Out, st.ok("uninstalled from "+res.Path+"; worlds already up keep running"))
			} else {
				fmt.Fprintln(app.Out, "no git-binky hook was installed")
			}
			return nil
		},
	}
}

func newTrustCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "trust [path]",
		Short: "Approve a binky.toml for automatic starts on this machine",
		Long: `A binky.toml runs commands. Worlds started automatically (by the hook or the
watcher) only run a config whose exact content you approved on this machine.
'install' and an explicit 'up' approve the config they run; a branch that
changes binky.toml needs 'git binky trust' in its worktree. Trusting also
does what [project] auto says for that worktree.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := app.Client()
			if err != nil {
				return err
			}
			p := ""
			if len(args) == 1 {
				p = args[0]
			}
			t, err := c.Trust(cmd.Context(), app.Dir, p)
			if err != nil {
				return err
			}
			fmt.Fprintln(app.Out, app.Style().ok(fmt.Sprintf("trusted %s (sha256 %s)", t.File, t.Hash[:12])))
			return nil
		},
	}
}

// newHookCmd is what the installed hook runs. Whatever happens it exits 0
// and returns fast: it only hands the event to the daemon.
func newHookCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:    "hook post-checkout <prev> <new> <flag>",
		Short:  "Entry point of the installed git hook",
		Hidden: true,
		Args:   cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || args[0] != "post-checkout" {
				return nil
			}
			postCheckout(cmd.Context(), app, args[1:])
			return nil
		},
	}
}

func postCheckout(ctx context.Context, app *App, args []string) {
	defer func() { _ = recover() }() // a hook must never fail a checkout
	prev, flag := "", ""
	if len(args) >= 1 {
		prev = args[0]
	}
	if len(args) >= 3 {
		flag = args[2]
	}
	event := ""
	switch {
	case hooks.IsNullRef(prev):
		event = api.EventBorn
	case flag == "1":
		event = api.EventCheckout
	default:
		return // a file checkout
	}
	_, wt, err := gitx.Discover(app.Dir)
	if err != nil || (event == api.EventBorn && wt.Main) {
		return
	}
	src, err := os.ReadFile(filepath.Join(wt.Path, world.ConfigFile))
	if err != nil {
		return // no binky.toml on this branch: nothing to do
	}
	home, err := app.Home()
	if err != nil {
		return
	}
	if event == api.EventBorn && !home.Trusted(world.TrustHash(src)) {
		fmt.Fprintf(app.Err, "git-binky: %s's binky.toml differs from every one approved on this machine, so its world is not started.\n"+
			"git-binky: read it, then run 'git binky trust' in %s to approve and start it.\n", wt.Name, wt.Path)
	}
	c, err := app.Client()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := c.Call(ctx, api.Request{Op: api.OpHook, Event: event, Dir: wt.Path}, nil, nil); err != nil {
		fmt.Fprintf(app.Err, "git-binky: could not reach the daemon (%s); 'git binky up' in %s starts the world by hand\n",
			strings.TrimSpace(err.Error()), wt.Path)
	}
}
