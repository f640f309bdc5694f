package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-binky/git-binky/api"
)

func (f *fixture) setSettings(s string) {
	f.t.Helper()
	if !strings.Contains(s, "[ports]") {
		s += f.ports // the fixture's own range, a table after the keys
	}
	if err := os.WriteFile(filepath.Join(f.home, "settings.toml"), []byte(s), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// running counts the worlds with a healthy service.
func (f *fixture) running() map[string]bool {
	out := map[string]bool{}
	for _, w := range f.status().Worlds {
		if len(w.Services) > 0 && w.Services[0].State == "healthy" {
			out[w.Worktree] = true
		}
	}
	return out
}

// startUp runs `git binky up name` in the background and returns the
// command, and a channel that gets the first line mentioning "queued".
func (f *fixture) startUp(name string) (*exec.Cmd, <-chan string) {
	f.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "git-binky"), "up", name)
	cmd.Dir = f.repo
	cmd.Env = append(os.Environ(), f.env()...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	queued := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "queued") {
				select {
				case queued <- sc.Text():
				default:
				}
			}
		}
		close(queued) // the up ended: awaitQueued fails rather than hangs
	}()
	return cmd, queued
}

// awaitQueued waits for an up startUp started to say it is queued: a
// failure, not a hang of the whole run, when it never does.
func (f *fixture) awaitQueued(q <-chan string) string {
	f.t.Helper()
	select {
	case line, ok := <-q:
		if !ok {
			f.t.Fatal("the up ended without being queued")
		}
		return line
	case <-time.After(60 * time.Second):
		f.t.Fatal("the up was not queued within 60 s")
	}
	return ""
}

func TestMaxParallelQueuesInOrder(t *testing.T) {
	f := newFixture(t, oneService)
	f.setSettings(fmtSettings(f.proxyPort, "max_parallel = 2\n"))
	for _, n := range []string{"a", "b", "c", "d"} {
		f.mustGit(f.repo, "worktree", "add", "-q", "../"+n, "-b", n)
	}
	f.mustBinky(f.repo, "up", "a")
	f.mustBinky(f.repo, "up", "b")
	c, cq := f.startUp("c")
	line := f.awaitQueued(cq)
	if !strings.Contains(line, "queued: c (position 1 of 1) — waiting for a slot (2 running, max_parallel 2)") {
		t.Errorf("c was told %q", line)
	}
	d, dq := f.startUp("d")
	if line := <-dq; !strings.Contains(line, "queued: d (position 2 of 2)") {
		t.Errorf("d was told %q", line)
	}
	// status lists the waiting worlds too, though they have no record yet.
	if w, ok := f.find("d"); !ok || w.State != "queued" || !strings.Contains(w.Message, "position 2 of 2") {
		t.Errorf("status while d waits: %+v (listed: %v)", w, ok)
	}
	if out := f.mustBinky(f.repo, "status"); !strings.Contains(out, "c  [queued]") {
		t.Errorf("status while c waits:\n%s", out)
	}
	if r := f.running(); len(r) != 2 || !r["a"] || !r["b"] {
		t.Fatalf("running while c and d wait: %v", r)
	}
	f.mustBinky(f.repo, "down", "a")
	if err := c.Wait(); err != nil {
		t.Fatalf("up c: %v", err)
	}
	if r := f.running(); len(r) != 2 || !r["c"] || r["d"] {
		t.Fatalf("after a went down: %v, want b and c (d still waits)", r)
	}
	f.mustBinky(f.repo, "down", "b")
	if err := d.Wait(); err != nil {
		t.Fatalf("up d: %v", err)
	}
	if r := f.running(); len(r) != 2 || !r["c"] || !r["d"] {
		t.Fatalf("after b went down: %v", r)
	}
}

// oneAtATime is a fixture of cfg with worktrees a and b, where one world
// runs at a time (max_parallel 1).
func oneAtATime(t *testing.T, cfg string) *fixture {
	f := newFixture(t, cfg)
	f.setSettings(fmtSettings(f.proxyPort, "max_parallel = 1\n"))
	for _, n := range []string{"a", "b"} {
		f.mustGit(f.repo, "worktree", "add", "-q", "../"+n, "-b", n)
	}
	return f
}

// A stopped world's up that waits for its turn shows in status as queued,
// not as the stopped world its record still describes.
func TestStatusSaysAStoppedWorldsUpIsQueued(t *testing.T) {
	f := oneAtATime(t, oneService)
	f.mustBinky(f.repo, "up", "b")
	f.mustBinky(f.repo, "down", "b")
	f.mustBinky(f.repo, "up", "a")
	b, bq := f.startUp("b")
	f.awaitQueued(bq)
	if w, ok := f.find("b"); !ok || w.State != "queued" || !strings.Contains(w.Message, "position 1 of 1") {
		t.Errorf("status while b waits: %+v (listed: %v)", w, ok)
	}
	f.mustBinky(f.repo, "down", "a")
	if err := b.Wait(); err != nil {
		t.Fatalf("up b: %v", err)
	}
	if w, _ := f.find("b"); w.State != "running" {
		t.Errorf("b after its turn: %s (%s)", w.State, w.Message)
	}
}

// An up of another group that restarts a running world (its caller's
// environment differs) keeps the world's place among the running ones: it
// restarts at once, not behind the world queued meanwhile (it gave its
// place to that one, and waited, its world down, until that one stopped).
func TestARestartingUpKeepsItsWorldsPlace(t *testing.T) {
	f := oneAtATime(t, webAndJobs)
	f.mustBinky(f.repo, "up", "a")
	b, bq := f.startUp("b")
	f.awaitQueued(bq)
	a := exec.Command(filepath.Join(binDir, "git-binky"), "up", "a", "--group", "jobs")
	a.Dir, a.Env = f.repo, append(append(os.Environ(), f.env()...), "FOO=1")
	done := make(chan error, 1)
	go func() { done <- a.Run() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("up a --group jobs: %v", err)
		}
	case <-time.After(30 * time.Second):
		a.Process.Kill()
		t.Fatal("the restarting up waited behind the queued world")
	}
	if w, _ := f.find("a"); w.State != "running" || service(w, "worker").PID == 0 {
		t.Errorf("a after its restart: %+v", w)
	}
	if w, _ := f.find("b"); w.State != "queued" {
		t.Errorf("b while a runs: %s", w.State)
	}
	f.mustBinky(f.repo, "down", "a")
	if err := b.Wait(); err != nil {
		t.Fatalf("up b once a went down: %v", err)
	}
	f.mustBinky(f.repo, "down", "b")
}

func fmtSettings(proxyPort int, extra string) string {
	return "proxy_port = " + itoa(proxyPort) + "\n" + extra
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestCancelledQueuedUpLeavesNothingBehind(t *testing.T) {
	f := newFixture(t, oneService)
	f.setSettings(fmtSettings(f.proxyPort, "max_parallel = 1\n"))
	f.mustGit(f.repo, "worktree", "add", "-q", "../b", "-b", "b")
	f.mustBinky(f.repo, "up")
	up, queued := f.startUp("b")
	f.awaitQueued(queued)
	up.Process.Signal(syscall.SIGINT)
	up.Wait()
	var m api.Metrics
	f.eventually("queue empty", func() bool {
		json.Unmarshal([]byte(f.mustBinky(f.repo, "metrics")), &m)
		return m.QueueLength == 0
	})
	if _, ok := f.find("b"); ok {
		t.Error("the cancelled world left a record")
	}
	if m.PortsLeased != 1 {
		t.Errorf("%d ports leased, want only the running world's one", m.PortsLeased)
	}
}

func TestSuspendedWorldResumesWhenRAMReturns(t *testing.T) {
	f := newFixture(t, oneService)
	setMem := f.fakeMemory()
	f.mustGit(f.repo, "worktree", "add", "-q", "../b", "-b", "b")
	f.mustBinky(f.repo, "up")
	f.mustBinky(f.repo, "up", "b")
	pid := service(f.world("b"), "api").PID
	setMem(1000000) // 1 GB free, 2.4 GB (10%) kept in reserve: pressure
	f.eventually("b suspended", func() bool {
		w, _ := f.find("b")
		return w.State == "suspended" && procState(pid) == 'T'
	})
	if w, _ := f.find("acme"); w.State == "suspended" {
		t.Error("the oldest world was suspended, not the newest")
	}
	setMem(20000000)
	f.eventually("b resumed", func() bool {
		w, _ := f.find("b")
		return w.State == "running" && procState(pid) != 'T'
	})
	if code, _, err := f.viaProxy("api.b.acme.localhost", "/"); err != nil || code != 200 {
		t.Errorf("resumed world does not answer: %d %v", code, err)
	}
}

// fakeMemory has the daemon read memory from a meminfo file the test
// controls (real pressure would mean filling this machine's RAM), 20 GB
// available of 24, and returns what sets the available figure.
func (f *fixture) fakeMemory() (setAvailKB func(int)) {
	meminfo := filepath.Join(f.tmp, "meminfo")
	set := func(availKB int) {
		os.WriteFile(meminfo, []byte("MemTotal:       24000000 kB\nMemFree:        1000 kB\nMemAvailable:   "+itoa(availKB)+" kB\n"), 0o644)
	}
	set(20000000)
	f.extraEnv = []string{"BINKY_MEMINFO=" + meminfo}
	return set
}

func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// An up that waited for its turn while its worktree was removed starts
// nothing when its turn comes: no record, no slices, no processes in a
// folder that is gone.
func TestAQueuedUpWhoseWorktreeIsRemovedStartsNothing(t *testing.T) {
	f := newFixture(t, oneService)
	f.setSettings(fmtSettings(f.proxyPort, "max_parallel = 1\n"))
	f.mustGit(f.repo, "worktree", "add", "-q", "../z", "-b", "z")
	f.mustBinky(f.repo, "up")
	z, zq := f.startUp("z")
	<-zq
	f.mustGit(f.repo, "worktree", "remove", "--force", "../z")
	f.mustBinky(f.repo, "down")
	if err := z.Wait(); err == nil {
		t.Fatal("the up of a removed worktree succeeded")
	}
	log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
	if !strings.Contains(string(log), "its worktree was removed while it waited") {
		t.Errorf("the queued up went on after its worktree was removed; daemon log:\n%s", log)
	}
	if _, ok := f.find("z"); ok {
		t.Error("a world was made for a worktree removed while its up waited")
	}
}

// Attack: a down or a remove of a world whose up waited in the queue
// waited behind that up until a place freed (ten minutes), then stopped
// what it had just started. They take it out of the queue.
func TestDownAndRemoveTakeAQueuedUpOutOfTheQueue(t *testing.T) {
	f := newFixture(t, oneService)
	f.setSettings(fmtSettings(f.proxyPort, "max_parallel = 1\n"))
	for _, n := range []string{"a", "b", "c"} {
		f.mustGit(f.repo, "-c", "core.hooksPath=/nonexistent", "worktree", "add", "-q", "../"+n, "-b", n)
	}
	f.mustBinky(f.repo, "up", "a")
	for _, tc := range []struct{ name, cmd string }{{"b", "down"}, {"c", "remove"}} {
		up, queued := f.startUp(tc.name)
		f.awaitQueued(queued)
		done := make(chan error, 1)
		go func() { _, _, err := f.binky(f.repo, tc.cmd, tc.name); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s of queued %s: %v", tc.cmd, tc.name, err)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("%s of queued %s waited for the queue", tc.cmd, tc.name)
		}
		if err := up.Wait(); err == nil {
			t.Errorf("the up of %s, taken out of the queue, succeeded", tc.name)
		}
		if w, ok := f.find(tc.name); ok && len(w.Services) > 0 && w.Services[0].PID != 0 && pidAlive(w.Services[0].PID) {
			t.Errorf("%s runs after its %s: %+v", tc.name, tc.cmd, w)
		}
	}
}

// Attack: the queued up of a worktree removed while it waited stood first
// in the queue until a place freed; the watcher ends it.
func TestAQueuedUpOfARemovedWorktreeLeavesTheQueue(t *testing.T) {
	f := newFixture(t, oneService)
	f.setSettings(fmtSettings(f.proxyPort, "max_parallel = 1\n"))
	f.mustBinky(f.repo, "install")
	for _, n := range []string{"a", "q"} {
		f.mustGit(f.repo, "-c", "core.hooksPath=/nonexistent", "worktree", "add", "-q", "../"+n, "-b", n)
	}
	f.mustBinky(f.repo, "up", "a")
	up, queued := f.startUp("q")
	f.awaitQueued(queued)
	f.mustGit(f.repo, "-c", "core.hooksPath=/nonexistent", "worktree", "remove", "--force", "../q")
	done := make(chan error, 1)
	go func() { done <- up.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("the up of a removed worktree succeeded")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the up of a removed worktree still waits in the queue")
	}
	if w, ok := f.find("q"); ok {
		t.Errorf("status still lists q: %+v", w)
	}
}

// upWithoutWaiting ups world name, and fails the test if it is still
// waiting after 20 s, for what (a place in admission someone holds).
func (f *fixture) upWithoutWaiting(name, what string) {
	f.t.Helper()
	done := make(chan error, 1)
	go func() { _, _, err := f.binky(f.repo, "up", name); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			f.t.Fatalf("up %s: %v", name, err)
		}
	case <-time.After(20 * time.Second):
		f.t.Fatalf("up %s waited for %s", name, what)
	}
}

// A world that runs no process (slices alone, or oneshots that are done)
// holds no place: eight of them kept every place and the next up waited.
func TestAWorldThatRunsNoProcessHoldsNoPlace(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.seed]
cmd = "true"
oneshot = true
`)
	f.setSettings(fmtSettings(f.proxyPort, "max_parallel = 1\n"))
	for _, n := range []string{"a", "b"} {
		f.mustGit(f.repo, "worktree", "add", "-q", "../"+n, "-b", n)
	}
	f.mustBinky(f.repo, "up", "a")
	f.upWithoutWaiting("b", "a place that a, running nothing, held")
	if w := f.world("b"); w.State != "running" {
		t.Errorf("b: %q %q", w.State, w.Message)
	}
}

// A failed world whose oneshot finished is not adopted by the next daemon
// as if it ran: it took the only place for good (every other up waited),
// as a group of its oneshot alone.
func TestAFailedWorldWithADoneOneshotTakesNoPlaceAfterARestart(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.migrate]
cmd = "true"
oneshot = true
[services.api]
cmd = "test ${worktree.name} = b && exec testsvc || exit 3"
url = "api"
env = { SERVICE = "api" }
depends_on = ["migrate"]
`)
	f.setSettings(fmtSettings(f.proxyPort, "max_parallel = 1\n"))
	for _, n := range []string{"a", "b"} {
		f.mustGit(f.repo, "worktree", "add", "-q", "../"+n, "-b", n)
	}
	if _, _, err := f.binky(f.repo, "up", "a"); err == nil {
		t.Fatal("up a succeeded; its api exits 3")
	}
	f.mustBinky(f.repo, "daemon", "stop")
	f.upWithoutWaiting("b", "the place the failed world a took at adoption")
	t.Cleanup(func() { f.binky(f.repo, "down", "b") })
	if w := f.world("a"); w.State != "failed" {
		t.Errorf("a after the restart: %q %q", w.State, w.Message)
	}
	// Nor is it half adopted, its oneshot alone: restart said it ran no api.
	a := filepath.Join(filepath.Dir(f.repo), "a")
	if _, stderr, _ := f.binky(a, "service", "restart", "api"); !strings.Contains(stderr, "is not running") {
		t.Errorf("service restart api in the failed world:\n%s", stderr)
	}
}

// An untrusted world (its binky.toml edited, not approved; its services
// run the approved one) came back from a memory suspension as running,
// the reason to approve it lost; one approved while suspended must come
// back running.
func TestASuspendedUntrustedWorldResumesUntrustedUnlessApprovedMeanwhile(t *testing.T) {
	f := newFixture(t, oneService)
	setMem := f.fakeMemory()
	// A branch whose binky.toml nobody approved, checked out in b: the
	// checkout's reason, which no later look at the file repairs.
	f.mustGit(f.repo, "checkout", "-q", "-b", "b2")
	src, _ := os.ReadFile(filepath.Join(f.repo, "binky.toml"))
	os.WriteFile(filepath.Join(f.repo, "binky.toml"), append(src, "# changed on b2, not approved\n"...), 0o644)
	f.mustGit(f.repo, "commit", "-qam", "b2")
	f.mustGit(f.repo, "checkout", "-q", "main")
	f.mustGit(f.repo, "worktree", "add", "-q", "../b", "-b", "b")
	b := filepath.Join(filepath.Dir(f.repo), "b")
	f.mustBinky(f.repo, "up")
	f.mustBinky(b, "up") // the newest world: the one suspended
	f.mustBinky(f.repo, "install")
	f.mustGit(b, "checkout", "-q", "b2")
	state := func(want string) func() bool {
		return func() bool { w, _ := f.find("b"); return string(w.State) == want }
	}
	f.eventually("b untrusted", state("untrusted"))
	w, _ := f.find("b")
	reason := w.Message

	setMem(1000000)
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
			t.Logf("daemon.log:\n%s", b)
		}
	})
	f.eventually("b suspended", state("suspended"))
	setMem(20000000)
	f.eventually("b resumed, untrusted still", state("untrusted"))
	if w, _ := f.find("b"); w.Message != reason {
		t.Errorf("resumed with the reason %q, want the one it had: %q", w.Message, reason)
	}

	setMem(1000000)
	f.eventually("b suspended again", state("suspended"))
	f.mustBinky(b, "up") // approves the edited file
	setMem(20000000)
	f.eventually("b resumed, running: approved meanwhile", state("running"))
}

// A reload of a running world at max_parallel keeps the world's place:
// its down gave the place to the world queued behind it, and the reload
// then waited in the queue, the world down, until that one stopped. A
// reload refused after its down gives the place back.
func TestAReloadAtMaxParallelKeepsItsWorldsPlace(t *testing.T) {
	f := newFixture(t, oneService)
	f.setSettings(fmtSettings(f.proxyPort, "max_parallel = 1\n"))
	f.mustGit(f.repo, "worktree", "add", "-q", "../b", "-b", "b")
	f.mustBinky(f.repo, "up")
	up, queued := f.startUp("b")
	f.awaitQueued(queued)
	done := make(chan error, 1)
	go func() {
		_, stderr, err := f.binky(f.repo, "reload")
		if err != nil {
			err = fmt.Errorf("%w: %s", err, stderr)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("reload: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the reload waited behind the queued world")
	}
	if w := f.world("acme"); w.State != "running" {
		t.Errorf("after the reload: %s", w.State)
	}
	if w, _ := f.find("b"); w.State == "running" {
		t.Error("the queued world took the reloaded world's place")
	}
	// A reload that fails once its down ran (its service no longer
	// starts) gives the place to the queue.
	broken := strings.Replace(oneService, `cmd = "testsvc"`, `cmd = "exit 3"`+"\nrestart = \"no\"", 1)
	if err := os.WriteFile(filepath.Join(f.repo, "binky.toml"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := f.binky(f.repo, "reload"); err == nil {
		t.Fatalf("a reload whose service exits 3 succeeded:\n%s", stderr)
	}
	if err := up.Wait(); err != nil {
		t.Errorf("the queued world, once the place was given back: %v", err)
	}
	if w, _ := f.find("b"); w.State != "running" {
		t.Errorf("b after the failed reload: %s", w.State)
	}
}
