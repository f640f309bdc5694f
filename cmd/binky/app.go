package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/client"
	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/version"
	"github.com/git-binky/git-binky/world"
)

// App is what every command shares: the terminal and how to find state.
// It is built once in Main; tests build their own.
type App struct {
	// IOStreams is embedded, so app.Out and app.Err are the terminal's
	// streams and app.Style() its colours.
	*IOStreams
	// Dir is the directory commands act from (the process's cwd).
	Dir string
	// home is resolved on first use, so `--version` and `--help` never
	// touch the file system.
	home *world.Home
}

func newApp(in io.Reader, out, errw io.Writer) *App {
	dir, err := os.Getwd()
	if err != nil {
		dir = "."
	}
	return &App{IOStreams: newIOStreams(in, out, errw, os.LookupEnv), Dir: dir}
}

// Home is the machine state folder.
func (a *App) Home() (world.Home, error) {
	if a.home != nil {
		return *a.home, nil
	}
	h, err := world.DefaultHome()
	if err != nil {
		return h, err
	}
	a.home = &h
	return h, nil
}

// hint turns an error callers can branch on into the next thing to try.
func hint(err error) string {
	var ce *world.ConfigError
	switch {
	case errors.As(err, &ce):
		return "run 'git binky check' to see every problem in the file"
	case errors.Is(err, world.ErrNoConfig):
		return "binky.toml lives at the root of the worktree; see README.md for the format"
	case errors.Is(err, gitx.ErrNoSuchWorktree):
		return "'git worktree list' shows the worktrees; 'git binky status' the worlds"
	case errors.Is(err, world.ErrNoFreePort):
		return "'git binky status' lists the worlds holding ports"
	}
	var ae *api.Error
	if errors.As(err, &ae) {
		switch ae.Code {
		case api.CodeConfig:
			return "run 'git binky check' to see every problem in the file"
		case api.CodeNotFound:
			if strings.Contains(ae.Message, gitx.ErrNotRepository.Error()) {
				return "" // the message says where to run it
			}
			return "'git worktree list' shows the worktrees; 'git binky status' the worlds"
		}
	}
	return ""
}

// Client returns a daemon client for the user's BINKY_HOME.
func (a *App) Client() (*client.Client, error) {
	h, err := a.Home()
	if err != nil {
		return nil, err
	}
	c := client.New(h, version.String())
	c.Notice = func(msg string) { fmt.Fprintln(a.Err, "note: "+msg) }
	return c, nil
}

// osEnviron is the caller's environment, as its shell had it (git's exec
// path taken back off PATH).
func osEnviron() []string { return world.WithoutGitExecPath(os.Environ()) }
