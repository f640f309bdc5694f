package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/world"
)

type upOptions struct {
	Name    string
	Group   string
	JSON    bool
	Reload  bool
	Reset   bool
	Service string // reset's: the one data service to make again
}

func newUpCmd(app *App) *cobra.Command {
	var opts upOptions
	cmd := &cobra.Command{
		Use:   "up [name]",
		Short: "Bring a worktree's world up (creating the worktree if needed)",
		Long: `Bring a world up: allocate its ports, then start its services in depends_on
order, each once its dependencies are healthy. The services belong to the
daemon and outlive this command. No name: the worktree you stand in. A name
with no worktree creates one (on that branch if it exists, else a new one).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			return runUp(cmd, app, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Group, "group", "", "start only the services of this [groups] entry (and their dependencies)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the world as JSON")
	return cmd
}

func newReloadCmd(app *App) *cobra.Command {
	opts := upOptions{Reload: true}
	cmd := &cobra.Command{
		Use:   "reload [name]",
		Short: "Restart a world in place, on the same ports and data",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			return runUp(cmd, app, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Group, "group", "", "start only the services of this [groups] entry")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the world as JSON")
	return cmd
}

func newResetCmd(app *App) *cobra.Command {
	opts := upOptions{Reset: true}
	cmd := &cobra.Command{
		Use:   "reset [name] [--service S]",
		Short: "Make a world's data again: drop its databases and clone them afresh",
		Long: `Make a world's data again, keeping its worktree and ports: stop the world,
drop the slices binky made for it (every data service's, or --service's),
then start it as up does, which makes them as a new world's are: cloned
from this branch's golden template, or provisioned, migrated and seeded.
What the world wrote to them is lost. For a branch whose migrations
changed since its world was made (up says "its data may lack this
branch's migrations").`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			return runUp(cmd, app, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Service, "service", "", "make only this data service's slice again")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the world as JSON")
	return cmd
}

func runUp(cmd *cobra.Command, app *App, opts upOptions) error {
	c, err := app.Client()
	if err != nil {
		return err
	}
	st := app.ErrStyle()
	show := progress(app.Err, st)
	tty := app.IsStderrTTY()
	onEvent := func(e api.Event) {
		switch {
		case e.State == string(world.StateQueued):
			// Waiting is always worth saying, terminal or not.
			fmt.Fprintln(app.Err, "  ⏳ "+inertText(e.Message))
		case e.State == api.EventNotice:
			fmt.Fprintln(app.Err, "note: "+inertText(e.Message))
		case tty:
			show(e)
		}
	}
	call := c.Up
	verb := "up"
	switch {
	case opts.Reload:
		call, verb = c.Reload, "reloaded"
	case opts.Reset:
		verb = "reset"
		call = func(ctx context.Context, dir, name, _ string, onEvent func(api.Event)) (api.World, error) {
			return c.Reset(ctx, dir, name, opts.Service, onEvent)
		}
	}
	w, err := call(cmd.Context(), app.Dir, opts.Name, opts.Group, onEvent)
	if err != nil {
		if opts.JSON {
			// A script reading stdout gets an object either way.
			_ = app.WriteJSON(jsonFailure(err))
		}
		return err
	}
	warnProxyDown(app)
	if opts.JSON {
		return app.WriteJSON(w)
	}
	out := app.Style()
	printServices(app.Out, out, w, "  ")
	fmt.Fprintln(app.Out, out.ok(fmt.Sprintf("%s: %s (%s)", verb, w.Worktree, servicesCount(w))))
	return nil
}

// servicesCount says how many services the world runs: "2 services", or
// "2 of 3 services running" when some are stopped (outside the group this
// up started), crashed or suspended, which a plain count would pass off
// as running.
func servicesCount(w api.World) string {
	up := 0
	for _, s := range w.Services {
		if s.State != "stopped" && s.State != "crashed" && s.State != "suspended" {
			up++
		}
	}
	noun := "services"
	if len(w.Services) == 1 {
		noun = "service"
	}
	if up == len(w.Services) {
		return fmt.Sprintf("%d %s", up, noun)
	}
	return fmt.Sprintf("%d of %d %s running", up, len(w.Services), noun)
}

// failureJSON is what a --json command prints on stdout when it fails:
// the error's code (as the exit status says it) and its message.
type failureJSON struct {
	Schema int       `json:"schema"`
	Error  api.Error `json:"error"`
}

func jsonFailure(err error) failureJSON {
	f := failureJSON{Schema: 1, Error: api.Error{Code: "error", Message: err.Error()}}
	var ae *api.Error
	if errors.As(err, &ae) && ae.Code != "" {
		f.Error.Code = ae.Code
	}
	return f
}
