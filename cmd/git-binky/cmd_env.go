package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/world"
)

type envOptions struct {
	Name   string
	Dotenv bool
	Shell  bool
	JSON   bool
}

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

  eval "$(git-binky env --shell)"     # in a shell, or in direnv's .envrc

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

// envFastArgs recognises env's everyday forms — at most one of --dotenv,
// --shell and --json, and at most one worktree name — and says which
// options they mean. Anything else (help, a mistake, a flag spelt another
// way) is not recognised and goes through cobra like every command, so
// its errors and help are cobra's.
func envFastArgs(args []string) (envOptions, bool) {
	var opts envOptions
	if len(args) == 0 || args[0] != "env" || len(args) > 3 {
		return opts, false
	}
	formats := 0
	for _, a := range args[1:] {
		switch {
		case a == "--dotenv":
			opts.Dotenv, formats = true, formats+1
		case a == "--shell":
			opts.Shell, formats = true, formats+1
		case a == "--json":
			opts.JSON, formats = true, formats+1
		case a == "" || strings.HasPrefix(a, "-") || opts.Name != "":
			return envOptions{}, false
		default:
			opts.Name = a
		}
	}
	if formats > 1 {
		return envOptions{}, false
	}
	return opts, true
}

func runEnv(ctx context.Context, app *App, opts envOptions) error {
	home, err := app.Home()
	if err != nil {
		return err
	}
	format := envFormat(opts, app)
	// Unchanged inputs print what env printed last time (world/envsnapshot.go).
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
	envDotenv   = "dotenv"
	envShell    = "shell"
	envJSONForm = "json"
	envTerminal = "terminal" // dotenv with the passwords hidden
)

func envFormat(opts envOptions, app *App) string {
	switch {
	case opts.JSON:
		return envJSONForm
	case opts.Shell:
		return envShell
	case opts.Dotenv || !app.IsStdoutTTY():
		return envDotenv
	}
	return envTerminal
}

// renderEnv prints c in every format at once, so that the snapshot serves
// the next env whichever form it asks for; JSON only when asked, as it
// costs more than the others together (a later --json renders it then).
func renderEnv(c world.Coordinates, withJSON bool) (map[string][]byte, error) {
	dotenv := func(k, v string) string { return k + "=" + dotenvQuote(v) }
	outputs := map[string][]byte{
		envShell:    envLines(c.Env, func(k, v string) string { return "export " + k + "=" + world.ShellQuote(v) }),
		envDotenv:   envLines(c.Env, dotenv),
		envTerminal: envLines(world.RedactEnv(c.Env), dotenv),
	}
	if withJSON {
		var js bytes.Buffer
		enc := json.NewEncoder(&js)
		enc.SetIndent("", "  ")
		if err := enc.Encode(envJSON{Schema: 1, Coordinates: c}); err != nil {
			return nil, err
		}
		outputs[envJSONForm] = js.Bytes()
	}
	return outputs, nil
}

// envJSON is the documented `env --json` schema (see README.md).
type envJSON struct {
	Schema int `json:"schema"`
	world.Coordinates
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

// dotenvQuote leaves plain values bare and double-quotes anything a dotenv
// reader could misread.
func dotenvQuote(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\n\"'#$\\`") {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "$", `\$`, "`", "\\`")
	return `"` + r.Replace(v) + `"`
}
