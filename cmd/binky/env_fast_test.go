package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/git-binky/git-binky/gitx/gittest"
)

// env's everyday forms skip the command tree; what they print, and how they
// fail, must be exactly what the tree would have done.
func TestEnvWithoutTheCommandTreeSaysWhatTheTreeSays(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": threeServices})
	gittest.AddWorktree(t, repo, filepath.Join(tmp, "login-fix"), "login-fix")
	t.Setenv("BINKY_HOME", filepath.Join(tmp, "home"))
	t.Chdir(repo)

	run := func(fast bool, args ...string) (string, string, int) {
		var out, errw bytes.Buffer
		var code int
		if fast {
			if _, ok := envFastArgs(args); !ok {
				t.Fatalf("%q is an everyday form of env, but envFastArgs did not take it", args)
			}
			code = Main(args, strings.NewReader(""), &out, &errw)
		} else {
			code = runCobra(newApp(strings.NewReader(""), &out, &errw), args)
		}
		return out.String(), errw.String(), code
	}
	for _, args := range [][]string{
		{"env"}, // the first call allocates the ports; both paths then read them
		{"env", "--dotenv"},
		{"env", "--shell"},
		{"env", "--json"},
		{"env", "login-fix"},
		{"env", "--shell", "login-fix"},
		{"env", "login-fix", "--json"},
		{"env", "no-such-worktree"},
		{"env", "--shell", "no-such-worktree"},
	} {
		treeOut, treeErr, treeCode := run(false, args...)
		out, errw, code := run(true, args...)
		if out != treeOut || errw != treeErr || code != treeCode {
			t.Errorf("%q: without the tree (exit %d)\n%s%s\nwith it (exit %d)\n%s%s", args, code, out, errw, treeCode, treeOut, treeErr)
		}
		if strings.Contains(strings.Join(args, " "), "no-such") == (code == 0) {
			t.Errorf("%q: exit %d\n%s", args, code, errw)
		}
	}

	want := map[string]envOptions{
		"env --json":    {JSON: true},
		"env x":         {Name: "x"},
		"env x --shell": {Name: "x", Shell: true},
	}
	for line, opts := range want {
		if got, ok := envFastArgs(strings.Fields(line)); !ok || !reflect.DeepEqual(got, opts) {
			t.Errorf("envFastArgs(%q) = %+v, %v; want %+v", line, got, ok, opts)
		}
	}
	// Help, mistakes and other spellings are cobra's to answer.
	for _, line := range []string{"", "status", "env --help", "env -h", "env --json --shell",
		"env a b", "env --json=true", "env -- x", "env --bogus", "env x y --json", "envy"} {
		if _, ok := envFastArgs(strings.Fields(line)); ok {
			t.Errorf("envFastArgs(%q) took it; cobra should answer it", line)
		}
	}
}

// From the third env on, a world that did not change prints from its
// snapshot (world/envsnapshot.go): every form must print what the full
// path printed, warnings included, and a changed binky.toml must show.
func TestEnvFromItsSnapshotPrintsWhatTheFullPathPrinted(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": threeServices})
	home := filepath.Join(tmp, "home")
	t.Setenv("BINKY_HOME", home)
	t.Chdir(repo)
	env := func(args ...string) (string, string) {
		t.Helper()
		var out, errw bytes.Buffer
		if code := Main(args, strings.NewReader(""), &out, &errw); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errw.String())
		}
		return out.String(), errw.String()
	}
	snapshots := func() []string {
		m, _ := filepath.Glob(filepath.Join(home, "worlds", "*.env"))
		return m
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "proxy.down"), []byte("port 1355 is taken"), 0o600); err != nil {
		t.Fatal(err)
	}
	env("env") // allocates the ports
	// A snapshot is kept once its inputs are older than a racy margin
	// (world/envsnapshot.go).
	time.Sleep(200 * time.Millisecond)
	for _, args := range [][]string{{"env"}, {"env", "--shell"}, {"env", "--json"}, {"env", "--dotenv"}} {
		full, fullErr := env(args...) // saves the snapshot, or adds its form
		if !strings.Contains(fullErr, "proxy is down") {
			t.Errorf("%q: no word of the proxy being down: %s", args, fullErr)
		}
		for i := 0; i < 2; i++ {
			out, errw := env(args...)
			if out != full || errw != fullErr {
				t.Errorf("%q from the snapshot:\n%s%s\nthe full path:\n%s%s", args, out, errw, full, fullErr)
			}
		}
	}
	if len(snapshots()) != 1 {
		t.Fatalf("snapshots %v, want the world's one", snapshots())
	}
	gittest.WriteFiles(t, repo, map[string]string{"binky.toml": threeServices + "[services.worker]\ncmd = \"true\"\nurl = \"worker\"\n"})
	if out, _ := env("env"); !strings.Contains(out, "WORKER_PORT=") {
		t.Errorf("env after binky.toml gained a service:\n%s", out)
	}
}
