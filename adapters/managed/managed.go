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
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/world"
)

// starter starts (or finds running) the shared server of one kind, its
// files under dir, and returns its admin URL. It runs with the kind's lock
// held, in this process and across processes.
type starter func(ctx context.Context, m *Servers, dir string) (adminURL string, err error)

// starters are the kinds binky can run itself, keyed by the adapter
// table's names (adapters.Kinds rows with a Server); one file per kind.
var starters = map[string]starter{
	"postgres":   startPostgres,
	"redis":      startRedis,
	"s3":         startS3,
	"clickhouse": startClickHouse,
	"rabbitmq":   startRabbitMQ,
	"mysql":      startMySQL,
	"mongodb":    startMongoDB,
}

// Runs reports whether binky can run the shared server of kind.
func Runs(kind string) bool { _, ok := starters[kind]; return ok }

// Kinds lists the kinds binky can run, sorted.
func Kinds() []string {
	out := make([]string, 0, len(starters))
	for k := range starters {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Servers starts and finds the managed servers of one BINKY_HOME.
type Servers struct {
	Home world.Home
	// OnRunning, when set, hears of a server AdminURL found or started
	// running (once its pid file names it).
	OnRunning func(Proc)
	mu        sync.Mutex
	// kinds holds a lock per kind, not one for all: a starter may need
	// another kind's server (FerretDB runs on the shared postgres). Each
	// is a channel of one slot, so that a caller waiting for another's
	// start (initdb, a server that never gets ready) can give up when its
	// own context ends.
	kinds map[string]chan struct{}
}

// New returns the managed servers of home.
func New(home world.Home) *Servers { return &Servers{Home: home} }

func (m *Servers) dir(kind string) string { return filepath.Join(m.Home.ServersDir(), kind) }

// AdminURL makes sure the server of kind runs and returns its admin URL.
func (m *Servers) AdminURL(ctx context.Context, kind string) (string, error) {
	m.mu.Lock()
	if m.kinds == nil {
		m.kinds = map[string]chan struct{}{}
	}
	if m.kinds[kind] == nil {
		m.kinds[kind] = make(chan struct{}, 1)
	}
	slot := m.kinds[kind]
	m.mu.Unlock()
	select {
	case slot <- struct{}{}:
	case <-ctx.Done():
		return "", fmt.Errorf("wait for the %s server another request is starting: %w", kind, ctx.Err())
	}
	defer func() { <-slot }()
	// Across processes too: two daemons never init one data folder.
	if err := os.MkdirAll(m.Home.ServersDir(), 0o700); err != nil {
		return "", err
	}
	unlock, err := world.Lock(ctx, filepath.Join(m.Home.ServersDir(), kind+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	start, ok := starters[kind]
	if !ok {
		return "", fmt.Errorf("binky cannot run a %s server itself: set admin_url for it", kind)
	}
	u, err := start(ctx, m, m.dir(kind))
	if err == nil && m.OnRunning != nil {
		if p, ok, _ := m.running(kind); ok {
			m.OnRunning(p)
		}
	}
	return u, err
}

// Status describes every managed server that exists, as status and doctor
// show it.
func (m *Servers) Status() []api.Server {
	var out []api.Server
	for _, kind := range Kinds() {
		d := m.dir(kind)
		if _, err := os.Stat(d); err != nil {
			continue
		}
		s := api.Server{Kind: kind, Dir: d}
		if target, err := os.Readlink(filepath.Join(d, "data")); err == nil && filepath.IsAbs(target) {
			s.Data = target
		}
		s.Port, _ = readPort(d)
		s.Running = s.Port != 0 && m.serves(kind, s.Port)
		switch {
		case !s.Running && s.Port != 0 && listening(s.Port):
			s.Message = portTaken(kind, s.Port).Error()
		case !s.Running:
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
	if err != nil && !world.UsingLastGood(err) {
		return 0, err
	}
	p, err := m.Home.NewAllocator(settings).Server(kind)
	if err != nil {
		return 0, err
	}
	return p, world.WriteFileAtomic(filepath.Join(dir, "port"), []byte(strconv.Itoa(p)+"\n"), 0o600)
}

// awaitStarted returns once ready() holds for a server whose cmd was just
// started (and is waited for here, so it never lingers as a zombie), or
// says why not: it exited (with the end of its log), 60 s went by, or ctx
// ended. ready is asked every every.
func awaitStarted(ctx context.Context, cmd *exec.Cmd, name, logf string, every time.Duration, ready func() bool) error {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for !ready() {
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logf)
			return fmt.Errorf("the shared %s exited (%v) (log: %s): %s", name, err, logf, lastLines(string(b), 5))
		case <-deadline.C:
			return fmt.Errorf("the shared %s was not ready within 60s (log: %s)", name, logf)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

func missing(what, pkg string) error {
	return fmt.Errorf("%s not found: install it (Debian: apt-get install %s), or set admin_url to a server of your own", what, pkg)
}

func run(ctx context.Context, cred *account, name string, args ...string) error {
	return runEnv(ctx, cred, nil, name, args...)
}

// runEnv is run with env as the command's environment (nil: the daemon's).
func runEnv(ctx context.Context, cred *account, env []string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = "/", env
	// Detached (detach_<os>.go): the server outlives the daemon and ignores
	// the terminal's signals.
	cmd.SysProcAttr = detached(cred)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", filepath.Base(name), strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// serves reports whether binky's server of kind is the one listening on
// port: the process its pid file names is alive, of that kind, and holds
// the listening socket. Anything else on the port (a program that took it
// while binky's server was down) is not sent the admin password. Where
// /proc cannot tell, a listening port has to do.
func (m *Servers) serves(kind string, port int) bool {
	p, ok, _ := m.running(kind)
	if !ok {
		return !procKnows() && listening(port)
	}
	owns, known := listensOn(p.PID, port)
	if !known {
		return listening(port)
	}
	return owns
}

// procKnows reports whether /proc names processes here (Linux), so that a
// pid file's process can be checked rather than only a port dialled.
func procKnows() bool {
	_, err := os.Stat("/proc/self/fd")
	return err == nil
}

// already reports whether binky's server of kind serves port, and says
// (portTaken) when another program holds it.
func (m *Servers) already(kind string, port int) (bool, error) {
	if m.serves(kind, port) {
		return true, nil
	}
	if listening(port) {
		return false, portTaken(kind, port)
	}
	return false, nil
}

// portTaken is the error for a server's port that another program holds.
func portTaken(kind string, port int) error {
	return fmt.Errorf("127.0.0.1:%d, the shared %s's port, is held by a program that is not binky's %s: binky does not send it the admin password; stop that program and run the command again", port, kind, kind)
}
