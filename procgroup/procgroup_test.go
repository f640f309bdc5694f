//go:build unix

package procgroup

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCommandRunsItsLineWithSh(t *testing.T) {
	out, err := Command(context.Background(), `printf '%s' "$0"`).Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "/bin/sh" {
		t.Fatalf("$0 = %q, want /bin/sh", out)
	}
}

// A cancelled command takes everything it started with it: the shell's
// background grandchild must not outlive the context.
func TestCancelKillsTheWholeGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := Command(ctx, "sleep 60 & echo $! > "+pidFile+"; wait")
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	var grandchild int
	for deadline := time.Now().Add(5 * time.Second); grandchild == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the command never wrote its child's pid")
		}
		b, _ := os.ReadFile(pidFile)
		grandchild, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	info, err := ReadProc(grandchild)
	if err != nil {
		t.Fatal(err)
	}
	if info.PGID != cmd.Process.Pid {
		t.Fatalf("grandchild in group %d, want the command's own group %d", info.PGID, cmd.Process.Pid)
	}
	cancel()
	_ = cmd.Wait()
	for deadline := time.Now().Add(5 * time.Second); Alive(grandchild, info.StartTick); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still runs after its command was cancelled", grandchild)
		}
	}
	if GroupAlive(cmd.Process.Pid) {
		t.Fatal("the group is still alive")
	}
}

func TestAliveKnowsAPidByItsStartTime(t *testing.T) {
	self, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !Alive(os.Getpid(), self.StartTick) || !Alive(os.Getpid(), 0) {
		t.Fatal("this process is not alive by its own start time")
	}
	if Alive(os.Getpid(), self.StartTick+1) {
		t.Fatal("a pid with another start time counts as the same process")
	}
}

func TestStopEndsAGroupThatIgnoresSIGTERM(t *testing.T) {
	cmd := Command(context.Background(), "trap '' TERM; sleep 60 & wait; sleep 60")
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait() // reap the leader, or it would count as alive (a zombie holds its group)
	time.Sleep(50 * time.Millisecond)
	if !Stop(cmd.Process.Pid, 200*time.Millisecond) {
		t.Fatal("Stop did not end the group")
	}
}

func TestSignalRefusesGroupsItMustNotTouch(t *testing.T) {
	for _, pgid := range []int{0, 1, -5} {
		if err := Signal(pgid, 0); err == nil {
			t.Errorf("Signal(%d) was allowed", pgid)
		}
	}
}
