package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/api"
)

type serviceOptions struct {
	Action, Service, Name string
	JSON                  bool
}

func newServiceCmd(app *App) *cobra.Command {
	var opts serviceOptions
	cmd := &cobra.Command{
		Use:   "service stop|start|restart <service> [name]",
		Short: "Stop, start or restart one service of a running world, leaving the others running",
		Args:  cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Action, opts.Service = args[0], args[1]
			if len(args) == 3 {
				opts.Name = args[2]
			}
			switch opts.Action {
			case api.ServiceStop, api.ServiceStart, api.ServiceRestart:
			default:
				return usageError{fmt.Errorf("unknown action %q: stop, start or restart", opts.Action)}
			}
			c, err := app.Client()
			if err != nil {
				return err
			}
			w, err := c.Service(cmd.Context(), app.Dir, opts.Name, opts.Service, opts.Action)
			if err != nil {
				return err
			}
			if opts.JSON {
				return app.WriteJSON(w)
			}
			for _, s := range w.Services {
				if s.Name == opts.Service {
					fmt.Fprintln(app.Out, app.Style().ok(fmt.Sprintf("%s: %s of %s is %s", opts.Action, s.Name, w.Worktree, s.State)))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the world as JSON")
	return cmd
}
