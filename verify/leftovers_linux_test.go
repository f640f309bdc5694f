//go:build linux

package verify

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A check is done when its command exits: what it left running (a server
// started with &, one in a session of its own) neither holds verify until
// it ends nor outlives it. verify waited out a `sleep 40 &`.
func TestACheckThatLeavesAProcessRunningEndsWithItsCommand(t *testing.T) {
	dir := t.TempDir()
	home, repo := repoWith(t, `["sleep 30 & echo $! > `+dir+`/bg; echo started", "setsid sh -c 'echo $$ > `+dir+`/sid; exec sleep 30' & sleep 0.2; exit 4"]`)
	start := time.Now()
	res, err := RunWorld(context.Background(), home, repo, "", []string{"PATH=/usr/bin:/bin"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("verify took %s: it waited for what the checks left running", took)
	}
	if len(res.Checks) != 2 || !res.Checks[0].Passed || res.Checks[1].Passed || res.Checks[1].ExitCode != 4 {
		t.Fatalf("checks %+v: want the first passed, the second failed with its own exit code", res.Checks)
	}
	for i, c := range res.Checks {
		if !strings.Contains(c.Output, "stopped what this check left running") {
			t.Errorf("check %d's output does not say what binky stopped: %q", i, c.Output)
		}
	}
	for _, f := range []string{"bg", "sid"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("the check did not write its pid: %v", err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid > 0 && !gone(pid, 3*time.Second) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("%s: pid %d outlived verify", f, pid)
		}
	}
}

// gone reports whether pid has ended (a zombie no one reaped yet counts)
// within d: a SIGKILLed process takes a moment to die.
func gone(pid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		if _, rest, ok := strings.Cut(string(st), ") "); ok && strings.HasPrefix(rest, "Z") {
			return true
		}
	}
	return false
}
