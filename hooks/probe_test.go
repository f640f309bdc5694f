//go:build unix

package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A stand-in git that counts its runs. With works, init and config
// succeed and `git hook run` runs nothing (a git without config hooks);
// without, every command fails (the try itself fails).
func countingGit(t *testing.T, works bool) (count func() int, git string) {
	t.Helper()
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	git = filepath.Join(dir, "git")
	script := "#!/bin/sh\necho run >> '" + runs + "'\n"
	if works {
		script += "case \"$1\" in init|config) exit 0;; esac\n"
	}
	script += "exit 1\n"
	if err := os.WriteFile(git, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	probed.Lock()
	probed.key = ""
	probed.Unlock()
	return func() int {
		b, _ := os.ReadFile(runs)
		return strings.Count(string(b), "run")
	}, git
}

func TestTheConfigHookProbeRunsOncePerGit(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "")
	count, git := countingGit(t, true)
	ctx := context.Background()
	for range 3 {
		if ConfigHooksSupported(ctx) {
			t.Fatal("a git whose `git hook run` runs nothing runs config hooks")
		}
	}
	if n := count(); n != 4 { // init, config twice, hook run
		t.Fatalf("git ran %d times for three questions, want one probe's 4", n)
	}
	// Another git at the same path (an upgrade) is asked again.
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(git, later, later); err != nil {
		t.Fatal(err)
	}
	ConfigHooksSupported(ctx)
	if n := count(); n != 8 {
		t.Fatalf("git ran %d times after it changed, want 8", n)
	}
}

// A probe that could not run (a full temporary folder, git killed) says
// nothing about git: the next question tries again.
func TestAFailedConfigHookProbeIsNotRemembered(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "")
	count, _ := countingGit(t, false)
	ctx := context.Background()
	for range 2 {
		if ConfigHooksSupported(ctx) {
			t.Fatal("a git that fails every command runs config hooks")
		}
	}
	if n := count(); n != 2 {
		t.Fatalf("git ran %d times, want one failed init per question", n)
	}
}

func TestSweepProbesDeletesOnlyOldProbeFolders(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	mk := func(name string, at time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(p, ".git"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk(probePrefix+"123", old)
	fresh := mk(probePrefix+"456", time.Now()) // a try running now
	other := mk("someone-else", old)
	// A link named like a probe is not followed: what it points at stays.
	target := mk("target", old)
	link := filepath.Join(dir, probePrefix+"789")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	sweepProbes(dir, time.Now().Add(-10*time.Minute))
	if _, err := os.Stat(filepath.Join(target, ".git")); err != nil {
		t.Errorf("the folder a probe-named link points at lost its content: %v", err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a probe folder an hour old is still there: %v", err)
	}
	for _, p := range []string{fresh, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was deleted: %v", p, err)
		}
	}
}
