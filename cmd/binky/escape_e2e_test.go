//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A service's child that left its process group (setsid, a double-forked
// daemon) outlived down and remove, kept the world's port and answered
// the health check of the next instance: stopping a service stops what
// carries its mark.
func TestAServicesChildInASessionOfItsOwnStopsWithIt(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.api]
cmd = "setsid sleep 300 & echo $! >> ${env.GC_DIR}/escaped; exec testsvc"
url = "api"
env = { SERVICE = "api" }
`)
	escaped := func() []int {
		b, _ := os.ReadFile(filepath.Join(f.gcDir, "escaped"))
		var pids []int
		for _, s := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(s); err == nil {
				pids = append(pids, pid)
				t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			}
		}
		return pids
	}
	f.mustBinky(f.repo, "up", "feat")
	first := escaped()
	if len(first) != 1 || !pidAlive(first[0]) {
		t.Fatalf("the service's escaped child: %v", first)
	}
	f.mustBinky(f.repo, "down", "feat")
	f.eventually("the escaped child stopped by down", func() bool { return !pidAlive(first[0]) })

	// A restart stops the old instance's escapee before the new one starts.
	f.mustBinky(f.repo, "up", "feat")
	f.mustBinky(f.repo, "service", "restart", "api", "feat")
	pids := escaped()
	if len(pids) != 3 {
		t.Fatalf("escaped children %v: want one per start (3)", pids)
	}
	f.eventually("the restarted instance's escapee stopped", func() bool { return !pidAlive(pids[1]) })
	if !pidAlive(pids[2]) {
		t.Fatalf("the running instance's child %d is gone", pids[2])
	}
	f.mustBinky(f.repo, "remove", "--force", "feat")
	f.eventually("the escaped child stopped by remove", func() bool { return !pidAlive(pids[2]) })
}

// A child that also cleared its environment (env -i) or wrote its title
// over it (perl's $0, as redis-server, nginx and postgres do) showed no
// mark, and outlived down holding what it held: it carries the mark's
// descriptor too.
func TestAServicesChildWithNoEnvironmentOrANewTitleStopsWithIt(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is not installed (PATH has none)")
	}
	f := newFixture(t, `[project]
name = "acme"
[services.api]
cmd = "setsid env -i sleep 300 </dev/null >/dev/null 2>&1 & echo $! >> ${env.GC_DIR}/escaped; setsid perl -e '$0 = q(worker); sleep 300' </dev/null >/dev/null 2>&1 & echo $! >> ${env.GC_DIR}/escaped; exec testsvc"
url = "api"
env = { SERVICE = "api" }
`)
	f.mustBinky(f.repo, "up", "feat")
	b, _ := os.ReadFile(filepath.Join(f.gcDir, "escaped"))
	pids := strings.Fields(string(b))
	if len(pids) != 2 {
		t.Fatalf("escaped children %q: want two", pids)
	}
	for _, s := range pids {
		pid, _ := strconv.Atoi(s)
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		f.eventually("the escaped child "+s+" shows no mark", func() bool {
			env, err := os.ReadFile("/proc/" + s + "/environ")
			return err == nil && !strings.Contains(string(env), "BINKY_MARK=")
		})
	}
	f.mustBinky(f.repo, "down", "feat")
	for _, s := range pids {
		pid, _ := strconv.Atoi(s)
		f.eventually("the escaped child "+s+" stopped by down", func() bool { return !pidAlive(pid) })
	}
}

// A service that died while no daemon watched left its escaped child
// running, holding what it held (its port, against the next up): the
// daemon that finds it dead stops what carries its mark, as one watching
// would have when it died.
func TestWhatADeadServiceLeftIsStoppedByTheNextDaemon(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.api]
cmd = "setsid env -i sleep 300 </dev/null >/dev/null 2>&1 & echo $! >> ${env.GC_DIR}/escaped; exec testsvc"
url = "api"
env = { SERVICE = "api" }
`)
	f.mustBinky(f.repo, "up", "feat")
	b, _ := os.ReadFile(filepath.Join(f.gcDir, "escaped"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 || !pidAlive(pid) {
		t.Fatalf("the escaped child: %q", b)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	main := service(f.world("feat"), "api").PID
	f.killDaemon()
	if err := signalPID(main, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	f.eventually("the service gone", func() bool { return !pidAlive(main) })
	f.status() // a new daemon finds it dead
	f.eventually("the dead service's escaped child stopped", func() bool { return !pidAlive(pid) })
}

// The kernel ends only a step's shell with its daemon: what the shell had
// started (a migration tool run by make, a child in a session of its own)
// lived on and wrote into the database the next daemon made again. The
// next daemon kills whatever carries the step's mark.
func TestWhatAStepOfAKilledDaemonStartedIsKilledByTheNextDaemon(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.db]
adapter = "postgres"
migrate = "sleep 300 & echo $! > ${env.GC_DIR}/pids; setsid sleep 301 & echo $! >> ${env.GC_DIR}/pids; touch ${env.GC_DIR}/started; wait"
`)
	f.upUntilItsMigrateStarts()
	b, err := os.ReadFile(filepath.Join(f.gcDir, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, field := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(field)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
		defer syscall.Kill(pid, syscall.SIGKILL)
	}
	f.killDaemon()
	time.Sleep(300 * time.Millisecond)
	for _, pid := range pids {
		if !pidAlive(pid) {
			t.Fatalf("pid %d died with the daemon: this test no longer shows what it should", pid)
		}
	}
	f.mustBinky(f.repo, "status")
	for _, pid := range pids {
		f.eventually(fmt.Sprintf("the step's child %d killed", pid), func() bool { return !pidAlive(pid) })
	}
}

// A world's id is its worktree's: a stale world one home kept for a
// worktree removed and added again, and another home's live world of the
// new worktree, shared a mark, and the stale world's teardown killed the
// live world's service. The mark is the home's too.
func TestAStaleWorldsTeardownSparesAnotherHomesLiveService(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "install")
	f.mustBinky(f.repo, "up", "feat")
	f.mustBinky(f.repo, "daemon", "stop")
	wt := filepath.Join(filepath.Dir(f.repo), "feat")
	f.mustGit(f.repo, "-c", "core.hooksPath=/nonexistent", "worktree", "remove", "--force", wt)
	f.mustGit(f.repo, "-c", "core.hooksPath=/nonexistent", "worktree", "add", "-q", wt, "-b", "feat-new")

	other := f.otherHome()
	f.extraEnv = []string{"BINKY_HOME=" + other}
	f.mustBinky(f.repo, "up", "feat")
	live := f.world("feat")
	pid := live.Services[0].PID

	// This home's daemon starts, finds its world's worktree replaced and
	// tears the stale world down.
	f.extraEnv = nil
	f.mustBinky(f.repo, "status")
	time.Sleep(2 * time.Second)
	if !pidAlive(pid) {
		t.Fatalf("the other home's live service (pid %d) was killed by this home's teardown of its stale world", pid)
	}
	f.extraEnv = []string{"BINKY_HOME=" + other}
	if w := f.world("feat"); w.Services[0].PID != pid || w.Services[0].Restarts != 0 {
		t.Errorf("the other home's service: pid %d restarts %d, want pid %d untouched", w.Services[0].PID, w.Services[0].Restarts, pid)
	}
}

// A worktree deleted by hand whose world another home runs: this home's
// remove neither removes git's entry for it nor says to run remove; it
// names the home that owns it.
func TestRemovingAnotherHomesDeletedWorktreeNamesItsOwner(t *testing.T) {
	f := newFixture(t, oneService)
	other := f.otherHome()
	f.extraEnv = []string{"BINKY_HOME=" + other}
	f.mustBinky(f.repo, "up", "theirs")
	wt := filepath.Join(filepath.Dir(f.repo), "theirs")
	if err := os.RemoveAll(wt); err != nil {
		t.Fatal(err)
	}
	f.extraEnv = nil
	_, stderr, err := f.binky(f.repo, "remove", "theirs")
	if err == nil || !strings.Contains(stderr, other) {
		t.Errorf("remove of another home's world: err %v, stderr %q; want a refusal naming %s", err, stderr, other)
	}
	if out := f.mustGit(f.repo, "worktree", "list"); !strings.Contains(out, wt) {
		t.Errorf("this home removed git's entry for another home's worktree:\n%s", out)
	}
	f.extraEnv = []string{"BINKY_HOME=" + other}
	f.mustBinky(f.repo, "remove", "theirs")
}
