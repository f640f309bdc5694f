package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/doctor"
)

func newDoctorCmd(app *App) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check the install, daemon, hooks, proxy and ports; exit 1 on a problem",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := app.Client()
			if err != nil {
				return err
			}
			findings := doctor.Run(cmd.Context(), c, app.Dir)
			problems := 0
			for _, f := range findings {
				if f.Level == doctor.Problem {
					problems++
				}
			}
			if asJSON {
				if err := app.WriteJSON(map[string]any{"ok": problems == 0, "findings": findings}); err != nil {
					return err
				}
			} else {
				st := app.Style()
				tw := tabwriter.NewWriter(app.Out, 0, 2, 2, ' ', 0)
				for _, f := range findings {
					level := f.Level
					switch f.Level {
					case doctor.OK:
						level = st.wrap("32", "ok")
					case doctor.Warning:
						level = st.wrap("33", "warning")
					case doctor.Problem:
						level = st.wrap("31", "problem")
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", level, f.Check, f.Detail)
					if f.Fix != "" && f.Level != doctor.OK {
						fmt.Fprintf(tw, "\t\t→ %s\n", f.Fix)
					}
				}
				tw.Flush()
			}
			if problems > 0 {
				return exitError{1}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the findings as JSON")
	return cmd
}

func newMetricsCmd(app *App) *cobra.Command {
	return &cobra.Command{
		Use:   "metrics",
		Short: "Point-in-time daemon metrics as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := app.Client()
			if err != nil {
				return err
			}
			var m api.Metrics
			if err := c.Call(cmd.Context(), api.Request{Op: api.OpMetrics}, nil, &m); err != nil {
				return err
			}
			return app.WriteJSON(m)
		},
	}
}
