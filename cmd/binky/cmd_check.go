package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/world"
)

type checkOptions struct {
	Path string
	JSON bool
}

func newCheckCmd(app *App) *cobra.Command {
	var opts checkOptions
	cmd := &cobra.Command{
		Use:   "check [path]",
		Short: "Validate a binky.toml and flag footguns",
		Long: `Validate a binky.toml: unknown keys, broken depends_on, cycles, bad URLs,
adapters that cannot run; and warn about footguns that still load, like
${self.port} in a service that asks for no port or a password written inline.
Exits 1 when there is an error, 0 otherwise (warnings included).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Path = args[0]
			}
			return runCheck(app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the diagnostics as JSON")
	return cmd
}

func runCheck(app *App, opts checkOptions) error {
	file, diags, err := world.CheckPath(app.Dir, opts.Path, adapters.Info)
	if err != nil {
		return err
	}
	errs, warns := 0, 0
	for _, d := range diags {
		if d.Severity == world.SeverityError {
			errs++
		} else {
			warns++
		}
	}
	if opts.JSON {
		if diags == nil {
			diags = []world.Diagnostic{}
		}
		if err := app.WriteJSON(map[string]any{"file": file, "ok": errs == 0, "diagnostics": diags}); err != nil {
			return err
		}
	} else {
		for _, d := range diags {
			fmt.Fprintln(app.Out, world.Inert(d.String()))
		}
		shown := world.Inert(file) // a path's escape sequences are shown, not run
		switch {
		case errs > 0:
			fmt.Fprintf(app.Out, "%s: %d error(s), %d warning(s)\n", shown, errs, warns)
		case warns > 0:
			fmt.Fprintf(app.Out, "%s: ok, %d warning(s)\n", shown, warns)
		default:
			fmt.Fprintf(app.Out, "%s: ok\n", shown)
		}
	}
	if errs > 0 {
		return exitError{1}
	}
	return nil
}
