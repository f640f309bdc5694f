package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/git-binky/git-binky/world"
)

// runDaemon runs a daemon of home in this process until the returned
// func stops it.
func runDaemon(t *testing.T, home world.Home) (stop func()) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if err := os.WriteFile(filepath.Join(home.Dir, "settings.toml"), fmt.Appendf(nil, "proxy_port = %d\n", port), 0o600); err != nil {
		t.Fatal(err)
	}
	d := New(home, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	// Started: it answers on its socket and has written daemon.json (after
	// it listens).
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("unix", home.SocketPath()); err == nil {
			c.Close()
			if _, err := os.Stat(InfoPath(home)); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("the daemon did not start on %s in 10s", home.SocketPath())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("daemon: %v", err)
		}
	}
}

func TestADaemonRemovesItsSocketAndInfoWhenItStops(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	home := world.Home{Dir: t.TempDir()}
	runDaemon(t, home)()
	for _, p := range []string{home.SocketPath(), InfoPath(home)} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is left after the daemon stopped", p)
		}
	}
}

// A home deleted and made again at the same path, while its daemon runs,
// gets a new daemon on a new socket: the old one's exit must leave the new
// one reachable.
func TestAStoppingDaemonLeavesTheSocketOfTheDaemonThatReplacedIt(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	home := world.Home{Dir: t.TempDir()}
	stop := runDaemon(t, home)
	// The new daemon's socket and daemon.json, made before the old ones
	// go (so never on their inode numbers) and moved into place.
	next := filepath.Join(home.Dir, "next.sock")
	ln, err := net.Listen("unix", next)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Rename(next, home.SocketPath()); err != nil {
		t.Fatal(err)
	}
	if err := world.WriteFileAtomic(InfoPath(home), []byte(`{"pid":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	stop()
	c, err := net.Dial("unix", home.SocketPath())
	if err != nil {
		t.Fatalf("the new daemon's socket is gone after the old daemon stopped: %v", err)
	}
	c.Close()
	if b, err := os.ReadFile(InfoPath(home)); err != nil || string(b) != `{"pid":1}` {
		t.Fatalf("the new daemon's %s: %q, %v", InfoPath(home), b, err)
	}
}
