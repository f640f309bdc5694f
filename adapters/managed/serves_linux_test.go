package managed

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-binky/git-binky/adapters"
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
	execed(t, cmd.Process.Pid)
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

// heldBy starts a process named name (its command line, as the pid check
// reads it) that holds l's socket, as a server that listens would.
func heldBy(t *testing.T, name string, l *net.TCPListener) *exec.Cmd {
	t.Helper()
	f, err := l.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := &exec.Cmd{Path: "/bin/sleep", Args: []string{name, "30"}, ExtraFiles: []*os.File{f}}
	if err := cmd.Start(); err != nil {
		t.Skip("skipped: cannot start /bin/sleep:", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	execed(t, cmd.Process.Pid)
	return cmd
}

// execed waits until pid's command line is readable: Start returns once
// the exec is under way, and for a moment after, /proc/<pid>/cmdline is
// empty (the new program's arguments are not in place yet). A check made
// then failed 37 times in 200 here.
func execed(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && len(b) > 0 {
			return
		}
	}
	t.Fatalf("pid %d: no command line after 5 s", pid)
}

func listen(t *testing.T) (*net.TCPListener, int) {
	t.Helper()
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, l.Addr().(*net.TCPAddr).Port
}

// A managed server is binky's when the process its pid file names holds
// the port's listening socket (a process it started counts: RabbitMQ's
// script and its node); a program that took the port while binky's server
// was down is not, whatever its name.
func TestAServerIsBinkysOnlyIfItsProcessHoldsThePort(t *testing.T) {
	m := New(world.Home{Dir: t.TempDir()})
	dir := m.dir("redis")
	os.MkdirAll(dir, 0o700)
	l, port := listen(t)
	ours := heldBy(t, "redis-server", l)
	writePid := func(pid int) {
		os.WriteFile(filepath.Join(dir, "redis.pid"), []byte(fmt.Sprintf("%d\n", pid)), 0o600)
	}
	writePid(ours.Process.Pid)
	if !m.serves("redis", port) {
		t.Fatal("the process the pid file names holds the port, and is not seen serving")
	}
	_, otherPort := listen(t)
	if m.serves("redis", otherPort) {
		t.Error("a port held by this test (not the pid file's process) is seen as binky's redis")
	}
	// A script that started the listener: the pid file names the parent.
	parent := exec.Command("/bin/sh", "-c", "sleep 30 & exec 3>&-; wait")
	parent.Args[0] = "rabbitmq-server"
	l2, port2 := listen(t)
	f, _ := l2.File()
	parent.ExtraFiles = []*os.File{f}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	execed(t, parent.Process.Pid)
	t.Cleanup(func() { parent.Process.Kill(); parent.Wait() })
	os.MkdirAll(m.dir("rabbitmq"), 0o700)
	os.WriteFile(filepath.Join(m.dir("rabbitmq"), "rabbitmq.pid"), []byte(fmt.Sprintf("%d\n", parent.Process.Pid)), 0o600)
	// Until the script has closed its copy: only its child holds the port.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d/fd/3", parent.Process.Pid)); err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !m.serves("rabbitmq", port2) {
		t.Error("a port held by a child of the pid file's process is not seen as the server's")
	}
}

// A program that holds a managed server's port while binky's server is
// down is never sent the admin password: the start refuses, naming the
// port, and the program receives nothing. (An attack read the Redis admin
// password from AUTH this way.)
func TestAProgramOnAServersPortIsNotSentItsPassword(t *testing.T) {
	if adapters.FindServerBinary("redis-server") == "" {
		t.Skip("skipped: no redis-server here (apt-get install redis-server)")
	}
	m := New(world.Home{Dir: t.TempDir()})
	dir := m.dir("redis")
	os.MkdirAll(dir, 0o700)
	l, port := listen(t)
	os.WriteFile(filepath.Join(dir, "port"), []byte(strconv.Itoa(port)+"\n"), 0o600)
	got := make(chan string, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				b := make([]byte, 512)
				if n, _ := c.Read(b); n > 0 {
					got <- string(b[:n])
				}
			}()
		}
	}()
	_, err := m.AdminURL(context.Background(), "redis")
	if err == nil || !strings.Contains(err.Error(), "not binky's redis") || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Fatalf("start with another program on the port: %v, want a refusal naming the port", err)
	}
	time.Sleep(300 * time.Millisecond)
	select {
	case b := <-got:
		t.Errorf("the program on the port was sent %q", b)
	default:
	}
}
