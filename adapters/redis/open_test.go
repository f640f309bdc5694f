package redis

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/git-binky/git-binky/adapters"
)

// openRedis starts a Redis of the test's own as Debian and the Docker
// image ship it: no requirepass, so its "default" user is on, nopass,
// with every right. It returns the admin URL (no credentials).
func openRedis(t *testing.T) string {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not on PATH (make test installs it)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--bind", "127.0.0.1", "--port", fmt.Sprint(port), "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	admin := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	c := adminClient(t, admin)
	for deadline := time.Now().Add(10 * time.Second); c.Ping(context.Background()).Err() != nil; {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on port %d did not answer", port)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return admin
}

// A world's own ACL user keeps nothing out where anyone may log in as a
// user without a password: the world's own connection becomes "default"
// with RESET (or AUTH default <anything>). binky says isolation is not
// enforced there, and says it no more once that user has a password.
func TestAServerAnyoneMayLogInToSaysIsolationIsNotEnforced(t *testing.T) {
	admin := openRedis(t)
	ctx := context.Background()
	r := New()
	a := adapters.Slice{Name: "open_a", World: "w-open-a", Home: "h", AdminURL: admin, Password: "aaaa1111aaaa1111"}
	b := adapters.Slice{Name: "open_b", World: "w-open-b", Home: "h", AdminURL: admin, Password: "bbbb2222bbbb2222"}
	for _, s := range []adapters.Slice{a, b} {
		if err := r.Provision(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	adminClient(t, admin).Set(ctx, "open_b:secret", "b's", 0)
	addr, err := r.Resolve(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if addr["isolation"] != adapters.IsolationNone {
		t.Errorf("isolation %q on a Redis whose default user has no password, want %q", addr["isolation"], adapters.IsolationNone)
	}
	if addr["user"] != a.Name {
		t.Errorf("the world's URL names user %q, want its own %q", addr["user"], a.Name)
	}
	// Why: the world's own connection reads B's key after RESET.
	if v := escapeWithReset(t, ctx, addr["url"], "open_b:secret"); v != "b's" {
		t.Fatalf("the escape this test explains did not work (%q): the server is not what it stands for", v)
	}

	// Given a password, default is no longer anyone's: isolated again.
	if err := adminClient(t, admin).Do(ctx, "ACL", "SETUSER", "default", ">admin-secret").Err(); err != nil {
		t.Fatal(err)
	}
	closed := strings.Replace(admin, "redis://", "redis://default:admin-secret@", 1)
	a.AdminURL = closed
	addr, err = r.Resolve(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if addr["isolation"] != "" {
		t.Errorf("isolation %q once default has a password, want it enforced", addr["isolation"])
	}
	if v := escapeWithReset(t, ctx, addr["url"], "open_b:secret"); v != "" {
		t.Errorf("after RESET the world read B's key %q on a server whose default user has a password", v)
	}
}

// escapeWithReset connects as the world's URL, sends RESET, and returns
// what GET key answers then ("" for an error).
func escapeWithReset(t *testing.T, ctx context.Context, worldURL, key string) string {
	opt, err := goredis.ParseURL(worldURL)
	if err != nil {
		t.Fatal(err)
	}
	opt.DisableIdentity, opt.Protocol, opt.PoolSize = true, 2, 1
	c := goredis.NewClient(opt)
	defer c.Close()
	conn := c.Conn()
	defer conn.Close()
	if err := conn.Ping(ctx).Err(); err != nil {
		t.Fatalf("the world's own user: %v", err)
	}
	if err := conn.Do(ctx, "RESET").Err(); err != nil {
		return ""
	}
	v, err := conn.Get(ctx, key).Result()
	if err != nil {
		return ""
	}
	return v
}
