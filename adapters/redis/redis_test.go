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
