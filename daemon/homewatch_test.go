//go:build unix

package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/gitx/gittest"
	"github.com/git-binky/git-binky/procgroup"
	"github.com/git-binky/git-binky/world"
)

// worldInHome is a running daemon of a new home (at a path the test may
// delete or move, its repository beside it) that runs one world, a long sleep; it returns the
// daemon, the sleep's pid and Run's end.
func worldInHome(t *testing.T, homeDir string) (*Daemon, int, *runEnd) {
	t.Helper()
	t.Setenv("BINKY_HOOKS", "file")
	repo := gittest.NewRepo(t, filepath.Dir(homeDir), "acme", map[string]string{"binky.toml": "[project]\nname = \"acme\"\n[services.api]\ncmd = \"sleep 300\"\n"})
	if err := os.MkdirAll(homeDir, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if err := os.WriteFile(filepath.Join(homeDir, "settings.toml"), fmt.Appendf(nil, "proxy_port = %d\n", port), 0o600); err != nil {
		t.Fatal(err)
	}
	home := world.Home{Dir: homeDir}
	d := New(home, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	d.homeEvery = 20 * time.Millisecond
	d.lockGrace = 3 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	done := &runEnd{c: make(chan struct{})}
	go func() {
		done.err = d.Run(ctx)
		close(done.c)
	}()
	t.Cleanup(func() {
		cancel()
		<-done.c
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(InfoPath(home)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the daemon did not start in 10s")
		}
	}
	<-d.adopted
	w, err := d.Up(ctx, api.Request{Dir: repo}, func(api.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Services) != 1 || w.Services[0].PID == 0 {
		t.Fatalf("up: %+v, want one running service", w.Services)
	}
	pid := w.Services[0].PID
	t.Cleanup(func() { procgroup.Stop(pid, time.Second) })
	return d, pid, done
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// runEnd is a daemon's Run returning: c closed, then err set.
type runEnd struct {
	c   chan struct{}
	err error
}

func ended(t *testing.T, done *runEnd) {
	t.Helper()
	select {
	case <-done.c:
		if done.err != nil {
			t.Fatalf("the daemon ended with %v", done.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the daemon still runs 20s after its home went")
	}
}

// rm -rf of a home takes its socket, records and credentials: nothing can
// reach its daemon or adopt its services again. The daemon stops them,
// and the shared servers it ran, and exits, rather than run for good.
func TestADaemonWhoseHomeIsDeletedStopsItsWorldsAndSharedServersThenExits(t *testing.T) {
	homeDir := filepath.Join(scratch(t), "home")
	d, pid, done := worldInHome(t, homeDir)
	redis := 0
	if runtime.GOOS != "linux" {
		t.Log("shared servers are found from /proc: on Linux only; only the world's service is checked")
	} else if adapters.FindServerBinary("redis-server") != "" {
		if _, err := d.servers.AdminURL(context.Background(), "redis"); err != nil {
			t.Fatal(err)
		}
		running := d.servers.Running() // redis writes its pid file once it runs
		for deadline := time.Now().Add(5 * time.Second); len(running) == 0 && time.Now().Before(deadline); running = d.servers.Running() {
			time.Sleep(10 * time.Millisecond)
		}
		if len(running) != 1 || running[0].Kind != "redis" {
			t.Fatalf("running shared servers: %+v, want the redis just started", running)
		}
		redis = running[0].PID
		t.Cleanup(func() { syscall.Kill(redis, syscall.SIGKILL) })
		time.Sleep(100 * time.Millisecond) // a home check notes it
	} else {
		t.Log("redis-server is not installed (make test installs it): only the world's service is checked")
	}
	if err := os.RemoveAll(homeDir); err != nil {
		t.Fatal(err)
	}
	ended(t, done)
	if alive(pid) {
		t.Errorf("the world's service (pid %d) still runs after its home was deleted", pid)
	}
	if redis != 0 && alive(redis) {
		t.Errorf("the shared redis (pid %d) still runs after its home was deleted", redis)
	}
	if _, err := os.Stat(homeDir); err == nil {
		out, _ := exec.Command("find", homeDir).CombinedOutput()
		t.Errorf("%s was made again by the daemon on its way out:\n%s", homeDir, out)
	}
}

// A home moved elsewhere keeps its records: the daemon, whose socket and
// paths no longer lead to it, exits and leaves the services for the daemon
// of the home at its new path, which adopts them.
func TestADaemonWhoseHomeIsMovedExitsAndTheNextDaemonThereAdoptsItsWorlds(t *testing.T) {
	base := scratch(t)
	homeDir := filepath.Join(base, "home")
	_, pid, done := worldInHome(t, homeDir)
	moved := filepath.Join(base, "moved")
	if err := os.Rename(homeDir, moved); err != nil {
		t.Fatal(err)
	}
	ended(t, done)
	if !alive(pid) {
		t.Fatalf("the world's service (pid %d) was stopped: a moved home's services are the next daemon's", pid)
	}
	next := New(world.Home{Dir: moved}, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	nextDone := make(chan error, 1)
	go func() { nextDone <- next.Run(ctx) }()
	defer func() { cancel(); <-nextDone }()
	for deadline := time.Now().Add(10 * time.Second); !next.running(firstWorld(t, next)); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the daemon of the moved home did not adopt its world in 10s")
		}
	}
}

// rm -rf of a home takes its lock file first and the folder last, seconds
// later when it holds a server's data: the daemon took the home for moved
// once two looks saw the lock gone, and left the worlds' services and the
// shared servers running with nothing to stop them (a test flake under
// load, found by helper-84). The lock gone, the home going a moment later,
// is a deleted home.
func TestADaemonWhoseHomeIsDeletedSlowlyStillStopsItsWorlds(t *testing.T) {
	homeDir := filepath.Join(scratch(t), "home")
	_, pid, done := worldInHome(t, homeDir)
	if err := os.Remove(filepath.Join(homeDir, "daemon.lock")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // fifteen looks with the lock gone
	if err := os.RemoveAll(homeDir); err != nil {
		t.Fatal(err)
	}
	ended(t, done)
	if alive(pid) {
		t.Errorf("the world's service (pid %d) still runs after its home was deleted", pid)
	}
}

// An rm -rf that takes longer than the grace (a home holding gigabytes of
// a server's data) is still a deletion while things keep going from it.
func TestAHomeEmptiedForLongerThanTheGraceIsStillDeleted(t *testing.T) {
	homeDir := filepath.Join(scratch(t), "home")
	_, pid, done := worldInHome(t, homeDir) // a 3 s grace
	for i := range 16 {
		if err := os.WriteFile(filepath.Join(homeDir, fmt.Sprintf("data%02d", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // looks that see them
	if err := os.Remove(filepath.Join(homeDir, "daemon.lock")); err != nil {
		t.Fatal(err)
	}
	for i := range 16 { // 4 s, one file at a time
		time.Sleep(250 * time.Millisecond)
		os.Remove(filepath.Join(homeDir, fmt.Sprintf("data%02d", i)))
	}
	if err := os.RemoveAll(homeDir); err != nil {
		t.Fatal(err)
	}
	ended(t, done)
	if alive(pid) {
		t.Errorf("the world's service (pid %d) still runs after its home was deleted", pid)
	}
}

// The lock file alone deleted (the home intact): the daemon steps aside
// with its services running, as for a move; it stops nothing.
func TestADaemonWhoseLockFileIsDeletedExitsAndLeavesItsWorldsRunning(t *testing.T) {
	homeDir := filepath.Join(scratch(t), "home")
	_, pid, done := worldInHome(t, homeDir)
	if err := os.Remove(filepath.Join(homeDir, "daemon.lock")); err != nil {
		t.Fatal(err)
	}
	ended(t, done)
	if !alive(pid) {
		t.Fatalf("the world's service (pid %d) was stopped though its home is intact", pid)
	}
}

// scratch is a folder removed after every other cleanup, retried: a world
// left running by a daemon that stepped aside saves its service's exit
// into the home while the test's cleanup stops it.
func scratch(t *testing.T) string {
	dir, err := os.MkdirTemp("", "homewatch")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for i := 0; os.RemoveAll(dir) != nil && i < 100; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	})
	return dir
}

func firstWorld(t *testing.T, d *Daemon) string {
	t.Helper()
	recs, err := d.home.Records()
	if err != nil || len(recs) != 1 {
		t.Fatalf("records of the moved home: %d, %v", len(recs), err)
	}
	return recs[0].ID
}
