package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/git-binky/git-binky/version"
	"github.com/git-binky/git-binky/world"
)

func newRootCmd(app *App) *cobra.Command {
	root := &cobra.Command{
		Use:   "git-binky",
		Short: "One isolated local world per git worktree: ports, env, databases, URLs",
		Long: `git binky gives every git worktree its own isolated local world — ports
allocated before any process starts, private database slices carved from one
shared server, supervised services and URLs — from one committed binky.toml.`,
		Version:       version.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(app.In)
	root.SetOut(app.Out)
	root.SetErr(app.Err)
	// No Set*Template: a template makes reflect's MethodByName reachable,
	// and the linker then keeps every exported method in the binary (2 MB,
	// ~0.7 ms of every start). --version prints cobra's plain
	// "git-binky version X", as `git binky version` does.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{suggestFlag(c, err)}
	})
	root.AddCommand(
		newInitCmd(app),
		newCheckCmd(app),
		newEnvCmd(app),
		newUpCmd(app),
		newReloadCmd(app),
		newResetCmd(app),
		newDownCmd(app),
		newRemoveCmd(app),
		newStatusCmd(app),
		newLogsCmd(app),
		newServiceCmd(app),
		newDaemonCmd(app),
		newInstallCmd(app),
		newUninstallCmd(app),
		newTrustCmd(app),
		newHookCmd(app),
		newCurlCmd(app),
		newVerifyCmd(app, nil),
		newMCPCmd(app),
		newPortCmd(app),
		newReserveCmd(app),
		newConfigCmd(app),
		newDoctorCmd(app),
		newMetricsCmd(app),
		newGCCmd(app),
		newServersCmd(app),
		newGoldenCmd(app),
		newDashboardCmd(app),
		newVersionCmd(app),
	)
	if man := newManCmd(app); man != nil {
		root.AddCommand(man)
	}
	for _, c := range root.Commands() {
		argsAreUsage(c)
	}
	return root
}

// argsAreUsage makes a wrong number of arguments the usage mistake a wrong
// flag already is (exit 2, not 1), in c and every command under it. The
// root keeps cobra's own check: an unknown command exits 1, as git's does.
func argsAreUsage(c *cobra.Command) {
	if check := c.Args; check != nil {
		at := nameAt(c.Use)
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{err}
			}
			// `git binky down "$WT"` with WT unset acted on the worktree
			// it ran in, as if no name were given.
			if at >= 0 && at < len(args) && args[at] == "" {
				return usageError{fmt.Errorf("an empty argument where a worktree name goes: leave it out for the worktree you are in")}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		argsAreUsage(sub)
	}
}

// nameAt is the position of the worktree name among a command's
// arguments, as its Use line writes it ("[name]" or "<name>"), or -1.
func nameAt(use string) int {
	fields := strings.Fields(use)
	for i, f := range fields[min(1, len(fields)):] {
		if f == "[name]" || f == "<name>" {
			return i
		}
	}
	return -1
}

// suggestFlag adds the nearest of c's flags to an unknown flag's error
// (--gruop: did you mean --group?), as binky.toml's unknown keys get.
func suggestFlag(c *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if s := world.Nearest(name, names); s != "" {
		return fmt.Errorf("%w (did you mean --%s?)", err, s)
	}
	return err
}
