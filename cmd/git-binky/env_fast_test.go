package main

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

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
