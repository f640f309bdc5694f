// Package managed runs the embedded default: with no admin_url, one shared
// Postgres and one shared Redis for the whole machine, under
// $BINKY_HOME/servers/, bound to 127.0.0.1 on allocated ports, with admin
// credentials generated and kept there (0600). The servers detach from
// whoever started them, so they survive daemon restarts; every world's slice
// is carved from them.
package managed

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/world"
)

// Kinds binky can run itself.
const (
	Postgres = "postgres"
	Redis    = "redis"
)

// Server is a managed server as status and doctor show it.
type Server struct {
	Kind    string `json:"kind"`
	Port    int    `json:"port,omitempty"`
	Running bool   `json:"running"`
	Dir     string `json:"dir"`
	Message string `json:"message,omitempty"`
}

// rootDataDir is where a root-run binky keeps the shared postgres's files.
const rootDataDir = "/var/lib/git-binky"

// Servers starts and finds the managed servers of one BINKY_HOME.
type Servers struct {
	Home world.Home
	mu   sync.Mutex
}

// New returns the managed servers of home.
func New(home world.Home) *Servers { return &Servers{Home: home} }

func (m *Servers) dir(kind string) string { return filepath.Join(m.Home.ServersDir(), kind) }

// AdminURL makes sure the server of kind runs and returns its admin URL.
func (m *Servers) AdminURL(ctx context.Context, kind string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Across processes too: two daemons never init one data folder.
	if err := os.MkdirAll(m.Home.ServersDir(), 0o700); err != nil {
		return "", err
	}
	unlock, err := world.Lock(ctx, filepath.Join(m.Home.ServersDir(), kind+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	switch kind {
	case Postgres:
		return m.postgres(ctx)
	case Redis:
		return m.redis(ctx)
	}
	return "", fmt.Errorf("binky cannot run a %s server itself: set admin_url for it", kind)
}

// Status describes every managed server that exists.
func (m *Servers) Status() []Server {
	var out []Server
	for _, kind := range []string{Postgres, Redis} {
		d := m.dir(kind)
		if _, err := os.Stat(d); err != nil {
			continue
		}
		s := Server{Kind: kind, Dir: d}
		s.Port, _ = readPort(d)
		s.Running = s.Port != 0 && listening(s.Port)
		if !s.Running {
			s.Message = "stopped; it starts again when a world needs it"
		}
		out = append(out, s)
	}
	return out
}

func readPort(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "port"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

func listening(port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 500*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// secret returns the admin password kept in dir, creating it once.
func secret(dir string) (string, error) {
	p := filepath.Join(dir, "admin.password")
	if b, err := os.ReadFile(p); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	buf := make([]byte, 16)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	pw := hex.EncodeToString(buf)
	return pw, world.WriteFileAtomic(p, []byte(pw+"\n"), 0o600)
}

// port returns the server's port, allocating it once from binky's range.
func (m *Servers) port(kind, dir string) (int, error) {
	if p, err := readPort(dir); err == nil {
		return p, nil
	}
	settings, err := m.Home.LoadSettings()
	if err != nil {
		return 0, err
	}
	p, err := m.Home.NewAllocator(settings).Server(kind)
	if err != nil {
		return 0, err
	}
	return p, world.WriteFileAtomic(filepath.Join(dir, "port"), []byte(strconv.Itoa(p)+"\n"), 0o600)
}

func missing(what, pkg string) error {
	return fmt.Errorf("%s not found: install it (Debian: apt-get install %s), or set admin_url to a server of your own", what, pkg)
}

// runAs is the account servers run as: the caller, unless it is root, which
// PostgreSQL refuses; then the "postgres" user that the PostgreSQL packages
// create.
func runAs() (*syscall.Credential, error) {
	if os.Getuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("binky runs as root and PostgreSQL refuses to: create a 'postgres' user (the postgresql package does), or run binky as a normal user")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func chownTree(root string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(cred.Uid), int(cred.Gid))
	})
}

func run(ctx context.Context, cred *syscall.Credential, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = "/"
	// Its own session: the server outlives the daemon and ignores the
	// terminal's signals.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: cred}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", filepath.Base(name), strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (m *Servers) postgres(ctx context.Context) (string, error) {
	initdb, pgctl := adapters.FindServerBinary("initdb"), adapters.FindServerBinary("pg_ctl")
	if initdb == "" || pgctl == "" {
		return "", missing("PostgreSQL server binaries (initdb, pg_ctl)", "postgresql")
	}
	cred, err := runAs()
	if err != nil {
		return "", err
	}
	dir := m.dir(Postgres)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	pw, err := secret(dir)
	if err != nil {
		return "", err
	}
	port, err := m.port(Postgres, dir)
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
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s -c max_connections=300 -c synchronous_commit=off", port, sock)
	if err := run(ctx, cred, pgctl, "-D", data, "-l", logf, "-w", "-t", "60", "-o", opts, "start"); err != nil {
		return "", fmt.Errorf("start the shared postgres (log: %s): %w", logf, err)
	}
	return admin, nil
}

func (m *Servers) redis(ctx context.Context) (string, error) {
	server := adapters.FindServerBinary("redis-server")
	if server == "" {
		return "", missing("redis-server", "redis-server")
	}
	dir := m.dir(Redis)
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return "", err
	}
	pw, err := secret(dir)
	if err != nil {
		return "", err
	}
	port, err := m.port(Redis, dir)
	if err != nil {
		return "", err
	}
	admin := (&url.URL{Scheme: "redis", User: url.UserPassword("default", pw), Host: "127.0.0.1:" + strconv.Itoa(port), Path: "/0"}).String()
	if listening(port) {
		return admin, nil
	}
	conf := fmt.Sprintf(`# Written by git-binky: the shared Redis of this machine's worlds.
bind 127.0.0.1
protected-mode yes
port %d
daemonize yes
pidfile %s
logfile %s
dir %s
user default on >%s ~* &* +@all
`, port, filepath.Join(dir, "redis.pid"), filepath.Join(dir, "redis.log"), data, pw)
	confPath := filepath.Join(dir, "redis.conf")
	if err := world.WriteFileAtomic(confPath, []byte(conf), 0o600); err != nil {
		return "", err
	}
	if err := run(ctx, nil, server, confPath); err != nil {
		return "", fmt.Errorf("start the shared redis (log: %s): %w", filepath.Join(dir, "redis.log"), err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !listening(port) {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the shared redis did not start listening on 127.0.0.1:%d (log: %s)", port, filepath.Join(dir, "redis.log"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return admin, nil
}
