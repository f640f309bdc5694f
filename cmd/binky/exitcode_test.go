package main

import (
	"bytes"
	"strings"
	"testing"
)

// A wrong number of arguments is a usage mistake, as a wrong flag is: exit
// 2, with cobra's message. An unknown command stays 1, as git's does.
func TestWrongArgumentsExitTwo(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("BINKY_HOME", t.TempDir())
	for _, tc := range []struct {
		args string
		code int
		says string
	}{
		{"env a b", 2, "accepts at most 1 arg(s), received 2"},
		{"version extra", 2, `unknown command "extra"`},
		{"status a b c", 2, "received 3"},
		{"env --bogus", 2, "unknown flag: --bogus"},
		{"up --gruop x", 2, "unknown flag: --gruop (did you mean --group?)"}, // as binky.toml's keys
		{"status --jsn", 2, "did you mean --json?"},
		{"no-such-command", 1, `unknown command "no-such-command"`},
	} {
		var out, errw bytes.Buffer
		code := Main(strings.Fields(tc.args), strings.NewReader(""), &out, &errw)
		if code != tc.code || !strings.Contains(errw.String(), tc.says) {
			t.Errorf("git-binky %s: exit %d, stderr %q; want exit %d saying %q", tc.args, code, errw.String(), tc.code, tc.says)
		}
	}
}

// The worktree name's place among a command's arguments, from its Use.
func TestNameAtFindsTheWorktreeNamesPlace(t *testing.T) {
	for use, want := range map[string]int{
		"down [name]":                                 0,
		"remove <name>":                               0,
		"curl <name> <service> [path]":                0,
		"service stop|start|restart <service> [name]": 2,
		"status [.]":                                  -1,
		"init [dir] [--force]":                        -1,
	} {
		if got := nameAt(use); got != want {
			t.Errorf("nameAt(%q) = %d, want %d", use, got, want)
		}
	}
}
