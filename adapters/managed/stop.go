package managed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

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
	st, ok := stoppers[kind]
	if !ok {
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
	pidPath := filepath.Join(dir, st.pidFile)
	b, err := os.ReadFile(pidPath)
	if err != nil {
		return nil // no pid file: not running
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 1 {
		return fmt.Errorf("stop %s: pid file %s holds %q, not a pid", kind, pidPath, line)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil // the process is gone: not running
	}
	if !containsAny(string(cmdline), st.names) {
		return nil // the pid was reused by another program: ours is gone
	}
	if err := signalPID(pid, st.sig); err != nil {
		return fmt.Errorf("stop %s (pid %d): %w", kind, pid, err)
	}
	port, _ := readPort(dir)
	deadline := time.Now().Add(30 * time.Second)
	for pidAlive(pid) || (port != 0 && listening(port)) {
		if time.Now().After(deadline) {
			return fmt.Errorf("stop %s: pid %d still runs after 30s (its log is in %s)", kind, pid, dir)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
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
