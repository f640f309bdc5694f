package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/procgroup"
	"github.com/git-binky/git-binky/world"
)

// daemonBin is the real binkyd, built once for these tests; otherBin is
// the same source built with another stamp, so another version.
var daemonBin, otherBin string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "binky-client-test")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		daemonBin, otherBin = filepath.Join(dir, "a", DaemonBinary), filepath.Join(dir, "b", DaemonBinary)
		for bin, stamp := range map[string]string{daemonBin: "clienttest-a", otherBin: "clienttest-b"} {
			build := exec.Command("go", "build", "-ldflags", "-X github.com/git-binky/git-binky/version.build="+stamp, "-o", bin, "../cmd/binkyd")
			if out, err := build.CombinedOutput(); err != nil {
				fmt.Fprintf(os.Stderr, "build binkyd: %v\n%s", err, out)
				return 1
			}
		}
		return m.Run()
	}())
}

// newHome is a BINKY_HOME of the test's own whose daemon gets a free proxy
// port, and is stopped when the test ends.
func newHome(t *testing.T) world.Home {
	t.Helper()
	home := world.Home{Dir: t.TempDir()}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if err := os.WriteFile(filepath.Join(home.Dir, "settings.toml"), []byte(fmt.Sprintf("proxy_port = %d\n", port)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BINKY_DAEMON", daemonBin)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := New(home, "").Shutdown(ctx); err != nil {
			t.Errorf("stop the test's daemon: %v", err)
		}
	})
	return home
}

// hello asks the daemon who it is (a question any version answers) and
// makes c speak as that version from then on.
func hello(t *testing.T, c *Client) api.Hello {
	t.Helper()
	defer func() {
		if c.Version == "" {
			t.Fatal("no version learned")
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var h api.Hello
	if err := c.Call(ctx, api.Request{Op: api.OpHello}, nil, &h); err != nil {
		t.Fatalf("hello as %s: %v", c.Version, err)
	}
	if c.Version == "" {
		c.Version = h.Version
	}
	return h
}

func TestNoStartNeverStartsADaemon(t *testing.T) {
	home := newHome(t)
	c := New(home, "")
	c.NoStart = true
	if err := c.Call(context.Background(), api.Request{Op: api.OpHello}, nil, nil); !errors.Is(err, ErrNoDaemon) {
		t.Fatalf("err = %v, want ErrNoDaemon", err)
	}
	if c.Running(context.Background()) {
		t.Error("a daemon runs")
	}
}

// Listing or stopping binky's own servers needs no daemon: binkyd answers
// without one, and none is left running. Starting one is a daemon's work.
func TestServersListAndStopStartNoDaemon(t *testing.T) {
	home := newHome(t)
	c := New(home, "")
	for _, action := range []string{"", "stop"} {
		res, err := c.Servers(context.Background(), home.Dir, action, "")
		if err != nil || len(res) != 0 {
			t.Errorf("servers %q in a new home: %v, %v", action, res, err)
		}
	}
	if _, err := c.Servers(context.Background(), home.Dir, "stop", "postgres"); err == nil || !strings.Contains(err.Error(), "binky never started one for this home") {
		t.Errorf("servers stop postgres in a new home: %v", err)
	}
	if c.Running(context.Background()) {
		t.Error("a daemon runs")
	}
}

func TestAMissingDaemonBinarySaysHowToInstallIt(t *testing.T) {
	home := world.Home{Dir: t.TempDir()}
	t.Setenv("BINKY_DAEMON", "")
	t.Setenv("PATH", t.TempDir())
	err := New(home, "").Call(context.Background(), api.Request{Op: api.OpHello}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), DaemonBinary) || !strings.Contains(err.Error(), "make install") {
		t.Fatalf("err = %v", err)
	}
}

// The first call starts the daemon; later ones reach the same one.
func TestACallStartsTheDaemonOnDemand(t *testing.T) {
	home := newHome(t)
	c := New(home, "")
	h := hello(t, c)
	if !strings.HasPrefix(h.Version, "0.") || h.PID == 0 || h.Home != home.Dir {
		t.Errorf("hello %+v", h)
	}
	if !c.Running(context.Background()) {
		t.Error("Running = false after a call")
	}
	if again := hello(t, c); again.PID != h.PID {
		t.Errorf("a second daemon (pid %d, first %d)", again.PID, h.PID)
	}
	s, err := c.Status(context.Background(), home.Dir, false)
	if err != nil || len(s.Worlds) != 0 {
		t.Errorf("status of a new home: %+v %v", s, err)
	}
}

// A client of another version replaces the daemon (as after an upgrade)
// instead of talking to a daemon that speaks differently.
func TestADaemonOfAnotherVersionIsReplaced(t *testing.T) {
	// Learn the other build's version from a daemon of its own.
	t.Setenv("BINKY_DAEMON", otherBin)
	scratch := newHome(t)
	t.Setenv("BINKY_DAEMON", otherBin)
	newer := hello(t, New(scratch, "")).Version

	home := newHome(t) // BINKY_DAEMON is daemonBin again
	c := New(home, "")
	old := hello(t, c)
	if old.Version == newer {
		t.Fatalf("both builds are version %s", newer)
	}
	t.Setenv("BINKY_DAEMON", otherBin)
	up := New(home, newer)
	if _, err := up.Status(context.Background(), home.Dir, false); err != nil {
		t.Fatalf("status as %s against a %s daemon: %v", newer, old.Version, err)
	}
	cur := hello(t, up)
	if cur.Version != newer || cur.PID == old.PID {
		t.Errorf("after the newer client's call: %+v (the old daemon was pid %d)", cur, old.PID)
	}
	if processAlive(old.PID) {
		t.Errorf("the old daemon (pid %d) still runs", old.PID)
	}
}

func TestShutdownStopsTheDaemonAndIsANoOpWithoutOne(t *testing.T) {
	home := newHome(t)
	c := New(home, "")
	ctx := context.Background()
	if err := c.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with no daemon: %v", err)
	}
	h := hello(t, c)
	if err := c.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Running(ctx) || processAlive(h.PID) {
		t.Errorf("daemon pid %d still answers", h.PID)
	}
}

func TestACancelledCallReturnsTheContextsError(t *testing.T) {
	home := newHome(t)
	c := New(home, "")
	hello(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Call(ctx, api.Request{Op: api.OpStatus}, nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// JSON carries only UTF-8: a worktree folder named otherwise reached the
// daemon as another path and was "not inside a git repository". It is
// refused before any daemon is asked, naming the folder.
func TestAFolderNotNamedInUTF8IsRefusedPlainly(t *testing.T) {
	home := newHome(t)
	c := New(home, "")
	c.NoStart = true
	err := c.Call(context.Background(), api.Request{Op: api.OpStatus, Dir: "/tmp/dsn-c\xffd"}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "not named in UTF-8") || errors.Is(err, ErrNoDaemon) {
		t.Fatalf("err = %v, want the folder refused for its name", err)
	}
}

// A daemon asked to stop closes its socket before it exits (it finishes
// the downs it took during the stop), and holds its lock until then: a
// call in between started a daemon that gave way to it, waited 10 s and
// failed. It now waits for the stopping daemon, says so once, and the
// next daemon takes it.
func TestACallWaitsForAStoppingDaemonWhoseSocketIsClosed(t *testing.T) {
	home := newHome(t)
	stopping := exec.Command("sleep", "2")
	if err := stopping.Start(); err != nil {
		t.Fatal(err)
	}
	gone := make(chan struct{})
	go func() { stopping.Wait(); close(gone) }()
	proc, err := procgroup.ReadProc(stopping.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(api.DaemonInfo{PID: stopping.Process.Pid, StartTick: proc.StartTick})
	if err := os.WriteFile(home.InfoPath(), info, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", home.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close() // the socket file stays, refusing, as a stopping daemon's does

	c := New(home, "")
	var notes []string
	c.Notice = func(msg string) { notes = append(notes, msg) }
	h := hello(t, c)
	select {
	case <-gone:
	default:
		t.Fatal("the call was answered while the stopping daemon still ran")
	}
	if h.PID == stopping.Process.Pid {
		t.Errorf("answered by pid %d, the stopping daemon", h.PID)
	}
	if want := fmt.Sprintf("waiting for the daemon (pid %d) to stop", stopping.Process.Pid); len(notes) != 1 || !strings.Contains(notes[0], want) {
		t.Errorf("notices %q, want one saying %q", notes, want)
	}
}

// A daemon killed -9 leaves its daemon.json, whose pid may be another
// process's by now: that process is not waited for.
func TestADeadDaemonsInfoIsNotWaitedFor(t *testing.T) {
	home := newHome(t)
	info, _ := json.Marshal(api.DaemonInfo{PID: os.Getpid(), StartTick: 1}) // alive, but started at another time
	if err := os.WriteFile(home.InfoPath(), info, 0o600); err != nil {
		t.Fatal(err)
	}
	c := New(home, "")
	c.Notice = func(msg string) { t.Errorf("notice %q: the call waited", msg) }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Call(ctx, api.Request{Op: api.OpHello}, nil, nil); err != nil {
		t.Fatalf("hello with a dead daemon's daemon.json: %v", err)
	}
}

// hangingUpDaemon listens on home's socket as a daemon that reads each
// request and dies before it answers; it returns how many it read.
func hangingUpDaemon(t *testing.T, home world.Home) func() int {
	t.Helper()
	l, err := net.Listen("unix", home.SocketPath())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var n atomic.Int32
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			bufio.NewReader(conn).ReadString('\n')
			n.Add(1)
			conn.Close()
		}
	}()
	return func() int { return int(n.Load()) }
}

// A daemon that died with a request read may have acted on it: a service
// restart sent again to the next daemon ran a migration a second time. It
// is sent once, and the error says it may have run; a status is sent
// again.
func TestARequestThatIsNotSafeTwiceIsNotSentAgainAfterAHangUp(t *testing.T) {
	home := world.Home{Dir: t.TempDir()}
	read := hangingUpDaemon(t, home)
	c := New(home, "")
	c.NoStart = true
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := c.Call(ctx, api.Request{Op: api.OpService, Action: api.ServiceRestart, Service: "migrate"}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "it may have done part or all of 'service restart migrate'") {
		t.Errorf("err = %v", err)
	}
	if n := read(); n != 1 {
		t.Errorf("the restart was sent %d times, want once", n)
	}
	// A start runs a done oneshot again too.
	c.Call(ctx, api.Request{Op: api.OpService, Action: api.ServiceStart, Service: "migrate"}, nil, nil)
	if n := read(); n != 2 {
		t.Errorf("the start was sent %d times, want once", n-1)
	}
	c.Call(ctx, api.Request{Op: api.OpStatus}, nil, nil)
	if n := read(); n != 5 {
		t.Errorf("status was sent %d times, want 3 (a new daemon may take it)", n-2)
	}
}
