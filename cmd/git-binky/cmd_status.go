package main

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/gitx"
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
		Long:  "List every world on this machine, grouped by project. '.' limits it to the repository you stand in.",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if args[0] != "." {
					return usageError{fmt.Errorf("status takes only '.', for the current repository")}
				}
				opts.CurrentProject = true
			}
			return runStatus(app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the worlds as JSON")
	return cmd
}

func runStatus(app *App, opts statusOptions) error {
	home, err := app.Home()
	if err != nil {
		return err
	}
	recs, err := home.Records()
	if err != nil {
		return err
	}
	if opts.CurrentProject {
		repo, _, err := gitx.Discover(app.Dir)
		if repo == nil {
			return err
		}
		kept := recs[:0]
		for _, r := range recs {
			if r.CommonDir == repo.CommonDir {
				kept = append(kept, r)
			}
		}
		recs = kept
	}
	if opts.JSON {
		if recs == nil {
			recs = []*world.Record{}
		}
		return writeJSON(app.Out, map[string]any{"schema": 1, "worlds": recs})
	}
	if len(recs) == 0 {
		fmt.Fprintln(app.Out, "no worlds yet: 'git binky env' or 'git binky up' in a worktree with a binky.toml makes one")
		return nil
	}
	tw := tabwriter.NewWriter(app.Out, 0, 2, 2, ' ', 0)
	project := ""
	for _, r := range recs {
		if r.Project != project {
			project = r.Project
			fmt.Fprintf(tw, "%s\n", project)
		}
		fmt.Fprintf(tw, "  %s\t[%s]\t%s\n", r.Worktree, r.State, r.Path)
		keys := make([]string, 0, len(r.Ports))
		for k := range r.Ports {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(tw, "      %s\t:%d\t\n", strings.Replace(k, ".", " ", 1), r.Ports[k])
		}
	}
	return tw.Flush()
}
