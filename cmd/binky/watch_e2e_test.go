package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-binky/git-binky/api"
)

const oneService = `[project]
name = "acme"
[services.api]
cmd = "testsvc"
url = "api"
env = { SERVICE = "api" }
`

// git runs git in dir with the fixture's environment (so the hook finds
// git-binky and BINKY_HOME) and returns its combined output.
func (f *fixture) git(dir string, args ...string) (string, error) {
	f.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), f.env()...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (f *fixture) mustGit(dir string, args ...string) string {
	f.t.Helper()
	out, err := f.git(dir, args...)
	if err != nil {
		f.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// find returns the world of worktree name, if status lists it.
func (f *fixture) find(name string) (api.World, bool) {
	for _, w := range f.status().Worlds {
		if w.Worktree == name {
			return w, true
		}
	}
	return api.World{}, false
}

func (f *fixture) waitHealthy(name string) api.World {
	f.t.Helper()
	var w api.World
	f.eventually(name+" healthy", func() bool {
		var ok bool
		w, ok = f.find(name)
		return ok && len(w.Services) > 0 && w.Services[0].State == "healthy"
	})
	return w
}

func (f *fixture) waitGone(w api.World) {
	f.t.Helper()
	f.eventually(w.Worktree+" torn down", func() bool {
		_, ok := f.find(w.Worktree)
		return !ok
	})
	for _, s := range w.Services {
		if pidAlive(s.PID) {
			f.t.Errorf("%s/%s (pid %d) survived its worktree", w.Worktree, s.Name, s.PID)
		}
	}
	for _, p := range w.Ports {
		if _, err := os.Stat(filepath.Join(f.home, "ports", strconv.Itoa(p))); !os.IsNotExist(err) {
			f.t.Errorf("port %d still leased", p)
		}
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			c.Close()
			f.t.Errorf("port %d still listening", p)
		}
	}
	if _, err := os.Stat(filepath.Join(f.home, "worlds", w.ID+".json")); !os.IsNotExist(err) {
		f.t.Errorf("record of %s still there", w.Worktree)
	}
}

func TestWorktreeAddBringsAWorldUpAndRemoveTearsItDown(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "install")
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat")
	w := f.waitHealthy("feat")
	f.mustGit(f.repo, "worktree", "remove", "../feat")
	f.waitGone(w)
}

func TestRemovalWhileTheDaemonIsDownIsReconciledOnStart(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "install")
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat")
	w := f.waitHealthy("feat")
	f.mustBinky(f.repo, "daemon", "stop")
	f.mustGit(f.repo, "worktree", "remove", "../feat")
	if !pidAlive(w.Services[0].PID) {
		t.Fatal("service died with the daemon")
	}
	f.mustBinky(f.repo, "daemon", "start")
	f.waitGone(w)
}

// A worktree removed and added again under its name while no daemon ran
// is a new worktree: the daemon that starts must not adopt the old world
// for it (its processes ran in the deleted folder, its database had the
// old branch's rows), but tear that down and give the new one its own.
func TestAWorktreeRemovedAndAddedAgainWhileTheDaemonIsDownGetsAWorldOfItsOwn(t *testing.T) {
	// A health check: the adopting daemon saves the world's record as it
	// checks, which must not make the old world the new folder's.
	f := newFixture(t, oneService+"health = { http = \"/healthz\", interval = \"100ms\" }\n")
	f.mustBinky(f.repo, "install")
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat")
	old := f.waitHealthy("feat")
	f.mustBinky(f.repo, "daemon", "stop")
	f.mustGit(f.repo, "worktree", "remove", "../feat")
	// The hook of this add starts a daemon, which adopts what the last
	// one left running.
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat-new")
	f.eventually("the old world's service gone", func() bool { return !pidAlive(old.Services[0].PID) })
	w := f.waitHealthy("feat")
	if w.Services[0].PID == old.Services[0].PID {
		t.Fatalf("the new worktree runs the old world's process %d", w.Services[0].PID)
	}
	if w.Branch != "feat-new" {
		t.Errorf("the new world's branch is %q, want feat-new", w.Branch)
	}
}

// Attack: with this home's daemon down, a worktree removed and added again
// under its name handed the old world to env (its database, its rows);
// and once another home had claimed the new worktree, this home's up
// adopted the old world's processes for it and its remove deleted the
// worktree under the owner. The old world is not the new worktree's.
func TestAStaleWorldOfAReusedNameIsNeverTheNewWorktrees(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "install")
	f.mustBinky(f.repo, "up", "feat")
	old := f.world("feat")
	f.mustBinky(f.repo, "daemon", "stop")
	f.mustGit(f.repo, "-c", "core.hooksPath=/dev/null", "worktree", "remove", "--force", "../feat")
	f.mustGit(f.repo, "-c", "core.hooksPath=/dev/null", "worktree", "add", "-q", "../feat", "-b", "feat-new")
	wt := filepath.Join(f.tmp, "feat")
	if out, _, err := f.binky(wt, "env"); err == nil && strings.Contains(out, fmt.Sprint(old.Ports["api"])) {
		t.Errorf("env in the new worktree gives the old world's coordinates:\n%s", out)
	}

	other := f.otherHome()
	f.extraEnv = []string{"BINKY_HOME=" + other}
	f.mustBinky(f.repo, "up", "feat")
	f.extraEnv = nil

	if _, stderr, err := f.binky(f.repo, "up", "feat"); err == nil || !strings.Contains(stderr, "is run by BINKY_HOME="+other) {
		t.Errorf("this home's up of a worktree the other home claimed: err=%v\n%s", err, stderr)
	}
	if _, _, err := f.binky(f.repo, "remove", "feat", "--force"); err == nil {
		t.Error("this home removed the worktree the other home runs")
	}
	if _, err := os.Stat(wt); err != nil {
		t.Errorf("the worktree is gone: %v", err)
	}
	f.eventually("the old world's process gone", func() bool { return !pidAlive(old.Services[0].PID) })
}

func TestTwoWorktreesAddedInParallel(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "install")
	var wg sync.WaitGroup
	for _, n := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := f.git(f.repo, "worktree", "add", "-q", "../"+n, "-b", n)
			if err != nil && strings.Contains(out, "failed to read") {
				// git's own race (2.39): one add reads the other's
				// admin folder before that one is written. Once more,
				// as a person would.
				out, err = f.git(f.repo, "worktree", "add", "-q", "../"+n, "-B", n)
			}
			if err != nil {
				t.Errorf("worktree add %s: %v %s", n, err, out)
			}
		}()
	}
	wg.Wait()
	a, b := f.waitHealthy("a"), f.waitHealthy("b")
	if a.Services[0].Port == b.Services[0].Port {
		t.Error("both worlds got the same port")
	}
}

// An up racing the `git worktree add` of its name found the worktree
// before git had checked its files out, and refused it as one made with
// --no-checkout. It waits for the checkout of a worktree so fresh.
func TestAnUpRacingTheWorktreeAddOfItsNameWaitsForTheCheckout(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "install")
	for i := range 8 {
		name := fmt.Sprintf("race%d", i)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.git(f.repo, "worktree", "add", "-q", "../"+name, "-b", name)
		}()
		_, stderr, err := f.binky(f.repo, "up", name)
		wg.Wait()
		if err != nil && strings.Contains(stderr, "no files checked out") {
			t.Fatalf("up %s racing its worktree add: %s", name, stderr)
		}
	}
}

// A worktree folder not named in UTF-8 got a world from the hook and the
// watcher that no command in the folder could reach (paths travel as
// JSON). Neither starts one; the hook says why, and git's add succeeds.
func TestAWorktreeNotNamedInUTF8GetsNoWorldItCannotManage(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "install")
	out, err := f.git(f.repo, "worktree", "add", "../bad\xffname", "-b", "bad")
	if err != nil {
		t.Fatalf("git worktree add failed: %v\n%s", err, out)
	}
	if !strings.Contains(out, "not named in UTF-8") {
		t.Errorf("the hook did not say why no world starts:\n%s", out)
	}
	time.Sleep(2 * time.Second) // the watcher's look
	if s := f.status(); len(s.Worlds) != 0 {
		t.Errorf("a world was started for it: %+v", s.Worlds)
	}
}

func TestNoCheckoutWorktreeIsProvisionedNotStarted(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "install")
	f.mustGit(f.repo, "worktree", "add", "-q", "--no-checkout", "../bare-feat", "-b", "bare-feat")
	var w api.World
	f.eventually("bare-feat provisioned", func() bool {
		var ok bool
		w, ok = f.find("bare-feat")
		return ok && w.State == "provisioned"
	})
	if w.Ports["api"] == 0 || len(w.Services) != 0 {
		t.Errorf("world %+v: want ports and no process", w)
	}
}

func TestMovedWorktreeIsFollowedAndRestartedThere(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "install")
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat")
	before := f.waitHealthy("feat")
	f.mustGit(f.repo, "worktree", "move", "../feat", "../moved")
	moved := filepath.Join(f.tmp, "moved")
	var after api.World
	f.eventually("record follows the move", func() bool {
		var ok bool
		after, ok = f.find("feat")
		return ok && after.Path == moved && len(after.Services) > 0 && after.Services[0].State == "healthy" &&
			after.Services[0].PID != before.Services[0].PID
	})
	if after.Ports["api"] != before.Ports["api"] {
		t.Errorf("port changed on move: %d -> %d", before.Ports["api"], after.Ports["api"])
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", after.Services[0].PID))
	if err != nil || cwd != moved {
		t.Errorf("restarted service runs in %q (%v), want %s", cwd, err, moved)
	}
}

// A moved worktree's world starts again at the new path with what it ran:
// the worker an up --group added too, not only the default group.
func TestAMovedWorktreeStartsAgainEveryGroupItRan(t *testing.T) {
	f := newFixture(t, grouped)
	f.mustBinky(f.repo, "install")
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat")
	f.waitHealthy("feat")
	f.mustBinky(filepath.Join(f.tmp, "feat"), "up", "--group", "jobs")
	before, _ := f.find("feat")
	f.mustGit(f.repo, "worktree", "move", "../feat", "../moved")
	moved := filepath.Join(f.tmp, "moved")
	f.eventually("api and worker started again at the new path", func() bool {
		w, ok := f.find("feat")
		return ok && w.Path == moved && service(w, "api").State == "healthy" && service(w, "api").PID != service(before, "api").PID &&
			service(w, "worker").State == "running" && service(w, "worker").PID != service(before, "worker").PID
	})
}

// reload_on_checkout restarts what the world ran, groups an up --group
// added included.
func TestReloadOnCheckoutStartsAgainEveryGroupItRan(t *testing.T) {
	f := newFixture(t, strings.Replace(grouped, "name = \"acme\"\n", "name = \"acme\"\nreload_on_checkout = true\n", 1))
	f.mustBinky(f.repo, "install")
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat")
	f.waitHealthy("feat")
	feat := filepath.Join(f.tmp, "feat")
	f.mustBinky(feat, "up", "--group", "jobs")
	before, _ := f.find("feat")
	f.mustGit(feat, "checkout", "-q", "-b", "feat2")
	f.eventually("api and worker started again after the checkout", func() bool {
		w, ok := f.find("feat")
		return ok && service(w, "api").State == "healthy" && service(w, "api").PID != service(before, "api").PID &&
			service(w, "worker").State == "running" && service(w, "worker").PID != service(before, "worker").PID
	})
}

// A worktree moved while its world was coming up: the up failed at the
// old path (the next service's folder was gone) and the move, seeing no
// running services, left the world failed. It comes up at the new path.
func TestAWorktreeMovedDuringItsUpComesUpWhereItWent(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.slow]
cmd = "while [ ! -e ${env.GC_DIR}/go ]; do sleep 0.1; done; exec testsvc"
url = "slow"
health = { http = "/healthz", interval = "100ms" }
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["slow"]
`)
	f.mustBinky(f.repo, "install")
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat")
	f.eventually("the up under way", func() bool {
		w, ok := f.find("feat")
		return ok && len(w.Services) > 0 && service(w, "slow").PID != 0
	})
	time.Sleep(time.Second) // the watcher's look at the new worktree, done
	// slow waits for $GC_DIR/go: the up cannot end before the move, however
	// loaded the machine (a 3 s sleep let it end first, and the test passed
	// without a move during an up).
	if w, _ := f.find("feat"); w.State == "running" {
		t.Fatalf("the world is up before its move: %+v", w)
	}
	f.mustGit(f.repo, "worktree", "move", "../feat", "../moved")
	if err := os.WriteFile(filepath.Join(f.gcDir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(f.tmp, "moved")
	f.eventually("the world up at the new path", func() bool {
		w, ok := f.find("feat")
		return ok && w.Path == moved && service(w, "api").State == "healthy" && service(w, "slow").State == "healthy"
	})
}

// Review: a world that failed long before its worktree moved was started
// again by the move, whatever [project] auto said. Only a failure the
// move caused (an up under way) brings it up at the new path.
func TestAWorldThatFailedBeforeItsMoveStaysDown(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.api]
cmd = "exit 3"
url = "api"
restart = "no"
`)
	f.mustBinky(f.repo, "install")
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat")
	f.eventually("the world failed", func() bool {
		w, ok := f.find("feat")
		return ok && w.State == "failed"
	})
	time.Sleep(50 * time.Millisecond) // the move's gitdir written after the failure's save
	f.mustGit(f.repo, "worktree", "move", "../feat", "../moved")
	moved := filepath.Join(f.tmp, "moved")
	f.eventually("the record follows the move", func() bool {
		w, ok := f.find("feat")
		return ok && w.Path == moved
	})
	time.Sleep(time.Second)
	log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
	if strings.Contains(string(log), `"restart":true`) {
		t.Errorf("the move restarted a world that had failed before it:\n%s", log)
	}
}

func TestAChangedConfigWaitsForTrust(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "install")
	f.commitOnBranch("changed", "binky.toml", oneService+"[services.worker]\ncmd = \"testsvc\"\nurl = \"worker\"\n")
	f.addWaitsForTrustThenStarts("changed")
}

// A branch whose binky.toml binky cannot use: the hook says what is wrong
// (file, line, column) rather than ask for an approval that would start
// nothing, and trust refuses it. trust said "its world is starting" and
// only the daemon's log said why nothing did.
func TestABrokenConfigIsSaidByTheHookAndRefusedByTrust(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "install")
	f.commitOnBranch("broken", "binky.toml", oneService+"[services.worker]\ncmd = \"testsvc\"\ndepend_on = [\"api\"]\n")
	out := f.mustGit(f.repo, "worktree", "add", "-q", "../broken", "broken")
	for _, want := range []string{"binky.toml:9:1", "depend_on", "cannot be used", "git binky check"} {
		if !strings.Contains(out, want) {
			t.Errorf("the hook does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "git binky trust") {
		t.Errorf("the hook asks for an approval that would start nothing:\n%s", out)
	}
	stdout, stderr, err := f.binky(filepath.Join(f.tmp, "broken"), "trust")
	if err == nil || !strings.Contains(stderr, "not trusted") || !strings.Contains(stderr, "binky.toml:9:1") || strings.Contains(stdout, "starting") {
		t.Errorf("trust of a broken binky.toml: %v\n%s%s", err, stdout, stderr)
	}
	if _, _, err := f.binky(f.repo, "trust", "/etc/passwd"); err == nil {
		t.Error("trust approved /etc/passwd")
	}
}

// Moving an unapproved worktree records its new place, and still gives it
// no port (a review took the whole range by moving eight of them).
func TestAMovedUnapprovedWorktreeHoldsNoPorts(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "install")
	f.commitOnBranch("changed", "binky.toml", oneService+"[services.worker]\ncmd = \"testsvc\"\nurl = \"worker\"\n")
	f.mustGit(f.repo, "worktree", "add", "-q", "../changed", "changed")
	f.eventually("changed waits for trust", func() bool {
		w, ok := f.find("changed")
		return ok && w.State == "untrusted"
	})
	f.mustGit(f.repo, "worktree", "move", "../changed", "../moved")
	f.eventually("the record follows the move", func() bool {
		w, ok := f.find("changed")
		return ok && filepath.Base(w.Path) == "moved"
	})
	if w, _ := f.find("changed"); len(w.Ports) != 0 || len(w.Services) != 0 {
		t.Errorf("a moved unapproved world holds ports %v, services %v", w.Ports, w.Services)
	}
}

// commitOnBranch commits file with content on a new branch made from
// main, and checks main out again.
func (f *fixture) commitOnBranch(branch, file, content string) {
	f.t.Helper()
	f.mustGit(f.repo, "checkout", "-q", "-b", branch)
	if err := os.WriteFile(filepath.Join(f.repo, file), []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	f.mustGit(f.repo, "add", file)
	f.mustGit(f.repo, "commit", "-qm", "change "+file)
	f.mustGit(f.repo, "checkout", "-q", "main")
}

// addWaitsForTrustThenStarts adds a worktree of branch (whose binky.toml
// or env files no one approved): the hook says how to approve, the world
// waits, untrusted, with no service and no port, until 'git binky trust'
// in it starts it.
func (f *fixture) addWaitsForTrustThenStarts(branch string) {
	f.t.Helper()
	out := f.mustGit(f.repo, "worktree", "add", "-q", "../"+branch, branch)
	if !strings.Contains(out, "git binky trust") {
		f.t.Errorf("the hook did not say how to approve:\n%s", out)
	}
	f.eventually(branch+" waits for trust", func() bool {
		w, ok := f.find(branch)
		return ok && w.State == "untrusted"
	})
	w, _ := f.find(branch)
	if len(w.Services) != 0 {
		f.t.Fatalf("an unapproved world was started: %+v", w.Services)
	}
	// Nor does it hold ports: a branch nobody approved asking for many
	// took the machine's whole range before.
	if len(w.Ports) != 0 {
		f.t.Errorf("an unapproved world holds ports %v", w.Ports)
	}
	// trust says the start goes on in the background, and where to look.
	if out := f.mustBinky(filepath.Join(f.tmp, branch), "trust"); !strings.Contains(out, "its world is starting in the background") || !strings.Contains(out, "git binky status") {
		f.t.Errorf("trust does not say what it started:\n%s", out)
	}
	f.waitHealthy(branch)
}

// An env file's values reach every process (PATH, LD_PRELOAD, ${env.X}
// in shell commands): a branch that changes only the env file binky.toml
// names is as unapproved as one that changes binky.toml (a helper's
// attack ran its code through the hook that way).
func TestAChangedEnvFileWaitsForTrust(t *testing.T) {
	f := newFixture(t, strings.Replace(oneService, "name = \"acme\"\n", "name = \"acme\"\nenv_file = \".env.defaults\"\n", 1))
	os.WriteFile(filepath.Join(f.repo, ".env.defaults"), []byte("GREETING=hi\n"), 0o644)
	f.mustGit(f.repo, "add", ".env.defaults")
	f.mustGit(f.repo, "commit", "-qm", "env defaults")
	f.mustBinky(f.repo, "install")
	f.mustGit(f.repo, "branch", "same")
	f.commitOnBranch("changed", ".env.defaults", "GREETING=hi\nNODE_OPTIONS=--require ./evil.js\n")

	// The approved env file, on another branch: started.
	f.mustGit(f.repo, "worktree", "add", "-q", "../same", "same")
	f.waitHealthy("same")

	f.addWaitsForTrustThenStarts("changed")
}

func TestWorktreeAddSucceedsWithoutGitBinkyOnPath(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "install")
	cmd := exec.Command("git", "worktree", "add", "-q", "../feat", "-b", "feat")
	cmd.Dir = f.repo
	cmd.Env = append(os.Environ(), "BINKY_HOME="+f.home, "PATH=/usr/bin:/bin")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git worktree add failed without git-binky on PATH: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "git-binky: not on PATH") {
		t.Errorf("the hook did not say git-binky is missing:\n%s", out)
	}
}

func TestLockedWorktreeWhosePathIsMissingIsKept(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "install")
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat")
	w := f.waitHealthy("feat")
	f.mustGit(f.repo, "worktree", "lock", "../feat")
	f.mustBinky(f.repo, "down", "feat")
	os.RemoveAll(filepath.Join(f.tmp, "feat"))
	f.mustGit(f.repo, "worktree", "prune")
	f.mustBinky(f.repo, "install") // asks the daemon to reconcile now
	got, ok := f.find("feat")
	if !ok || !got.Missing {
		t.Fatalf("locked worktree's world was torn down (or not marked missing): %+v %v", got, ok)
	}
	f.mustGit(f.repo, "worktree", "unlock", filepath.Join(f.tmp, "feat"))
	f.mustGit(f.repo, "worktree", "prune")
	f.waitGone(w)
}

// A worktree moved while its binky.toml differs from the approved one
// (a local edit, a branch that changed it) keeps its world running: its
// services restart at the new path on the approved config, as a crash
// restart would, and the world says the file is not approved. (An attack
// found the world stopped and not started again; a review, that services
// merely kept running could not restart after a crash.)
func TestAMovedWorktreeWithAnUnapprovedConfigKeepsRunning(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "install")
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat")
	before := f.waitHealthy("feat")
	cfg := filepath.Join(f.tmp, "feat", "binky.toml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(cfg, append(b, []byte("# a local edit, not approved\n")...), 0o644)
	f.mustGit(f.repo, "worktree", "move", "../feat", "../moved")
	moved := filepath.Join(f.tmp, "moved")
	var after api.World
	f.eventually("record follows the move", func() bool {
		var ok bool
		after, ok = f.find("feat")
		return ok && after.Path == moved
	})
	f.eventually("the services restarted at the new path", func() bool {
		after, _ = f.find("feat")
		return len(after.Services) > 0 && after.Services[0].State == "healthy" && after.Services[0].PID != before.Services[0].PID &&
			after.State == "untrusted"
	})
	if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", after.Services[0].PID)); err != nil || cwd != moved {
		t.Errorf("the restarted service runs in %q (%v), want %s", cwd, err, moved)
	}
	if after.State != "untrusted" || !strings.Contains(after.Message, "not the approved config") {
		t.Errorf("state %q %q, want untrusted saying why", after.State, after.Message)
	}
}

// Worktrees added while no daemon ran were started one whole up after
// another by the daemon that found them: each service here starts only
// once all three worlds have begun theirs, so one at a time never gets
// there.
func TestWorktreesBornWhileNoDaemonRanStartTogether(t *testing.T) {
	barrier := filepath.Join(t.TempDir(), "barrier")
	if err := os.MkdirAll(barrier, 0o700); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, fmt.Sprintf(`[project]
name = "acme"
[services.api]
cmd = "touch %[1]s/$BINKY_WORKTREE; while [ $(ls %[1]s | wc -l) -lt 3 ]; do sleep 0.05; done; exec testsvc"
url = "api"
env = { SERVICE = "api" }
`, barrier))
	f.mustBinky(f.repo, "install")
	f.mustBinky(f.repo, "daemon", "stop")
	for _, name := range []string{"b1", "b2", "b3"} {
		// No hook: it would start a daemon for each add.
		f.mustGit(f.repo, "-c", "core.hooksPath=/nonexistent", "worktree", "add", "-q", "../"+name, "-b", name)
	}
	f.mustBinky(f.repo, "daemon", "start")
	for _, name := range []string{"b1", "b2", "b3"} {
		f.waitHealthy(name)
	}
}

// An automatic up still queued when the daemon stopped was lost for good:
// its mark was removed as the up gave up, and the next daemon, which had
// seen the worktree already, never started it.
func TestAnAutomaticUpQueuedAtADaemonsStopIsDoneByTheNext(t *testing.T) {
	f := newFixture(t, oneService)
	f.setSettings(fmt.Sprintf("proxy_port = %d\nmax_parallel = 1\n", f.proxyPort))
	f.mustBinky(f.repo, "install")
	f.mustBinky(f.repo, "daemon", "stop")
	for _, name := range []string{"q1", "q2"} {
		f.mustGit(f.repo, "-c", "core.hooksPath=/nonexistent", "worktree", "add", "-q", "../"+name, "-b", name)
	}
	f.mustBinky(f.repo, "daemon", "start")
	// They start together: either may take the one place.
	var first, queued string
	f.eventually("one up, the other queued", func() bool {
		for _, pair := range [][2]string{{"q1", "q2"}, {"q2", "q1"}} {
			a, okA := f.find(pair[0])
			b, okB := f.find(pair[1])
			if okA && okB && len(a.Services) > 0 && a.Services[0].State == "healthy" && b.State == "queued" {
				first, queued = pair[0], pair[1]
				return true
			}
		}
		return false
	})
	f.mustBinky(f.repo, "daemon", "stop")
	f.mustBinky(f.repo, "daemon", "start")
	f.mustBinky(f.repo, "down", first)
	f.waitHealthy(queued)
}

// Attack: an automatic up the next daemon does (its daemon stopped while
// it was queued) ran with the environment of whichever command woke that
// daemon, not that of the shell that ran `git worktree add`: an ${env.X}
// only that shell had failed it. The environment is kept with its mark.
func TestACarriedOverAutomaticUpKeepsTheAddShellsEnvironment(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.api]
cmd = "echo $FROM > ${env.GC_DIR}/$BINKY_WORKTREE.from; exec testsvc"
url = "api"
env = { SERVICE = "api", FROM = "${env.ADD_SHELL_ONLY}" }
`)
	f.setSettings(fmt.Sprintf("proxy_port = %d\nmax_parallel = 1\n", f.proxyPort))
	f.mustBinky(f.repo, "install")
	f.extraEnv = []string{"ADD_SHELL_ONLY=the-add-shell"}
	f.mustBinky(f.repo, "up", "first")
	f.mustGit(f.repo, "worktree", "add", "-q", "../second", "-b", "second")
	f.eventually("second queued", func() bool { w, ok := f.find("second"); return ok && w.State == "queued" })
	f.mustBinky(f.repo, "daemon", "stop")
	f.extraEnv = nil // the next daemon is woken by a shell without it
	f.mustBinky(f.repo, "daemon", "start")
	f.mustBinky(f.repo, "down", "first")
	f.waitHealthy("second")
	if b, _ := os.ReadFile(filepath.Join(f.gcDir, "second.from")); strings.TrimSpace(string(b)) != "the-add-shell" {
		t.Errorf("the carried-over up ran with FROM=%q, want the add shell's", strings.TrimSpace(string(b)))
	}
}

// A rebase checks out a detached HEAD, picks, then moves the branch with
// no checkout: reload_on_checkout reloaded the world mid-rebase, and its
// services ran on with BINKY_BRANCH empty. A checkout during a rebase
// reloads nothing; the branch is the same when it ends.
func TestARebaseDoesNotReloadTheWorldOnItsDetachedCheckout(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
reload_on_checkout = true
[services.api]
cmd = "echo \"$BINKY_BRANCH\" >> ${env.GC_DIR}/branches; exec testsvc"
url = "api"
env = { SERVICE = "api" }
`)
	f.mustBinky(f.repo, "install")
	f.mustGit(f.repo, "worktree", "add", "-q", "../rb", "-b", "rb")
	f.waitHealthy("rb")
	rb := filepath.Join(f.tmp, "rb")
	os.WriteFile(filepath.Join(rb, "feature.txt"), []byte("f\n"), 0o644)
	f.mustGit(rb, "add", "feature.txt")
	f.mustGit(rb, "commit", "-qm", "feature")
	os.WriteFile(filepath.Join(f.repo, "main.txt"), []byte("m\n"), 0o644)
	f.mustGit(f.repo, "add", "main.txt")
	f.mustGit(f.repo, "commit", "-qm", "main moves on")
	before, _ := f.find("rb")
	f.mustGit(rb, "rebase", "-q", "main")
	time.Sleep(time.Second) // a reload, were one started, would be under way
	after, _ := f.find("rb")
	if service(after, "api").PID != service(before, "api").PID {
		b, _ := os.ReadFile(filepath.Join(f.gcDir, "branches"))
		t.Errorf("the rebase reloaded the world; its service saw branches %q", b)
	}
}

// A world git worktree add asked for whose up fails before it starts
// anything (a ${env.X} the shell did not set) says why in status: it
// stayed "new", the reason in daemon.log alone.
func TestAWorldItsWorktreeAddCouldNotStartSaysWhy(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.api]
cmd = "testsvc"
url = "api"
env = { TOKEN = "${env.BINKY_TEST_NEVER_SET}" }
`)
	f.mustBinky(f.repo, "install")
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat")
	f.eventually("the world failed, saying why", func() bool {
		w, ok := f.find("feat")
		return ok && w.State == "failed" && strings.Contains(w.Message, "BINKY_TEST_NEVER_SET") && strings.Contains(w.Message, "git worktree add")
	})
}
