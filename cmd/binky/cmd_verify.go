package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/verify"
)

type verifyOptions struct {
	App  *App
	Name string
	JSON bool
}

// newVerifyCmd builds `git binky verify`. runF, when not nil, is called
// with the parsed options instead of runVerify: tests check the parsing
// without running a world.
func newVerifyCmd(app *App, runF func(context.Context, verifyOptions) error) *cobra.Command {
	opts := verifyOptions{App: app}
	cmd := &cobra.Command{
		Use:   "verify [name]",
		Short: "Run the project's [agents] verify checks with the world's env; exit 1 on a failure",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runVerify(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the result as JSON (output captured, not streamed)")
	return cmd
}

func runVerify(ctx context.Context, opts verifyOptions) error {
	app := opts.App
	home, err := app.Home()
	if err != nil {
		return err
	}
	tail := &lineEnd{w: app.Out}
	var out io.Writer = tail
	if opts.JSON {
		out = nil // captured into the result, not streamed
	}
	res, err := verify.RunWorld(ctx, home, app.Dir, opts.Name, osEnviron(), out)
	if err != nil {
		return err
	}
	if opts.JSON {
		if err := app.WriteJSON(res); err != nil {
			return err
		}
	} else {
		if tail.open {
			// A check whose last line had no newline: end it, so the
			// summary starts on a line of its own.
			fmt.Fprintln(app.Out)
		}
		renderVerify(app.IOStreams, res)
	}
	if !res.Passed {
		return exitError{1}
	}
	return nil
}

// renderVerify writes one line per check and a summary, after the checks'
// own streamed output.
func renderVerify(ios *IOStreams, res verify.Result) {
	st := ios.Style()
	fmt.Fprintln(ios.Out)
	failed := 0
	for _, c := range res.Checks {
		mark := st.wrap("32", "pass")
		if !c.Passed {
			mark = st.wrap("31", "FAIL")
			failed++
		}
		fmt.Fprintf(ios.Out, "  %s  %s  (%.1fs, exit %d)\n", mark, c.Cmd, c.Seconds, c.ExitCode)
	}
	if failed == 0 {
		fmt.Fprintln(ios.Out, st.ok(fmt.Sprintf("verify: %s (%d checks passed)", res.World, len(res.Checks))))
	} else {
		fmt.Fprintf(ios.Out, "verify: %s: %d of %d checks failed\n", res.World, failed, len(res.Checks))
	}
}
