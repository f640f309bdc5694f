package managed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"github.com/git-binky/git-binky/adapters"
)

// rootDataDir is where a root-run binky keeps the shared postgres's files.
const rootDataDir = "/var/lib/git-binky"

// startPostgres runs the shared PostgreSQL: initdb once (scram, an admin
// role "binky" with a generated password), then pg_ctl start on 127.0.0.1.
func startPostgres(ctx context.Context, m *Servers, dir string) (string, error) {
	initdb, pgctl := adapters.FindServerBinary("initdb"), adapters.FindServerBinary("pg_ctl")
	if initdb == "" || pgctl == "" {
		return "", missing("PostgreSQL server binaries (initdb, pg_ctl)", "postgresql")
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
	if listening(port) {
		return admin, nil
	}
	// The server's files live where its user can reach them: under
	// BINKY_HOME normally; as root, whose home the postgres user cannot
	// enter, under /var/lib/git-binky (linked from servers/postgres/data).
	pgdir := dir
	if cred != nil {
		sum := sha256.Sum256([]byte(m.Home.Dir))
		pgdir = filepath.Join(rootDataDir, hex.EncodeToString(sum[:6]), "postgres")
		if err := os.MkdirAll(pgdir, 0o700); err != nil {
			return "", fmt.Errorf("create %s for the shared postgres: %w", pgdir, err)
		}
		// The folders above it only need to be traversed, not read.
		for _, d := range []string{rootDataDir, filepath.Dir(pgdir)} {
			_ = os.Chmod(d, 0o711)
		}
		link := filepath.Join(dir, "data")
		if target, err := os.Readlink(link); err != nil || target != filepath.Join(pgdir, "data") {
			os.Remove(link)
			if err := os.Symlink(filepath.Join(pgdir, "data"), link); err != nil {
				return "", err
			}
		}
	}
	data, sock, logf := filepath.Join(pgdir, "data"), filepath.Join(pgdir, "sock"), filepath.Join(pgdir, "postgres.log")
	if err := os.MkdirAll(sock, 0o700); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		os.RemoveAll(data)
		pwfile := filepath.Join(pgdir, "initdb.pw")
		if err := os.WriteFile(pwfile, []byte(pw+"\n"), 0o600); err != nil {
			return "", err
		}
		defer os.Remove(pwfile)
		if err := os.MkdirAll(data, 0o700); err != nil {
			return "", err
		}
		if err := chownTree(pgdir, cred); err != nil {
			return "", err
		}
		if err := run(ctx, cred, initdb, "-D", data, "-U", "binky", "--pwfile", pwfile, "--auth", "scram-sha-256",
			"-E", "UTF8", "--no-instructions"); err != nil {
			return "", fmt.Errorf("create the shared postgres: %w", err)
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
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s -c max_connections=300 -c synchronous_commit=off -c max_logical_replication_workers=0", port, sock)
	if err := run(ctx, cred, pgctl, "-D", data, "-l", logf, "-w", "-t", "60", "-o", opts, "start"); err != nil {
		return "", fmt.Errorf("start the shared postgres (log: %s): %w", logf, err)
	}
	return admin, nil
}
