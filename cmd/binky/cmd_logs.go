package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"

	"github.com/spf13/cobra"

	"github.com/git-binky/git-binky/logfile"
	"github.com/git-binky/git-binky/world"
)

type logsOptions struct {
	Name    string
	Service string
	Follow  bool
	Lines   int
}

func newLogsCmd(app *App) *cobra.Command {
	var opts logsOptions
	cmd := &cobra.Command{
		Use:   "logs [name]",
		Short: "Print a world's captured service logs",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			return runLogs(cmd, app, opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Service, "service", "s", "", "only this service")
	cmd.Flags().BoolVarP(&opts.Follow, "follow", "f", false, "keep printing new lines until interrupted")
	cmd.Flags().IntVarP(&opts.Lines, "lines", "n", 50, "how many lines of each log to print first")
	return cmd
}

func runLogs(cmd *cobra.Command, app *App, opts logsOptions) error {
	if opts.Lines < 1 {
		return usageError{fmt.Errorf("--lines %d: give a count of 1 or more", opts.Lines)}
	}
	home, err := app.Home()
	if err != nil {
		return err
	}
	w, warning, err := world.OpenApproved(home, app.Dir, opts.Name)
	if err != nil {
		return err
	}
	if warning != "" {
		fmt.Fprintln(app.Err, "warning: "+world.Inert(warning))
	}
	// The same reading as the MCP logs tool: the last lines of each log.
	logs, err := w.Logs(opts.Service, opts.Lines, -1)
	if err != nil {
		return usageError{err}
	}
	paths, err := w.LogPaths(opts.Service)
	if err != nil {
		return usageError{err}
	}
	services := slices.Sorted(maps.Keys(paths))
	prefix := len(services) > 1
	var mu sync.Mutex
	print := func(svc, line string) {
		mu.Lock()
		defer mu.Unlock()
		if prefix {
			fmt.Fprintf(app.Out, "%s | %s\n", svc, line)
		} else {
			fmt.Fprintln(app.Out, line)
		}
	}
	found := false
	for _, s := range services {
		if _, err := os.Stat(paths[s]); err == nil {
			found = true
		}
		for _, line := range logs[s].Lines {
			print(s, line)
		}
	}
	if !found && !opts.Follow {
		fmt.Fprintf(app.Err, "no logs yet for %s: 'git binky up' starts its services\n", w.Name)
		return nil
	}
	if !opts.Follow {
		return nil
	}
	var wg sync.WaitGroup
	for _, s := range services {
		path := paths[s]
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = logfile.Follow(cmd.Context(), path, logs[s].Next, func(line string) { print(s, line) })
		}()
	}
	wg.Wait()
	return nil
}
