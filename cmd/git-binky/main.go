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
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/git-binky/git-binky/envsnap"
	"github.com/git-binky/git-binky/homedir"
	"github.com/git-binky/git-binky/smallfile"
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
	switch why, err := smallfile.Read(homedir.ProxyDown(home), maxProxyDown); {
	case err == nil && len(bytes.TrimSpace(why)) > 0:
		return nil, false // binky warns
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, false // binky reads it its own way
	}
	dir, err := os.Getwd()
	if err != nil {
		return nil, false
	}
	return envsnap.Open(envsnap.Options{Home: home, Dir: dir, Name: a.Name, Renderer: bin}).Output(format)
}

// maxProxyDown bounds the read of proxy.down, a line the daemon writes.
const maxProxyDown = 64 << 10

// binkyPath finds the command line: beside this program (where make
// install and go install put both, links followed), then on PATH. A binky
// that is this program again (a copy or link of the launcher) would run
// itself for ever: it is refused.
func binkyPath() (string, error) {
	name := "binky"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	self, err := os.Executable()
	var p string
	if err == nil {
		if beside := filepath.Join(filepath.Dir(self), name); isFile(beside) {
			p = beside
		}
	}
	if p == "" {
		if p, err = exec.LookPath("binky"); err != nil {
			return "", errors.New("cannot find binky, the command line, beside git-binky or on PATH: install both with 'make install' (or 'go install ./cmd/...')")
		}
	}
	if me, err := os.Stat(self); err == nil {
		if it, err := os.Stat(p); err == nil && os.SameFile(me, it) {
			return "", errors.New(p + " is git-binky itself, not the command line: install both with 'make install' (or 'go install ./cmd/...')")
		}
	}
	return p, nil
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
