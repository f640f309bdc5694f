package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/world"
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
	warnProxyDown(app)
	if opts.JSON {
		return app.WriteJSON(s)
	}
	renderStatus(app.Out, s, app.Style())
	return nil
}

// renderStatus writes the worlds grouped by project, then the shared servers.
func renderStatus(out io.Writer, s api.Status, st style) {
	if len(s.Worlds) == 0 {
		fmt.Fprintln(out, "no worlds yet: 'git binky up' (or 'git binky env') in a worktree with a binky.toml makes one")
	}
	project := ""
	for _, w := range s.Worlds {
		if w.Project != project {
			project = w.Project
			fmt.Fprintln(out, st.bold(project))
		}
		state := string(w.State)
		if w.Missing {
			state += ", worktree missing"
		}
		if w.State == world.StateRunning {
			// A world whose API crash-loops read [running] like a well one.
			var ill []string
			for _, s := range w.Services {
				if s.State == "crashed" || s.State == "unhealthy" {
					ill = append(ill, s.Name+" "+s.State)
				}
			}
			if len(ill) > 0 {
				state += ": " + strings.Join(ill, ", ")
			}
		}
		fmt.Fprintf(out, "  %s  [%s]  %s\n", world.Inert(w.Worktree), st.state(state), world.Inert(w.Path))
		if w.Message != "" {
			fmt.Fprintf(out, "      why: %s\n", inertLines(w.Message, "\n           "))
		}
		printServices(out, st, w, "      ")
		for _, sl := range w.Slices {
			made := sl.Made
			switch sl.Made {
			case "":
				made = "incomplete"
			case "cloned":
				made = fmt.Sprintf("cloned from %s in %d ms", sl.Template, sl.TookMS)
				if slices.Contains(sl.Ran, "migrate") {
					made = fmt.Sprintf("cloned from %s and migrated in %d ms", sl.Template, sl.TookMS)
				}
			case "provisioned":
				made = fmt.Sprintf("%s in %d ms", provisionedWith(sl.Ran), sl.TookMS)
			}
			fmt.Fprintf(out, "      %s  %s slice %s (%s)\n", sl.Service, sl.Adapter, sl.Name, made)
			if sl.Isolation == adapters.IsolationNone {
				fmt.Fprintf(out, "        isolation not enforced: on this %s server a world can reach every world's slice (it has no user per world, or a user anyone may log in as: docs/isolation.md)\n", sl.Adapter)
			}
		}
	}
	for _, n := range s.Notes {
		fmt.Fprintln(out, "note: "+n)
	}
	for _, srv := range s.Servers {
		state := "running"
		if !srv.Running {
			state = "stopped"
		}
		fmt.Fprintf(out, "shared %s server: 127.0.0.1:%d [%s] (%s)\n", srv.Kind, srv.Port, state, srv.Where())
	}
}

// provisionedWith says what making a slice did: its migrate and seed only
// when they ran (a Redis slice, or a database with neither, has none).
func provisionedWith(ran []string) string {
	switch {
	case slices.Contains(ran, "migrate") && slices.Contains(ran, "seed"):
		return "provisioned, migrated and seeded"
	case slices.Contains(ran, "migrate"):
		return "provisioned and migrated"
	case slices.Contains(ran, "seed"):
		return "provisioned and seeded"
	}
	return "provisioned"
}
