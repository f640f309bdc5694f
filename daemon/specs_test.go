package daemon

import (
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/world"
)

func TestPlainUpStartsTheDefaultGroupWhenThereIsOne(t *testing.T) {
	for _, tc := range []struct {
		name, src, group string
		want             []string
	}{
		{"no groups: all", "[services.a]\ncmd = \"a\"\n[services.b]\ncmd = \"b\"\n", "", []string{"a", "b"}},
		{"default group: its services", "[services.a]\ncmd = \"a\"\n[services.b]\ncmd = \"b\"\n[groups]\ndefault = [\"a\"]\ndebug = [\"b\"]\n", "", []string{"a"}},
		{"a named group still wins", "[services.a]\ncmd = \"a\"\n[services.b]\ncmd = \"b\"\n[groups]\ndefault = [\"a\"]\ndebug = [\"b\"]\n", "debug", []string{"b"}},
		{"an empty default: nothing", "[services.a]\ncmd = \"a\"\n[groups]\ndefault = []\ndebug = [\"a\"]\n", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, diags := world.ParseConfig("binky.toml", []byte(tc.src))
			if cfg == nil || len(diags) > 0 {
				t.Fatalf("config: %v", diags)
			}
			got, err := serviceNames(cfg, tc.group)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("serviceNames(%q) = %v, want %v", tc.group, got, tc.want)
			}
		})
	}
}

// What a widening up compares of two environments: not what a shell or
// git changes by itself (a cd, git's exec path first on PATH), but any
// other variable.
func TestMaterialEnvLeavesOutWhatAShellOrGitChanges(t *testing.T) {
	shell := []string{"PATH=/usr/bin:/bin", "PWD=/w", "OLDPWD=/", "SHLVL=1", "_=/usr/bin/binky", "FOO=1"}
	git := []string{"PATH=/usr/lib/git-core:/usr/bin:/bin", "GIT_EXEC_PATH=/usr/lib/git-core", "PWD=/w/sub", "SHLVL=2", "FOO=1"}
	if a, b := materialEnv(shell), materialEnv(git); !slices.Equal(a, b) {
		t.Errorf("binky and git binky from the same shell differ: %q vs %q", a, b)
	}
	pane := append(slices.Clone(shell), "TMUX_PANE=%3", "SSH_TTY=/dev/pts/4", "SSH_CONNECTION=127.0.0.1 50312 127.0.0.1 22", "COLUMNS=120",
		"TMUX=/tmp/tmux-0/default,100,1", "TERM=screen", "XDG_SESSION_ID=7")
	if a, b := materialEnv(shell), materialEnv(pane); !slices.Equal(a, b) {
		t.Errorf("two terminals of one shell differ: %q vs %q", a, b)
	}
	other := []string{"PATH=/usr/bin:/bin", "PWD=/w", "FOO=2"}
	if a, b := materialEnv(shell), materialEnv(other); slices.Equal(a, b) {
		t.Errorf("FOO=1 and FOO=2 compare equal: %q", a)
	}
}

// A daemon started by `git binky` (or a hook) inherits git's exec path:
// the environment it gives the worlds it starts with no caller's (the
// watcher's, an adopted world's) is the user's, without it.
func TestTheDaemonsOwnEnvironmentHasNoGitExecPath(t *testing.T) {
	t.Setenv("GIT_EXEC_PATH", "/usr/lib/git-core")
	t.Setenv("PATH", "/usr/lib/git-core:/usr/local/bin:/usr/bin")
	d := New(world.Home{Dir: t.TempDir()}, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, kv := range d.env {
		if strings.HasPrefix(kv, "GIT_EXEC_PATH=") || kv == "PATH=/usr/lib/git-core:/usr/local/bin:/usr/bin" {
			t.Errorf("the daemon's environment has %s", kv)
		}
	}
}
