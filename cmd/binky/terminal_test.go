package main

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/gitx/gittest"
	"github.com/git-binky/git-binky/verify"
	"github.com/git-binky/git-binky/world"
)

const esc = "\033["

// testApp is an App over buffers, as a terminal when tty is true (with
// colour) and as a pipe otherwise.
func testApp(t *testing.T, dir string, tty bool) (*App, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var out, errw bytes.Buffer
	ios := newIOStreams(strings.NewReader(""), &out, &errw, func(string) (string, bool) { return "", false })
	ios.SetStdoutTTY(tty)
	ios.SetStderrTTY(tty)
	ios.SetColorEnabled(tty)
	home := world.Home{Dir: filepath.Join(t.TempDir(), "binky-home")}
	return &App{IOStreams: ios, Dir: dir, home: &home}, &out, &errw
}

func TestIOStreamsDecidesColourOnce(t *testing.T) {
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	// A buffer is never a terminal, so nothing is coloured, whatever TERM says.
	ios := newIOStreams(nil, &bytes.Buffer{}, &bytes.Buffer{}, env(map[string]string{"TERM": "xterm"}))
	if ios.IsStdoutTTY() || ios.ColorEnabled() || ios.TerminalWidth() != 0 {
		t.Errorf("a buffer: tty %v colour %v width %d, want false false 0", ios.IsStdoutTTY(), ios.ColorEnabled(), ios.TerminalWidth())
	}
	ios = newIOStreams(nil, &bytes.Buffer{}, &bytes.Buffer{}, env(map[string]string{"COLUMNS": "132"}))
	if w := ios.TerminalWidth(); w != 132 {
		t.Errorf("COLUMNS=132: width %d", w)
	}
	ios.SetStdoutTTY(true)
	ios.SetColorEnabled(true)
	if got := ios.Style().state("running"); got != esc+"32mrunning"+esc+"0m" {
		t.Errorf("forced colour: %q", got)
	}
	if got := (&IOStreams{}).Style().state("running"); got != "running" {
		t.Errorf("no colour: %q", got)
	}
}

func TestStatusRendering(t *testing.T) {
	s := api.Status{Worlds: []api.World{{
		Project: "acme", Worktree: "feat", Path: "/src/acme-feat", State: "running",
		Services: []api.Service{{Name: "api", State: "healthy", PID: 42, Port: 4100}},
	}}}
	for _, tty := range []bool{false, true} {
		app, out, _ := testApp(t, t.TempDir(), tty)
		renderStatus(app.Out, s, app.Style())
		got := out.String()
		for _, want := range []string{"acme", "feat", "/src/acme-feat", "api", "pid 42", ":4100"} {
			if !strings.Contains(got, want) {
				t.Errorf("tty=%v: status lacks %q:\n%s", tty, want, got)
			}
		}
		coloured := strings.Contains(got, esc+"32mrunning") && strings.Contains(got, esc+"32mhealthy") && strings.Contains(got, esc+"1macme")
		if tty != coloured {
			t.Errorf("tty=%v: coloured=%v:\n%q", tty, coloured, got)
		}
		if !tty && strings.Contains(got, esc) {
			t.Errorf("a pipe got escape codes: %q", got)
		}
	}
}

// A worktree's path is any folder name git took: the escape sequences in
// it reach the terminal as text, never as sequences.
func TestStatusPrintsAPathsEscapeSequencesAsText(t *testing.T) {
	s := api.Status{Worlds: []api.World{{
		Project: "acme", Worktree: "esc", Path: "/tmp/e\x1b]0;PWNED\a\x1b[2Jx", State: "untrusted",
		Message:  "/tmp/e\x1b[2Jx/binky.toml is not approved",
		Services: []api.Service{{Name: "api", State: "crashed", Message: "exit 1: \x1b]0;OWNED\a"}},
	}}}
	for _, tty := range []bool{false, true} {
		app, out, _ := testApp(t, t.TempDir(), tty)
		renderStatus(app.Out, s, app.Style())
		got := out.String()
		if strings.Contains(got, "\x1b]0;") || strings.Contains(got, "\x1b[2J") || strings.ContainsRune(got, 7) || !strings.Contains(got, `exit 1: \x1b]0;OWNED\x07`) {
			t.Errorf("tty=%v: a path's escape sequence reached the terminal: %q", tty, got)
		}
		if !strings.Contains(got, `/tmp/e\x1b]0;PWNED\x07\x1b[2Jx`) || !strings.Contains(got, `why: /tmp/e\x1b[2Jx/binky.toml`) {
			t.Errorf("tty=%v: the path is not shown with its control characters escaped: %q", tty, got)
		}
	}
}

func TestVerifyRendering(t *testing.T) {
	res := verify.Result{World: "feat", Checks: []verify.Check{
		{Cmd: "make test", Passed: true, Seconds: 1.2},
		{Cmd: "make lint", ExitCode: 2, Seconds: 0.3},
	}}
	for _, tty := range []bool{false, true} {
		app, out, _ := testApp(t, t.TempDir(), tty)
		renderVerify(app.IOStreams, res)
		got := out.String()
		for _, want := range []string{"pass", "make test", "FAIL", "make lint", "exit 2", "verify: feat: 1 of 2 checks failed"} {
			if !strings.Contains(got, want) {
				t.Errorf("tty=%v: verify lacks %q:\n%s", tty, want, got)
			}
		}
		coloured := strings.Contains(got, esc+"32mpass") && strings.Contains(got, esc+"31mFAIL")
		if tty != coloured {
			t.Errorf("tty=%v: coloured=%v:\n%q", tty, coloured, got)
		}
	}
}

// The runF seam: the command parses its arguments and flags into options
// and hands them over, and nothing runs.
func TestVerifyCommandParses(t *testing.T) {
	app, _, _ := testApp(t, t.TempDir(), false)
	var got verifyOptions
	cmd := newVerifyCmd(app, func(_ context.Context, o verifyOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"feat", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Name != "feat" || !got.JSON || got.App != app {
		t.Errorf("options %+v", got)
	}
	cmd = newVerifyCmd(app, func(context.Context, verifyOptions) error { return nil })
	cmd.SetArgs([]string{"a", "b"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); err == nil {
		t.Error("two names were accepted")
	}
}

func TestVerifyWithNoChecks(t *testing.T) {
	repo := gittest.NewRepo(t, t.TempDir(), "acme", map[string]string{"binky.toml": "[project]\nname = \"acme\"\n[services.api]\ncmd = \"true\"\n"})
	app, _, _ := testApp(t, repo, false)
	if err := runVerify(context.Background(), verifyOptions{App: app}); !errors.Is(err, verify.ErrNoChecks) {
		t.Errorf("verify with no [agents] verify: %v, want ErrNoChecks", err)
	}
}

// env prints the same variables to a terminal and to a pipe; only a
// person at a terminal is told the passwords are hidden.
func TestEnvRendering(t *testing.T) {
	repo := gittest.NewRepo(t, t.TempDir(), "acme", map[string]string{
		"binky.toml": "[project]\nname = \"acme\"\n[services.api]\ncmd = \"true\"\nurl = \"api\"\n",
	})
	var home *world.Home // one home for both: a world belongs to the home that made it
	for _, tty := range []bool{false, true} {
		app, out, errw := testApp(t, repo, tty)
		if home == nil {
			home = app.home
		}
		app.home = home
		if err := runEnv(context.Background(), app, envOptions{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "API_PORT=") || !strings.Contains(out.String(), "BINKY_PROJECT=acme") {
			t.Errorf("tty=%v: env output:\n%s", tty, out)
		}
		if strings.Contains(out.String(), esc) {
			t.Errorf("tty=%v: env is never coloured: %q", tty, out)
		}
		if told := strings.Contains(errw.String(), "passwords hidden"); told != tty {
			t.Errorf("tty=%v: told of hidden passwords: %v (%q)", tty, told, errw)
		}
	}
}

func TestEnvOnATerminalPrintsAPathsEscapeSequencesAsText(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "esc\x1b]0;TITLE\x07\x1b[31mRED")
	repo := gittest.NewRepo(t, parent, "acme", map[string]string{
		"binky.toml": "[project]\nname = \"acme\"\n[services.api]\ncmd = \"true\"\nurl = \"api\"\n",
	})
	app, out, _ := testApp(t, repo, true)
	if err := runEnv(context.Background(), app, envOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(out.String(), 0x1b) || strings.ContainsRune(out.String(), 0x07) {
		t.Errorf("a terminal got the path's escape sequences: %q", out)
	}
	if !strings.Contains(out.String(), `\x1b]0;TITLE`) {
		t.Errorf("the path is not shown: %q", out)
	}
	// Piped (eval "$(git binky env)"), the path is the real one.
	home := app.home
	app, out, _ = testApp(t, repo, false)
	app.home = home
	if err := runEnv(context.Background(), app, envOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\x1b]0;TITLE") {
		t.Errorf("piped env changed the path: %q", out)
	}
}

// A running world whose service crash-loops is not shown as well as any
// other, and a port held for a service it did not start says so (its
// state column was empty).
func TestStatusSaysWhatOfARunningWorldIsNotWell(t *testing.T) {
	s := api.Status{Worlds: []api.World{{
		Project: "acme", Worktree: "feat", Path: "/src/acme-feat", State: "running",
		Ports: map[string]int{"api": 4100, "web": 4101, "adminer": 4102},
		Services: []api.Service{{Name: "api", State: "crashed", Port: 4100}, {Name: "web", State: "healthy", PID: 7, Port: 4101},
			{Name: "worker", State: "unhealthy", PID: 8}},
	}}}
	app, out, _ := testApp(t, t.TempDir(), false)
	renderStatus(app.Out, s, app.Style())
	got := out.String()
	if !strings.Contains(got, "[running: api crashed, worker unhealthy]") {
		t.Errorf("the world's line does not say what is not well:\n%s", got)
	}
	if !regexp.MustCompile(`adminer\s+:4102\s+not started`).MatchString(got) {
		t.Errorf("adminer's port line does not say it was not started:\n%s", got)
	}
}
