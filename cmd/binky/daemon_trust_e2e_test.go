package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-binky/git-binky/api"
)

// viaProxy fetches an advertised URL the way a browser would: to the
// proxy's port, with the URL's host name.
func viaProxy(t *testing.T, advertised string) string {
	t.Helper()
	u, err := url.Parse(advertised)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "http://127.0.0.1:"+u.Port()+"/", nil)
	req.Host = u.Host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", advertised, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b))
}

func (f *fixture) daemonPID() int {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.home, "daemon.json"))
	if err != nil {
		f.t.Fatal(err)
	}
	var d struct{ PID int }
	json.Unmarshal(b, &d)
	return d.PID
}

// killDaemon kills the daemon with SIGKILL, as a crash would, and waits
// until it is gone.
func (f *fixture) killDaemon() {
	f.t.Helper()
	pid := f.daemonPID()
	if err := signalPID(pid, syscall.SIGKILL); err != nil {
		f.t.Fatal(err)
	}
	f.eventually("daemon gone", func() bool { return !pidAlive(pid) })
}

func TestWorktreesWhoseNamesFoldAlikeGetTheirOwnURLs(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.web]
cmd = "testsvc"
url = "web"
env = { SERVICE = "web" }
health = { http = "/healthz" }
`)
	f.mustBinky(f.repo, "up", "Foo_Bar")
	f.mustBinky(f.repo, "up", "foo-bar")
	a, b := f.envOf("Foo_Bar"), f.envOf("foo-bar")
	if a["WEB_URL"] == b["WEB_URL"] {
		t.Fatalf("both worlds advertise %s", a["WEB_URL"])
	}
	if a["BINKY_WORKTREE"] != "Foo_Bar" || b["BINKY_WORKTREE"] != "foo-bar" {
		t.Errorf("BINKY_WORKTREE: %q and %q, want the worktrees' names", a["BINKY_WORKTREE"], b["BINKY_WORKTREE"])
	}
	for name, env := range map[string]map[string]string{"Foo_Bar": a, "foo-bar": b} {
		if got, want := viaProxy(t, env["WEB_URL"]), "web of "+name+", api at"; got != want {
			t.Errorf("%s's URL %s reached %q, want %q", name, env["WEB_URL"], got, want)
		}
	}
	// The labels are kept: a new daemon advertises the same URLs.
	f.mustBinky(f.repo, "daemon", "stop")
	if a2, b2 := f.envOf("Foo_Bar"), f.envOf("foo-bar"); a2["WEB_URL"] != a["WEB_URL"] || b2["WEB_URL"] != b["WEB_URL"] {
		t.Errorf("URLs changed across a daemon restart: %s, %s → %s, %s", a["WEB_URL"], b["WEB_URL"], a2["WEB_URL"], b2["WEB_URL"])
	}
	f.status() // starts a daemon, which adopts the services and serves the proxy
	if got := viaProxy(t, a["WEB_URL"]); got != "web of Foo_Bar, api at" {
		t.Errorf("after a daemon restart Foo_Bar's URL reached %q", got)
	}
}

const approvedConfig = `[project]
name = "acme"
[services.api]
cmd = "testsvc"
url = "api"
env = { SERVICE = "api" }
health = { http = "/healthz" }
`

// evilConfig differs from approvedConfig only in the command, which leaves
// a mark when it runs.
const evilConfig = `[project]
name = "acme"
[services.api]
cmd = "touch ${env.GC_DIR}/evil-ran; exec testsvc"
url = "api"
env = { SERVICE = "api" }
health = { http = "/healthz" }
`

// upThenCheckOutAndKillTheDaemon brings up a world in a new worktree name,
// checks branch out in it (its files, not the ones approved), and kills
// the daemon: the next command starts a daemon that adopts the services.
func (f *fixture) upThenCheckOutAndKillTheDaemon(name, branch string) string {
	f.t.Helper()
	f.mustBinky(f.repo, "up", name)
	wt := filepath.Join(f.tmp, name)
	f.mustGit(wt, "checkout", "-q", "--detach", branch)
	f.killDaemon()
	return wt
}

func TestAdoptedServiceRestartsOnlyTheApprovedCommand(t *testing.T) {
	f := newFixture(t, approvedConfig)
	f.commitOnBranch("evil", "binky.toml", evilConfig)
	wb := f.upThenCheckOutAndKillTheDaemon("wb", "evil")

	// Any command starts a new daemon, which adopts wb's service.
	w := f.world("wb")
	if w.State != "untrusted" || !strings.Contains(w.Message, "not approved") {
		t.Errorf("adopted world with an unapproved binky.toml: state %q, message %q", w.State, w.Message)
	}
	before := service(w, "api")
	if before.State != "healthy" {
		t.Fatalf("api not adopted: %+v", before)
	}
	if err := signalPID(before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	f.eventually("api restarted and healthy", func() bool {
		s := service(f.world("wb"), "api")
		return s.State == "healthy" && s.PID != before.PID
	})
	if _, err := os.Stat(filepath.Join(f.gcDir, "evil-ran")); err == nil {
		t.Fatal("the unapproved command ran after a daemon restart")
	}
	if got := get(t, before.Port); !strings.HasPrefix(got, "api of wb") {
		t.Errorf("restarted api answered %q", got)
	}
	// The daemon swap after an upgrade (stop, a new daemon adopts) is the
	// same: the approved command, and the world still says untrusted.
	f.mustBinky(f.repo, "daemon", "stop")
	w = f.world("wb")
	again := service(w, "api")
	if w.State != "untrusted" || again.State != "healthy" {
		t.Fatalf("after a daemon swap: %s (%s), api %+v", w.State, w.Message, again)
	}
	signalPID(again.PID, syscall.SIGKILL)
	f.eventually("api restarted after the swap", func() bool {
		s := service(f.world("wb"), "api")
		return s.State == "healthy" && s.PID != again.PID
	})
	if _, err := os.Stat(filepath.Join(f.gcDir, "evil-ran")); err == nil {
		t.Fatal("the unapproved command ran after a daemon swap")
	}
	// Approving the new file (an explicit up) is what lets it run.
	f.mustBinky(wb, "reload")
	f.eventually("evil command ran once approved", func() bool {
		_, err := os.Stat(filepath.Join(f.gcDir, "evil-ran"))
		return err == nil
	})
	if w := f.world("wb"); w.State != "running" {
		t.Errorf("after reload: %s (%s)", w.State, w.Message)
	}
}

// The env files an approved config names are read from the worktree when
// a service restarts: after a daemon restart, a branch checked out since
// with other env files (a review's attack: PATH=./evilbin, and the health
// command ran its code) gets its services adopted but never restarted.
func TestAdoptedServicesAreNotRestartedWithAnEnvFileChangedSince(t *testing.T) {
	f := newFixture(t, strings.Replace(approvedConfig, "[services.api]\n", "[services.api]\nenv_file = \"api.env\"\n", 1))
	os.WriteFile(filepath.Join(f.repo, "api.env"), []byte("NOTE=approved\n"), 0o644)
	f.mustGit(f.repo, "add", "api.env")
	f.mustGit(f.repo, "commit", "-qm", "api env")
	f.commitOnBranch("evil", "api.env", "NOTE=evil\nLD_PRELOAD=/tmp/evil.so\n")
	wb := f.upThenCheckOutAndKillTheDaemon("wb", "evil")

	w := f.world("wb") // a new daemon adopts wb's service
	// Its services are not restarted: the state must not say they run on.
	if w.State != "untrusted" || !strings.Contains(w.Message, "env_file") || !strings.Contains(w.Message, "not restarted") ||
		strings.Contains(w.Message, "keep running the approved config") {
		t.Errorf("adopted world whose env file changed: state %q, message %q", w.State, w.Message)
	}
	before := service(w, "api")
	if before.PID == 0 {
		t.Fatalf("api not adopted: %+v", before)
	}
	if err := signalPID(before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if s := service(f.world("wb"), "api"); s.PID != 0 && s.PID != before.PID {
		t.Fatalf("api was restarted with the unapproved env file: %+v", s)
	}
	// Approving it (an explicit up) is what lets it run.
	f.mustBinky(wb, "reload")
	f.waitHealthy("wb")
}

func TestUpCutOffByTheDaemonsDeathEndsFailedWithAReason(t *testing.T) {
	for _, step := range []string{"up.starting", "up.slices", "up.services"} {
		t.Run(step, func(t *testing.T) {
			f := newFixture(t, twoServices)
			f.extraEnv = []string{"BINKY_TEST_CRASH_AT=" + step}
			if _, _, err := f.binky(f.repo, "up"); err == nil {
				t.Fatal("up succeeded although its daemon was killed")
			}
			f.extraEnv = nil
			w := f.world("acme")
			if w.State != "failed" || !strings.Contains(w.Message, "the daemon stopped during up") {
				t.Fatalf("after a daemon death at %s: state %q, message %q", step, w.State, w.Message)
			}
			for _, s := range w.Services {
				if s.PID != 0 {
					t.Errorf("service %s left running (pid %d) by a cut-off up", s.Name, s.PID)
				}
			}
			if out := f.mustBinky(f.repo, "status"); !strings.Contains(out, "why: the daemon stopped during up") {
				t.Errorf("status does not say why:\n%s", out)
			}
			f.mustBinky(f.repo, "up")
			if w := f.world("acme"); w.State != "running" || w.Message != "" {
				t.Errorf("up again: state %q, message %q", w.State, w.Message)
			}
		})
	}
}

func TestUpWhoseClientGoesAwayLeavesHealthyServicesRunning(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.api]
cmd = "testsvc"
url = "api"
env = { SERVICE = "api" }
health = { http = "/healthz" }
[services.web]
cmd = "while [ ! -e ${env.GC_DIR}/go ]; do sleep 0.05; done; exec testsvc"
url = "web"
depends_on = ["api"]
env = { SERVICE = "web" }
health = { http = "/healthz" }
`)
	cmd := exec.Command(filepath.Join(binDir, "git-binky"), "up")
	cmd.Dir = f.repo
	cmd.Env = append(os.Environ(), f.env()...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The client goes away (Ctrl-C, an MCP client's timeout, a crash)
	// once api is healthy and web is still starting.
	f.eventually("api healthy while web starts", func() bool {
		w, ok := f.find("acme")
		return ok && service(w, "api").State == "healthy" && service(w, "web").State == "starting"
	})
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	api := service(f.world("acme"), "api")
	if api.State != "healthy" || !pidAlive(api.PID) {
		t.Fatalf("the client's leaving stopped a healthy service: %+v\nup said: %s", api, stderr.String())
	}
	os.WriteFile(filepath.Join(f.gcDir, "go"), nil, 0o644)
	f.eventually("the up finished by the daemon", func() bool {
		w := f.world("acme")
		return w.State == "running" && service(w, "web").State == "healthy"
	})
	for _, s := range f.world("acme").Services {
		if strings.Contains(s.Message, "no daemon was watching") {
			t.Errorf("%s: %q while the daemon watched", s.Name, s.Message)
		}
	}
}

func TestDownAndRemoveWorkWhenBinkyTomlIsBroken(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up", "c2")
	wt := filepath.Join(f.tmp, "c2")
	w := f.world("c2")
	os.WriteFile(filepath.Join(wt, "binky.toml"), []byte("[project]\nname = \"acme\"\n[services.api\ncmd = 1\n"), 0o644)

	out, stderr, err := f.binky(f.repo, "down", "c2")
	if err != nil {
		t.Fatalf("down with a broken binky.toml: %v\n%s%s", err, out, stderr)
	}
	if !strings.Contains(stderr, "warning: binky.toml is broken") || !regexp.MustCompile(regexp.QuoteMeta(filepath.Join(wt, "binky.toml"))+`:\d+:\d+: error`).MatchString(stderr) {
		t.Errorf("down does not say the file is broken, with where:\nout=%q\nerr=%q", out, stderr)
	}
	for _, s := range w.Services {
		if pidAlive(s.PID) {
			t.Errorf("%s survived down", s.Name)
		}
	}
	if st := f.world("c2").State; st != "stopped" {
		t.Errorf("state after down: %s", st)
	}

	out, stderr, err = f.binky(f.repo, "remove", "c2", "--force")
	if err != nil {
		t.Fatalf("remove --force with a broken binky.toml: %v\n%s%s", err, out, stderr)
	}
	if !strings.Contains(stderr, "warning: binky.toml is broken") {
		t.Errorf("remove does not say the file is broken:\n%s", stderr)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
	if _, ok := f.find("c2"); ok {
		t.Error("world still listed after remove")
	}
	for _, p := range w.Ports {
		if _, err := os.Stat(filepath.Join(f.home, "ports", fmt.Sprint(p))); !os.IsNotExist(err) {
			t.Errorf("port %d still leased", p)
		}
	}
}

func TestASecondHomeLeavesTheFirstHomesWorldAlone(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up", "p1")
	wt := filepath.Join(f.tmp, "p1")
	admin := strings.TrimSpace(f.mustGit(wt, "rev-parse", "--absolute-git-dir"))
	copyPath := filepath.Join(admin, "binky", "world.json")
	before, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	envBefore := f.envOf("p1")

	other := f.otherHome()
	f.extraEnv = []string{"BINKY_HOME=" + other}

	for _, args := range [][]string{{"env", "p1"}, {"up", "p1"}, {"remove", "p1", "--force"}} {
		_, stderr, err := f.binky(f.repo, args...)
		if err == nil || !strings.Contains(stderr, "is run by BINKY_HOME="+f.home) {
			t.Errorf("%s from a second home: err=%v, stderr does not name the owning home:\n%s", args[0], err, stderr)
		}
	}
	var s api.Status
	json.Unmarshal([]byte(f.mustBinky(f.repo, "status", "--json")), &s)
	if len(s.Worlds) != 0 {
		t.Errorf("the second home lists worlds: %+v", s.Worlds)
	}
	if out := f.mustBinky(wt, "status"); !strings.Contains(out, "note: ") || !strings.Contains(out, "is run by BINKY_HOME="+f.home) {
		t.Errorf("status in the worktree from a second home does not say whose it is:\n%s", out)
	}
	// The first home keeps its copy current as its services change, so
	// compare what the second home would have changed: owner and ports.
	var was, is struct {
		Home  string         `json:"home"`
		Ports map[string]int `json:"ports"`
	}
	json.Unmarshal(before, &was)
	after, _ := os.ReadFile(copyPath)
	json.Unmarshal(after, &is)
	if is.Home != was.Home || fmt.Sprint(is.Ports) != fmt.Sprint(was.Ports) || was.Home == "" {
		t.Errorf("the second home rewrote %s:\nbefore %s\nafter %s", copyPath, before, after)
	}

	if _, err := os.Stat(wt); err != nil {
		t.Errorf("the second home's remove deleted the first home's worktree: %v", err)
	}
	f.extraEnv = nil
	if got := f.envOf("p1"); got["API_PORT"] != envBefore["API_PORT"] {
		t.Errorf("the first home's ports moved: %s → %s", envBefore["API_PORT"], got["API_PORT"])
	}
	if st := service(f.world("p1"), "api").State; st != "healthy" {
		t.Errorf("the first home's world: api %s", st)
	}
	f.mustBinky(f.repo, "down", "p1")
}

func TestAWorldWhoseServicesDiedUnwatchedIsStoppedAndUpStartsIt(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up")
	before := f.world("acme")
	// The machine restarts: the daemon and every service die together.
	f.killDaemon()
	for _, s := range before.Services {
		signalPID(-s.PID, syscall.SIGKILL) // each service leads its process group
		f.eventually(s.Name+" gone", func() bool { return !pidAlive(s.PID) })
	}
	w := f.world("acme") // a new daemon adopts what is left
	if w.State != "stopped" || !strings.Contains(w.Message, "died while no daemon was watching") {
		t.Fatalf("a world with nothing running: state %q, message %q", w.State, w.Message)
	}
	if out := f.mustBinky(f.repo, "status"); !strings.Contains(out, "git binky up") {
		t.Errorf("status does not say how to start it again:\n%s", out)
	}
	f.mustBinky(f.repo, "up")
	w = f.world("acme")
	if w.State != "running" || w.Message != "" {
		t.Fatalf("up again: state %q, message %q", w.State, w.Message)
	}
	for _, s := range w.Services {
		old := service(before, s.Name)
		if s.Port != old.Port || !pidAlive(s.PID) {
			t.Errorf("%s after up: port %d (was %d), pid %d alive %v", s.Name, s.Port, old.Port, s.PID, pidAlive(s.PID))
		}
	}
}

// otherHome makes a second BINKY_HOME beside the fixture's, its daemon
// stopped when the test ends.
func (f *fixture) otherHome() string {
	f.t.Helper()
	other := filepath.Join(f.tmp, "other-home")
	os.MkdirAll(other, 0o700)
	os.WriteFile(filepath.Join(other, "settings.toml"), []byte(fmt.Sprintf("proxy_port = %d\n", freeTCPPort(f.t))), 0o600)
	daemonMu.Lock()
	daemonHomes[other] = true
	daemonMu.Unlock()
	f.t.Cleanup(func() { stopDaemon(other) })
	return other
}

// An edit of a running world's binky.toml makes no event, as a checkout
// does, but status still says the file is not the approved one, and says
// so no more once it is back.
func TestAnEditedConfigMakesARunningWorldUntrusted(t *testing.T) {
	f := newFixture(t, approvedConfig)
	f.mustBinky(f.repo, "up")
	path := filepath.Join(f.repo, "binky.toml")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(slices.Clone(orig), "# edited\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if w := f.world("acme"); w.State != "untrusted" || !strings.Contains(w.Message, "not approved") {
		t.Errorf("after an edit: state %q, message %q", w.State, w.Message)
	}
	// up approves it, and says that what runs is still the old one.
	if _, errs, err := f.binky(f.repo, "up"); err != nil || !strings.Contains(errs, "'git binky reload'") {
		t.Errorf("up of a running world whose file changed does not point to reload (%v):\n%s", err, errs)
	}
	if w := f.world("acme"); w.State != "running" {
		t.Errorf("after up approved the edit: state %q, message %q", w.State, w.Message)
	}
	if err := os.WriteFile(path, append(slices.Clone(orig), "# edited again\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if w := f.world("acme"); w.State != "untrusted" {
		t.Errorf("after a second edit: state %q, message %q", w.State, w.Message)
	}
	// reload approves it too, and says so (not to a terminal only).
	if _, errs, err := f.binky(f.repo, "reload"); err != nil || !strings.Contains(errs, "approved") {
		t.Errorf("reload of a changed file does not say it approved it (%v):\n%s", err, errs)
	}
	if w := f.world("acme"); w.State != "running" {
		t.Errorf("after reload: state %q, message %q", w.State, w.Message)
	}
	if err := os.WriteFile(path, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if w := f.world("acme"); w.State != "running" || w.Message != "" {
		t.Errorf("after the edit was undone: state %q, message %q", w.State, w.Message)
	}
}
