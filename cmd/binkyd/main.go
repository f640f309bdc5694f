// Command binkyd is the git-binky daemon. git-binky starts it on demand
// ('binkyd run'); people rarely run it by hand. It is a binary of its own so
// that the CLI, which shell prompts run on every cd, does not pay the
// start-up cost of what only the daemon needs.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/git-binky/git-binky/daemon"
	"github.com/git-binky/git-binky/version"
	"github.com/git-binky/git-binky/world"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) != 1 || args[0] != "run" {
		fmt.Fprintln(os.Stderr, "usage: binkyd run   (git binky daemon start runs it for you)")
		return 2
	}
	home, err := world.DefaultHome()
	if err != nil {
		fmt.Fprintln(os.Stderr, "binkyd:", err)
		return 1
	}
	if err := home.Ensure(); err != nil {
		fmt.Fprintln(os.Stderr, "binkyd:", err)
		return 1
	}
	logf, err := os.OpenFile(home.LogPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "binkyd:", err)
		return 1
	}
	defer logf.Close()
	log := slog.New(slog.NewJSONHandler(logf, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A service's output must never reach us: we have no terminal.
	signal.Ignore(syscall.SIGHUP, syscall.SIGPIPE)
	err = daemon.New(home, version.String(), log).Run(ctx)
	if errors.Is(err, daemon.ErrRunning) {
		return 0 // another daemon won the race to start; it serves
	}
	if err != nil {
		log.Error("daemon failed", "err", err)
		fmt.Fprintln(os.Stderr, "binkyd:", err)
		return 1
	}
	return 0
}
