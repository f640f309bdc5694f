// Command git-binky is what git runs for `git binky <command>`. It is a
// launcher: it answers env's everyday forms itself when the world's env
// snapshot still matches (envsnap), and runs binky, the command line,
// for everything else, with the same arguments, streams and exit code.
//
// env runs on every shell prompt and direnv cd, and most of what it costs
// is a Go program's start: the runtime, then every linked package's
// initialisation. binky links cobra, the config parser, crypto and net;
// this program links only what reading a snapshot needs, and so starts in
// ~2 ms less on the bench VM (docs/performance.md, round 13). Every other
// command pays one more exec for that (~1-6 ms, against the tens to
// hundreds of milliseconds of what they do).
package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/git-binky/git-binky/envsnap"
	"github.com/git-binky/git-binky/homedir"
)

func main() {
	args := os.Args[1:]
	bin, err := binkyPath()
	if err != nil {
		os.Stderr.WriteString("git-binky: " + err.Error() + "\n")
		os.Exit(1)
	}
	if out, ok := fromSnapshot(bin, args); ok {
		if _, err := os.Stdout.Write(out); err != nil {
			os.Stderr.WriteString("git-binky: " + err.Error() + "\n")
			os.Exit(1)
		}
		return
	}
	os.Exit(launch(bin, args))
}

// fromSnapshot is what binky would print for args, when args are one of
// env's everyday forms and the world's snapshot matches its inputs. What
// binky prints beside its output is left to binky: the note to a person
// at a terminal, and the warning while the URL proxy is down.
func fromSnapshot(bin string, args []string) ([]byte, bool) {
	a, ok := envsnap.ParseArgs(args)
	if !ok {
		return nil, false
	}
	format := a.Format(stdoutIsTerminal())
	if format == envsnap.Terminal {
		return nil, false
	}
	home, err := homedir.Default()
	if err != nil {
		return nil, false
	}
	dir, err := os.Getwd()
	if err != nil {
		return nil, false
	}
	snap := envsnap.Open(envsnap.Options{Home: home, Dir: dir, Name: a.Name, Renderer: bin})
	if snap.ProxyDown() {
		return nil, false // binky warns
	}
	return snap.Output(format)
}

// binkyPath finds the command line beside this program (links followed),
// where make install and go install put both. Only there: the first
// `binky` on PATH may be another program of that name (the Python tool
// this one descends from installs one), and it would be handed the
// user's arguments, its output eval'd by a shell prompt.
func binkyPath() (string, error) {
	self, err := selfPath()
	if err != nil {
		return "", errors.New("cannot find this program's own file, to run binky beside it: " + err.Error())
	}
	name := "binky"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	p := filepath.Join(filepath.Dir(self), name)
	if !isFile(p) {
		return "", errors.New("cannot find binky, the command line, beside git-binky (" + p + "): install them together with 'make install' (or 'go install ./cmd/...')")
	}
	me, err1 := os.Stat(self)
	it, err2 := os.Stat(p)
	if (err1 == nil && err2 == nil && os.SameFile(me, it)) || launchedBySelf() {
		// A binky that is the launcher again (a copy or link of it, or a
		// script that runs it) would run itself for ever.
		return "", errors.New(p + " runs git-binky again, not the command line: install them together with 'make install' (or 'go install ./cmd/...')")
	}
	return p, nil
}

// selfPath is this program's file, links followed: os.Executable, or,
// where that cannot say (Linux without /proc), how it was run (git runs it
// by a path, or by name from a PATH it put its exec-path on).
func selfPath() (string, error) {
	self, err := os.Executable()
	if err != nil {
		if self, err = exec.LookPath(os.Args[0]); err != nil {
			return "", err
		}
		if self, err = filepath.Abs(self); err != nil {
			return "", err
		}
	}
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	return self, nil
}

// launchedVar is set, to the launcher's pid, in the environment binky is
// run with; binky takes it out again at once, so that what it runs can run
// git-binky. A launcher that finds its own pid there (exec keeps the pid)
// or its parent's (a child, on Windows) was run by that launcher, not by
// binky; any other value (one a binky that did not take it out passed
// on) is no loop.
const launchedVar = "GIT_BINKY_LAUNCHED"

func launchedBySelf() bool {
	v := os.Getenv(launchedVar)
	return v != "" && (v == strconv.Itoa(os.Getpid()) || v == strconv.Itoa(os.Getppid()))
}

// binkyEnv is this environment, marked (any older mark taken out: with a
// name twice, the first may be the one read).
func binkyEnv() []string {
	env := os.Environ()
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, launchedVar+"=") {
			out = append(out, kv)
		}
	}
	return append(out, launchedVar+"="+strconv.Itoa(os.Getpid()))
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
