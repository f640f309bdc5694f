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

// A stand-in git that counts its runs and fails: the probe stops at its
// first command and answers no.
func countingGit(t *testing.T) (count func() int, git string) {
	t.Helper()
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	git = filepath.Join(dir, "git")
	if err := os.WriteFile(git, []byte("#!/bin/sh\necho run >> '"+runs+"'\nexit 1\n"), 0o755); err != nil {
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
	count, git := countingGit(t)
	ctx := context.Background()
	for range 3 {
		if ConfigHooksSupported(ctx) {
			t.Fatal("a git that fails every command runs config hooks")
		}
	}
	if n := count(); n != 1 {
		t.Fatalf("git ran %d times for three questions, want 1", n)
	}
	// Another git at the same path (an upgrade) is asked again.
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(git, later, later); err != nil {
		t.Fatal(err)
	}
	ConfigHooksSupported(ctx)
	if n := count(); n != 2 {
		t.Fatalf("git ran %d times after it changed, want 2", n)
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
	sweepProbes(dir, time.Now().Add(-10*time.Minute))
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a probe folder an hour old is still there: %v", err)
	}
	for _, p := range []string{fresh, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was deleted: %v", p, err)
		}
	}
}
