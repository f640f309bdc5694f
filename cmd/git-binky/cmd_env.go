package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
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
	c, err := world.OpenCoordinates(ctx, home, app.Dir, opts.Name)
	if err != nil {
		return err
	}
	warnProxyDown(app)
	switch {
	case opts.JSON:
		return app.WriteJSON(envJSON{Schema: 1, Coordinates: c})
	case opts.Shell:
		return printEnv(app.Out, c.Env, func(k, v string) string { return "export " + k + "=" + world.ShellQuote(v) })
	case opts.Dotenv || !app.IsStdoutTTY():
		return printEnv(app.Out, c.Env, func(k, v string) string { return k + "=" + dotenvQuote(v) })
	default:
		// A person at a terminal sees where things are, not the passwords;
		// files, eval and tools get them with --dotenv, --shell or --json.
		err := printEnv(app.Out, world.RedactEnv(c.Env), func(k, v string) string { return k + "=" + dotenvQuote(v) })
		fmt.Fprintln(app.Err, "(passwords hidden on a terminal: --dotenv, --shell or --json print them)")
		return err
	}
}

// envJSON is the documented `env --json` schema (see README.md).
type envJSON struct {
	Schema int `json:"schema"`
	world.Coordinates
}

func printEnv(w io.Writer, env map[string]string, line func(k, v string) string) error {
	// One write, not one per line: env runs on every shell prompt.
	bw := bufio.NewWriter(w)
	for _, kv := range world.SortedEnv(env) {
		k, v, _ := strings.Cut(kv, "=")
		bw.WriteString(line(k, v))
		bw.WriteByte('\n')
	}
	return bw.Flush()
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
