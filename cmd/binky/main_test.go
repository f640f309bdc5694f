package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// binDir holds the git-binky binaries built once for the end-to-end tests.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "git-binky-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	// A binary built with -race sleeps a second before it exits (GORACE's
	// atexit_sleep_ms, 1000 by default, for late reports): these tests run
	// hundreds of commands, and that second each was 60% of this package's
	// time. A race while they run is reported as before.
	if raceEnabled && !strings.Contains(os.Getenv("GORACE"), "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	stamp := fmt.Sprintf("test%d", time.Now().UnixNano())
	args := []string{"build", "-ldflags", "-X github.com/git-binky/git-binky/version.build=" + stamp, "-o", dir + string(os.PathSeparator)}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "../...")
	cmd := exec.Command("go", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building git-binky for the end-to-end tests:", err)
		return 1
	}
	for out, pkg := range map[string]string{"testsvc": "./testdata/testsvc", "binky-adapter-filestore": "../../examples/adapters/filestore"} {
		cmd = exec.Command("go", "build", "-o", filepath.Join(dir, out), pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building", out+":", err)
			return 1
		}
	}
	code := m.Run()
	stopDaemons()
	return code
}

// scriptEnv makes every script a user on a fresh machine: its own HOME,
// BINKY_HOME and git config, with the built binaries first on PATH.
func scriptEnv(e *testscript.Env) error {
	work := e.WorkDir
	gitcfg := filepath.Join(work, ".gitconfig-test")
	if err := os.WriteFile(gitcfg, []byte("[init]\n\tdefaultBranch = main\n[user]\n\tname = Test\n\temail = test@example.invalid\n[advice]\n\tdetachedHead = false\n"), 0o644); err != nil {
		return err
	}
	e.Setenv("PATH", binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	e.Setenv("GORACE", os.Getenv("GORACE"))
	e.Setenv("HOME", work)
	home := filepath.Join(work, ".binky-home")
	e.Setenv("BINKY_HOME", home)
	// Every script's daemon gets a proxy port of its own.
	port, err := freeListenPort()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(home, "settings.toml"), []byte(fmt.Sprintf("proxy_port = %d\n", port)), 0o600); err != nil {
		return err
	}
	e.Setenv("GIT_CONFIG_GLOBAL", gitcfg)
	e.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	e.Setenv("NO_COLOR", "1")
	return nil
}

func TestScripts(t *testing.T) {
	t.Cleanup(func() {
		for _, r := range scriptRaces.reports {
			t.Errorf("a daemon reported a data race:\n%s", r)
		}
	})
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(e *testscript.Env) error {
			if err := scriptEnv(e); err != nil {
				return err
			}
			home := filepath.Join(e.WorkDir, ".binky-home")
			e.Defer(func() {
				if r := stopDaemon(home); r != "" {
					scriptRaces.Lock()
					scriptRaces.reports = append(scriptRaces.reports, r)
					scriptRaces.Unlock()
				}
			})
			return nil
		},
	})
}

// scriptRaces collects race reports from the scripts' daemons.
var scriptRaces struct {
	sync.Mutex
	reports []string
}

// daemonHomes are the BINKY_HOMEs whose daemons the tests started.
var (
	daemonMu    sync.Mutex
	daemonHomes = map[string]bool{}
)

// stopDaemon stops the daemon of home and every service it still runs, so
// no test leaves processes behind.
func stopDaemon(home string) string {
	cmd := exec.Command(filepath.Join(binDir, "git-binky"), "daemon", "stop")
	cmd.Env = append(os.Environ(), "BINKY_HOME="+home)
	cmd.Run()
	killRecorded(home)
	stopManagedServers(home)
	return raceReport(home)
}

// raceReport returns what the race detector said in the daemon's log (the
// test binaries' daemon is built with -race when the tests are).
func raceReport(home string) string {
	b, _ := os.ReadFile(filepath.Join(home, "daemon.log"))
	if i := bytes.Index(b, []byte("WARNING: DATA RACE")); i >= 0 {
		end := min(len(b), i+4000)
		return string(b[i:end])
	}
	return ""
}

// stopManagedServers ends the shared servers a test's daemon started, and
// waits for them: a Redis whose final save fails (its home is deleted right
// after) refuses SIGTERM, and outlived every run until this waited and
// then killed it.
func stopManagedServers(home string) {
	var pids []int
	for _, pidfile := range []string{
		filepath.Join(home, "servers", "mongodb", "ferretdb.pid"),
		filepath.Join(home, "servers", "postgres", "data", "postmaster.pid"),
		filepath.Join(home, "servers", "redis", "redis.pid"),
		filepath.Join(home, "servers", "clickhouse", "clickhouse.pid"),
		filepath.Join(home, "servers", "mysql", "data", "mysql.pid"),
	} {
		b, err := os.ReadFile(pidfile)
		if err != nil {
			continue
		}
		var pid int
		fmt.Sscanf(string(b), "%d", &pid)
		if pid > 1 {
			signalPID(pid, syscall.SIGTERM)
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		// The same program still (pids are reused): never kill another.
		was, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		for i := 0; i < 200 && pidAlive(pid); i++ {
			time.Sleep(50 * time.Millisecond)
		}
		if now, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); pidAlive(pid) && len(was) > 0 && bytes.Equal(was, now) {
			signalPID(pid, syscall.SIGKILL)
		}
	}
	// As root, the shared postgres and mariadb keep their files outside
	// BINKY_HOME (one folder per home holds both): removed once both stopped.
	var outside []string
	for kind, pid := range map[string]string{"postgres": "postmaster.pid", "mysql": "mysql.pid"} {
		target, err := os.Readlink(filepath.Join(home, "servers", kind, "data"))
		if err != nil {
			continue
		}
		for i := 0; i < 200; i++ {
			if _, err := os.Stat(filepath.Join(target, pid)); err != nil {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		outside = append(outside, filepath.Dir(filepath.Dir(target)))
	}
	for _, d := range outside {
		os.RemoveAll(d)
	}
}

func stopDaemons() {
	daemonMu.Lock()
	defer daemonMu.Unlock()
	// Eight at a time: each waits for its daemon and servers to go (~1 s),
	// and a run leaves ~150 of them.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for h := range daemonHomes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			stopDaemon(h)
		}()
	}
	wg.Wait()
}

// killRecorded kills the process groups world records under home name.
func killRecorded(home string) {
	files, _ := filepath.Glob(filepath.Join(home, "worlds", "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var rec struct {
			Services map[string]struct {
				PGID int `json:"pgid"`
			} `json:"services"`
		}
		if json.Unmarshal(b, &rec) != nil {
			continue
		}
		for _, s := range rec.Services {
			if s.PGID > 1 {
				signalPID(-s.PGID, syscall.SIGKILL)
			}
		}
	}
}
