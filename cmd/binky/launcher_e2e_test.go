package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-binky/git-binky/gitx/gittest"
)

// launcherDir copies the built launcher (git-binky) and command line
// (binky) into a folder of the test's own, so that a test may take binky
// away from the launcher.
func launcherDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"git-binky", "binky", "binkyd"} {
		b, err := os.ReadFile(filepath.Join(binDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runIn runs bin/name with args in dir and returns stdout, stderr and the
// exit code.
func runIn(t *testing.T, dir string, env []string, bin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errw bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errw
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), errw.String(), 0
	case errors.As(err, &exit):
		return out.String(), errw.String(), exit.ExitCode()
	}
	t.Fatalf("%s %q: %v", bin, args, err)
	return "", "", 0
}

// The launcher answers env's everyday forms from the world's snapshot
// without running binky, and hands binky everything else: a snapshot
// that no longer matches, the form for a person at a terminal, a proxy
// that is down, and every other command.
func TestTheLauncherAnswersEnvFromTheSnapshotAndBinkyTheRest(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": threeServices})
	home := filepath.Join(tmp, "home")
	env := []string{"BINKY_HOME=" + home}
	bin := launcherDir(t)
	launcher, cli := filepath.Join(bin, "git-binky"), filepath.Join(bin, "binky")

	forms := [][]string{{"env"}, {"env", "--dotenv"}, {"env", "--shell"}, {"env", "--json"}}
	want := map[string]string{}
	// The first env allocates; a later one saves its form once every input
	// is older than the snapshot's racy margin (envsnap), and a save makes
	// the next one's inputs new again: a pause before each round.
	for round := 0; round < 4; round++ {
		for _, args := range forms {
			out, errw, code := runIn(t, repo, env, cli, args...)
			if code != 0 {
				t.Fatalf("binky %q: exit %d: %s", args, code, errw)
			}
			want[strings.Join(args, " ")] = out
		}
		time.Sleep(200 * time.Millisecond)
	}

	// binky cannot run now: open for writing, it is busy for exec
	// (ETXTBSY), and its file, which the snapshot is keyed on, is
	// unchanged. Whatever the launcher still prints, it printed itself.
	busy, err := os.OpenFile(cli, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range forms {
		out, errw, code := runIn(t, repo, env, launcher, args...)
		if code != 0 || out != want[strings.Join(args, " ")] || errw != "" {
			t.Errorf("git-binky %q from the snapshot: exit %d\n%s%s\nbinky printed\n%s", args, code, out, errw, want[strings.Join(args, " ")])
		}
	}
	for what, args := range map[string][]string{
		"another command":           {"status"},
		"a form env's parser skips": {"env", "--help"},
	} {
		if _, errw, code := runIn(t, repo, env, launcher, args...); code == 0 || !strings.Contains(errw, "run "+cli) {
			t.Errorf("%s (%q) did not go to binky: exit %d: %s", what, args, code, errw)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "proxy.down"), []byte("port 1355 is taken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errw, code := runIn(t, repo, env, launcher, "env", "--shell"); code == 0 || !strings.Contains(errw, "run "+cli) {
		t.Errorf("with the proxy down, binky's warning is binky's to print; the launcher answered: exit %d: %s", code, errw)
	}
	os.Remove(filepath.Join(home, "proxy.down"))
	gittest.WriteFiles(t, repo, map[string]string{"binky.toml": threeServices + "[services.worker]\ncmd = \"true\"\nurl = \"worker\"\n"})
	if out, errw, code := runIn(t, repo, env, launcher, "env", "--shell"); code == 0 || !strings.Contains(errw, "run "+cli) {
		t.Errorf("a changed binky.toml was answered from the old snapshot: exit %d\n%s%s", code, out, errw)
	}

	// With binky back, the launcher's answers are binky's, exit codes too.
	if err := busy.Close(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"env", "--shell"}, {"env", "no-such-worktree"}, {"--version"}, {"env", "--bogus"}} {
		out, errw, code := runIn(t, repo, env, launcher, args...)
		wout, werr, wcode := runIn(t, repo, env, cli, args...)
		if out != wout || errw != werr || code != wcode {
			t.Errorf("%q: git-binky (exit %d)\n%s%s\nbinky (exit %d)\n%s%s", args, code, out, errw, wcode, wout, werr)
		}
	}
	if out, _, _ := runIn(t, repo, env, launcher, "env", "--shell"); out == want["env --shell"] || !strings.Contains(out, "WORKER_URL=") {
		t.Errorf("after binky.toml gained a worker, env printed\n%s", out)
	}
}

// The launcher runs the binky beside its own file (links followed) and no
// other: not one found on PATH, which may be another program of that
// name, and not one that runs the launcher again.
func TestTheLauncherRunsOnlyTheBinkyBesideIt(t *testing.T) {
	tmp := t.TempDir()
	mkdir := func(name string) string {
		d := filepath.Join(tmp, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	b, err := os.ReadFile(filepath.Join(binDir, "git-binky"))
	if err != nil {
		t.Fatal(err)
	}
	alone := mkdir("alone")
	launcher := filepath.Join(alone, "git-binky")
	if err := os.WriteFile(launcher, b, 0o755); err != nil {
		t.Fatal(err)
	}
	// Another program called binky, first on PATH.
	other := mkdir("other")
	ran := filepath.Join(tmp, "other-binky-ran")
	if err := os.WriteFile(filepath.Join(other, "binky"), []byte("#!/bin/sh\ntouch "+ran+"\necho from another binky\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := "PATH=" + other + string(os.PathListSeparator) + filepath.Dir(mustLookPath(t, "git")) + string(os.PathListSeparator) + "/bin"
	out, errw, code := runIn(t, tmp, []string{path}, launcher, "env", "--shell")
	if _, err := os.Stat(ran); err == nil || code != 1 || !strings.Contains(errw, "cannot find binky") || !strings.Contains(errw, "make install") {
		t.Errorf("no binky beside the launcher, another on PATH: exit %d\n%s%s", code, out, errw)
	}

	// A binky that is the launcher itself, or a script that runs it, would
	// run itself for ever.
	if err := os.Link(launcher, filepath.Join(alone, "binky")); err != nil {
		t.Fatal(err)
	}
	if _, errw, code := runIn(t, tmp, []string{path}, launcher, "--version"); code != 1 || !strings.Contains(errw, "runs git-binky again") {
		t.Errorf("binky is the launcher: exit %d: %s", code, errw)
	}
	os.Remove(filepath.Join(alone, "binky"))
	if err := os.WriteFile(filepath.Join(alone, "binky"), []byte("#!/bin/sh\nexec \"$(dirname \"$0\")/git-binky\" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, errw, code := runIn(t, tmp, []string{path}, launcher, "--version"); code != 1 || !strings.Contains(errw, "runs git-binky again") {
			t.Errorf("binky is a script that runs the launcher: exit %d: %s", code, errw)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a binky that runs the launcher again never ended")
	}

	// A launcher reached through a link runs the binky beside the file the
	// link names.
	linked := mkdir("linked")
	if err := os.Symlink(filepath.Join(binDir, "git-binky"), filepath.Join(linked, "git-binky")); err != nil {
		t.Fatal(err)
	}
	if out, errw, code := runIn(t, tmp, []string{path}, filepath.Join(linked, "git-binky"), "--version"); code != 0 || !strings.Contains(out, "git-binky") {
		t.Errorf("a linked launcher: exit %d\n%s%s", code, out, errw)
	}
	// A mark another process left in the environment (a binky that did not
	// take it out) is no loop.
	if out, errw, code := runIn(t, tmp, []string{path, "GIT_BINKY_LAUNCHED=1"}, filepath.Join(linked, "git-binky"), "--version"); code != 0 {
		t.Errorf("a stale mark stopped the launcher: exit %d\n%s%s", code, out, errw)
	}
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
