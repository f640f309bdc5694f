package redis

import (
	"context"
	"os"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/adapterstest"
)

func adminURL(t *testing.T) string {
	u := os.Getenv("BINKY_TEST_REDIS")
	if u == "" {
		t.Skip("BINKY_TEST_REDIS is not set (make test starts a throwaway Redis and sets it)")
	}
	return u
}

// TestConformance runs the suite, with an ACL user and a key an admin made
// by hand under a slice's name as the foreign objects binky must not touch.
func TestConformance(t *testing.T) {
	admin := adminURL(t)
	adapterstest.RunServer(t, New(), adapterstest.Server{AdminURL: admin,
		Foreign: func(ctx context.Context, slice string) error {
			c := adminClient(t, admin)
			t.Cleanup(func() {
				c.Do(context.Background(), "ACL", "DELUSER", slice)
				c.Del(context.Background(), slice+":data")
			})
			if err := c.Do(ctx, "ACL", "SETUSER", slice, "on", ">theirs", "~*", "+@all").Err(); err != nil {
				return err
			}
			return c.Set(ctx, slice+":data", "important", 0).Err()
		},
		Intact: func(ctx context.Context, slice string) (bool, error) {
			c := worldClient(t, admin, slice, "theirs")
			v, err := c.Get(ctx, slice+":data").Result()
			return v == "important", err
		}})
}

func TestAWorldCannotReadScanOrFlushAnotherWorldsKeys(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	r := New()
	sa := adapters.Slice{Name: "iso_a", World: "w-iso-a", AdminURL: admin, Password: "aaaa1111"}
	sb := adapters.Slice{Name: "iso_b", World: "w-iso-b", AdminURL: admin, Password: "bbbb2222"}
	for _, s := range []adapters.Slice{sa, sb} {
		if err := r.Provision(ctx, s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Teardown(context.Background(), s) })
	}
	ra, _ := r.Resolve(ctx, sa)
	rb, _ := r.Resolve(ctx, sb)
	if ra["user"] != "iso_a" {
		t.Skip("this Redis has no ACLs; isolation is by prefix only")
	}
	connect := func(u string) *goredis.Client {
		opt, err := goredis.ParseURL(u)
		if err != nil {
			t.Fatal(err)
		}
		opt.DisableIdentity, opt.Protocol = true, 2
		c := goredis.NewClient(opt)
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := connect(ra["url"]), connect(rb["url"])
	if err := b.Set(ctx, "iso_b:secret", "b's", 0).Err(); err != nil {
		t.Fatalf("B cannot write under its own prefix: %v", err)
	}
	if err := a.Set(ctx, "iso_a:mine", "a's", 0).Err(); err != nil {
		t.Fatalf("A cannot write under its own prefix: %v", err)
	}
	for what, err := range map[string]error{
		"GET B's key":    a.Get(ctx, "iso_b:secret").Err(),
		"SET B's key":    a.Set(ctx, "iso_b:secret", "x", 0).Err(),
		"SET unprefixed": a.Set(ctx, "global", "x", 0).Err(),
		"KEYS *":         a.Keys(ctx, "*").Err(),
		"SCAN":           a.Scan(ctx, 0, "*", 10).Err(),
		"RANDOMKEY":      a.RandomKey(ctx).Err(),
		"FLUSHDB":        a.FlushDB(ctx).Err(),
		"FLUSHALL":       a.FlushAll(ctx).Err(),
	} {
		if err == nil || !strings.Contains(strings.ToUpper(err.Error()), "NOPERM") {
			t.Errorf("%s with A's user: %v, want NOPERM", what, err)
		}
	}
	if v, _ := b.Get(ctx, "iso_b:secret").Result(); v != "b's" {
		t.Error("B's key was changed")
	}
	if prefix := ra["prefix"]; prefix != "iso_a:" {
		t.Errorf("prefix %q", prefix)
	}
	// Teardown deletes A's keys and user, and nothing of B's.
	if err := r.Teardown(ctx, sa); err != nil {
		t.Fatal(err)
	}
	adminC := connect(admin)
	if n, _ := adminC.Exists(ctx, "iso_a:mine").Result(); n != 0 {
		t.Error("A's keys survived teardown")
	}
	if n, _ := adminC.Exists(ctx, "iso_b:secret").Result(); n != 1 {
		t.Error("B's key was deleted by A's teardown")
	}
	if err := a.Ping(ctx).Err(); err == nil {
		t.Error("A's user still works after teardown")
	}
}

// options.allow = ["scripts", "info"] lets a queue library (BullMQ) run:
// its Lua reaches only the world's own keys, since Redis checks every
// redis.call against the user, and SCRIPT FLUSH, SCRIPT KILL and FUNCTION
// (every world's) stay refused. Without the option, EVAL and INFO are.
func TestScriptsAndInfoAreAllowedOnlyWhenAskedAndReachOnlyTheWorldsKeys(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	r := New()
	plain := adapters.Slice{Name: "lua_plain", World: "w-lua-p", AdminURL: admin, Password: "pppp1111"}
	lua := adapters.Slice{Name: "lua_q", World: "w-lua-q", AdminURL: admin, Password: "qqqq2222",
		Config: map[string]any{"allow": []any{"scripts", "info"}}}
	other := adapters.Slice{Name: "lua_o", World: "w-lua-o", AdminURL: admin, Password: "oooo3333"}
	for _, s := range []adapters.Slice{plain, lua, other} {
		if err := r.Provision(ctx, s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Teardown(context.Background(), s) })
	}
	open := func(s adapters.Slice) *goredis.Client {
		addr, err := r.Resolve(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if addr["user"] == "" {
			t.Skip("this Redis has no ACLs")
		}
		return adminClient(t, addr["url"]) // as the world's user
	}
	p, q, o := open(plain), open(lua), open(other)
	if err := o.Set(ctx, "lua_o:secret", "o's", 0).Err(); err != nil {
		t.Fatal(err)
	}
	noperm := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(strings.ToUpper(err.Error()), "NOPERM") {
			t.Errorf("%s: %v, want NOPERM", what, err)
		}
	}
	noperm("EVAL without the option", p.Eval(ctx, "return 1", nil).Err())
	noperm("INFO without the option", p.Info(ctx).Err())

	if v, err := q.Eval(ctx, "redis.call('SET', KEYS[1], 'v'); return redis.call('GET', KEYS[1])", []string{"lua_q:k"}).Result(); err != nil || v != "v" {
		t.Errorf("EVAL on its own key: %v, %v", v, err)
	}
	sha, err := q.ScriptLoad(ctx, "return redis.call('GET', KEYS[1])").Result()
	if err != nil {
		t.Fatalf("SCRIPT LOAD: %v", err)
	}
	if v, err := q.EvalSha(ctx, sha, []string{"lua_q:k"}).Result(); err != nil || v != "v" {
		t.Errorf("EVALSHA on its own key: %v, %v", v, err)
	}
	if err := q.Info(ctx, "server").Err(); err != nil {
		t.Errorf("INFO with the option: %v", err)
	}
	// Inside a script, another world's key is refused as it is outside.
	for what, err := range map[string]error{
		"EVAL of another world's key":      q.Eval(ctx, "return redis.call('GET', KEYS[1])", []string{"lua_o:secret"}).Err(),
		"EVAL of an undeclared key":        q.Eval(ctx, "return redis.call('GET', 'lua_o:secret')", nil).Err(),
		"EVAL writing another world's key": q.Eval(ctx, "return redis.call('SET', 'lua_o:secret', 'x')", nil).Err(),
		"EVAL of KEYS *":                   q.Eval(ctx, "return redis.call('KEYS', '*')", nil).Err(),
		"EVAL of FLUSHALL":                 q.Eval(ctx, "return redis.call('FLUSHALL')", nil).Err(),
		"EVALSHA of another world's key":   q.EvalSha(ctx, sha, []string{"lua_o:secret"}).Err(),
		"SCRIPT FLUSH":                     q.ScriptFlush(ctx).Err(),
		"SCRIPT KILL":                      q.ScriptKill(ctx).Err(),
		"FUNCTION FLUSH":                   q.Do(ctx, "FUNCTION", "FLUSH").Err(),
	} {
		// Refused up front (NOPERM) or by the script's redis.call.
		if err == nil || !strings.Contains(strings.ToUpper(err.Error()), "NOPERM") && !strings.Contains(err.Error(), "The user executing the script can't") {
			t.Errorf("%s: %v, want it refused", what, err)
		}
	}
	if v, _ := o.Get(ctx, "lua_o:secret").Result(); v != "o's" {
		t.Errorf("the other world's key is %q", v)
	}
	bad := adapters.Slice{Name: "lua_bad", World: "w-lua-b", AdminURL: admin, Password: "bbbb4444", Config: map[string]any{"allow": []any{"admin"}}}
	t.Cleanup(func() { r.Teardown(context.Background(), bad) })
	if err := r.Provision(ctx, bad); err == nil || !strings.Contains(err.Error(), `"scripts"`) {
		t.Errorf("allow = [\"admin\"]: %v, want an error naming the choices", err)
	}
}
