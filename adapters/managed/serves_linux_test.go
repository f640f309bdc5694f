package managed

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/git-binky/git-binky/world"
)

// Every up asks whether the shared postgres runs. Its postmaster.pid says
// so without a connection, which would cost the server a backend's fork:
// a live postgres process, the port, and "ready".
func TestPostgresIsSeenServingFromItsPidFileWithoutAConnection(t *testing.T) {
	m := New(world.Home{Dir: t.TempDir()})
	dir := m.dir("postgres")
	if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	// A process whose command line names postgres, as the pid check reads it.
	cmd := &exec.Cmd{Path: "/bin/sleep", Args: []string{"postgres", "30"}}
	if err := cmd.Start(); err != nil {
		t.Skip("skipped: cannot start /bin/sleep:", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	port := 1 // nothing listens there: a dial would say no
	write := func(pid, port int, status string) {
		t.Helper()
		pf := fmt.Sprintf("%d\n%s\n1764900000\n%d\n/tmp\n127.0.0.1\n  1234  5678\n%s\n", pid, filepath.Join(dir, "data"), port, status)
		if err := os.WriteFile(filepath.Join(dir, "data", "postmaster.pid"), []byte(pf), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(cmd.Process.Pid, port, "ready")
	if !postgresServes(m, dir, port) {
		t.Fatal("a ready postmaster on the port is not seen serving")
	}
	write(cmd.Process.Pid, port, "starting")
	if postgresServes(m, dir, port) {
		t.Error("a postmaster still starting is seen serving")
	}
	write(cmd.Process.Pid, port+1, "ready")
	if postgresServes(m, dir, port) {
		t.Error("a postmaster on another port is seen serving this one")
	}
	cmd.Process.Kill()
	cmd.Wait()
	write(cmd.Process.Pid, port, "ready")
	if postgresServes(m, dir, port) {
		t.Error("a postmaster that has exited is seen serving")
	}
}
