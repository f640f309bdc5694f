package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/api"
)

type downOptions struct {
	Name  string
	Force bool
	JSON  bool
}

func newDownCmd(app *App) *cobra.Command {
	var opts downOptions
	cmd := &cobra.Command{
		Use:   "down [name]",
		Short: "Stop a world's processes (keeps its files, ports and data)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			c, err := app.Client()
			if err != nil {
				return err
			}
			w, err := c.Down(cmd.Context(), app.Dir, opts.Name)
			if err != nil {
				return err
			}
			warnBroken(app, w)
			if opts.JSON {
				return app.WriteJSON(w)
			}
			fmt.Fprintln(app.Out, app.Style().ok("down: "+w.Worktree+" (ports and data kept; 'git binky up' brings it back)"))
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the world as JSON")
	return cmd
}

func newRemoveCmd(app *App) *cobra.Command {
	var opts downOptions
	cmd := &cobra.Command{
		Use:   "remove <name>",
		Short: "Destroy a world: stop it, release its ports, delete its records and worktree",
		Long: `Destroy a world: stop its processes, release its ports, forget it and remove
its worktree. Refuses a worktree with uncommitted changes unless --force.
The main worktree's folder is never removed, only its world.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			c, err := app.Client()
			if err != nil {
				return err
			}
			w, err := c.Remove(cmd.Context(), app.Dir, opts.Name, opts.Force)
			if err != nil {
				return err
			}
			warnBroken(app, w)
			if opts.JSON {
				return app.WriteJSON(w)
			}
			fmt.Fprintln(app.Out, app.Style().ok("removed: "+w.Worktree))
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "remove even with uncommitted changes (they are lost)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the removed world as JSON")
	return cmd
}

// warnBroken says, on stderr, what the daemon noted while it acted: a
// binky.toml that no longer parses, so the world was stopped or removed
// from its machine record.
func warnBroken(app *App, w api.World) {
	if w.Message != "" {
		fmt.Fprintln(app.Err, "warning: "+w.Message)
	}
}
