package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

type statusOptions struct {
	CurrentProject bool
	JSON           bool
}

func newStatusCmd(app *App) *cobra.Command {
	var opts statusOptions
	cmd := &cobra.Command{
		Use:   "status [.]",
		Short: "List the worlds binky knows, grouped by project",
		Long:  "List every world on this machine, grouped by project, with the state of each service. '.' limits it to the repository you stand in.",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if args[0] != "." {
					return usageError{fmt.Errorf("status takes only '.', for the current repository")}
				}
				opts.CurrentProject = true
			}
			return runStatus(cmd, app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the worlds as JSON")
	return cmd
}

func runStatus(cmd *cobra.Command, app *App, opts statusOptions) error {
	c, err := app.Client()
	if err != nil {
		return err
	}
	s, err := c.Status(cmd.Context(), app.Dir, opts.CurrentProject)
	if err != nil {
		return err
	}
	if opts.JSON {
		return writeJSON(app.Out, s)
	}
	if len(s.Worlds) == 0 {
		fmt.Fprintln(app.Out, "no worlds yet: 'git binky up' (or 'git binky env') in a worktree with a binky.toml makes one")
		return nil
	}
	st := style{Color(app.Out)}
	project := ""
	for _, w := range s.Worlds {
		if w.Project != project {
			project = w.Project
			fmt.Fprintln(app.Out, st.bold(project))
		}
		state := w.State
		if w.Missing {
			state += ", worktree missing"
		}
		fmt.Fprintf(app.Out, "  %s  [%s]  %s\n", w.Worktree, st.state(state), w.Path)
		printServices(app.Out, st, w, "      ")
		for _, sl := range w.Slices {
			fmt.Fprintf(app.Out, "      %s  %s slice %s\n", sl.Service, sl.Adapter, sl.Name)
		}
	}
	for _, s := range s.Servers {
		state := "running"
		if !s.Running {
			state = "stopped"
		}
		fmt.Fprintf(app.Out, "shared %s server: 127.0.0.1:%d [%s] (%s)\n", s.Kind, s.Port, state, s.Dir)
	}
	return nil
}
