// Command git-binky gives every git worktree its own isolated local world:
// ports, databases, supervised services and URLs, from one binky.toml. It
// runs as `git binky <command>`.
//
// This package is the command line only: each command fills an options
// struct from its flags, calls one function below it, and prints.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// The launcher (cmd/git-binky) marks the environment it runs binky
	// with, to stop a launcher that runs itself; what binky runs (the
	// daemon, services, hooks) may run git-binky again.
	os.Unsetenv("GIT_BINKY_LAUNCHED")
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// Main runs git-binky with args and returns the process exit code. It is the
// one place errors become exit codes and hints.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	app := newApp(stdin, stdout, stderr)
	if opts, ok := envFastArgs(args); ok {
		// env runs on every shell prompt: its everyday forms skip building
		// the command tree (~1 ms of its ~12; docs/performance.md).
		return exitCode(runEnv(context.Background(), app, opts), app)
	}
	return runCobra(app, args)
}

// runCobra runs args through the command tree, as every command but env's
// everyday forms runs.
func runCobra(app *App, args []string) int {
	root := newRootCmd(app)
	root.SetArgs(args)
	ctx := context.Background()
	// Ctrl-C and SIGTERM cancel the command's context, so up, logs -f and
	// verify end cleanly. Listening starts the runtime's signal thread
	// (~0.2 ms); a command marked fast (env, on every shell prompt) has
	// nothing to clean up and is left to die at once as any program does.
	if c, _, err := root.Find(args); err != nil || c.Annotations[annotationFast] == "" {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
	}
	err := root.ExecuteContext(ctx)
	return exitCode(err, app)
}

// annotationFast marks a command that runs on every shell prompt: it
// leaves signals to their default (see Main).
const annotationFast = "binky/fast"

// exitError carries an exit code for a command whose output already said
// what went wrong (check found errors, verify failed).
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// usageError is a mistake in how the command was called.
type usageError struct{ error }

func exitCode(err error, app *App) int {
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(app.Err, "git-binky: interrupted")
		return 130
	}
	// An error can quote a service's output or a path, whose escape
	// sequences the terminal would run: they are shown as text.
	fmt.Fprintf(app.Err, "git-binky: %s\n", inertText(err.Error()))
	if h := hint(err); h != "" {
		fmt.Fprintf(app.Err, "hint: %s\n", h)
	}
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}
