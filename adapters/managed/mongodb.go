package managed

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/mongodb"
	"github.com/git-binky/git-binky/adapters/postgres"
)

// ferretDatabase is the database of the shared postgres that the shared
// FerretDB keeps its schemas (one per world) in.
const ferretDatabase = "ferretdb"

// startMongoDB runs the shared MongoDB: one FerretDB (the MongoDB wire
// protocol on PostgreSQL) in front of binky's shared postgres, so it costs
// one small process more. FerretDB 1.x passes each client's credentials
// through to PostgreSQL, so the admin URL carries the postgres admin's, and
// each world gets a PostgreSQL role of its own (see adapters/mongodb).
func startMongoDB(ctx context.Context, m *Servers, dir string) (string, error) {
	bin := adapters.FindServerBinary("ferretdb")
	if bin == "" {
		return "", errors.New("ferretdb not found: build it with 'make ferretdb' in binky's source (or " +
			"scripts/build-ferretdb.sh ~/.cache/git-binky/bin: FerretDB v1.24.2, Apache-2.0), or set admin_url to a MongoDB server of your own")
	}
	// Through an interface: a direct call would make the starters table
	// refer to itself (an initialization cycle). AdminURL locks per kind,
	// so asking for postgres while mongodb's lock is held is safe.
	var servers interface {
		AdminURL(ctx context.Context, kind string) (string, error)
	} = m
	pgAdmin, err := servers.AdminURL(ctx, "postgres")
	if err != nil {
		return "", fmt.Errorf("the shared mongodb runs on the shared postgres: %w", err)
	}
	pu, err := adapters.ParseURL(pgAdmin)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	port, err := m.port("mongodb", dir)
	if err != nil {
		return "", err
	}
	q := url.Values{}
	q.Set("authMechanism", "PLAIN")
	q.Set("postgres", pu.Host+"/"+ferretDatabase)
	admin := (&url.URL{Scheme: "mongodb", User: pu.User, Host: "127.0.0.1:" + strconv.Itoa(port), Path: "/", RawQuery: q.Encode()}).String()
	pidf := filepath.Join(dir, "ferretdb.pid")
	serving, err := m.already("mongodb", port)
	if err != nil {
		return "", err
	}
	if serving {
		err := mongodb.Ready(ctx, admin)
		if !errors.Is(err, mongodb.ErrStaleCatalog) {
			return admin, err
		}
		// A world's client was first after a restart, and FerretDB's
		// catalog holds its database only: start it again, so that we are.
		if err := stopFerretDB(pidf, port); err != nil {
			return "", fmt.Errorf("restart the shared ferretdb: %w", err)
		}
	}
	// Worlds' roles live on the shared postgres too: the postgres and
	// template1 databases are closed to them, as for its own worlds (a
	// role owning a large object there could not be dropped).
	if err := postgres.New().Harden(ctx, pgAdmin); err != nil {
		return "", fmt.Errorf("the shared mongodb's postgres: %w", err)
	}
	if err := postgres.EnsureDatabase(ctx, pgAdmin, ferretDatabase); err != nil {
		return "", fmt.Errorf("the shared mongodb's database in the shared postgres: %w", err)
	}
	// Before FerretDB starts: its first client, binky's admin, reads every
	// world's schema.
	fu := *pu
	fu.Path = "/" + ferretDatabase
	if err := postgres.GuardFerretDatabase(ctx, fu.String()); err != nil {
		return "", fmt.Errorf("the shared mongodb's database in the shared postgres: %w", err)
	}
	// FerretDB lends its --postgresql-url's credentials to every client
	// that sends none: this user does not exist, so such clients get
	// nothing.
	base := url.URL{Scheme: "postgres", User: url.User("binky_nobody"), Host: pu.Host, Path: "/" + ferretDatabase, RawQuery: "sslmode=disable"}
	logf := filepath.Join(dir, "ferretdb.log")
	// FerretDB does not daemonize: a shell starts it in the background and
	// exits, so it belongs to no one (not a zombie of the daemon's) and its
	// output goes to its log, not to our pipe.
	if err := run(ctx, nil, "/bin/sh", "-c", `l="$1"; p="$2"; shift 2; "$@" </dev/null >>"$l" 2>&1 & echo $! >"$p"`, "sh", logf, pidf,
		bin, "--postgresql-url="+base.String(), "--listen-addr=127.0.0.1:"+strconv.Itoa(port), "--debug-addr=-",
		"--telemetry=disable", "--state-dir="+dir, "--log-level=warn"); err != nil {
		return "", fmt.Errorf("start the shared ferretdb (log: %s): %w", logf, err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for !m.serves("mongodb", port) {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the shared ferretdb did not start listening on 127.0.0.1:%d (log: %s)", port, logf)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Before any world's client: FerretDB's catalog is loaded by the first.
	// That first call gets FerretDB's error if the load failed; the next
	// one finds what it loaded (ErrStaleCatalog: see below).
	err = mongodb.Ready(ctx, admin)
	if err != nil && !errors.Is(err, mongodb.ErrStaleCatalog) {
		err = mongodb.Ready(ctx, admin)
	}
	if err != nil {
		if errors.Is(err, mongodb.ErrStaleCatalog) {
			// Still stale though binky was first: a world's client raced
			// in (the next call restarts it again), or FerretDB could not
			// read a database's metadata (a world can write rows there
			// that break its loader). Provisions say so; a teardown,
			// which can remove that world, still works.
			return admin, nil
		}
		return "", fmt.Errorf("the shared ferretdb (log: %s): %w", logf, err)
	}
	return admin, nil
}

// stopFerretDB stops the shared FerretDB of pidfile (only if the pid is
// still a ferretdb: pids are reused) and waits until port is free.
func stopFerretDB(pidfile string, port int) error {
	b, err := os.ReadFile(pidfile)
	if err != nil {
		return fmt.Errorf("no pid file to stop it by: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		return fmt.Errorf("pid file %s: %q", pidfile, b)
	}
	if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); !strings.Contains(string(cmdline), "ferretdb") {
		return fmt.Errorf("pid %d (from %s) is not a ferretdb", pid, pidfile)
	}
	if err := stopPID(pid); err != nil {
		return err
	}
	// On SIGTERM FerretDB stops listening but serves its open connections
	// until their clients leave, with the catalog that made us stop it:
	// after a grace, end them, so that the clients reconnect to the new one.
	deadline := time.Now().Add(3 * time.Second)
	for pidAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	killPID(pid)
	for deadline := time.Now().Add(10 * time.Second); listening(port); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("ferretdb (pid %d) still listens on %d", pid, port)
		}
	}
	return nil
}
