package supervisor

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-binky/git-binky/procgroup"
)

// The test binary doubles as the services under test: with BINKY_HELPER set
// it behaves as a small server or a failing program instead of running tests.
func TestMain(m *testing.M) {
	switch os.Getenv("BINKY_HELPER") {
	case "":
		os.Exit(m.Run())
	case "http":
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
		fmt.Println("listening on", os.Getenv("PORT"))
		if err := http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), mux); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "exit":
		fmt.Fprintln(os.Stderr, "helper failing on purpose")
		code, _ := strconv.Atoi(os.Getenv("CODE"))
		os.Exit(code)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func helper(mode string, env ...string) (string, []string) {
	self, _ := os.Executable()
	return fmt.Sprintf("exec %q", self), append([]string{"BINKY_HELPER=" + mode, "PATH=" + os.Getenv("PATH")}, env...)
}

// httpSpec is a service that serves /healthz on a fresh port.
func httpSpec(t *testing.T, name string, deps ...string) (Spec, int) {
	port := freePort(t)
	cmd, env := helper("http", "PORT="+strconv.Itoa(port))
	return Spec{
		Name: name, Cmd: cmd, Env: env, DependsOn: deps, Dir: t.TempDir(),
		Health:      Health{HTTP: fmt.Sprintf("http://127.0.0.1:%d/healthz", port), Interval: 100 * time.Millisecond, StartPeriod: 20 * time.Second},
		LogPath:     filepath.Join(t.TempDir(), name+".log"),
		StopTimeout: 2 * time.Second,
	}, port
}

// waitFor waits for a state change that satisfies ok, failing after 20s.
func waitFor(t *testing.T, events <-chan Event, g *Group, ok func(Status) bool) Status {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		for _, st := range g.Statuses() {
			if ok(st) {
				return st
			}
		}
		select {
		case <-events:
		case <-deadline:
			t.Fatalf("timed out; statuses: %+v", g.Statuses())
		}
	}
}

func TestStartInDependencyOrderAndStopWholeGroups(t *testing.T) {
	api, apiPort := httpSpec(t, "api")
	web, _ := httpSpec(t, "web", "api")
	var mu sync.Mutex
	var order []string
	g, err := NewGroup([]Spec{web, api}, func(st Status) {
		mu.Lock()
		defer mu.Unlock()
		if st.State == Starting || st.State == Healthy {
			order = append(order, st.Name+":"+string(st.State))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop(context.Background()) })
	mu.Lock()
	got := strings.Join(order, " ")
	mu.Unlock()
	if !strings.HasPrefix(got, "api:starting api:healthy web:starting") {
		t.Errorf("events %q: web must start only once api is healthy", got)
	}
	for _, st := range g.Statuses() {
		if st.State != Healthy || st.PID == 0 || st.StartTick == 0 {
			t.Errorf("%s: %+v", st.Name, st)
		}
	}
	apiPGID := g.Statuses()[0].PGID
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if procgroup.GroupAlive(apiPGID) {
		t.Error("api's process group survived Stop")
	}
	if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", apiPort)); err == nil {
		c.Close()
		t.Error("api still listening after Stop")
	}
	for _, st := range g.Statuses() {
		if st.State != Stopped {
			t.Errorf("%s after Stop: %s", st.Name, st.State)
		}
	}
}

func TestStopLeavesNoGrandchild(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "pids")
	s := Spec{Name: "tree", Cmd: fmt.Sprintf("sleep 300 & echo $! >> %s; (sleep 300 & echo $! >> %s; wait) & wait", marker, marker),
		LogPath: filepath.Join(t.TempDir(), "tree.log"), StopTimeout: time.Second}
	g, err := NewGroup([]Spec{s}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pgid := g.Statuses()[0].PGID
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := os.ReadFile(marker)
		if strings.Count(string(b), "\n") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("grandchildren never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := g.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(marker)
	for _, f := range strings.Fields(string(b)) {
		pid, _ := strconv.Atoi(f)
		if procgroup.Alive(pid, 0) {
			t.Errorf("grandchild %d survived", pid)
		}
	}
	if procgroup.GroupAlive(pgid) {
		t.Error("process group survived")
	}
}

// startGroup starts a group of specs, stopped when the test ends, and
// subscribes to its events.
func startGroup(t *testing.T, specs ...Spec) (*Group, <-chan Event) {
	t.Helper()
	g, err := NewGroup(specs, nil)
	if err != nil {
		t.Fatal(err)
	}
	events, cancel := g.Subscribe()
	t.Cleanup(cancel)
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop(context.Background()) })
	return g, events
}

func TestKilledServiceIsRestartedAndHealthyAgain(t *testing.T) {
	api, _ := httpSpec(t, "api")
	g, events := startGroup(t, api)
	first := g.Statuses()[0]
	if err := killPID(first.PID); err != nil {
		t.Fatal(err)
	}
	st := waitFor(t, events, g, func(s Status) bool { return s.State == Healthy && s.PID != first.PID })
	if st.Restarts != 1 {
		t.Errorf("restarts = %d, want 1", st.Restarts)
	}
}

// A restart that died before it became healthy (the database it needs
// was down a moment) was the end: the service stayed crashed for good,
// whatever its restart policy, as if it were failing its first start.
// Only a first start fails so; a restart is retried with backoff.
func TestARestartThatDiesBeforeItIsHealthyIsRetried(t *testing.T) {
	api, _ := httpSpec(t, "api")
	api.Restart = RestartAlways
	broken := filepath.Join(t.TempDir(), "broken")
	api.Cmd = fmt.Sprintf("if [ -e %q ]; then echo not today; exit 3; fi; %s", broken, api.Cmd)
	g, events := startGroup(t, api)
	first := g.Statuses()[0]
	os.WriteFile(broken, nil, 0o600)
	if err := killPID(first.PID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, events, g, func(s Status) bool { return s.State == Crashed && s.Restarts >= 2 })
	os.Remove(broken)
	st := waitFor(t, events, g, func(s Status) bool { return s.State == Healthy && s.PID != first.PID })
	if st.Restarts < 2 {
		t.Errorf("restarts = %d, want the failed ones counted", st.Restarts)
	}
}

// A stop of a service waiting out a restart's backoff (up to 30 s) waited
// for it, timed out ("supervisor did not finish stopping"), and a start
// after it ran beside the old loop, which then woke and started the
// service again. The stop ends the wait.
func TestStoppingAServiceThatWaitsToRestartIsImmediate(t *testing.T) {
	api, _ := httpSpec(t, "api")
	api.Restart = RestartAlways
	api.StopTimeout = 100 * time.Millisecond
	broken := filepath.Join(t.TempDir(), "broken")
	api.Cmd = fmt.Sprintf("if [ -e %q ]; then exit 3; fi; %s", broken, api.Cmd)
	g, events := startGroup(t, api)
	os.WriteFile(broken, nil, 0o600)
	if err := killPID(g.Statuses()[0].PID); err != nil {
		t.Fatal(err)
	}
	// The fifth failure waits 1.6 s, the sixth 3.2 s.
	waitFor(t, events, g, func(s Status) bool { return s.State == Crashed && s.Restarts >= 6 })
	// A start meanwhile answered at once from the first start's readiness.
	if err := g.StartService(context.Background(), "api"); err == nil || !strings.Contains(err.Error(), "waiting to restart") {
		t.Errorf("start of a service waiting to restart: %v, want it refused, saying so", err)
	}
	start := time.Now()
	if err := g.StopService(context.Background(), "api"); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("the stop took %s: it waited for the backoff", took)
	}
	os.Remove(broken)
	if err := g.StartService(context.Background(), "api"); err != nil {
		t.Fatal(err)
	}
	first := waitFor(t, events, g, func(s Status) bool { return s.State == Healthy })
	time.Sleep(4 * time.Second) // past the old loop's backoff, had it lived
	if st := g.Statuses()[0]; st.State != Healthy || st.PID != first.PID {
		t.Errorf("after the old backoff: %+v, want the started one still healthy (pid %d)", st, first.PID)
	}
}

// A stop whose caller went away (Ctrl-C, an MCP timeout) before the
// service's loop ended left the service marked running: the next start
// took the last run's readiness for its own and answered at once, the
// service stopped.
func TestAStartAfterAStopWhoseCallerLeftStartsTheService(t *testing.T) {
	api, _ := httpSpec(t, "api")
	g, events := startGroup(t, api)
	for range 4 {
		gone, leave := context.WithCancel(context.Background())
		leave()
		g.StopService(gone, "api")
		waitFor(t, events, g, func(s Status) bool { return s.State == Stopped })
		if err := g.StartService(context.Background(), "api"); err != nil {
			t.Fatal(err)
		}
		if st := g.Statuses()[0]; st.State != Healthy || st.PID == 0 {
			t.Fatalf("after start: %+v, want it healthy", st)
		}
	}
}

func TestServiceThatExitsAtOnceIsReportedCrashedWithItsCode(t *testing.T) {
	cmd, env := helper("exit", "CODE=3")
	port := freePort(t)
	s := Spec{Name: "api", Cmd: cmd, Env: env, LogPath: filepath.Join(t.TempDir(), "api.log"),
		Health: Health{TCP: fmt.Sprintf("127.0.0.1:%d", port), StartPeriod: 20 * time.Second}}
	g, _ := NewGroup([]Spec{s}, nil)
	err := g.Start(context.Background())
	if err == nil {
		t.Fatal("Start succeeded")
	}
	for _, want := range []string{"service api exited with code 3 before it became healthy", "helper failing on purpose"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	st := g.Statuses()[0]
	if st.State != Crashed || st.ExitCode == nil || *st.ExitCode != 3 {
		t.Errorf("status = %+v, want crashed with exit code 3", st)
	}
}

func TestHealthCheckThatNeverPassesStopsTheOthers(t *testing.T) {
	db, _ := httpSpec(t, "db")
	port := freePort(t)
	cmd, env := helper("http", "PORT="+strconv.Itoa(freePort(t)))
	api := Spec{Name: "api", Cmd: cmd, Env: env, DependsOn: []string{"db"}, LogPath: filepath.Join(t.TempDir(), "api.log"),
		Health: Health{HTTP: fmt.Sprintf("http://127.0.0.1:%d/healthz", port), StartPeriod: 700 * time.Millisecond}}
	g, _ := NewGroup([]Spec{db, api}, nil)
	err := g.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "service api did not become healthy within 700ms; last probe: GET") ||
		!strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v", err)
	}
	for _, st := range g.Statuses() {
		if st.State != Stopped && st.State != Crashed {
			t.Errorf("%s left %s after a failed start", st.Name, st.State)
		}
		if st.PGID != 0 && procgroup.GroupAlive(st.PGID) {
			t.Errorf("%s still running after a failed start", st.Name)
		}
	}
}

func TestDependencyWithoutHealthCheckIsReadyOnceStarted(t *testing.T) {
	worker := Spec{Name: "worker", Cmd: "sleep 300", LogPath: filepath.Join(t.TempDir(), "w.log")}
	api, _ := httpSpec(t, "api", "worker")
	g, _ := NewGroup([]Spec{worker, api}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	g.Stop(context.Background())
}

func TestDependencyRestartDoesNotTakeDependentsDown(t *testing.T) {
	db, _ := httpSpec(t, "db")
	api, _ := httpSpec(t, "api", "db")
	g, _ := NewGroup([]Spec{db, api}, nil)
	events, cancel := g.Subscribe()
	defer cancel()
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop(context.Background()) })
	apiBefore, _ := g.Status("api")
	dbBefore, _ := g.Status("db")
	killPID(dbBefore.PID)
	waitFor(t, events, g, func(s Status) bool { return s.Name == "db" && s.State == Healthy && s.PID != dbBefore.PID })
	apiAfter, _ := g.Status("api")
	if apiAfter.PID != apiBefore.PID || apiAfter.Restarts != 0 {
		t.Errorf("api was restarted with its dependency: %+v -> %+v", apiBefore, apiAfter)
	}
}

func TestAdoptTakesOverRunningServicesAndRefusesAReusedPid(t *testing.T) {
	api, _ := httpSpec(t, "api")
	g1, _ := NewGroup([]Spec{api}, nil)
	if err := g1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := g1.Statuses()[0]
	g1.Close() // the old supervisor goes away; the service keeps running
	if !procgroup.Alive(st.PID, st.StartTick) {
		t.Fatal("service died with its supervisor")
	}

	g2, _ := NewGroup([]Spec{api}, nil)
	wrong := st
	wrong.StartTick++
	if g2.Adopt("api", wrong) {
		t.Fatal("adopted a pid whose start time does not match")
	}
	if !g2.Adopt("api", st) {
		t.Fatal("did not adopt the running service")
	}
	events, cancel := g2.Subscribe()
	defer cancel()
	waitFor(t, events, g2, func(s Status) bool { return s.State == Healthy })
	if err := g2.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if procgroup.Alive(st.PID, st.StartTick) {
		t.Error("adopted service survived Stop")
	}
}

func TestCycleAndUnknownDependencyAreRefused(t *testing.T) {
	a := Spec{Name: "a", Cmd: "true", DependsOn: []string{"b"}}
	b := Spec{Name: "b", Cmd: "true", DependsOn: []string{"a"}}
	if _, err := NewGroup([]Spec{a, b}, nil); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: %v", err)
	}
	if _, err := NewGroup([]Spec{a}, nil); err == nil || !strings.Contains(err.Error(), `depends on "b"`) {
		t.Errorf("unknown dependency: %v", err)
	}
}

// A oneshot (a migration) is ready when it exits 0: its dependents start
// only then, and it is never restarted.
func TestAOneshotRunsBeforeItsDependentsAndIsDone(t *testing.T) {
	dir := t.TempDir()
	stamp := filepath.Join(dir, "migrated")
	migrate := Spec{Name: "migrate", Cmd: "sleep 0.3; touch " + stamp, Dir: dir, Oneshot: true,
		LogPath: filepath.Join(dir, "migrate.log"), StopTimeout: time.Second}
	// The dependent fails at once if it starts before the migration ends.
	api := Spec{Name: "api", Cmd: "test -e " + stamp + " || exit 3; exec sleep 60", Dir: dir, DependsOn: []string{"migrate"},
		LogPath: filepath.Join(dir, "api.log"), StopTimeout: time.Second}
	g, err := NewGroup([]Spec{migrate, api}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop(context.Background())
	if err := g.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	st, _ := g.Status("migrate")
	if st.State != Done || st.ExitCode == nil || *st.ExitCode != 0 || st.Restarts != 0 {
		t.Errorf("migrate = %+v, want done with exit 0 and no restarts", st)
	}
	time.Sleep(300 * time.Millisecond)
	if st, _ := g.Status("api"); st.State != Running {
		t.Errorf("api = %+v: it started before the migration ended", st)
	}
	if st, _ := g.Status("migrate"); st.State != Done || st.Restarts != 0 {
		t.Errorf("migrate was run again: %+v", st)
	}
}

// A oneshot that fails fails the start, with its log's last lines, and its
// dependents never start.
func TestAFailingOneshotFailsTheStart(t *testing.T) {
	dir := t.TempDir()
	stamp := filepath.Join(dir, "api-started")
	migrate := Spec{Name: "migrate", Cmd: "echo 'relation \"orders\" does not exist' >&2; exit 2", Dir: dir, Oneshot: true,
		LogPath: filepath.Join(dir, "migrate.log"), StopTimeout: time.Second}
	api := Spec{Name: "api", Cmd: "touch " + stamp + "; exec sleep 60", Dir: dir, DependsOn: []string{"migrate"},
		LogPath: filepath.Join(dir, "api.log"), StopTimeout: time.Second}
	g, err := NewGroup([]Spec{migrate, api}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop(context.Background())
	err = g.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exited with code 2") || !strings.Contains(err.Error(), `relation "orders" does not exist`) {
		t.Fatalf("start = %v, want the migration's exit code and its log", err)
	}
	if _, err := os.Stat(stamp); err == nil {
		t.Error("api started although the migration failed")
	}
	if st, _ := g.Status("migrate"); st.State != Crashed || st.Restarts != 0 {
		t.Errorf("migrate = %+v, want crashed and not restarted", st)
	}
}

// A service with no port and no health has nothing binky can probe: it is
// shown running, never healthy, and its dependents still start once it has.
func TestAServiceWithNothingToProbeIsRunningNotHealthy(t *testing.T) {
	dir := t.TempDir()
	worker := Spec{Name: "worker", Cmd: "exec sleep 60", Dir: dir, LogPath: filepath.Join(dir, "worker.log"), StopTimeout: time.Second}
	api := Spec{Name: "api", Cmd: "exec sleep 60", Dir: dir, DependsOn: []string{"worker"}, LogPath: filepath.Join(dir, "api.log"), StopTimeout: time.Second}
	g, err := NewGroup([]Spec{worker, api}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop(context.Background())
	if err := g.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	for _, n := range []string{"worker", "api"} {
		if st, _ := g.Status(n); st.State != Running || st.Message != "no health check" || st.PID == 0 {
			t.Errorf("%s = %+v, want running with no health check", n, st)
		}
	}
	if err := g.StopService(context.Background(), "api"); err != nil {
		t.Fatal(err)
	}
	if err := g.StartService(context.Background(), "api"); err != nil {
		t.Errorf("starting api again beside its running dependency: %v", err)
	}
}

// A service with nothing to probe and a Settle counts as ready only once
// it has run that long: one that dies sooner fails the Start (and a
// dependent waits that long), rather than crash-loop behind a Start that
// succeeded.
func TestAServiceWithNothingToProbeThatDiesAtOnceFailsItsStart(t *testing.T) {
	dir := t.TempDir()
	settle := 400 * time.Millisecond
	dying := Spec{Name: "worker", Cmd: "echo boom >&2; sleep 0.1; exit 3", Dir: dir, LogPath: filepath.Join(dir, "worker.log"), Settle: settle}
	g, _ := NewGroup([]Spec{dying}, nil)
	err := g.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "service worker exited with code 3 within 400ms of its start") || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("Start of a worker that exits at once: %v", err)
	}

	steady := Spec{Name: "worker", Cmd: "exec sleep 60", Dir: dir, LogPath: filepath.Join(dir, "worker.log"), Settle: settle, StopTimeout: time.Second}
	api := Spec{Name: "api", Cmd: "exec sleep 60", Dir: dir, DependsOn: []string{"worker"}, LogPath: filepath.Join(dir, "api.log"), StopTimeout: time.Second}
	g, _ = NewGroup([]Spec{steady, api}, nil)
	defer g.Stop(context.Background())
	began := time.Now()
	if err := g.Start(context.Background()); err != nil {
		t.Fatalf("Start of a worker that runs: %v", err)
	}
	if took := time.Since(began); took < settle {
		t.Errorf("Start returned after %s, before the worker had run %s", took, settle)
	}
}

// A service started while the oneshot it depends on is still running stops
// waiting when that oneshot fails: it waited for good, holding its world's
// lock, for a readiness that would never come.
func TestAStartWaitingOnAOneshotThatFailsEndsWithItsFailure(t *testing.T) {
	dir := t.TempDir()
	migrate := Spec{Name: "migrate", Cmd: "sleep 0.5; echo broken; exit 3", Dir: dir, Oneshot: true,
		LogPath: filepath.Join(dir, "migrate.log"), StopTimeout: time.Second}
	api := Spec{Name: "api", Cmd: "exec sleep 60", Dir: dir, DependsOn: []string{"migrate"},
		LogPath: filepath.Join(dir, "api.log"), StopTimeout: time.Second}
	g, err := NewGroup([]Spec{migrate, api}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Stop(context.Background())
	go g.StartService(context.Background(), "migrate")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st, _ := g.Status("migrate"); st.State == Starting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("migrate never started")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = g.StartService(ctx, "api")
	if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "depends on migrate, which failed") {
		t.Fatalf("start api = %v (waited out its context: %v), want migrate's failure", err, ctx.Err())
	}
	if st, _ := g.Status("api"); st.PID != 0 {
		t.Errorf("api started after its dependency failed: %+v", st)
	}
}

// An adopted service does not keep the old supervisor's message: a kept
// "running (no health check)" stayed beside a probe that ran.
func TestAnAdoptedServiceDropsTheOldSupervisorsMessage(t *testing.T) {
	api, _ := httpSpec(t, "api")
	g1, _ := NewGroup([]Spec{api}, nil)
	if err := g1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := g1.Statuses()[0]
	g1.Close()
	st.Message = "running (no health check)"
	g2, _ := NewGroup([]Spec{api}, nil)
	defer g2.Stop(context.Background())
	if !g2.Adopt("api", st) {
		t.Fatal("did not adopt the running service")
	}
	events, cancel := g2.Subscribe()
	defer cancel()
	waitFor(t, events, g2, func(s Status) bool { return s.State == Healthy })
	if got, _ := g2.Status("api"); got.Message != "" {
		t.Errorf("adopted api's message = %q, want the old one gone", got.Message)
	}
}

// A crash's last lines keep the error's own line when a stack trace pushed
// it above them: a Node app's last five were "at ..." frames and its
// version, never the MongooseError that said why.
func TestACrashReportKeepsTheErrorLineAboveItsStackTrace(t *testing.T) {
	dir := t.TempDir()
	script := `echo "/app/index.js:10"; echo "MongooseError: The uri parameter to openUri() must be a string"
for i in 1 2 3 4 5 6 7 8; do echo "    at frame$i (/app/node_modules/mongoose/lib/connection.js:$i:1)"; done
echo "Node.js v20.11.0"; exit 1`
	s := Spec{Name: "api", Cmd: script, Dir: dir, LogPath: filepath.Join(dir, "api.log"), StopTimeout: time.Second,
		Health: Health{TCP: fmt.Sprintf("127.0.0.1:%d", freePort(t)), StartPeriod: 20 * time.Second}}
	g, _ := NewGroup([]Spec{s}, nil)
	err := g.Start(context.Background())
	if err == nil {
		t.Fatal("Start succeeded")
	}
	for _, want := range []string{"MongooseError: The uri parameter", "Node.js v20.11.0", "at frame8"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%s", want, err)
		}
	}
	if strings.Contains(err.Error(), "at frame1 ") {
		t.Errorf("the whole stack trace was kept:\n%s", err)
	}
}

// An up whose service fails says why that service failed, not that its
// dependent's dependency did.
func TestAFailedStartReportsTheFailureNotADependentsWordOfIt(t *testing.T) {
	dir := t.TempDir()
	api := Spec{Name: "api", Cmd: "echo cannot bind; exit 4", Dir: dir, LogPath: filepath.Join(dir, "api.log"), StopTimeout: time.Second,
		Health: Health{TCP: fmt.Sprintf("127.0.0.1:%d", freePort(t)), StartPeriod: 20 * time.Second}}
	web := Spec{Name: "web", Cmd: "exec sleep 60", Dir: dir, DependsOn: []string{"api"}, LogPath: filepath.Join(dir, "web.log"), StopTimeout: time.Second}
	for range 5 {
		g, _ := NewGroup([]Spec{api, web}, nil)
		err := g.Start(context.Background())
		if err == nil || !strings.HasPrefix(err.Error(), "service api exited with code 4") {
			t.Fatalf("Start = %v, want api's own failure", err)
		}
	}
}

// migrateThenAPI is a oneshot that notes each run in runs, and an HTTP
// service that depends on it.
func migrateThenAPI(t *testing.T) (dir, runs string, migrate, api Spec) {
	dir = t.TempDir()
	runs = filepath.Join(dir, "migrate-runs")
	migrate = Spec{Name: "migrate", Cmd: "echo run >> " + runs, Dir: dir, Oneshot: true,
		LogPath: filepath.Join(dir, "migrate.log"), StopTimeout: time.Second}
	api, _ = httpSpec(t, "api", "migrate")
	return dir, runs, migrate, api
}

// failingSpec is a service that exits 3 before its health check passes.
func failingSpec(t *testing.T, dir, name string, deps ...string) Spec {
	cmd, env := helper("exit", "CODE=3")
	return Spec{Name: name, Cmd: cmd, Env: env, Dir: dir, DependsOn: deps, Restart: RestartNo,
		Health:  Health{TCP: fmt.Sprintf("127.0.0.1:%d", freePort(t)), Interval: 50 * time.Millisecond, StartPeriod: time.Second},
		LogPath: filepath.Join(dir, name+".log"), StopTimeout: time.Second}
}

// A group that took over running services (an up widening a world to
// another group) starts only what is not up: the adopted service and the
// done oneshot are neither started again nor stopped when a new service
// fails, since the failed start did not start them.
func TestStartLeavesWhatItFoundUpWhenANewServiceFails(t *testing.T) {
	dir, runs, migrate, api := migrateThenAPI(t)
	g1, _ := NewGroup([]Spec{migrate, api}, nil)
	if err := g1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	apiSt, _ := g1.Status("api")
	migrateSt, _ := g1.Status("migrate")
	g1.Close()

	worker := failingSpec(t, dir, "worker", "api")
	g2, err := NewGroup([]Spec{migrate, api, worker}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Stop(context.Background())
	if !g2.Adopt("api", apiSt) || !g2.AdoptDone("migrate", migrateSt) {
		t.Fatal("did not take over the running service and the done oneshot")
	}
	if err := g2.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "worker") {
		t.Fatalf("start = %v, want worker's failure", err)
	}
	if !procgroup.Alive(apiSt.PID, apiSt.StartTick) {
		t.Error("the failed start stopped api, which it did not start")
	}
	if st, _ := g2.Status("api"); st.PID != apiSt.PID {
		t.Errorf("api = %+v, want the adopted pid %d", st, apiSt.PID)
	}
	if b, _ := os.ReadFile(runs); strings.Count(string(b), "run") != 1 {
		t.Errorf("the done migrate ran %d times, want once", strings.Count(string(b), "run"))
	}
}

// Add widens a running group (an up of another group): its next Start
// starts the new services once their dependencies, already running, are
// ready, and leaves the running ones and a done oneshot alone; a new
// service that fails takes down only itself. Statuses read meanwhile see
// the group whole (run with -race).
func TestAddedServicesStartBesideTheRunningOnes(t *testing.T) {
	dir, runs, migrate, api := migrateThenAPI(t)
	g, _ := NewGroup([]Spec{migrate, api}, nil)
	defer g.Stop(context.Background())
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	before, _ := g.Status("api")

	reading := make(chan struct{})
	go func() {
		defer close(reading)
		for i := 0; i < 200; i++ {
			_ = g.Statuses()
			_, _ = g.Status("worker")
		}
	}()
	worker := Spec{Name: "worker", Cmd: "exec sleep 60", Dir: dir, DependsOn: []string{"api"},
		LogPath: filepath.Join(dir, "worker.log"), StopTimeout: time.Second}
	if err := g.Add([]Spec{worker}); err != nil {
		t.Fatal(err)
	}
	<-reading
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, _ := g.Status("worker"); st.State != Running || st.PID == 0 {
		t.Errorf("worker = %+v, want running", st)
	}

	// A service of the group that was stopped starts again with it, and
	// is ready only once its own health check passes.
	if err := g.StopService(context.Background(), "api"); err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, _ := g.Status("api"); st.State != Healthy || st.PID == before.PID {
		t.Errorf("api after a start = %+v, want healthy in a new process", st)
	}
	before, _ = g.Status("api")

	broken := failingSpec(t, dir, "broken")
	if err := g.Add([]Spec{broken}); err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("start = %v, want broken's failure", err)
	}
	for _, name := range []string{"api", "worker"} {
		if st, _ := g.Status(name); st.PID == 0 || !procgroup.Alive(st.PID, st.StartTick) {
			t.Errorf("%s = %+v: the failed start stopped it", name, st)
		}
	}
	if st, _ := g.Status("api"); st.PID != before.PID {
		t.Errorf("api = %+v, want the process it had, %d", st, before.PID)
	}
	if b, _ := os.ReadFile(runs); strings.Count(string(b), "run") != 1 {
		t.Errorf("the done migrate ran %d times, want once", strings.Count(string(b), "run"))
	}
	if err := g.Remove([]string{"api"}); err == nil {
		t.Error("Remove took out api, which runs")
	}
	if err := g.Remove([]string{"broken"}); err != nil {
		t.Fatalf("remove broken: %v", err)
	}
	if _, ok := g.Status("broken"); ok || len(g.Statuses()) != 3 {
		t.Errorf("after Remove: %+v", g.Statuses())
	}
	if err := g.Start(context.Background()); err != nil {
		t.Errorf("a start after broken left: %v", err)
	}
	if err := g.Add([]Spec{{Name: "api", Cmd: "true"}}); err == nil {
		t.Error("Add took a second service named api")
	}
	if err := g.Add([]Spec{{Name: "x", Cmd: "true", DependsOn: []string{"nope"}}}); err == nil {
		t.Error("Add took a service with an unknown dependency")
	}
}
