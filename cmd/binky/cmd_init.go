package main

import (
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/client"
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
		Long: `Read the compose project in dir (compose.yaml or docker-compose.yml, its
override, what it includes and extends, and the .env beside it) as compose
does, and write a binky.toml a person can read: images an adapter replaces
become slices, and the variables that pointed at their containers are wired
to the slice (${db.url}, ${db.user}...); published ports become url and
ports; depends_on, env_file, health checks, restart and profiles (as groups)
carry over. What init inferred is marked "guessed:", what it could not do
"left to you:". No credential is written inline: it becomes ${env.NAME},
and init lists the names. The file is checked before it is written.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = app.Dir
			if len(args) == 1 {
				opts.Dir = args[0]
				if !filepath.IsAbs(opts.Dir) {
					opts.Dir = filepath.Join(app.Dir, opts.Dir)
				}
			}
			return runInit(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Force, "force", false, "overwrite an existing binky.toml")
	return cmd
}

// runInit hands the work to binkyd: the compose loader it needs would
// double the start-up time of this binary, which shell prompts run on every
// cd for `git binky env`.
func runInit(opts initOptions) error {
	argv := []string{}
	if opts.Force {
		argv = append(argv, "-force")
	}
	return client.ExecDaemonBinary("init", append(argv, "--", opts.Dir)...)
}
