package managed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/world"
)

// stopper is how a kind's server is stopped: the pid file its starter
// writes (relative to its folder), the names one of which its
// /proc/<pid>/cmdline holds (pids are reused: never signal another
// program), and the signal that shuts it down without waiting for clients
// (Postgres: SIGINT is its fast shutdown; SIGTERM would wait for every
// world's connections to close).
type stopper struct {
	pidFile string
	names   []string
	sig     syscall.Signal
}

var stoppers = map[string]stopper{
	"postgres":   {"data/postmaster.pid", []string{"postgres"}, syscall.SIGINT},
	"redis":      {"redis.pid", []string{"redis", "valkey"}, syscall.SIGTERM},
	"s3":         {"minio.pid", []string{"minio"}, syscall.SIGTERM},
	"clickhouse": {"clickhouse.pid", []string{"clickhouse"}, syscall.SIGTERM},
	"rabbitmq":   {"rabbitmq.pid", []string{"rabbitmq", "beam"}, syscall.SIGTERM},
	"mysql":      {"data/mysql.pid", []string{"mysqld", "mariadbd"}, syscall.SIGTERM},
	"mongodb":    {"ferretdb.pid", []string{"ferretdb"}, syscall.SIGTERM},
}

// Stop stops the shared server of kind and waits until it is gone. Its
// files (data, credentials, port) stay: Start (or the next world that needs
// it) brings it back with every slice intact. A server that is not running
// is not an error.
func (m *Servers) Stop(ctx context.Context, kind string) error {
	if _, ok := stoppers[kind]; !ok {
		return fmt.Errorf("binky does not run a %s server itself (it runs %s)", kind, strings.Join(Kinds(), ", "))
	}
	dir := m.dir(kind)
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("no shared %s server under %s: binky never started one for this home", kind, m.Home.ServersDir())
	}
	unlock, err := world.Lock(ctx, filepath.Join(m.Home.ServersDir(), kind+".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	p, ok, err := m.running(kind)
	if err != nil || !ok {
		return err
	}
	p.port, _ = readPort(dir)
	p.epmd = epmdPort(kind, dir)
	if err := p.stop(ctx, 30*time.Second); err != nil {
		return fmt.Errorf("%w (its log is in %s)", err, dir)
	}
	return nil
}

// Proc is a shared server found running: what stopping it takes once
// its files may be gone.
type Proc struct {
	Kind string
	PID  int
	port int
	epmd int // RabbitMQ's epmd, which outlives its node
}

// Running lists the shared servers of this home that run now, from their
// pid files. The daemon keeps the list so that it can stop them after
// their home (pid files and all) is deleted.
func (m *Servers) Running() []Proc {
	var out []Proc
	for _, kind := range Kinds() {
		if p, ok, _ := m.running(kind); ok {
			p.port, _ = readPort(m.dir(kind))
			p.epmd = epmdPort(kind, m.dir(kind))
			out = append(out, p)
		}
	}
	return out
}

// running reads kind's pid file and reports the server it names, if that
// process still runs and is that server (pids are reused).
func (m *Servers) running(kind string) (Proc, bool, error) {
	st := stoppers[kind]
	pidPath := filepath.Join(m.dir(kind), st.pidFile)
	b, err := os.ReadFile(pidPath)
	if err != nil {
		return Proc{}, false, nil // no pid file: not running
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 1 {
		return Proc{}, false, fmt.Errorf("stop %s: pid file %s holds %q, not a pid", kind, pidPath, line)
	}
	p := Proc{Kind: kind, PID: pid}
	return p, p.is(), nil
}

// is reports whether p's pid is still a process of p's kind.
func (p Proc) is() bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
	return err == nil && containsAny(string(cmdline), stoppers[p.Kind].names)
}

// stop signals p to shut down and waits up to wait until it has exited
// and its port is free.
func (p Proc) stop(ctx context.Context, wait time.Duration) error {
	if !p.is() {
		return nil // gone, or the pid was reused by another program: ours is gone
	}
	if err := signalPID(p.PID, stoppers[p.Kind].sig); err != nil {
		return fmt.Errorf("stop %s (pid %d): %w", p.Kind, p.PID, err)
	}
	deadline := time.Now().Add(wait)
	for pidAlive(p.PID) || (p.port != 0 && listening(p.port)) {
		if time.Now().After(deadline) {
			return fmt.Errorf("stop %s: pid %d still runs after %s", p.Kind, p.PID, wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	if p.epmd != 0 {
		stopEpmd(ctx, p.epmd)
	}
	return nil
}

// epmdPort is the port of the epmd a RabbitMQ node of binky's started (0
// for other kinds, or none recorded).
func epmdPort(kind, dir string) int {
	if kind != "rabbitmq" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(dir, "port.epmd"))
	if err != nil {
		return 0
	}
	p, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return p
}

// stopEpmd ends the epmd on port, which the node started and which
// outlives it (a daemon of its own): on a port of binky's range, only a
// node of binky's used it. It refuses while a node is still registered, so
// it is asked again for a few seconds while the node's goes.
func stopEpmd(ctx context.Context, port int) {
	epmd := adapters.FindServerBinary("epmd")
	if epmd == "" {
		return
	}
	for deadline := time.Now().Add(5 * time.Second); listening(port) && time.Now().Before(deadline); {
		out, _ := exec.CommandContext(ctx, epmd, "-port", strconv.Itoa(port), "-kill").CombinedOutput()
		if !strings.Contains(string(out), "living nodes") {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// StopOrphaned stops p, whose home is gone: its admin password and its
// record of every slice went with it, so nothing of binky's can reach it
// again. A server that does not stop in wait is killed (a Redis whose
// final save fails, its folder deleted, refuses SIGTERM). As root, a
// server's data under /var/lib/git-binky stays for doctor to name.
func StopOrphaned(ctx context.Context, p Proc, wait time.Duration) error {
	err := p.stop(ctx, wait)
	if err == nil || ctx.Err() != nil || !p.is() {
		return err
	}
	if err := signalPID(p.PID, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s (pid %d): %w", p.Kind, p.PID, err)
	}
	for deadline := time.Now().Add(5 * time.Second); pidAlive(p.PID); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s (pid %d) still runs 5s after SIGKILL", p.Kind, p.PID)
		}
	}
	return nil
}

// Start starts the shared server of kind (a no-op when it runs) and
// returns its status.
func (m *Servers) Start(ctx context.Context, kind string) (api.Server, error) {
	if _, err := m.AdminURL(ctx, kind); err != nil {
		return api.Server{}, err
	}
	for _, s := range m.Status() {
		if s.Kind == kind {
			return s, nil
		}
	}
	return api.Server{Kind: kind, Dir: m.dir(kind)}, nil
}

func containsAny(s string, names []string) bool {
	for _, n := range names {
		if strings.Contains(s, n) {
			return true
		}
	}
	return false
}
