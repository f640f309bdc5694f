package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/api"
)

func newGCCmd(app *App) *cobra.Command {
	var dryRun, asJSON bool
	cmd := &cobra.Command{
		Use:   "gc [--dry-run]",
		Short: "Drop adapter slices marked as binky's whose world no longer exists",
		Long: `Sweep what a crash left half-made: slices (databases, key prefixes) that
binky marked as its own on the managed servers and on the servers your worlds
use, whose world has no record any more. A slice binky did not mark is never
touched; golden templates are kept, but one whose build a crash cut off.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := app.Client()
			if err != nil {
				return err
			}
			var res api.GC
			if err := c.Call(cmd.Context(), api.Request{Op: api.OpGC, Dir: app.Dir, DryRun: dryRun, Env: c.Env}, nil, &res); err != nil {
				return err
			}
			if asJSON {
				return app.WriteJSON(res)
			}
			for _, e := range res.Errors {
				fmt.Fprintln(app.Err, "git-binky: gc:", e)
			}
			if len(res.Orphans) == 0 {
				fmt.Fprintln(app.Out, "no orphaned slices")
				return nil
			}
			for _, o := range res.Orphans {
				is, was := "world "+o.World+" is gone", "world "+o.World+" was gone"
				if o.Why != "" {
					is, was = o.Why, o.Why
				}
				switch {
				case o.Note != "" && !o.Dropped:
					fmt.Fprintf(app.Out, "left alone %s %s on %s: %s\n", o.Adapter, o.Name, o.Server, o.Note)
				case res.DryRun:
					fmt.Fprintf(app.Out, "would drop %s %s (%s) on %s\n", o.Adapter, o.Name, is, o.Server)
				case o.Dropped && o.Note != "":
					fmt.Fprintf(app.Out, "dropped %s %s (%s), but: %s\n", o.Adapter, o.Name, was, o.Note)
				case o.Dropped:
					fmt.Fprintf(app.Out, "dropped %s %s (%s)\n", o.Adapter, o.Name, was)
				default:
					fmt.Fprintf(app.Out, "could not drop %s %s: %s\n", o.Adapter, o.Name, o.Error)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only list what would be dropped")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return cmd
}
