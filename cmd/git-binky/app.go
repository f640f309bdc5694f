package main

import (
	"encoding/json"
	"errors"
	"io"
	"os"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/client"
	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/version"
	"github.com/git-binky/git-binky/world"
)

// App is what every command shares: the streams and how to find state. It
// is built once in Main; tests build their own.
type App struct {
	In       io.Reader
	Out, Err io.Writer
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
	return &App{In: in, Out: out, Err: errw, Dir: dir}
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

// IsTTY reports whether w is a terminal; colour and tables are for people.
func IsTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Color reports whether output to w may use colour: a TTY, and no NO_COLOR.
func Color(w io.Writer) bool {
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	return IsTTY(w) && os.Getenv("TERM") != "dumb"
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
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
	return client.New(h, version.String()), nil
}

func osEnviron() []string { return os.Environ() }
