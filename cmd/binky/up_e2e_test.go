package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/gitx/gittest"
)

const twoServices = `[project]
name = "acme"
[services.api]
cmd = "testsvc"
url = "api"
env = { SERVICE = "api" }
health = { http = "/healthz" }
[services.web]
cmd = "testsvc -grandchild ${env.GC_DIR}/${worktree.name}.pid"
url = "web"
depends_on = ["api"]
env = { SERVICE = "web", API_URL = "${api.direct_url}" }
`

// fixture is a repository with a binky.toml, its own BINKY_HOME and
// daemon, cleaned up (daemon and services) when the test ends.
type fixture struct {
	t               *testing.T
	tmp, repo, home string
	gcDir           string
	proxyPort       int
	extraEnv        []string
	ports           string // its [ports] table (fixturePorts)
}

// fixtureBlock numbers the fixtures' port ranges.
var fixtureBlock atomic.Int32

// fixturePorts is a [ports] table of 100 ports of the fixture's own, from
// 5000-19999 (above binky's default 4000-4999, which other packages' tests
// use at the same time, and below the world package's tests' ranges and
// the ephemeral range): ports no other home of this run is given. (A CI run twice found a managed server's fresh
// port held by something else when every test shared the default range;
// what held it was not found.)
func fixturePorts() string {
	const blocks = (20000 - 5000) / 100
	n := (int(fixtureBlock.Add(1)) + os.Getpid()) % blocks
	return fmt.Sprintf("[ports]\nmin = %d\nmax = %d\n", 5000+n*100, 5000+n*100+99)
}

// freeTCPPort is a port for a daemon to listen on (its proxy, its https
// port) that nothing listens on now. Not bind(0)'s: that is an ephemeral
// port, which any outgoing connection of the machine may take as its own
// before the daemon binds it. 25000-29999 is below the ephemeral range,
// above the fixtures' and the world package's tests' ranges; make test's
// throwaway servers, which may be there, are listening already.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	p, err := freeListenPort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// listenPort numbers the ports freeListenPort tries.
var listenPort atomic.Int32

func freeListenPort() (int, error) {
	const lo, n = 25000, 5000
	for range n {
		p := lo + (int(listenPort.Add(1))+os.Getpid()*7)%n
		l, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			l.Close()
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port in %d-%d", lo, lo+n-1)
}

func newFixture(t *testing.T, config string) *fixture {
	t.Helper()
	tmp := t.TempDir()
	f := &fixture{t: t, tmp: tmp, home: filepath.Join(tmp, "home"), gcDir: filepath.Join(tmp, "gc")}
	os.MkdirAll(f.gcDir, 0o755)
	f.repo = gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": config})
	// Each test's daemon gets its own proxy port, so none collides with
	// another test's or with the machine's own daemon.
	f.proxyPort = freeTCPPort(t)
	os.MkdirAll(f.home, 0o700)
	f.ports = fixturePorts()
	settings := fmt.Sprintf("proxy_port = %d\n", f.proxyPort) + f.ports
	if err := os.WriteFile(filepath.Join(f.home, "settings.toml"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	daemonMu.Lock()
	daemonHomes[f.home] = true
	daemonMu.Unlock()
	t.Cleanup(func() {
		if r := stopDaemon(f.home); r != "" {
			t.Errorf("the daemon reported a data race:\n%s", r)
		}
	})
	return f
}

func (f *fixture) env() []string {
	return append([]string{"BINKY_HOME=" + f.home, "GC_DIR=" + f.gcDir, "NO_COLOR=1",
		"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH")}, f.extraEnv...)
}

// binky runs git-binky in dir and returns stdout, stderr and the error.
func (f *fixture) binky(dir string, args ...string) (string, string, error) {
	f.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "git-binky"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), f.env()...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	return out.String(), errb.String(), err
}

func (f *fixture) mustBinky(dir string, args ...string) string {
	f.t.Helper()
	out, errs, err := f.binky(dir, args...)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
		if len(log) > 6000 {
			log = log[len(log)-6000:]
		}
		f.t.Fatalf("git-binky %s: %v\n%s%s\ndaemon log (tail):\n%s", strings.Join(args, " "), err, out, errs, log)
	}
	return out
}

func (f *fixture) status() api.Status {
	f.t.Helper()
	var s api.Status
	if err := json.Unmarshal([]byte(f.mustBinky(f.repo, "status", "--json")), &s); err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *fixture) world(name string) api.World {
	f.t.Helper()
	for _, w := range f.status().Worlds {
		if w.Worktree == name {
			return w
		}
	}
	f.t.Fatalf("no world %s in status", name)
	return api.World{}
}

func service(w api.World, name string) api.Service {
	for _, s := range w.Services {
		if s.Name == name {
			return s
		}
	}
	return api.Service{}
}

// eventually polls cond (a status read) until it holds, or fails after 20s.
func (f *fixture) eventually(what string, cond func() bool) {
	f.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			f.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func get(t *testing.T, port int) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		t.Fatalf("GET :%d: %v", port, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b))
}

func pidAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}

func TestTwoWorldsUpAtOnceEachOnItsOwnPorts(t *testing.T) {
	f := newFixture(t, twoServices)
	names := []string{"login-fix", "checkout-v2"}
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, stderr, err := f.binky(f.repo, "up", n)
			if err == nil && !strings.Contains(out, "✓ up: "+n+" (2 services)") {
				err = fmt.Errorf("unexpected output %q", out)
			}
			if err != nil {
				errs[i] = fmt.Errorf("%v: %s", err, stderr)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int]bool{}
	for _, n := range names {
		w := f.world(n)
		api, web := service(w, "api"), service(w, "web")
		if api.State != "healthy" || web.State != "healthy" {
			t.Fatalf("%s: %+v", n, w.Services)
		}
		for _, p := range []int{api.Port, web.Port} {
			if seen[p] {
				t.Errorf("port %d used twice", p)
			}
			seen[p] = true
		}
		want := fmt.Sprintf("web of %s, api at http://127.0.0.1:%d", n, api.Port)
		if got := get(t, web.Port); got != want {
			t.Errorf("web of %s answered %q, want %q", n, got, want)
		}
		if _, err := os.Stat(filepath.Join(f.tmp, n)); err != nil {
			t.Errorf("up %s did not create its worktree beside the main one: %v", n, err)
		}
	}
}

func TestKilledServiceIsRestartedHealthy(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up")
	before := service(f.world("acme"), "api")
	if err := signalPID(before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	f.eventually("api restarted and healthy", func() bool {
		s := service(f.world("acme"), "api")
		return s.State == "healthy" && s.PID != before.PID && s.Restarts == 1
	})
	if got := get(t, before.Port); !strings.HasPrefix(got, "api of acme") {
		t.Errorf("restarted api answered %q", got)
	}
}

// A crash restart of a service a later daemon adopted ran with that
// daemon's environment (whichever command started it), not the one its up
// gave it: an ${env.X} of the up's shell became the text "${env.X}", or
// the app lost its NODE_PATH. The up's environment is kept in the home.
func TestAnAdoptedServiceRestartsWithItsUpsEnvironment(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.api]
cmd = "env > $GC_DIR/api.$$.env; exec testsvc"
url = "api"
env = { SERVICE = "api", API_KEY = "${env.MF_API_KEY}" }
health = { http = "/healthz" }
`)
	f.extraEnv = []string{"MF_API_KEY=from-the-up", "MF_ONLY_IN_THE_UP=yes"}
	f.mustBinky(f.repo, "up")
	f.extraEnv = nil
	before := service(f.world("acme"), "api")
	f.killDaemon()
	// A daemon started by a command without them adopts the service.
	if after := service(f.world("acme"), "api"); after.PID != before.PID {
		t.Fatalf("not adopted: %d, then %d", before.PID, after.PID)
	}
	if err := signalPID(before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var restarted api.Service
	f.eventually("api restarted and healthy", func() bool {
		restarted = service(f.world("acme"), "api")
		return restarted.State == "healthy" && restarted.PID != before.PID
	})
	env := readEnvDump(t, filepath.Join(f.gcDir, fmt.Sprintf("api.%d.env", restarted.PID)))
	if env["API_KEY"] != "from-the-up" || env["MF_ONLY_IN_THE_UP"] != "yes" {
		t.Errorf("the restarted service has API_KEY=%q MF_ONLY_IN_THE_UP=%q, want its up's", env["API_KEY"], env["MF_ONLY_IN_THE_UP"])
	}
	// It goes with the world.
	f.mustBinky(f.repo, "remove", "--force", "acme")
	if m, _ := filepath.Glob(filepath.Join(f.home, "worlds", "*.caller")); len(m) != 0 {
		t.Errorf("the world's environment outlived it: %v", m)
	}
}

func TestKilledDaemonIsReplacedAndAdoptsServices(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up")
	w := f.world("acme")
	f.killDaemon()
	for _, s := range w.Services {
		if !pidAlive(s.PID) {
			t.Fatalf("service %s died with the daemon", s.Name)
		}
	}
	// Any command starts a new daemon, which adopts the running services.
	after := f.world("acme")
	if after.Services[0].PID != w.Services[0].PID || after.Services[0].State != "healthy" {
		t.Fatalf("not adopted: before %+v after %+v", w.Services, after.Services)
	}
	gc := grandchild(t, f, "acme")
	f.mustBinky(f.repo, "down")
	for _, s := range w.Services {
		if pidAlive(s.PID) {
			t.Errorf("adopted service %s survived down", s.Name)
		}
	}
	if pidAlive(gc) {
		t.Error("grandchild of an adopted service survived down")
	}
}

func grandchild(t *testing.T, f *fixture, world string) int {
	t.Helper()
	var pid int
	f.eventually("grandchild pid file", func() bool {
		b, err := os.ReadFile(filepath.Join(f.gcDir, world+".pid"))
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(string(b))
		return err == nil
	})
	return pid
}

func TestDownLeavesNothingAndUpReusesThePorts(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up")
	before := f.world("acme")
	gc := grandchild(t, f, "acme")
	if !pidAlive(gc) {
		t.Fatal("grandchild not running")
	}
	f.mustBinky(f.repo, "down")
	if pidAlive(gc) {
		t.Error("grandchild survived down")
	}
	for _, s := range before.Services {
		if pidAlive(s.PID) {
			t.Errorf("%s survived down", s.Name)
		}
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.Port)); err == nil {
			c.Close()
			t.Errorf("%s still listening after down", s.Name)
		}
	}
	down := f.world("acme")
	if down.State != "stopped" || service(down, "api").State != "stopped" {
		t.Errorf("after down: %+v", down)
	}
	f.mustBinky(f.repo, "up")
	after := f.world("acme")
	for _, s := range before.Services {
		if service(after, s.Name).Port != s.Port {
			t.Errorf("%s moved from :%d to :%d across down/up", s.Name, s.Port, service(after, s.Name).Port)
		}
	}
}

func TestRemoveRefusesADirtyWorktreeAndDeletesAClean(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up", "feat")
	wt := filepath.Join(f.tmp, "feat")
	ports := f.world("feat").Ports
	os.WriteFile(filepath.Join(wt, "notes.txt"), []byte("wip"), 0o644)
	_, stderr, err := f.binky(f.repo, "remove", "feat")
	if err == nil || !strings.Contains(stderr, "has uncommitted changes") || !strings.Contains(stderr, "--force") {
		t.Fatalf("remove of a dirty worktree: err=%v stderr=%s", err, stderr)
	}
	if service(f.world("feat"), "api").State != "healthy" {
		t.Error("a refused remove stopped the world")
	}
	os.Remove(filepath.Join(wt, "notes.txt"))
	// The removed world as it is now: nothing runs, nothing is held (it
	// listed its services healthy, with pids already gone).
	var gone api.World
	if err := json.Unmarshal([]byte(f.mustBinky(f.repo, "remove", "feat", "--json")), &gone); err != nil {
		t.Fatal(err)
	}
	if gone.State != "removed" || len(gone.Ports) != 0 || len(gone.Services) != 2 {
		t.Errorf("remove --json: %+v", gone)
	}
	for _, s := range gone.Services {
		if s.State != "stopped" || s.PID != 0 || s.Port != 0 {
			t.Errorf("remove --json lists %+v", s)
		}
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
	for _, w := range f.status().Worlds {
		if w.Worktree == "feat" {
			t.Errorf("world still listed: %+v", w)
		}
	}
	for _, p := range ports {
		if _, err := os.Stat(filepath.Join(f.home, "ports", strconv.Itoa(p))); !os.IsNotExist(err) {
			t.Errorf("port %d still leased", p)
		}
	}
}

func TestRemoveOfAWorktreeWithNoWorldNamesIt(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustGit(f.repo, "worktree", "add", "-q", "-b", "plain", filepath.Join(f.tmp, "plain"))
	out, stderr, err := f.binky(f.repo, "remove", "plain")
	if err != nil || !strings.Contains(out, "removed: plain") || !strings.Contains(stderr, "it had no world") {
		t.Fatalf("remove of a worktree with no world: %v\nout: %s\nstderr: %s", err, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(f.tmp, "plain")); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
}

// git refuses to remove a locked worktree (even with one --force): the
// world must then be kept whole, its ports and record with it, not dropped
// before git said no. (An attack found the data dropped first.)
func TestRemoveOfALockedWorktreeKeepsItsWorld(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up", "feat")
	wt := filepath.Join(f.tmp, "feat")
	ports := f.world("feat").Ports
	f.mustGit(f.repo, "worktree", "lock", "--reason", "on a stick", wt)
	_, stderr, err := f.binky(f.repo, "remove", "feat", "--force")
	if err == nil || !strings.Contains(stderr, "was not removed, so its world was kept") || !strings.Contains(stderr, "locked") {
		t.Fatalf("remove of a locked worktree: err=%v stderr=%s", err, stderr)
	}
	if _, err := os.Stat(wt); err != nil {
		t.Fatalf("the locked worktree is gone: %v", err)
	}
	for _, p := range ports {
		if _, err := os.Stat(filepath.Join(f.home, "ports", strconv.Itoa(p))); err != nil {
			t.Errorf("port %d no longer leased to the kept world: %v", p, err)
		}
	}
	f.mustBinky(wt, "up")
	if got := f.world("feat"); service(got, "api").State != "healthy" || !maps.Equal(got.Ports, ports) {
		t.Errorf("the kept world did not come back on its ports: %+v", got)
	}
	f.mustGit(f.repo, "worktree", "unlock", wt)
	f.mustBinky(f.repo, "remove", "feat")
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Errorf("worktree still there after unlock and remove: %v", err)
	}
}

func TestServiceThatExitsAtOnceShowsCrashedWithItsCode(t *testing.T) {
	f := newFixture(t, "[services.api]\ncmd = \"testsvc -exit 3\"\nurl = \"api\"\n")
	_, stderr, err := f.binky(f.repo, "up")
	if err == nil {
		t.Fatal("up succeeded")
	}
	for _, want := range []string{"service api exited with code 3 before it became healthy", "testsvc: exiting with 3 as asked", "other services were stopped"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	s := service(f.world("acme"), "api")
	if s.State != "crashed" || s.ExitCode == nil || *s.ExitCode != 3 {
		t.Errorf("status: %+v", s)
	}
	// With --json a script reading stdout gets an object, not nothing.
	out, _, err := f.binky(f.repo, "up", "--json")
	var doc struct {
		Schema int `json:"schema"`
		Error  struct{ Code, Message string }
	}
	if err == nil || json.Unmarshal([]byte(out), &doc) != nil || doc.Schema != 1 || !strings.Contains(doc.Error.Message, "exited with code 3") || doc.Error.Code == "" {
		t.Errorf("up --json of a failing world: %v, stdout %q", err, out)
	}
}

func TestUpRefusesAPortTakenFromOutside(t *testing.T) {
	f := newFixture(t, "[services.api]\ncmd = \"testsvc\"\nurl = \"api\"\n")
	var env struct {
		Services map[string]struct{ Port int } `json:"services"`
	}
	json.Unmarshal([]byte(f.mustBinky(f.repo, "env", "--json")), &env)
	port := env.Services["api"].Port
	l, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Skipf("cannot take port %d: %v", port, err)
	}
	defer l.Close()
	_, stderr, err := f.binky(f.repo, "up")
	if err == nil || !strings.Contains(stderr, fmt.Sprintf("port %d of acme (service api) is in use by another program", port)) {
		t.Fatalf("err=%v stderr=%s", err, stderr)
	}
}

func TestHealthCheckThatNeverPassesLeavesNothingHalfUp(t *testing.T) {
	f := newFixture(t, `[services.db]
cmd = "testsvc"
url = "db"
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["db"]
health = { http = "/unhealthy", start_period = "1s" }
`)
	_, stderr, err := f.binky(f.repo, "up")
	if err == nil || !strings.Contains(stderr, "service api did not become healthy within 1s; last probe: GET http://127.0.0.1:") ||
		!strings.Contains(stderr, "503 Service Unavailable") || !strings.Contains(stderr, "raise its health start_period") {
		t.Fatalf("err=%v stderr=%s", err, stderr)
	}
	for _, s := range f.world("acme").Services {
		if s.PID != 0 || (s.State != "stopped" && s.State != "crashed") {
			t.Errorf("%s left %s (pid %d) after a failed up", s.Name, s.State, s.PID)
		}
	}
}

// A migrate that outlives its daemon would go on writing into the database
// the next daemon makes again, beside that one's own migrate (an attack
// saw both write): the kernel ends a step's shell with the daemon that
// started it, so nothing after its current command runs.
func TestAStepOfAKilledDaemonStartsNothingMore(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.db]
adapter = "postgres"
migrate = "echo $$ > ${env.GC_DIR}/shell; touch ${env.GC_DIR}/started; sleep 30; touch ${env.GC_DIR}/late"
`)
	f.upUntilItsMigrateStarts()
	b, err := os.ReadFile(filepath.Join(f.gcDir, "shell"))
	shell, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || shell == 0 {
		t.Fatalf("the migrate's shell: %q %v", b, err)
	}
	f.killDaemon()
	// Its shell goes with the daemon, well before its sleep ends (30 s: a
	// daemon slow to die under load cannot pass for a step that went).
	f.eventually("the migrate's shell killed with its daemon", func() bool { return !pidAlive(shell) })
	if _, err := os.Stat(filepath.Join(f.gcDir, "late")); err == nil {
		t.Error("the migrate went on after its daemon was killed")
	}
}

// A daemon asked to stop while an up runs a slice's migrate finishes the
// up, migrate and all, rather than kill the migrate halfway (the world
// then failed, said to be cancelled by its client).
func TestADaemonStopFinishesAnUpInItsMigrate(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.db]
adapter = "postgres"
migrate = "touch ${env.GC_DIR}/started; sleep 2; touch ${env.GC_DIR}/migrated"
[services.api]
cmd = "testsvc"
url = "api"
env = { SERVICE = "api" }
depends_on = ["db"]
`)
	f.upUntilItsMigrateStarts()
	f.mustBinky(f.repo, "daemon", "stop")
	if _, err := os.Stat(filepath.Join(f.gcDir, "migrated")); err != nil {
		t.Error("the daemon stopped before the migrate finished")
	}
	w := f.world("acme")
	if w.State != "running" || service(w, "api").State != "healthy" {
		t.Errorf("world = %s (%s), api %+v: want the up finished", w.State, w.Message, service(w, "api"))
	}
	f.mustBinky(f.repo, "down")
}

// upUntilItsMigrateStarts runs `git binky up` in the background, on the
// managed PostgreSQL, until the migrate touches $GC_DIR/started (the
// first up makes the server: a minute at most); the up is waited for when
// the test ends.
func (f *fixture) upUntilItsMigrateStarts() {
	f.t.Helper()
	if _, err := os.Stat("/usr/lib/postgresql"); err != nil && os.Getenv("BINKY_TEST_PG") == "" {
		f.t.Skip("no PostgreSQL (/usr/lib/postgresql missing, BINKY_TEST_PG is not set): make test installs postgresql")
	}
	up := exec.Command(filepath.Join(binDir, "git-binky"), "up")
	up.Dir, up.Env = f.repo, append(os.Environ(), f.env()...)
	if err := up.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { up.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(f.gcDir, "started")); err == nil {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatal("the migrate never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// status said the branch of the world's last save: a `git branch -m` in
// the worktree (which saves nothing) left the old name listed.
func TestStatusNamesTheBranchCheckedOutNow(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "up", "feat")
	wt := filepath.Join(filepath.Dir(f.repo), "feat")
	f.mustGit(wt, "branch", "-m", "feat-renamed")
	if w := f.world("feat"); w.Branch != "feat-renamed" {
		t.Errorf("status names branch %q after git branch -m, want feat-renamed", w.Branch)
	}
	f.mustGit(wt, "checkout", "-q", "--detach")
	if w := f.world("feat"); w.Branch != "" {
		t.Errorf("status names branch %q for a detached HEAD, want none", w.Branch)
	}
}

// reload (down, then up) approved a changed binky.toml and ran it without
// a word, where the status line had said only up approves. An up or a
// reload that approves a file says so.
func TestAnUpThatApprovesAFileSaysSo(t *testing.T) {
	script, err := exec.LookPath("script")
	if err != nil {
		t.Skip("no script(1) to give up a terminal (util-linux)")
	}
	f := newFixture(t, oneService)
	onTTY := func(args ...string) string {
		line := filepath.Join(binDir, "git-binky")
		for _, a := range args {
			line += " " + a
		}
		cmd := exec.Command(script, "-qec", line, "/dev/null")
		cmd.Dir, cmd.Env = f.repo, append(os.Environ(), f.env()...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		return string(out)
	}
	if out := onTTY("up"); !strings.Contains(out, "approved "+filepath.Join(f.repo, "binky.toml")) {
		t.Errorf("the first up approves the file and does not say so:\n%s", out)
	}
	if out := onTTY("up"); strings.Contains(out, "approved ") {
		t.Errorf("an up of an approved file says it approves it:\n%s", out)
	}
	if err := os.WriteFile(filepath.Join(f.repo, "binky.toml"), []byte(oneService+"# changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := onTTY("reload"); !strings.Contains(out, "approved ") {
		t.Errorf("reload approved a changed file without a word:\n%s", out)
	}
}

// A worktree deleted with rm -rf while its world ran: down and remove
// refused ("its folder is gone: run git worktree prune") and its services
// ran on in a folder that was no more. Both act from the machine record.
func TestDownAndRemoveWorkOnAWorktreeWhoseFolderWasDeleted(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "up", "feat")
	pid := f.world("feat").Services[0].PID
	wt := filepath.Join(filepath.Dir(f.repo), "feat")
	if err := os.RemoveAll(wt); err != nil {
		t.Fatal(err)
	}
	f.mustBinky(f.repo, "down", "feat")
	f.eventually("the service stopped", func() bool { return !pidAlive(pid) })
	f.mustBinky(f.repo, "remove", "feat")
	if out := f.mustGit(f.repo, "worktree", "list"); strings.Contains(out, wt) {
		t.Errorf("git still lists the removed worktree:\n%s", out)
	}
	if _, ok := f.find("feat"); ok {
		t.Error("the world is still in status after remove")
	}
	// Review: one that never had a world was refused, the message saying
	// to run remove.
	other := filepath.Join(filepath.Dir(f.repo), "never")
	f.mustGit(f.repo, "-c", "core.hooksPath=/nonexistent", "worktree", "add", "-q", other, "-b", "never")
	if err := os.RemoveAll(other); err != nil {
		t.Fatal(err)
	}
	f.mustBinky(f.repo, "remove", "never")
	if out := f.mustGit(f.repo, "worktree", "list"); strings.Contains(out, other) {
		t.Errorf("git still lists the removed worktree:\n%s", out)
	}
}

// Attack: a worktree's folder deleted and replaced by a link to another
// worktree was taken for present, with the other's path: its remove
// removed the other worktree, ignored files and all.
func TestRemovingAWorktreeWhoseFolderIsALinkToAnotherLeavesTheOther(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "up", "b")
	f.mustBinky(f.repo, "up", "c")
	b, c := filepath.Join(filepath.Dir(f.repo), "b"), filepath.Join(filepath.Dir(f.repo), "c")
	kept := filepath.Join(c, "ignored.log")
	if err := os.WriteFile(kept, []byte("c's own\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(b); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(c, b); err != nil {
		t.Fatal(err)
	}
	f.binky(f.repo, "remove", "--force", "b")
	if _, err := os.Stat(kept); err != nil {
		t.Fatalf("removing b removed c's files: %v", err)
	}
	if w := f.world("c"); w.Missing || len(w.Services) == 0 || !pidAlive(w.Services[0].PID) {
		t.Errorf("c's world after b's remove: %+v", w)
	}
	if out := f.mustGit(f.repo, "worktree", "list"); !strings.Contains(out, c) {
		t.Errorf("c is no longer a worktree:\n%s", out)
	}
}

// A service deleted from binky.toml leaves the world at its next up: status
// showed it forever, and up counted it among the world's services.
func TestAServiceRemovedFromTheConfigLeavesTheWorld(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up")
	f.mustBinky(f.repo, "down")
	only := strings.SplitN(twoServices, "[services.web]", 2)[0]
	if err := os.WriteFile(filepath.Join(f.repo, "binky.toml"), []byte(only), 0o644); err != nil {
		t.Fatal(err)
	}
	out := f.mustBinky(f.repo, "up")
	if !strings.Contains(out, "(1 service") {
		t.Errorf("up counts a deleted service:\n%s", out)
	}
	for _, s := range f.world("acme").Services {
		if s.Name == "web" {
			t.Errorf("the deleted service web is still in the world: %+v", s)
		}
	}
}

// An up of a running world whose file swapped one service for another
// stops the deleted one and starts the new one. The daemon crashed: it
// started the union of what ran and what was asked, deleted service
// included, and found no config for it.
func TestUpOfARunningWorldWhoseFileSwappedAServiceStartsTheNewOne(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up")
	web := service(f.world("acme"), "web")
	swapped := strings.SplitN(twoServices, "[services.web]", 2)[0] + `[services.worker]
cmd = "exec sleep 60"
`
	if err := os.WriteFile(filepath.Join(f.repo, "binky.toml"), []byte(swapped), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := f.binky(f.repo, "up"); err != nil {
		t.Fatalf("up: %v\n%s", err, stderr)
	}
	w := f.world("acme")
	if s := service(w, "worker"); s.State != "running" || s.PID == 0 {
		t.Errorf("worker = %+v, want running", s)
	}
	for _, s := range w.Services {
		if s.Name == "web" {
			t.Errorf("the deleted service web is still in the world: %+v", s)
		}
	}
	if pidAlive(web.PID) {
		t.Errorf("the deleted service web (pid %d) still runs", web.PID)
	}
}

// A oneshot's dependents start once it has exited 0, and status says it is
// done.
func TestAOneshotRunsBeforeWhatDependsOnIt(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.migrate]
cmd = "sleep 0.3; touch ${env.GC_DIR}/migrated"
oneshot = true
[services.api]
cmd = "test -e ${env.GC_DIR}/migrated && exec testsvc"
url = "api"
env = { SERVICE = "api" }
depends_on = ["migrate"]
`)
	f.mustBinky(f.repo, "up")
	w := f.world("acme")
	if s := service(w, "migrate"); s.State != "done" || s.ExitCode == nil || *s.ExitCode != 0 {
		t.Errorf("migrate = %+v, want done with exit 0", s)
	}
	if s := service(w, "api"); s.State != "healthy" {
		t.Errorf("api = %+v: it started before the migration ended", s)
	}
}

// up of a branch with a '/' makes one folder beside the repository, not a
// folder per part (left behind by remove), and finds it by its branch.
func TestUpOfABranchWithASlashMakesOneFolder(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up", "feature/login")
	flat := filepath.Join(filepath.Dir(f.repo), "feature-login")
	if _, err := os.Stat(filepath.Join(flat, "binky.toml")); err != nil {
		t.Fatalf("no worktree at %s: %v", flat, err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(f.repo), "feature")); err == nil {
		t.Errorf("up made a folder per part of the branch's name")
	}
	if out := f.mustBinky(f.repo, "env", "feature/login"); !strings.Contains(out, "API_PORT=") {
		t.Errorf("env by branch name:\n%s", out)
	}
	if b := f.mustGit(flat, "branch", "--show-current"); strings.TrimSpace(b) != "feature/login" {
		t.Errorf("its branch is %q", b)
	}
	f.mustBinky(f.repo, "remove", "feature/login", "--force")
	if _, err := os.Stat(flat); err == nil {
		t.Errorf("remove left %s", flat)
	}
}

// One corrupt world record stopped status and every new world's up; now
// status names it beside the others, doctor says what to do, and new
// worlds come up.
func TestACorruptRecordStopsNeitherStatusNorANewWorld(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up", "one")
	f.mustBinky(f.repo, "down", "one")
	paths, _ := filepath.Glob(filepath.Join(f.home, "worlds", "*.json"))
	if len(paths) != 1 {
		t.Fatalf("records: %v", paths)
	}
	if err := os.WriteFile(paths[0], []byte(`{"id": "trunc`), 0o600); err != nil {
		t.Fatal(err)
	}
	f.mustBinky(f.repo, "up", "two")
	out := f.mustBinky(f.repo, "status")
	if !strings.Contains(out, "two") || !strings.Contains(out, "is corrupt") {
		t.Errorf("status with a corrupt record:\n%s", out)
	}
	if out, _, _ := f.binky(f.repo, "doctor"); !strings.Contains(out, "is corrupt") {
		t.Errorf("doctor does not name the corrupt record:\n%s", out)
	}
}

// After a daemon restart a done oneshot was left out of the adopted world:
// the next up found the world incomplete and restarted it, migration and
// all, and 'service restart' did not know the oneshot.
func TestADoneOneshotIsPartOfTheWorldAfterADaemonRestart(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.migrate]
cmd = "echo ran >> ${env.GC_DIR}/migrations"
oneshot = true
[services.api]
cmd = "testsvc"
url = "api"
env = { SERVICE = "api" }
depends_on = ["migrate"]
`)
	f.mustBinky(f.repo, "up")
	before := service(f.world("acme"), "api").PID
	f.mustBinky(f.repo, "daemon", "stop")
	f.mustBinky(f.repo, "up")
	if after := service(f.world("acme"), "api").PID; after != before {
		t.Errorf("up after a daemon restart restarted api (pid %d, then %d)", before, after)
	}
	if b, _ := os.ReadFile(filepath.Join(f.gcDir, "migrations")); strings.Count(string(b), "ran") != 1 {
		t.Errorf("the migration ran %d times, want once", strings.Count(string(b), "ran"))
	}
	f.mustBinky(f.repo, "service", "restart", "migrate")
	if b, _ := os.ReadFile(filepath.Join(f.gcDir, "migrations")); strings.Count(string(b), "ran") != 2 {
		t.Errorf("service restart migrate: the migration ran %d times in all, want twice", strings.Count(string(b), "ran"))
	}
}

// A reload with a binky.toml that no longer loads (a typo mid-edit) is
// refused and the world runs on: it stopped the world, then failed.
func TestAReloadOfABrokenFileLeavesTheWorldRunning(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up")
	t.Cleanup(func() { f.binky(f.repo, "down") })
	api := service(f.world("acme"), "api")
	if err := os.WriteFile(filepath.Join(f.repo, "binky.toml"), []byte(twoServices+"bogus_key = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := f.binky(f.repo, "reload"); err == nil || !strings.Contains(stderr, "bogus_key") {
		t.Errorf("reload of a broken file: %v\n%s", err, stderr)
	}
	w := f.world("acme")
	if now := service(w, "api"); w.State != "running" || now.PID != api.PID || !pidAlive(api.PID) {
		t.Errorf("after the refused reload: world %q, api %+v (was pid %d)", w.State, now, api.PID)
	}
}

// A world of oneshots alone, all done, is the daemon's again after a
// restart: it was left out (no process was alive), so 'service restart'
// said it was not running and the next up ran its oneshots again.
func TestAWorldOfDoneOneshotsIsAdoptedAfterADaemonRestart(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.seed]
cmd = "echo ran >> ${env.GC_DIR}/seeds"
oneshot = true
`)
	f.mustBinky(f.repo, "up")
	f.mustBinky(f.repo, "daemon", "stop")
	f.mustBinky(f.repo, "up")
	if b, _ := os.ReadFile(filepath.Join(f.gcDir, "seeds")); strings.Count(string(b), "ran") != 1 {
		t.Errorf("up after a daemon restart ran the oneshot again: it ran %d times", strings.Count(string(b), "ran"))
	}
	f.mustBinky(f.repo, "daemon", "stop")
	f.mustBinky(f.repo, "service", "restart", "seed")
	if b, _ := os.ReadFile(filepath.Join(f.gcDir, "seeds")); strings.Count(string(b), "ran") != 2 {
		t.Errorf("service restart seed: it ran %d times in all, want twice", strings.Count(string(b), "ran"))
	}
	if w := f.world("acme"); w.State != "running" || service(w, "seed").State != "done" {
		t.Errorf("world %q, seed %+v; want running and done", w.State, service(w, "seed"))
	}
}

// A oneshot that never ends held its up, and the world's lock, for good:
// down and remove waited behind it. A down ends the start.
func TestADownEndsAnUpWaitingForAOneshot(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.migrate]
cmd = "echo waiting for a lock; exec sleep 1000"
oneshot = true
[services.api]
cmd = "testsvc"
url = "api"
env = { SERVICE = "api" }
depends_on = ["migrate"]
`)
	up := exec.Command(filepath.Join(binDir, "git-binky"), "up")
	up.Dir, up.Env = f.repo, append(os.Environ(), f.env()...)
	var upErr strings.Builder
	up.Stderr = &upErr
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	ended := false
	t.Cleanup(func() { // a failed test leaves no up waiting, nor its oneshot
		if !ended {
			up.Process.Kill()
			up.Wait()
		}
		f.binky(f.repo, "down")
	})
	var pid int
	for deadline := time.Now().Add(20 * time.Second); pid == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the oneshot never started")
		}
		for _, w := range f.status().Worlds { // no world yet until its record is made
			if w.Worktree == "acme" {
				pid = service(w, "migrate").PID
			}
		}
	}
	start := time.Now()
	f.mustBinky(f.repo, "down")
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("down took %s behind the oneshot", took)
	}
	err := up.Wait()
	ended = true
	if err == nil || !strings.Contains(upErr.String(), "a down or remove came") {
		t.Errorf("up: %v, stderr:\n%s", err, upErr.String())
	}
	if w := f.world("acme"); w.State != "stopped" {
		t.Errorf("after down: state %q, message %q", w.State, w.Message)
	}
	if signalPID(pid, 0) == nil {
		t.Errorf("the oneshot (pid %d) outlived the down", pid)
	}
}

// A program that took a stopped service's port answered its TCP probe:
// 'service start' said healthy of a service that had exited with
// EADDRINUSE, and its restarts never ended. The start now fails, naming the
// port.
func TestAServiceWhosePortAnotherProgramHoldsDoesNotStart(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.web]
cmd = "testsvc"
url = "web"
env = { SERVICE = "web" }
health = { tcp = true }
`)
	f.mustBinky(f.repo, "up")
	port := service(f.world("acme"), "web").Port
	f.mustBinky(f.repo, "service", "stop", "web")
	l, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, stderr, err := f.binky(f.repo, "service", "start", "web")
	if err == nil || !strings.Contains(stderr, "is in use by another program") {
		t.Errorf("service start with its port held: %v\n%s", err, stderr)
	}
	if s := service(f.world("acme"), "web"); s.State == "healthy" {
		t.Errorf("web is %s while another program holds its port", s.State)
	}
}

// gatedOneshot is a world whose migration (a oneshot) waits for good while
// the file $GC_DIR/hang exists, and whose slow service ignores SIGTERM for
// its stop_timeout.
const gatedOneshot = `[project]
name = "acme"
[services.migrate]
cmd = "if [ -e ${env.GC_DIR}/hang ]; then exec sleep 1000; fi"
oneshot = true
[services.slow]
cmd = "trap '' TERM; while :; do sleep 0.1; done"
stop_timeout = "3s"
[services.api]
cmd = "testsvc"
url = "api"
env = { SERVICE = "api" }
depends_on = ["migrate"]
`

// startBinky runs binky in the background; its stderr is returned once it
// has exited (wait). A failed test kills it.
func (f *fixture) startBinky(dir string, args ...string) (wait func() (string, error)) {
	f.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "git-binky"), args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), f.env()...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	done := false
	f.t.Cleanup(func() {
		if !done {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	return func() (string, error) {
		err := cmd.Wait()
		done = true
		return stderr.String(), err
	}
}

// waitOneshotStarting waits until world name's migrate is starting, and
// returns its pid.
func (f *fixture) waitOneshotStarting(name string) int {
	f.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			f.t.Fatal("the oneshot never started")
		}
		for _, w := range f.status().Worlds {
			if s := service(w, "migrate"); w.Worktree == name && s.State == "starting" && s.PID != 0 {
				return s.PID
			}
		}
	}
}

// An up a reload cuts off says so, and that the reload starts the world:
// it said "a down, reload or remove came", as if the world were left
// stopped, and a reset cut off by another reset read as a failure of its
// own (its data was made again all the same).
func TestAnUpAReloadCutsOffSaysTheReloadStartsTheWorld(t *testing.T) {
	f := newFixture(t, gatedOneshot)
	os.WriteFile(filepath.Join(f.gcDir, "hang"), nil, 0o644)
	up := f.startBinky(f.repo, "up")
	f.waitOneshotStarting("acme")
	os.Remove(filepath.Join(f.gcDir, "hang"))
	if _, stderr, err := f.binky(f.repo, "reload"); err != nil {
		t.Fatalf("reload: %v\n%s", err, stderr)
	}
	if stderr, err := up(); err == nil || !strings.Contains(stderr, "a reload or reset of the world came while its services started") {
		t.Errorf("the up a reload ended: %v\n%s", err, stderr)
	}
	if w := f.world("acme"); w.State != "running" || service(w, "api").State != "healthy" {
		t.Errorf("after the reload: %s, api %+v", w.State, service(w, "api"))
	}
}

// A daemon asked to stop while an up waits for its oneshot does not cut
// the oneshot off: it finishes the up first, and says so. Meanwhile it
// still answers status and the down that ends that up; other requests
// wait for the next daemon, which then takes them.
func TestADaemonStopFinishesAnUpWaitingForItsOneshotAndAnswersMeanwhile(t *testing.T) {
	f := newFixture(t, gatedOneshot)
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat")
	os.WriteFile(filepath.Join(f.gcDir, "hang"), nil, 0o644)
	up := f.startBinky(f.repo, "up")
	oneshot := f.waitOneshotStarting("acme")
	old := f.daemonPID()

	stop := f.startBinky(f.repo, "daemon", "stop")
	f.eventually("the daemon stopping", func() bool {
		out, _, _ := f.binky(f.repo, "daemon", "status")
		return strings.Contains(out, "stopping: ")
	})
	if w := f.world("acme"); w.State != "starting" || !pidAlive(oneshot) {
		t.Fatalf("during the stop: world %s, oneshot alive %v: want it left starting", w.State, pidAlive(oneshot))
	}
	other := f.startBinky(f.repo, "up", "feat") // waits for the next daemon
	time.Sleep(1500 * time.Millisecond)
	if f.daemonPID() != old {
		t.Fatal("the daemon was replaced while it finished the up")
	}
	os.Remove(filepath.Join(f.gcDir, "hang"))
	f.mustBinky(f.repo, "down") // ends the up: the oneshot sleeps
	if stderr, err := up(); err == nil || !strings.Contains(stderr, "a down or remove came while its services started") {
		t.Errorf("the up a down ended: %v\n%s", err, stderr)
	}
	stderr, err := stop()
	if err != nil || !strings.Contains(stderr, "it exits once the up of acme has started its services ('git -C "+f.repo+" binky down' ends that up now)") {
		t.Errorf("daemon stop: %v\n%s", err, stderr)
	}
	if stderr, err := other(); err != nil || !strings.Contains(stderr, "waiting for the daemon") {
		t.Errorf("up feat during the stop: %v\n%s", err, stderr)
	}
	if f.daemonPID() == old {
		t.Error("the stopped daemon still runs")
	}
	if s := service(f.world("feat"), "api"); s.State != "healthy" {
		t.Errorf("feat's api = %+v: the next daemon did not take its up", s)
	}
	f.mustBinky(f.repo, "down", "feat")
}

// A worktree added while the daemon stops is not lost, nor does git wait
// for the stop: its hook is answered at once, and the next daemon starts
// the world with the environment of the command that added it.
func TestAWorktreeAddedWhileTheDaemonStopsIsTheNextDaemons(t *testing.T) {
	f := newFixture(t, gatedOneshot+`[services.rec]
cmd = "echo \"$MYVAR\" > $GC_DIR/myvar-$(basename \"$PWD\"); exec sleep 60"
`)
	f.mustBinky(f.repo, "install")
	os.WriteFile(filepath.Join(f.gcDir, "hang"), nil, 0o644)
	up := f.startBinky(f.repo, "up")
	f.waitOneshotStarting("acme")
	stop := f.startBinky(f.repo, "daemon", "stop")
	f.eventually("the daemon stopping", func() bool {
		out, _, _ := f.binky(f.repo, "daemon", "status")
		return strings.Contains(out, "stopping: ")
	})
	f.extraEnv = append(f.extraEnv, "MYVAR=from-the-shell")
	began := time.Now()
	f.mustGit(f.repo, "worktree", "add", "-q", "../late", "-b", "late")
	took := time.Since(began)
	f.extraEnv = f.extraEnv[:len(f.extraEnv)-1]
	// Its hook waited 3 s for the stop, then failed: under that, with
	// room for a loaded machine.
	if took > 2800*time.Millisecond {
		t.Errorf("git worktree add took %s during the stop: its hook waited for it", took)
	}
	os.Remove(filepath.Join(f.gcDir, "hang"))
	f.mustBinky(f.repo, "down")
	up()
	if _, err := stop(); err != nil {
		t.Fatalf("daemon stop: %v", err)
	}
	f.mustBinky(f.repo, "status") // starts the next daemon
	f.eventually("late's world started by the next daemon", func() bool {
		b, _ := os.ReadFile(filepath.Join(f.gcDir, "myvar-late"))
		return string(b) == "from-the-shell\n"
	})
	f.mustBinky(f.repo, "down", "late")
}

// An up waiting for its turn when the daemon is asked to stop is not lost:
// its client sends it to the next daemon, where it runs.
func TestAnUpQueuedWhenTheDaemonStopsRunsOnTheNextDaemon(t *testing.T) {
	f := oneAtATime(t, oneService)
	f.mustBinky(f.repo, "up", "a")
	b, bq := f.startUp("b")
	f.awaitQueued(bq)
	old := f.daemonPID()
	f.mustBinky(f.repo, "daemon", "stop")
	f.mustBinky(f.repo, "down", "a") // on the next daemon: b's turn
	if err := b.Wait(); err != nil {
		t.Fatalf("the queued up of b: %v", err)
	}
	if w, _ := f.find("b"); w.State != "running" || f.daemonPID() == old {
		t.Errorf("b = %s on daemon %d (was %d): want it running on the next daemon", w.State, f.daemonPID(), old)
	}
	f.mustBinky(f.repo, "down", "b")
}

// A down that came while the up was still stopping the world's old
// processes (before it started any) was forgotten by the time the up
// reached its oneshot, and waited behind it for good.
func TestADownThatComesBeforeTheUpStartsStillEndsIt(t *testing.T) {
	f := newFixture(t, gatedOneshot)
	f.mustBinky(f.repo, "up")
	t.Cleanup(func() { f.binky(f.repo, "down") })
	f.mustBinky(f.repo, "service", "stop", "api")
	// A changed file: the up starts them all again (a stopped api alone
	// would be started beside the others), the oneshot too.
	if err := os.WriteFile(filepath.Join(f.repo, "binky.toml"), []byte(gatedOneshot+"# changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(f.gcDir, "hang"), nil, 0o644)
	up := f.startBinky(f.repo, "up") // stops slow first: 3 s
	time.Sleep(time.Second)
	start := time.Now()
	f.mustBinky(f.repo, "down")
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("down took %s behind the up's oneshot", took)
	}
	// An up that reached the daemon only after the down would wait for
	// its oneshot for good: it fails below rather than hang the run.
	os.Remove(filepath.Join(f.gcDir, "hang"))
	if stderr, err := up(); err == nil || !strings.Contains(stderr, "a down or remove came") {
		t.Errorf("up: %v, stderr:\n%s", err, stderr)
	}
	if w := f.world("acme"); w.State != "stopped" {
		t.Errorf("after down: state %q, message %q", w.State, w.Message)
	}
}

// 'service restart' of a oneshot that never ends held the world's lock: a
// down waited behind it as long as its client did.
func TestADownEndsAServiceRestartWaitingForAOneshot(t *testing.T) {
	f := newFixture(t, gatedOneshot)
	f.mustBinky(f.repo, "up")
	t.Cleanup(func() { f.binky(f.repo, "down") })
	os.WriteFile(filepath.Join(f.gcDir, "hang"), nil, 0o644)
	restart := f.startBinky(f.repo, "service", "restart", "migrate")
	pid := f.waitOneshotStarting("acme")
	start := time.Now()
	f.mustBinky(f.repo, "down")
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("down took %s behind the restart's oneshot", took)
	}
	if stderr, err := restart(); err == nil || !strings.Contains(stderr, "a down or remove came") {
		t.Errorf("service restart: %v, stderr:\n%s", err, stderr)
	}
	if signalPID(pid, 0) == nil {
		t.Errorf("the oneshot (pid %d) still runs after down", pid)
	}
}

// Removing the worktree of a world whose up waits for its oneshot tears
// the world down: the teardown ended only the up, not its start, and the
// whole repository's worktrees waited behind the oneshot.
func TestRemovingAWorktreeEndsItsUpWaitingForAOneshot(t *testing.T) {
	f := newFixture(t, gatedOneshot)
	os.WriteFile(filepath.Join(f.gcDir, "hang"), nil, 0o644)
	up := f.startBinky(f.repo, "up", "feat")
	pid := f.waitOneshotStarting("feat")
	f.mustGit(f.repo, "worktree", "remove", "--force", filepath.Join(filepath.Dir(f.repo), "feat"))
	f.eventually("feat's world torn down", func() bool {
		_, ok := f.find("feat")
		return !ok
	})
	if _, err := up(); err == nil {
		t.Error("the up of the removed worktree succeeded")
	}
	if signalPID(pid, 0) == nil {
		t.Errorf("the oneshot (pid %d) still runs after its worktree was removed", pid)
	}
}

const grouped = `[project]
name = "acme"
[services.migrate]
cmd = "echo ran >> ${env.GC_DIR}/migrate-runs"
oneshot = true
[services.api]
cmd = "testsvc"
url = "api"
env = { SERVICE = "api" }
health = { http = "/healthz" }
depends_on = ["migrate"]
[services.worker]
cmd = "exec sleep 60"
depends_on = ["api"]
[services.broken]
cmd = "testsvc -exit 3"
url = "broken"
[groups]
default = ["api"]
jobs = ["worker"]
bad = ["broken"]
`

// An up of another group on a running world starts that group's services
// beside the running ones: the API keeps its process (and its clients
// their connections), a migration that ran is not run again, and a group
// that fails to start takes down only what it started.
func TestUpOfAnotherGroupLeavesTheRunningServicesRunning(t *testing.T) {
	f := newFixture(t, grouped)
	f.mustBinky(f.repo, "up")
	apiSvc := service(f.world("acme"), "api")
	if apiSvc.State != "healthy" || apiSvc.PID == 0 {
		t.Fatalf("api = %+v, want healthy", apiSvc)
	}

	// The proxy's 503 for a service of a group the world does not run
	// names that group.
	env := f.mustBinky(f.repo, "env", "--dotenv")
	host := regexp.MustCompile(`BROKEN_URL=http://([^:]+):`).FindStringSubmatch(env)
	if host == nil {
		t.Fatalf("no BROKEN_URL in:\n%s", env)
	}
	if code, body, err := f.viaProxy(host[1], "/"); err != nil || code != 503 || !strings.Contains(body, " --group bad\n") {
		t.Errorf("broken through the proxy: %d %q %v, want a 503 naming --group bad", code, body, err)
	}

	f.mustBinky(f.repo, "up", "--group", "jobs")
	w := f.world("acme")
	if s := service(w, "api"); s.PID != apiSvc.PID || s.State != "healthy" {
		t.Errorf("api = %+v, want still healthy as pid %d", s, apiSvc.PID)
	}
	worker := service(w, "worker")
	if worker.State != "running" || worker.PID == 0 {
		t.Errorf("worker = %+v, want running", worker)
	}
	if b, _ := os.ReadFile(filepath.Join(f.gcDir, "migrate-runs")); strings.Count(string(b), "ran") != 1 {
		t.Errorf("migrate ran %d times, want once", strings.Count(string(b), "ran"))
	}
	if body := get(t, apiSvc.Port); !strings.Contains(body, "api") {
		t.Errorf("api answers %q", body)
	}

	_, stderr, err := f.binky(f.repo, "up", "--group", "bad")
	if err == nil || !strings.Contains(stderr, "exited with code 3") || !strings.Contains(stderr, "the services that were running run on") {
		t.Fatalf("up of a failing group: %v\n%s", err, stderr)
	}
	w = f.world("acme")
	if w.State != "running" {
		t.Errorf("world = %s (%s), want running: its services still run", w.State, w.Message)
	}
	if s := service(w, "broken"); s.Name != "" {
		t.Errorf("broken = %+v: a service that never started is in the world", s)
	}
	// The failed group is not the world's: a plain up finds it up, and
	// neither starts broken again nor touches the others.
	if _, stderr, err := f.binky(f.repo, "up"); err != nil {
		t.Errorf("up after a failed group: %v\n%s", err, stderr)
	}
	for _, was := range []api.Service{apiSvc, worker} {
		if s := service(w, was.Name); s.PID != was.PID || !pidAlive(was.PID) {
			t.Errorf("%s = %+v, want still pid %d", was.Name, s, was.PID)
		}
	}

	// What the record says is what a new daemon adopts: the same processes.
	f.mustBinky(f.repo, "daemon", "stop")
	w = f.world("acme")
	for _, was := range []api.Service{apiSvc, worker} {
		if s := service(w, was.Name); s.PID != was.PID {
			t.Errorf("after a daemon restart %s = %+v, want pid %d adopted", was.Name, s, was.PID)
		}
	}
	// Nor does an up of another group that starts something (broken no
	// longer in its group).
	f.mustBinky(f.repo, "service", "stop", "worker")
	f.mustBinky(f.repo, "up", "--group", "jobs")
	w = f.world("acme")
	if s := service(w, "broken"); s.Name != "" {
		t.Errorf("broken = %+v: an up started it again", s)
	}
	worker = service(w, "worker")
	if worker.State != "running" || service(w, "api").PID != apiSvc.PID {
		t.Errorf("after up --group jobs: worker %+v, api %+v", worker, service(w, "api"))
	}
	f.mustBinky(f.repo, "down")
	for _, was := range []api.Service{apiSvc, worker} {
		if pidAlive(was.PID) {
			t.Errorf("%s (pid %d) survived down", was.Name, was.PID)
		}
	}
}

// A reload starts again what the world ran, not only its default group:
// the worker an up --group added comes back beside the API.
func TestReloadStartsAgainTheServicesAnUpOfAnotherGroupAdded(t *testing.T) {
	f := newFixture(t, grouped)
	f.mustBinky(f.repo, "up")
	f.mustBinky(f.repo, "up", "--group", "jobs")
	before := f.world("acme")

	f.mustBinky(f.repo, "reload")
	w := f.world("acme")
	for _, name := range []string{"api", "worker"} {
		was, s := service(before, name), service(w, name)
		if s.PID == 0 || s.PID == was.PID || (s.State != "healthy" && s.State != "running") {
			t.Errorf("after reload %s = %+v, want started again (was pid %d)", name, s, was.PID)
		}
		if pidAlive(was.PID) {
			t.Errorf("%s's old process (pid %d) survived the reload", name, was.PID)
		}
	}
	if s := service(w, "broken"); s.Name != "" {
		t.Errorf("broken = %+v: a reload started a group the world never ran", s)
	}
	f.mustBinky(f.repo, "down")
}

// A reload that its up would refuse (a group the file lacks, a ${env.X}
// of a service the world ran that the caller has not set) is refused
// before anything stops: the world runs on, what it ran intact.
func TestAReloadItsUpWouldRefuseLeavesTheWorldRunning(t *testing.T) {
	f := newFixture(t, strings.Replace(grouped, `cmd = "exec sleep 60"`, `cmd = "exec sleep 60 ${env.WTOK}"`, 1))
	withWTOK := func(args ...string) {
		t.Helper()
		f.extraEnv = append(f.extraEnv, "WTOK=5")
		defer func() { f.extraEnv = f.extraEnv[:len(f.extraEnv)-1] }()
		f.mustBinky(f.repo, args...)
	}
	f.mustBinky(f.repo, "up")
	withWTOK("up", "--group", "jobs")
	before := f.world("acme")

	if _, stderr, err := f.binky(f.repo, "reload", "--group", "nope"); err == nil || !strings.Contains(stderr, `no group "nope"`) {
		t.Errorf("reload --group nope: %v\n%s", err, stderr)
	}
	if _, stderr, err := f.binky(f.repo, "reload"); err == nil || !strings.Contains(stderr, "WTOK") {
		t.Errorf("reload without WTOK: %v\n%s", err, stderr)
	}
	w := f.world("acme")
	for _, name := range []string{"api", "worker"} {
		if s := service(w, name); s.PID != service(before, name).PID || !pidAlive(s.PID) {
			t.Errorf("%s = %+v after refused reloads, want pid %d still running", name, s, service(before, name).PID)
		}
	}
	withWTOK("reload")
	if s := service(f.world("acme"), "worker"); s.State != "running" || s.PID == service(before, "worker").PID {
		t.Errorf("worker after a reload with WTOK = %+v, want started again", s)
	}
	f.mustBinky(f.repo, "down")
}

// A worker binky cannot probe (no port, no health check) that dies at once
// fails its up, rather than crash-loop behind a ✓.
func TestAnUpFailsWhenAWorkerWithNothingToProbeDiesAtOnce(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.api]
cmd = "testsvc"
url = "api"
env = { SERVICE = "api" }
[services.worker]
cmd = "echo 'NOPERM this user has no permissions' >&2; exit 3"
`)
	stdout, stderr, err := f.binky(f.repo, "up")
	if err == nil || !strings.Contains(stderr, "service worker exited with code 3 within 1s of its start") || !strings.Contains(stderr, "NOPERM") || strings.Contains(stdout, "✓") {
		t.Fatalf("up with a dying worker: %v\n%s%s", err, stdout, stderr)
	}
	if w := f.world("acme"); w.State == "running" {
		t.Errorf("world = %s, want not running", w.State)
	}
}

// webAndJobs is two processes of their own, each in its own group.
const webAndJobs = `[project]
name = "acme"
[services.web]
cmd = "exec sleep 60"
[services.worker]
cmd = "exec sleep 60"
[groups]
default = ["web"]
jobs = ["worker"]
`

// A reload of a world that ran one group alone starts that group again,
// not the default group beside it.
func TestAReloadOfAWorldThatRanOneGroupStartsThatGroup(t *testing.T) {
	f := newFixture(t, webAndJobs)
	f.mustBinky(f.repo, "up", "--group", "jobs")
	before := service(f.world("acme"), "worker")
	f.mustBinky(f.repo, "reload")
	w := f.world("acme")
	if s := service(w, "worker"); s.State != "running" || s.PID == before.PID {
		t.Errorf("worker = %+v, want running again (was pid %d)", s, before.PID)
	}
	if s := service(w, "web"); s.PID != 0 {
		t.Errorf("web = %+v: the reload started the default group, which the world did not run", s)
	}
	f.mustBinky(f.repo, "down")
}

// A service an up --group added that crashed is the world's still after
// a daemon restart: a reload starts it again.
func TestAReloadAfterADaemonRestartStartsAnAddedServiceThatCrashed(t *testing.T) {
	f := newFixture(t, strings.Replace(grouped, `cmd = "exec sleep 60"`, `cmd = "sleep 2; exit 3"
restart = "no"`, 1))
	f.mustBinky(f.repo, "up")
	f.mustBinky(f.repo, "up", "--group", "jobs")
	f.eventually("worker crashed", func() bool { return service(f.world("acme"), "worker").State == "crashed" })
	f.mustBinky(f.repo, "daemon", "stop")
	out := f.mustBinky(f.repo, "reload")
	if !strings.Contains(out, "reloaded") {
		t.Logf("reload said: %s", out)
	}
	if s := service(f.world("acme"), "worker"); s.Restarts != 0 || (s.State != "running" && s.State != "crashed") || s.Started == nil {
		t.Errorf("worker after the reload = %+v, want started again", s)
	}
	f.mustBinky(f.repo, "down")
}

// An up of another group restarts the running services after all when
// they would not start as they run: an env_file changed since (a service
// beside them with the new value, they with the old, is no world).
func TestUpOfAnotherGroupAfterAnEnvFileChangedRestartsTheWorld(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
env_file = ".env"
[services.api]
cmd = "testsvc"
url = "api"
env = { SERVICE = "api" }
[services.worker]
cmd = "exec sleep 60"
[groups]
default = ["api"]
jobs = ["worker"]
`)
	env := filepath.Join(f.repo, ".env")
	if err := os.WriteFile(env, []byte("FOO=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.mustBinky(f.repo, "up")
	before := service(f.world("acme"), "api")
	if err := os.WriteFile(env, []byte("FOO=2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.mustBinky(f.repo, "up", "--group", "jobs")
	w := f.world("acme")
	apiSvc, worker := service(w, "api"), service(w, "worker")
	if apiSvc.PID == before.PID || pidAlive(before.PID) {
		t.Errorf("api = %+v, want restarted (it ran as pid %d with FOO=1)", apiSvc, before.PID)
	}
	for _, s := range []api.Service{apiSvc, worker} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", s.PID))
		if err != nil {
			t.Skipf("no /proc: %v", err)
		}
		if !strings.Contains("\x00"+string(b), "\x00FOO=2\x00") {
			t.Errorf("%s runs without FOO=2", s.Name)
		}
	}
}

// A daemon killed while an up widens a world leaves the services that ran
// before it to the next daemon, which adopts them: they were not part of
// a start it cut off.
func TestADaemonKilledDuringAnUpOfAnotherGroupLeavesTheRunningServices(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.api]
cmd = "testsvc"
url = "api"
env = { SERVICE = "api" }
[services.slow]
cmd = "exec sleep 60"
health = { cmd = "false", start_period = "30s" }
[groups]
default = ["api"]
slow = ["slow"]
`)
	f.mustBinky(f.repo, "up")
	apiSvc := service(f.world("acme"), "api")
	wait := f.startBinky(f.repo, "up", "--group", "slow")
	var slow api.Service
	f.eventually("slow starting", func() bool {
		slow = service(f.world("acme"), "slow")
		return slow.PID != 0
	})
	f.killDaemon()
	wait()
	w := f.world("acme")
	if s := service(w, "api"); s.PID != apiSvc.PID || !pidAlive(apiSvc.PID) {
		t.Errorf("api = %+v, want still pid %d, adopted", s, apiSvc.PID)
	}
	if w.State != "running" {
		t.Errorf("world = %s (%s), want running", w.State, w.Message)
	}
	// What the cut-off up was adding is stopped, not adopted as the
	// world's (a oneshot's unseen exit would pass for done).
	if s := service(w, "slow"); s.Name != "" || pidAlive(slow.PID) {
		t.Errorf("slow = %+v (pid %d alive: %v), want stopped and gone", s, slow.PID, pidAlive(slow.PID))
	}
}

// Git runs `git binky` (and its hook) with git's exec path first on PATH
// and in GIT_EXEC_PATH. A service gets the PATH of the shell that ran git,
// as after `binky up`: not git's helper programs ahead of the user's own.
func TestAServiceGetsTheShellsPathNotGits(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.show]
cmd = "echo \"$PATH|${GIT_EXEC_PATH:-unset}\" > ${env.GC_DIR}/${worktree.name}.path"
oneshot = true
`)
	execPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	gitCore := strings.TrimSpace(string(execPath))
	shellPath := binDir + string(os.PathListSeparator) + os.Getenv("PATH")
	if strings.HasPrefix(shellPath, gitCore) {
		t.Skipf("this shell's PATH already starts with git's exec path %s", gitCore)
	}
	f.mustGit(f.repo, "binky", "up")                                    // by git, as a user types it
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat") // the hook's up
	for _, name := range []string{"acme", "feat"} {
		var b []byte
		f.eventually(name+"'s service ran", func() bool {
			b, err = os.ReadFile(filepath.Join(f.gcDir, name+".path"))
			return err == nil && len(b) > 0
		})
		if got, want := strings.TrimSpace(string(b)), shellPath+"|unset"; got != want {
			t.Errorf("%s's service saw PATH|GIT_EXEC_PATH\n%s\nwant the shell's\n%s", name, got, want)
		}
	}
}

// A service that prints its credentials and dies: up's error, status and
// the daemon's log quote its last output and its health command with the
// credentials hidden, as logs and verify do. They showed the world's
// password in clear, and the record kept it for every later status.
func TestACrashQuotesTheServicesOutputWithItsCredentialsHidden(t *testing.T) {
	const token = "k3y-5f1c9a7e2b4d6080a1b2"
	for what, c := range map[string]struct{ config, quote string }{
		"its last output": {`[services.api]
cmd = "echo connecting with $API_TOKEN; exit 3"
url = "api"
env = { API_TOKEN = "${env.SHOP_TOKEN}" }
`, "connecting with"},
		"its health command and what it printed": {`[services.api]
cmd = "exec testsvc"
url = "api"
env = { SERVICE = "api", PROBE_TOKEN = "${env.SHOP_TOKEN}" }
health = { cmd = "echo denied for $PROBE_TOKEN ${env.SHOP_TOKEN}; exit 1", start_period = "1s" }
`, "denied for"},
	} {
		t.Run(what, func(t *testing.T) {
			f := newFixture(t, "[project]\nname = \"acme\"\n"+c.config)
			f.extraEnv = append(f.extraEnv, "SHOP_TOKEN="+token)
			_, stderr, err := f.binky(f.repo, "up")
			if err == nil {
				t.Fatal("up succeeded")
			}
			if !strings.Contains(stderr, c.quote) {
				t.Fatalf("up's error does not quote %q, so this test proves nothing:\n%s", c.quote, stderr)
			}
			statusOut, _, _ := f.binky(f.repo, "status", "--json")
			log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
			for where, text := range map[string]string{"up's error": stderr, "status": statusOut, "the daemon's log": string(log)} {
				if strings.Contains(text, token) {
					t.Errorf("%s shows the credential:\n%s", where, text)
				}
			}
		})
	}
}

// An env file edited under a running world: up approves it and says so
// (naming the env file, not binky.toml), and says the services still run
// with what they started with until a reload, which starts them with it.
func TestUpOfARunningWorldWhoseEnvFileChangedSaysReloadRunsIt(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
env_file = ".env"
[services.api]
cmd = "echo secret=$APP_SECRET > ${env.GC_DIR}/seen; exec testsvc"
url = "api"
env = { SERVICE = "api" }
`)
	envFile := filepath.Join(f.repo, ".env")
	os.WriteFile(envFile, []byte("APP_SECRET=first\n"), 0o600)
	f.mustBinky(f.repo, "up")
	os.WriteFile(envFile, []byte("APP_SECRET=second\n"), 0o600)
	_, stderr, err := f.binky(f.repo, "up")
	if err != nil {
		t.Fatalf("up: %v\n%s", err, stderr)
	}
	// It names the variable that differs, never its value.
	for _, want := range []string{"the env file .env", "already up, its services running with the environment they started with, which differs now in APP_SECRET", "'git binky reload'"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("up does not say %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "first") || strings.Contains(stderr, "second") {
		t.Errorf("up quotes the variable's value:\n%s", stderr)
	}
	if strings.Contains(stderr, "binky.toml it started with") {
		t.Errorf("up blames binky.toml, which did not change:\n%s", stderr)
	}
	// After a reload the service runs with the new file, and an up has
	// nothing to say.
	f.mustBinky(f.repo, "reload")
	if b, _ := os.ReadFile(filepath.Join(f.gcDir, "seen")); strings.TrimSpace(string(b)) != "secret=second" {
		t.Errorf("after reload the service saw %q", b)
	}
	if _, stderr, _ := f.binky(f.repo, "up"); strings.Contains(stderr, "environment they started with") || strings.Contains(stderr, "approved") {
		t.Errorf("an up after the reload still says something changed:\n%s", stderr)
	}
}

// A binky.toml mid-edit (it does not load) does not cut a running world
// off its logs, a service restart or curl: they act from the config the
// world was started with, which its services run, and logs says so.
func TestARunningWorldsLogsAndRestartOutliveABrokenFile(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up")
	t.Cleanup(func() { f.binky(f.repo, "down") })
	was := service(f.world("acme"), "api").PID
	if err := os.WriteFile(filepath.Join(f.repo, "binky.toml"), []byte(twoServices+"[services.bad\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := f.binky(f.repo, "logs", "--service", "api")
	if err != nil || !strings.Contains(stderr, "binky.toml is broken, so binky used the config its world was started with") || !strings.Contains(stderr, "binky.toml:13:14") {
		t.Errorf("logs with a broken binky.toml: %v\n%s%s", err, out, stderr)
	}
	if _, stderr, err := f.binky(f.repo, "service", "restart", "api"); err != nil {
		t.Fatalf("service restart with a broken binky.toml: %v\n%s", err, stderr)
	}
	if now := service(f.world("acme"), "api"); now.PID == was || now.State != "healthy" {
		t.Errorf("api after the restart: %+v (was pid %d)", now, was)
	}
	if out, stderr, err := f.binky(f.repo, "curl", "acme", "api", "/healthz"); err != nil {
		t.Errorf("curl with a broken binky.toml: %v\n%s%s", err, out, stderr)
	}
	// What acts on the file itself still names its problem.
	if _, stderr, err := f.binky(f.repo, "env"); err == nil || !strings.Contains(stderr, "binky.toml:13:14") {
		t.Errorf("env with a broken binky.toml: %v\n%s", err, stderr)
	}
	// Gone a moment (an editor saving by rename, a stash): the same.
	os.Remove(filepath.Join(f.repo, "binky.toml"))
	if out, stderr, err := f.binky(f.repo, "logs", "--service", "api"); err != nil || !strings.Contains(stderr, "binky.toml is gone") {
		t.Errorf("logs with binky.toml gone: %v\n%s%s", err, out, stderr)
	}
}

// A world whose record was corrupted while its services ran (and deleted,
// as status says to) left them on its ports with no daemon knowing them:
// the next up called them another program's and failed. They carry the
// world's marks: the up stops them, says so, and starts the world.
func TestAnUpStopsItsOwnOrphansWhoseRecordWasLost(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up")
	orphans := f.world("acme").Services
	apiSvc := service(f.world("acme"), "api")
	paths, _ := filepath.Glob(filepath.Join(f.home, "worlds", "*.json"))
	if len(paths) != 1 {
		t.Fatalf("records: %v", paths)
	}
	if err := os.WriteFile(paths[0], nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.mustBinky(f.repo, "daemon", "stop")
	if !pidAlive(apiSvc.PID) {
		t.Fatal("the services went with the daemon: this test proves nothing")
	}
	t.Cleanup(func() { // should the up not stop them, no record names them
		for _, s := range orphans {
			if s.PID != 0 && pidAlive(s.PID) {
				signalPID(-s.PID, syscall.SIGKILL)
			}
		}
	})
	os.Remove(paths[0])
	_, stderr, err := f.binky(f.repo, "up")
	if err != nil {
		t.Fatalf("up after the record was lost: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "stopped processes of this world's services that no daemon supervised") {
		t.Errorf("up does not say what it stopped:\n%s", stderr)
	}
	f.eventually("the orphan api gone", func() bool { return !pidAlive(apiSvc.PID) })
	if now := service(f.world("acme"), "api"); now.State != "healthy" || now.PID == apiSvc.PID {
		t.Errorf("api after the up: %+v", now)
	}
}

// A worker (no port) of a world whose record was deleted ran on when the
// next up started the world again: two workers, consuming one queue. An
// up of a world made again stops its orphans whether or not they hold a
// port it needs.
func TestAnUpStopsItsOrphanWorkerThatHeldNoPort(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.worker]
cmd = "exec sleep 1000"
`)
	f.mustBinky(f.repo, "up")
	orphan := service(f.world("acme"), "worker")
	if orphan.PID == 0 {
		t.Fatalf("worker: %+v", orphan)
	}
	t.Cleanup(func() {
		if pidAlive(orphan.PID) {
			signalPID(-orphan.PID, syscall.SIGKILL)
		}
	})
	f.mustBinky(f.repo, "daemon", "stop")
	if !pidAlive(orphan.PID) {
		t.Fatal("the worker went with the daemon: this test proves nothing")
	}
	paths, _ := filepath.Glob(filepath.Join(f.home, "worlds", "*.json"))
	if len(paths) != 1 {
		t.Fatalf("records: %v", paths)
	}
	os.Remove(paths[0]) // "delete it to forget the world"
	_, stderr, err := f.binky(f.repo, "up")
	if err != nil {
		t.Fatalf("up after the record was deleted: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "stopped processes of this world's services that no daemon supervised") {
		t.Errorf("up does not say what it stopped:\n%s", stderr)
	}
	f.eventually("the orphan worker gone", func() bool { return !pidAlive(orphan.PID) })
	if now := service(f.world("acme"), "worker"); now.PID == 0 || now.PID == orphan.PID {
		t.Errorf("worker after the up: %+v", now)
	}
	// Said once: a down and up later have nothing of the lost record's.
	f.mustBinky(f.repo, "down")
	if _, stderr, _ := f.binky(f.repo, "up"); strings.Contains(stderr, "no daemon supervised") {
		t.Errorf("a later up spoke of orphans again:\n%s", stderr)
	}
}

// Ups of one new name at once: one makes the worktree, the others wait for
// it and bring the same world up. One failed now and then with "no
// binky.toml", having found the worktree git had listed before its files
// were checked out, or took its folder for a stranger's.
func TestUpsOfOneNewNameAtOnceAllBringItUp(t *testing.T) {
	f := newFixture(t, oneService)
	// Files to check out, so that the worktree is listed a while before
	// its binky.toml is there.
	files := map[string]string{}
	for i := range 400 {
		files[fmt.Sprintf("src/f%03d.txt", i)] = strings.Repeat("x", 2000)
	}
	gittest.WriteFiles(t, f.repo, files)
	f.mustGit(f.repo, "add", "-A")
	f.mustGit(f.repo, "commit", "-qm", "files")
	for round := range 3 {
		name := fmt.Sprintf("dup%d", round)
		var wg sync.WaitGroup
		errs := make(chan error, 3)
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, stderr, err := f.binky(f.repo, "up", name); err != nil {
					errs <- fmt.Errorf("up %s: %v: %s", name, err, stderr)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if s := service(f.world(name), "api"); s.State != "healthy" {
			t.Errorf("%s: api %+v", name, s)
		}
	}
}

// An up whose last record save fails (a full disk) is not "✓ up": the
// record said "starting" for good, and the next daemon took the world for
// a cut-off up and stopped it. The up says the services run unrecorded,
// and the next up records them.
func TestAnUpWhoseRecordIsNotSavedSaysSoAndTheNextRecordsIt(t *testing.T) {
	f := newFixture(t, oneService)
	f.extraEnv = append(f.extraEnv, "BINKY_TEST_FAIL_AT=up.record_running")
	out, stderr, err := f.binky(f.repo, "up")
	if err == nil || strings.Contains(out, "✓ up") || !strings.Contains(stderr, "its services run, but its record was not saved") {
		t.Fatalf("up whose record was not saved: %v\n%s%s", err, out, stderr)
	}
	if w := f.world("acme"); w.State != "starting" || service(w, "api").State != "healthy" {
		t.Fatalf("after it: %s %+v", w.State, w.Services)
	}
	f.mustBinky(f.repo, "up")
	if w := f.world("acme"); w.State != "running" {
		t.Errorf("the next up left it %s", w.State)
	}
}

// Two removes of one world at once: both succeed. The one that waited for
// the other said "worktree was not removed, so its world was kept", git
// having found no worktree left to remove.
func TestTwoRemovesOfOneWorldAtOnceBothSucceed(t *testing.T) {
	f := newFixture(t, oneService)
	for round := range 3 {
		name := fmt.Sprintf("rr%d", round)
		f.mustBinky(f.repo, "up", name)
		var wg sync.WaitGroup
		errs := make(chan error, 2)
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, stderr, err := f.binky(f.repo, "remove", name); err != nil {
					errs <- fmt.Errorf("remove %s: %v: %s", name, err, stderr)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if _, ok := f.find(name); ok {
			t.Errorf("%s is still listed", name)
		}
	}
}

// A new start of a world counts from zero: a service an earlier run
// restarted, which this up does not start, showed "stopped, 1 restarts"
// as if this run had restarted it.
func TestANewUpDoesNotShowAnEarlierRunsRestarts(t *testing.T) {
	f := newFixture(t, twoServices+"[groups]\ndefault = [\"api\"]\nboth = [\"api\", \"web\"]\n")
	f.mustBinky(f.repo, "up", "--group", "both")
	before := service(f.world("acme"), "web")
	if err := signalPID(before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	f.eventually("web restarted", func() bool {
		s := service(f.world("acme"), "web")
		return s.State == "healthy" && s.Restarts == 1
	})
	f.mustBinky(f.repo, "down")
	f.mustBinky(f.repo, "up")
	if s := service(f.world("acme"), "web"); s.Restarts != 0 || s.PID != 0 {
		t.Errorf("web, which this up did not start: %+v", s)
	}
}

// A worktree removed while a remove was about to ask git whether it was
// clean: the remove succeeds and the world goes. It failed with git's
// "Unable to read current working directory" when another remove took
// the worktree first (seen once in CI).
func TestARemoveWhoseWorktreeGoesMeanwhileSucceeds(t *testing.T) {
	f := newFixture(t, oneService)
	f.mustBinky(f.repo, "up", "gone")
	wt := f.world("gone").Path
	// The next daemon waits 2 s once a remove has found its world.
	f.mustBinky(f.repo, "daemon", "stop")
	f.extraEnv = []string{"BINKY_TEST_PAUSE_AT=remove.opened"}
	done := make(chan error, 1)
	go func() {
		_, stderr, err := f.binky(f.repo, "remove", "gone")
		if err != nil {
			err = fmt.Errorf("%v: %s", err, stderr)
		}
		done <- err
	}()
	f.eventually("the remove has found its world", func() bool {
		b, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
		return strings.Contains(string(b), "pausing on purpose")
	})
	if out, err := exec.Command("git", "-C", f.repo, "worktree", "remove", "--force", wt).CombinedOutput(); err != nil {
		t.Fatalf("git worktree remove: %v: %s", err, out)
	}
	if err := <-done; err != nil {
		t.Fatalf("remove: %v", err)
	}
	if _, ok := f.find("gone"); ok {
		t.Error("the world is still listed")
	}
}
