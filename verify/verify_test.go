package verify

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/gitx/gittest"
	"github.com/git-binky/git-binky/logfile"
	"github.com/git-binky/git-binky/world"
)

func repoWith(t *testing.T, verify string) (world.Home, string) {
	t.Helper()
	cfg := "[project]\nname = \"acme\"\n[services.api]\ncmd = \"true\"\nurl = \"api\"\n"
	if verify != "" {
		cfg += "[agents]\nverify = " + verify + "\n"
	}
	repo := gittest.NewRepo(t, t.TempDir(), "acme", map[string]string{"binky.toml": cfg})
	return world.Home{Dir: filepath.Join(t.TempDir(), "home")}, repo
}

// Every check runs, in order, in the worktree with the world's env, and a
// failure does not stop the ones after it.
func TestEveryCheckRunsWithTheWorldsEnv(t *testing.T) {
	home, repo := repoWith(t, `["echo port=$API_PORT in $(pwd)", "echo broken >&2; exit 3", "test -n \"${api.port}\""]`)
	var out bytes.Buffer
	res, err := RunWorld(context.Background(), home, repo, "", []string{"PATH=/usr/bin:/bin"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Passed || len(res.Checks) != 3 || res.World == "" {
		t.Fatalf("result %+v", res)
	}
	first, second, third := res.Checks[0], res.Checks[1], res.Checks[2]
	if !first.Passed || !strings.Contains(first.Output, "port=") || strings.Contains(first.Output, "port= ") || !strings.Contains(first.Output, "in "+repo) {
		t.Errorf("first check %+v", first)
	}
	if second.Passed || second.ExitCode != 3 || !strings.Contains(second.Output, "broken") {
		t.Errorf("second check %+v", second)
	}
	// ${api.port} was interpolated before the shell saw the command.
	if !third.Passed || strings.Contains(third.Cmd, "${") {
		t.Errorf("third check %+v", third)
	}
	// Streamed as it ran, and captured too.
	if !strings.Contains(out.String(), "port=") || !strings.Contains(out.String(), "broken") {
		t.Errorf("streamed output %q", out.String())
	}
}

func TestAProjectWithNoChecksSaysHowToAddOne(t *testing.T) {
	home, repo := repoWith(t, "")
	_, err := RunWorld(context.Background(), home, repo, "", nil, nil)
	// Which file: 'verify <worktree>' names another worktree's.
	if !errors.Is(err, ErrNoChecks) || !strings.Contains(err.Error(), "[agents]") || !strings.Contains(err.Error(), filepath.Join(repo, "binky.toml")) {
		t.Errorf("err = %v", err)
	}
}

func TestACancelledRunStopsTheCheck(t *testing.T) {
	home, repo := repoWith(t, `["sleep 30"]`)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := RunWorld(ctx, home, repo, "", nil, nil)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestOnlyTheLastOutputIsKept(t *testing.T) {
	tb := &tailBuffer{max: 8}
	tb.Write([]byte("0123456789"))
	tb.Write([]byte("ab"))
	if got := tb.String(); got != logfile.CutStartMark+"456789ab" {
		t.Errorf("tail %q: want the kept bytes, saying their line's start was cut", got)
	}
	lines := &tailBuffer{max: 8}
	lines.Write([]byte("012\n456789"))
	if got := lines.String(); got != "456789" {
		t.Errorf("tail %q: want it from its first whole line", got)
	}
	// Review: one long last line came back empty, a failing check's
	// whole message lost.
	long := &tailBuffer{max: 17}
	long.Write([]byte("FAIL: " + strings.Repeat("x", 40) + " expected 3 got 4\n"))
	if got := long.String(); got != logfile.CutStartMark+"expected 3 got 4\n" {
		t.Errorf("tail %q: want the long line's end, marked cut", got)
	}
}

// A check that printed its world's password, then 16 KiB, kept a tail
// beginning inside the password: 31 of its 32 characters came back
// through MCP verify without reveal.
func TestATailCutInsideASecretHidesItsLastPart(t *testing.T) {
	pw := "04ce5e14d1e8ca86ea77b2f0c1d9e3aa"
	tb := &tailBuffer{max: 52} // the password's last 12 characters, then the rest
	tb.Write([]byte("DB_URL=postgres://app:" + pw + "@127.0.0.1/app; more output on this line"))
	hide := world.Hider(map[string]string{"DB_PASSWORD": pw})
	if got := hide(tb.String()); strings.Contains(got, pw[len(pw)-12:]) || !strings.Contains(got, "xxxxx@127.0.0.1/app; more") {
		t.Errorf("hidden tail %q still holds the password's last part", got)
	}
}
