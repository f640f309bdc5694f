package verify

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/gitx/gittest"
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
	if !errors.Is(err, ErrNoChecks) || !strings.Contains(err.Error(), "[agents]") {
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
	if got := tb.String(); got != "456789ab" {
		t.Errorf("tail %q", got)
	}
}
