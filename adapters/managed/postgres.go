package managed

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/world"
)

// startPostgres runs the shared PostgreSQL: initdb once (scram, an admin
// role "binky" with a generated password), then the postmaster on 127.0.0.1.
func startPostgres(ctx context.Context, m *Servers, dir string) (string, error) {
	initdb, server := adapters.FindServerBinary("initdb"), adapters.FindServerBinary("postgres")
	if initdb == "" || server == "" {
		return "", missing("PostgreSQL server binaries (initdb, postgres)", "postgresql")
	}
	cred, err := runAs()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	pw, err := secret(dir)
	if err != nil {
		return "", err
	}
	port, err := m.port("postgres", dir)
	if err != nil {
		return "", err
	}
	admin := (&url.URL{Scheme: "postgres", User: url.UserPassword("binky", pw), Host: "127.0.0.1:" + strconv.Itoa(port),
		Path: "/postgres", RawQuery: "sslmode=disable"}).String()
	if postgresServes(m, dir, port) {
		return admin, nil
	}
	// Also a postmaster of binky's still starting (recovering) on the port.
	ours, err := m.already("postgres", port)
	if err != nil {
		return "", err
	}
	if ours {
		return admin, nil
	}
	// The server's files live where its user can reach them: under
	// BINKY_HOME normally; as root, whose home the postgres user cannot
	// enter, under /var/lib/git-binky (linked from servers/postgres/data).
	pgdir := dir
	if cred != nil {
		link := filepath.Join(dir, "data")
		if pgdir, err = m.rootDir("postgres", link, "data"); err != nil {
			return "", err
		}
		if err := linkTo(link, filepath.Join(pgdir, "data")); err != nil {
			return "", err
		}
	}
	data, sock, logf := filepath.Join(pgdir, "data"), filepath.Join(pgdir, "sock"), filepath.Join(pgdir, "postgres.log")
	if err := os.MkdirAll(sock, 0o700); err != nil {
		return "", err
	}
	made := false
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		made = true
		// initdb writes into a folder of its own, renamed to data only
		// when it succeeded: a crash during initdb leaves no half-made
		// cluster that the next start would take for a whole one.
		fresh := data + ".initdb"
		os.RemoveAll(fresh)
		os.RemoveAll(data)
		pwfile := filepath.Join(pgdir, "initdb.pw")
		if err := os.WriteFile(pwfile, []byte(pw+"\n"), 0o600); err != nil {
			return "", err
		}
		defer os.Remove(pwfile)
		if err := os.MkdirAll(fresh, 0o700); err != nil {
			return "", err
		}
		if err := chownTree(pgdir, cred); err != nil {
			return "", err
		}
		// --no-sync: the files reach the disk after the server starts
		// (initdb --sync-only, below), not while the first up waits
		// (~130 ms of a ~600 ms initdb here).
		if err := runEnv(ctx, cred, initdbEnv(os.Environ(), "/etc/localtime"), initdb, "-D", fresh, "-U", "binky", "--pwfile", pwfile, "--auth", "scram-sha-256",
			"-E", "UTF8", "--no-instructions", "--no-sync"); err != nil {
			return "", fmt.Errorf("create the shared postgres: %w", err)
		}
		if err := os.Rename(fresh, data); err != nil {
			return "", fmt.Errorf("create the shared postgres: %w", err)
		}
	}
	// A cluster whose files were never synced (the daemon stopped before
	// the sync after its initdb finished) is synced before it starts.
	synced := filepath.Join(pgdir, "synced")
	if _, err := os.Stat(synced); err != nil && !made {
		if err := syncCluster(ctx, cred, initdb, data, synced); err != nil {
			return "", err
		}
	}
	if f, err := os.OpenFile(logf, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
		f.Close()
	}
	if err := chownTree(pgdir, cred); err != nil {
		return "", err
	}
	// No logical replication launcher: worlds cannot subscribe (that
	// needs a superuser) and it is a process of memory for nothing.
	// shared_buffers 16MB, an eighth of the default: every checkpoint
	// (a spare's copy forces two) has the checkpointer touch each buffer
	// it writes, and a world's pages past the buffers come from the OS's
	// page cache. No background writer cleaning ahead of backends
	// (bgwriter_lru_maxpages 0): with so few buffers it touched them all
	// too, and a backend that needs a buffer writes it itself. Eight
	// worlds of 21.6 MiB: 76-77 MiB RSS against 95-99 at 32MB with the
	// writer, and eight ups no slower (docs/performance.md, round 18).
	// wal_init_zero off: a clone writes its whole size as WAL, so copies
	// keep making new 16 MB segments, which the default fills with zeros
	// before use (a third more bytes written); unfilled, 8 back-to-back
	// copies of a 21.6 MiB template took 9-36% less in each of five
	// neighbouring pairs. A full disk then stops the server at a WAL write
	// rather than at a segment's making: either way nothing committed is
	// lost.
	if err := startPostmaster(ctx, cred, server, data, logf, []string{"-D", data, "-c", "listen_addresses=127.0.0.1", "-p", strconv.Itoa(port),
		"-c", "unix_socket_directories=" + sock, "-c", "max_connections=300", "-c", "synchronous_commit=off",
		"-c", "max_logical_replication_workers=0", "-c", "shared_buffers=16MB", "-c", "bgwriter_lru_maxpages=0", "-c", "wal_init_zero=off"}); err != nil {
		return "", err
	}
	if made {
		go syncCluster(context.Background(), cred, initdb, data, synced)
	}
	return admin, nil
}

// syncCluster writes every file of the cluster to disk (initdb
// --sync-only, safe beside a running server), then the synced marker.
func syncCluster(ctx context.Context, cred *account, initdb, data, synced string) error {
	if err := run(ctx, cred, initdb, "--sync-only", "-D", data); err != nil {
		return fmt.Errorf("sync the shared postgres's files: %w", err)
	}
	return world.WriteFileAtomic(synced, []byte("binky\n"), 0o600)
}

// startPostmaster starts postgres in its own session (it outlives the
// daemon) with its output appended to logf, and returns once it accepts
// connections: when its postmaster.pid says "ready", the check pg_ctl -w
// makes, but every 5 ms rather than pg_ctl's every 100 ms (a first up
// waited ~65 ms for nothing).
func startPostmaster(ctx context.Context, cred *account, server, data, logf string, args []string) error {
	// The postmaster outlives its starter (it is detached): one started
	// for a request that has ended (a stopping daemon's) would run with
	// no daemon knowing of it.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("start the shared postgres: %w", err)
	}
	log, err := os.OpenFile(logf, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(server, args...)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = detached(cred)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the shared postgres: %w", err)
	}
	pidFile := filepath.Join(data, "postmaster.pid")
	return awaitStarted(ctx, cmd, "postgres", logf, 5*time.Millisecond, func() bool { return postmasterReady(pidFile, cmd.Process.Pid, 0) })
}

// postgresServes reports, without connecting, whether the shared
// postgres in dir runs and accepts connections on port: its
// postmaster.pid names a live postgres process, that port, and "ready".
// Every up asks; a connection to see would cost one: the postmaster forks
// a backend for each, even one that closes at once (15 ms and 29 ms of CPU
// on a VM that takes page faults slowly). Where the process cannot be
// named (no /proc), the caller dials as before.
func postgresServes(m *Servers, dir string, port int) bool {
	p, ok, _ := m.running("postgres")
	return ok && postmasterReady(filepath.Join(dir, stoppers["postgres"].pidFile), p.PID, port)
}

// postmasterReady reports whether postmaster.pid names pid (and port,
// unless 0) and says it accepts connections (its 8th line,
// PM_STATUS_READY; the port is its 4th).
func postmasterReady(pidFile string, pid, port int) bool {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return false
	}
	lines := strings.Split(string(b), "\n")
	return len(lines) >= 8 && strings.TrimSpace(lines[0]) == strconv.Itoa(pid) && strings.TrimSpace(lines[7]) == "ready" &&
		(port == 0 || strings.TrimSpace(lines[3]) == strconv.Itoa(port))
}

// initdbEnv is env with TZ set to the system's time zone when env has none
// and localtime is a link into a zoneinfo folder (Debian, macOS, most
// Linux). Without TZ, initdb finds the zone by loading every zone file and
// comparing each with the system's: 100-250 ms of a first up's initdb on
// this VM, for the same answer.
func initdbEnv(env []string, localtime string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "TZ=") {
			return env
		}
	}
	target, err := os.Readlink(localtime)
	if err != nil {
		return env
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(localtime), target)
	}
	_, zone, ok := strings.Cut(filepath.ToSlash(filepath.Clean(target)), "/zoneinfo/")
	if !ok || zone == "" || strings.HasPrefix(zone, "posix/") || strings.HasPrefix(zone, "right/") {
		return env
	}
	if fi, err := os.Stat(target); err != nil || !fi.Mode().IsRegular() {
		return env
	}
	return append(env[:len(env):len(env)], "TZ="+zone)
}
