package main

import (
	"fmt"

	"github.com/spf13/cobra"

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
			home, err := app.Home()
			if err != nil {
				return err
			}
			var d hooks.Daemon
			if c, err := app.Client(); err == nil {
				d = c
			}
			res, err := hooks.Setup(cmd.Context(), home, app.Dir, d)
			if err != nil {
				return err
			}
			st := app.Style()
			switch {
			case res.Method == "config":
				fmt.Fprintln(app.Out, st.ok("installed: hook.git-binky.command in this repository's config (post-checkout)"))
			case res.Upgraded:
				fmt.Fprintln(app.Out, st.ok("upgraded: "+res.Path))
			case res.Changed:
				fmt.Fprintln(app.Out, st.ok("installed: "+res.Path))
			default:
				fmt.Fprintln(app.Out, st.ok("already installed: "+res.Path))
			}
			if res.NotApproved != "" {
				fmt.Fprintln(app.Err, "warning: binky.toml was not approved, since binky cannot use it: "+world.Inert(res.NotApproved))
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
			res, err := hooks.Teardown(cmd.Context(), home, app.Dir)
			if err != nil {
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
			fmt.Fprintln(app.Out, app.Style().ok(fmt.Sprintf("trusted %s (sha256 %s)", world.Inert(t.File), t.Hash[:12])))
			// What happens next happens in the daemon: say so, and where
			// a failure will show (the start is not watched from here).
			switch t.Auto {
			case "off":
				fmt.Fprintln(app.Out, `  [project] auto = "off": nothing started ('git binky up' starts its world)`)
			case "provision":
				fmt.Fprintln(app.Out, `  [project] auto = "provision": its slices are being made in the background ('git binky status' shows them; 'git binky up' starts the world)`)
			default:
				fmt.Fprintln(app.Out, `  its world is starting in the background, as [project] auto = "up" says: 'git binky status' shows how it goes, and why if it fails ('git binky up' instead waits and says)`)
			}
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
			home, err := app.Home()
			if err != nil {
				return nil
			}
			c := hooks.Checkout{Home: home, Dir: app.Dir, Args: args[1:], Err: app.Err}
			if cl, err := app.Client(); err == nil {
				c.Daemon = cl
			}
			hooks.PostCheckout(cmd.Context(), c)
			return nil
		},
	}
}
