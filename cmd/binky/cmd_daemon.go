package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/client"
)

func newDaemonCmd(app *App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Manage the background daemon (it starts on demand)",
	}
	var asJSON bool
	status := &cobra.Command{
		Use:   "status",
		Short: "Say whether the daemon runs, and which",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := app.Client()
			if err != nil {
				return err
			}
			c.NoStart = true
			var h api.Hello
			err = c.Call(cmd.Context(), api.Request{Op: api.OpHello}, nil, &h)
			if errors.Is(err, client.ErrNoDaemon) {
				fmt.Fprintln(app.Out, "daemon: not running (any git binky command that needs it starts it)")
				return exitError{3}
			}
			if err != nil {
				return err
			}
			if asJSON {
				return app.WriteJSON(h)
			}
			fmt.Fprintf(app.Out, "daemon: running, pid %d, version %s, since %s, %d worlds held\n", h.PID, h.Version, h.Started.Local().Format("2006-01-02 15:04:05"), h.Worlds)
			for _, p := range h.Problems {
				fmt.Fprintf(app.Out, "problem: %s\n", p)
			}
			if h.Stopping != "" {
				fmt.Fprintf(app.Out, "stopping: %s\n", h.Stopping)
			}
			if h.Version != c.Version {
				fmt.Fprintf(app.Out, "this git-binky is %s: the next command replaces the daemon\n", c.Version)
			}
			return nil
		},
	}
	status.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.AddCommand(
		&cobra.Command{
			Use:   "start",
			Short: "Start the daemon (or replace one of another version)",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				c, err := app.Client()
				if err != nil {
					return err
				}
				h, err := c.Start(cmd.Context())
				if err != nil {
					return err
				}
				fmt.Fprintf(app.Out, "daemon: running, pid %d, version %s\n", h.PID, h.Version)
				return nil
			},
		},
		&cobra.Command{
			Use:   "stop",
			Short: "Stop the daemon; services keep running and the next daemon adopts them",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				c, err := app.Client()
				if err != nil {
					return err
				}
				if err := c.Shutdown(cmd.Context()); err != nil {
					return err
				}
				fmt.Fprintln(app.Out, "daemon: stopped (services keep running; the next daemon adopts them)")
				return nil
			},
		},
		status,
	)
	return cmd
}
