package managed

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/git-binky/git-binky/adapters"
	redisadapter "github.com/git-binky/git-binky/adapters/redis"
	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/world"
)

// The starters and the adapter table agree: a kind binky runs itself has a
// Server row (its binaries, how to install them), and the other way round.
func TestStartersAreTheTablesServerRows(t *testing.T) {
	for _, k := range adapters.Kinds {
		if (k.Server != nil) != Runs(k.Name) {
			t.Errorf("%s: Server row %v, starter %v", k.Name, k.Server != nil, Runs(k.Name))
		}
	}
	for _, kind := range Kinds() {
		if k, ok := adapters.Lookup(kind); !ok || k.Name != kind {
			t.Errorf("starter %q is no row of the adapter table", kind)
		}
	}
}

// An up waiting for a server another request is starting (the warm start
// of an up that creates a worktree, a server that never gets ready) gives
// up when its own context ends: a client's Ctrl-C, a teardown of its world.
func TestAWaitForAServerAnotherRequestStartsEndsWithItsContext(t *testing.T) {
	m := New(world.Home{Dir: t.TempDir()})
	m.kinds = map[string]chan struct{}{"postgres": make(chan struct{}, 1)}
	m.kinds["postgres"] <- struct{}{} // another request is starting it
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := m.AdminURL(ctx, "postgres")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want the caller's deadline", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("AdminURL still waits 5 s after its context ended")
	}
}

func TestAKindBinkyCannotRunAsksForAnAdminURL(t *testing.T) {
	m := New(world.Home{Dir: t.TempDir()})
	if _, err := m.AdminURL(context.Background(), "nosuch"); err == nil || !strings.Contains(err.Error(), "admin_url") {
		t.Errorf("err = %v", err)
	}
}

// A server's password and port are chosen once and kept: the servers
// outlive daemons, and every world's URL names them.
func TestSecretAndPortAreChosenOnceAndKept(t *testing.T) {
	home := world.Home{Dir: t.TempDir()}
	m := New(home)
	dir := filepath.Join(home.ServersDir(), "redis")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	pw, err := secret(dir)
	if err != nil || len(pw) != 32 {
		t.Fatalf("secret %q %v", pw, err)
	}
	if again, _ := secret(dir); again != pw {
		t.Errorf("secret changed: %q then %q", pw, again)
	}
	if fi, err := os.Stat(filepath.Join(dir, "admin.password")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin.password: %v %v, want 0600", fi, err)
	}
	p, err := m.port("redis", dir)
	if err != nil || p == 0 {
		t.Fatalf("port %d %v", p, err)
	}
	if again, _ := New(home).port("redis", dir); again != p {
		t.Errorf("port changed: %d then %d", p, again)
	}
}

func TestStatusSaysWhichServersListen(t *testing.T) {
	home := world.Home{Dir: t.TempDir()}
	m := New(home)
	if s := m.Status(); len(s) != 0 {
		t.Errorf("a new home has servers: %+v", s)
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for kind, port := range map[string]int{"postgres": l.Addr().(*net.TCPAddr).Port, "redis": 1} {
		dir := filepath.Join(home.ServersDir(), kind)
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, "port"), []byte(strconv.Itoa(port)+"\n"), 0o600)
	}
	// On postgres's port listens a program that is not binky's postgres
	// (this test): on Linux, where /proc tells, it is not taken for it.
	got := map[string]api.Server{}
	for _, s := range m.Status() {
		got[s.Kind] = s
	}
	if len(got) != 2 || got["redis"].Running || !strings.Contains(got["redis"].Message, "starts again") {
		t.Errorf("status %+v, want redis stopped (it starts again when needed)", got)
	}
	if procKnows() {
		if pg := got["postgres"]; pg.Running || !strings.Contains(pg.Message, "not binky's postgres") {
			t.Errorf("postgres's port held by another program: %+v, want not running and saying so", pg)
		}
	} else if !got["postgres"].Running {
		t.Errorf("without /proc, a listening port is the server: %+v", got["postgres"])
	}
}

// The real redis-server, started as binky starts it: on loopback, with a
// password, found again (not started twice) by a second daemon.
func TestRedisStartsOnceOnLoopbackWithAPassword(t *testing.T) {
	home := world.Home{Dir: t.TempDir()}
	ctx := context.Background()
	admin := sharedRedis(t, home)
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	if pw, _ := u.User.Password(); u.Hostname() != "127.0.0.1" || pw == "" {
		t.Errorf("admin URL %s: want 127.0.0.1 and a password", adapters.Redact(admin))
	}
	// Without the password the server refuses.
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("PING\r\n"))
	buf := make([]byte, 64)
	n, _ := c.Read(buf)
	c.Close()
	if !strings.HasPrefix(string(buf[:n]), "-NOAUTH") {
		t.Errorf("PING without a password: %q", buf[:n])
	}
	if again, err := New(home).AdminURL(ctx, "redis"); err != nil || again != admin {
		t.Errorf("second start: %v (same URL: %v)", err, again == admin)
	}
	if s := New(home).Status(); len(s) != 1 || !s[0].Running || s[0].Kind != "redis" {
		t.Errorf("status %+v", s)
	}
}

// A restart of the shared Redis keeps the worlds' users: they live in its
// ACL file, which the adapter saves to. (An attack found every running
// world locked out, WRONGPASS, after `git binky servers stop redis` and
// start, and up did not bring the users back.)
func TestTheSharedRedisKeepsTheWorldsUsersAcrossARestart(t *testing.T) {
	home := world.Home{Dir: t.TempDir()}
	ctx := context.Background()
	admin := sharedRedis(t, home)
	r := redisadapter.New()
	s := adapters.Slice{Name: "shop_w1", World: "w1", Home: "h", AdminURL: admin, Password: "a-world-password-123"}
	if err := r.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	addr, err := r.Resolve(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	ping := func() error {
		opt, err := goredis.ParseURL(addr["url"])
		if err != nil {
			return err
		}
		c := goredis.NewClient(opt)
		defer c.Close()
		return c.Ping(ctx).Err()
	}
	if err := ping(); err != nil {
		t.Fatalf("the world's user before the restart: %v", err)
	}
	if err := New(home).Stop(ctx, "redis"); err != nil {
		t.Fatal(err)
	}
	if again, err := New(home).AdminURL(ctx, "redis"); err != nil || again != admin {
		t.Fatalf("restart: %v (same URL: %v)", err, again == admin)
	}
	if err := ping(); err != nil {
		t.Errorf("the world's user after the restart: %v", err)
	}
	if err := r.Teardown(ctx, s); err != nil {
		t.Fatal(err)
	}
	New(home).Stop(ctx, "redis")
	if _, err := New(home).AdminURL(ctx, "redis"); err != nil {
		t.Fatal(err)
	}
	if err := ping(); err == nil {
		t.Error("the dropped world's user came back with the restart")
	}
}

// sharedRedis starts home's shared Redis (skipping without redis-server)
// and returns its admin URL; it is stopped when the test ends.
func sharedRedis(t *testing.T, home world.Home) string {
	t.Helper()
	if adapters.FindServerBinary("redis-server") == "" {
		t.Skip("redis-server is not installed (Debian: apt-get install redis-server)")
	}
	admin, err := New(home).AdminURL(context.Background(), "redis")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home.ServersDir(), "redis")
	// Stopped and waited for before its folder goes: a Redis whose final
	// save fails (its folder deleted under it) refuses to exit, and
	// outlived every test run until this waited.
	t.Cleanup(func() {
		if err := New(home).Stop(context.Background(), "redis"); err != nil {
			t.Error(err)
			if b, err := os.ReadFile(filepath.Join(dir, "redis.pid")); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					killPID(pid)
				}
			}
		}
	})
	return admin
}

// As root a server's data lives under /var/lib/git-binky, linked from its
// folder: status, servers and doctor named only the folder.
func TestStatusSaysWhereADataFolderLinkedElsewhereIs(t *testing.T) {
	home := world.Home{Dir: t.TempDir()}
	dir := filepath.Join(home.ServersDir(), "postgres")
	os.MkdirAll(dir, 0o700)
	elsewhere := filepath.Join(t.TempDir(), "postgres", "data")
	os.MkdirAll(elsewhere, 0o700)
	if err := os.Symlink(elsewhere, filepath.Join(dir, "data")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	s := New(home).Status()
	if len(s) != 1 || s[0].Data != elsewhere || !strings.Contains(s[0].Where(), "data in "+elsewhere) {
		t.Errorf("status %+v, want its data folder %s named", s, elsewhere)
	}
}
