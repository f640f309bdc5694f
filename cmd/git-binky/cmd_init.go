package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/compose"
	"github.com/git-binky/git-binky/world"
)

type initOptions struct {
	Dir   string
	Force bool
}

func newInitCmd(app *App) *cobra.Command {
	var opts initOptions
	cmd := &cobra.Command{
		Use:   "init [dir] [--force]",
		Short: "Write a starting binky.toml from docker-compose.yml and .env",
		Long: `Read docker-compose.yml (or compose.yaml) and the .env beside it, and write a
binky.toml a person can read: database and cache images become adapter slices,
published ports become URLs, depends_on, environment, env_file, healthchecks
and profiles carry over, and every guess is marked. No credential is written
inline: it becomes ${env.NAME}, and init says which names to set.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = app.Dir
			if len(args) == 1 {
				opts.Dir = args[0]
				if !filepath.IsAbs(opts.Dir) {
					opts.Dir = filepath.Join(app.Dir, opts.Dir)
				}
			}
			return runInit(app, opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite an existing binky.toml")
	return cmd
}

func runInit(app *App, opts initOptions) error {
	out := filepath.Join(opts.Dir, world.ConfigFile)
	if _, err := os.Stat(out); err == nil && !opts.Force {
		return fmt.Errorf("%s already exists: init will not overwrite it (use --force to replace it)", out)
	}
	src, err := compose.Find(opts.Dir)
	if err != nil {
		if errors.Is(err, compose.ErrNoCompose) {
			return fmt.Errorf("%w: init starts from a compose file; without one, write binky.toml by hand (see README.md)", err)
		}
		return err
	}
	res, err := compose.Convert(src)
	if err != nil {
		return err
	}
	if err := world.WriteFileAtomic(out, []byte(res.TOML), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	st := style{Color(app.Out)}
	fmt.Fprintln(app.Out, st.ok(fmt.Sprintf("wrote %s from %s", out, filepath.Base(src))))
	if len(res.SetEnv) > 0 {
		fmt.Fprintf(app.Out, "set these before 'git binky up' (they were kept out of the file): %s\n", strings.Join(res.SetEnv, ", "))
	}
	fmt.Fprintln(app.Out, "read it through (lines marked \"guessed\" need you), then: git binky check")
	return nil
}
