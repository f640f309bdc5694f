package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/envsnap"
	"github.com/git-binky/git-binky/world"
)

// envOptions are env's flags and name (shared with the launcher).
type envOptions = envsnap.Args

func newEnvCmd(app *App) *cobra.Command {
	var opts envOptions
	cmd := &cobra.Command{
		Annotations: map[string]string{annotationFast: "true"},
		Use:         "env [name]",
		Short:       "Print a worktree's coordinates: ports, URLs, slices",
		Long: `Print the whole coordinate map of a worktree's world — <SERVICE>_PORT,
<SERVICE>_URL, named extra ports, adapter addresses, BINKY_WORKTREE and
BINKY_PROJECT — allocating ports on first use, so it works before any 'up'.
No name: the worktree you stand in.

  eval "$(git-binky env --shell)"     # sh, bash, zsh, direnv; fish: git-binky env --shell | source

(git-binky, not git binky, where it runs on every prompt: git's own start
before it costs more than env itself.)`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			n := 0
			for _, b := range []bool{opts.Dotenv, opts.Shell, opts.JSON} {
				if b {
					n++
				}
			}
			if n > 1 {
				return usageError{fmt.Errorf("choose one of --dotenv, --shell and --json")}
			}
			return runEnv(cmd.Context(), app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Dotenv, "dotenv", false, "print KEY=value lines for a .env file")
	cmd.Flags().BoolVar(&opts.Shell, "shell", false, "print export lines for eval and direnv")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print services and env as JSON")
	return cmd
}

// envFastArgs recognises env's everyday forms (envsnap.ParseArgs), which
// skip the command tree.
func envFastArgs(args []string) (envOptions, bool) { return envsnap.ParseArgs(args) }

func runEnv(ctx context.Context, app *App, opts envOptions) error {
	home, err := app.Home()
	if err != nil {
		return err
	}
	format := opts.Format(app.IsStdoutTTY())
	// Unchanged inputs print what env printed last time (envsnap).
	snap := world.OpenEnvSnapshot(home, app.Dir, opts.Name)
	out, ok := snap.Output(format)
	if !ok {
		c, err := world.OpenCoordinates(ctx, home, app.Dir, opts.Name)
		if err != nil {
			return err
		}
		outputs, err := renderEnv(c, format == envJSONForm)
		if err != nil {
			return err
		}
		snap.Save(outputs)
		out = outputs[format]
	}
	warnProxyDown(app)
	if _, err := app.Out.Write(out); err != nil {
		return err
	}
	if format == envTerminal {
		// A person at a terminal sees where things are, not the passwords;
		// files, eval and tools get them with --dotenv, --shell or --json.
		fmt.Fprintln(app.Err, "(passwords hidden on a terminal: --dotenv, --shell or --json print them)")
	}
	return nil
}

// env's output formats.
const (
	envDotenv   = envsnap.Dotenv
	envShell    = envsnap.Shell
	envJSONForm = envsnap.JSON
	envTerminal = envsnap.Terminal // dotenv with the passwords hidden
)

// renderEnv prints c in every format at once, so that the snapshot serves
// the next env whichever form it asks for; JSON only when asked, as it
// costs more than the others together (a later --json renders it then).
func renderEnv(c world.Coordinates, withJSON bool) (map[string][]byte, error) {
	dotenv := func(k, v string) string { return k + "=" + world.DotenvQuote(v) }
	outputs := map[string][]byte{
		envShell:  envLines(c.Env, func(k, v string) string { return "export " + k + "=" + world.ShellQuote(v) }),
		envDotenv: envLines(c.Env, dotenv),
		// For eyes only: a control byte in a path or branch (an escape
		// sequence) is shown, never sent to the terminal.
		envTerminal: envLines(world.RedactEnv(c.Env), func(k, v string) string { return world.Inert(dotenv(k, v)) }),
	}
	if len(c.Unmade) > 0 {
		// A comment each form reads past: a script's eval got no DB_URL
		// before the first up, and nothing said why.
		note := fmt.Sprintf("# no slice yet for %s (their variables are missing): 'git binky up' makes them\n", world.Inert(strings.Join(c.Unmade, ", ")))
		for _, form := range []string{envShell, envDotenv, envTerminal} {
			outputs[form] = append(outputs[form], note...)
		}
	}
	if withJSON {
		if err := c.CheckUTF8(); err != nil {
			return nil, err
		}
		var js bytes.Buffer
		enc := json.NewEncoder(&js)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c.Doc()); err != nil {
			return nil, err
		}
		outputs[envJSONForm] = js.Bytes()
	}
	return outputs, nil
}

func envLines(env map[string]string, line func(k, v string) string) []byte {
	var b bytes.Buffer
	for _, kv := range world.SortedEnv(env) {
		k, v, _ := strings.Cut(kv, "=")
		b.WriteString(line(k, v))
		b.WriteByte('\n')
	}
	return b.Bytes()
}
