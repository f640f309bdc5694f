package redis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/git-binky/git-binky/adapters"
)

func adminClient(t *testing.T, admin string) *goredis.Client {
	c, err := client(admin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// worldClient connects as user with password, RESP2 and no identity (the
// raw commands each test sends are what it checks).
func worldClient(t *testing.T, admin, user, pw string) *goredis.Client {
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(user, pw)
	return adminClient(t, u.String())
}

func testSlice(t *testing.T, admin, tag string) adapters.Slice {
	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	s := adapters.Slice{Name: "trust_" + tag + "_" + run, World: "w" + run, Home: "h" + run, AdminURL: admin,
		Password: adapters.Password([]byte("trust-secret"), "redis", tag+run)}
	t.Cleanup(func() { New().Teardown(context.Background(), s) })
	return s
}

func requireACL(t *testing.T, admin string) {
	acl, err := hasACL(context.Background(), adminClient(t, admin))
	if err != nil {
		t.Fatal(err)
	}
	if !acl {
		t.Skip("this Redis has no ACLs")
	}
}

// The reproduction: an admin's own user and key under what would be
// a world's prefix.
func TestProvisionRefusesAUserAndKeysBinkyDidNotMake(t *testing.T) {
	admin := adminURL(t)
	requireACL(t, admin)
	ctx := context.Background()
	c := adminClient(t, admin)
	r := New()
	s := testSlice(t, admin, "victim")
	t.Cleanup(func() {
		c.Do(context.Background(), "ACL", "DELUSER", s.Name)
		c.Del(context.Background(), s.Name+":data")
	})
	if err := c.Do(ctx, "ACL", "SETUSER", s.Name, "on", ">victimpw", "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Provision(ctx, s); !errors.Is(err, adapters.ErrTaken) {
		t.Errorf("provision over an admin's user: %v, want ErrTaken", err)
	}
	c.Do(ctx, "ACL", "DELUSER", s.Name)
	c.Set(ctx, s.Name+":data", "important", 0)
	if err := r.Provision(ctx, s); !errors.Is(err, adapters.ErrTaken) {
		t.Errorf("provision over keys under the prefix: %v, want ErrTaken", err)
	}
	if v, _ := c.Get(ctx, s.Name+":data").Result(); v != "important" {
		t.Errorf("the admin's key is %q", v)
	}
	if n, _ := c.Exists(ctx, markerPrefix+s.Name).Result(); n != 0 {
		t.Error("a refused provision left a marker")
	}
}

// A marker key written by hand (even a copy of a real mark naming the right
// world and home) is not binky's seal: binky neither drops nor takes over
// the user beside it.
func TestAHandWrittenMarkerDoesNotMakeBinkyDropAUser(t *testing.T) {
	admin := adminURL(t)
	requireACL(t, admin)
	ctx := context.Background()
	c := adminClient(t, admin)
	r := New()
	s := testSlice(t, admin, "forged")
	t.Cleanup(func() {
		c.Do(context.Background(), "ACL", "DELUSER", s.Name)
		c.Del(context.Background(), markerPrefix+s.Name)
	})
	c.Do(ctx, "ACL", "SETUSER", s.Name, "on", ">victimpw", "~*", "+@all")
	c.Set(ctx, s.Name+":data", "important", 0)
	for _, forged := range []string{s.World, adapters.Mark(s.Owner()), adapters.Mark(s.Owner()) + sealSep + strings.Repeat("0", 32)} {
		c.Set(ctx, markerPrefix+s.Name, forged, 0)
		if err := r.Teardown(ctx, s); !errors.Is(err, adapters.ErrNotOurs) {
			t.Errorf("teardown with marker %q: %v, want ErrNotOurs", forged, err)
		}
		if err := r.Provision(ctx, s); !errors.Is(err, adapters.ErrTaken) {
			t.Errorf("provision with marker %q: %v, want ErrTaken", forged, err)
		}
		if v, err := worldClient(t, admin, s.Name, "victimpw").Get(ctx, s.Name+":data").Result(); v != "important" {
			t.Errorf("with marker %q the admin's user or key changed: %q, %v", forged, v, err)
		}
	}
}

func TestAnOlderBinkysMarkerIsUpgradedOnlyWithItsPassword(t *testing.T) {
	admin := adminURL(t)
	requireACL(t, admin)
	ctx := context.Background()
	c := adminClient(t, admin)
	r := New()
	s := testSlice(t, admin, "old")
	if err := r.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	// What binky wrote before seals: the bare world id.
	c.Set(ctx, markerPrefix+s.Name, s.World, 0)
	found, _ := r.List(ctx, admin)
	for _, o := range found {
		if o.Slice == s.Name && !o.Owner.Legacy() {
			t.Errorf("an unsealed marker is listed as home %q's", o.Owner.Home)
		}
	}
	if err := r.Teardown(ctx, s); !errors.Is(err, adapters.ErrNotOurs) {
		t.Errorf("teardown of an unsealed marker: %v, want ErrNotOurs", err)
	}
	wrong := s
	wrong.Password = "not-the-derived-one"
	if err := r.Provision(ctx, wrong); !errors.Is(err, adapters.ErrTaken) {
		t.Errorf("upgrade without the user's password: %v, want ErrTaken", err)
	}
	if err := r.Provision(ctx, s); err != nil {
		t.Fatalf("the world's own re-provision: %v", err)
	}
	v, _ := c.Get(ctx, markerPrefix+s.Name).Result()
	if !readMarker(v, &s).ours(s) {
		t.Errorf("marker %q is not sealed after the upgrade", v)
	}
}

// Each attack one world's user might try, against the real server; each must
// be refused, while what applications do still works.
func TestAWorldsUserRunsOnlyTheAllowList(t *testing.T) {
	admin := adminURL(t)
	requireACL(t, admin)
	ctx := context.Background()
	r := New()
	sa, sb := testSlice(t, admin, "a"), testSlice(t, admin, "b")
	for _, s := range []adapters.Slice{sa, sb} {
		if err := r.Provision(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	a := worldClient(t, admin, sa.Name, sa.Password)
	b := worldClient(t, admin, sb.Name, sb.Password)
	pa := Prefix(sa.Name)

	t.Run("HELLO 3 then CLIENT TRACKING ON BCAST is refused", func(t *testing.T) {
		conn := a.Conn()
		defer conn.Close()
		if err := conn.Do(ctx, "HELLO", "3", "AUTH", sa.Name, sa.Password).Err(); err != nil {
			t.Fatalf("HELLO 3 (clients send it on connect): %v", err)
		}
		err := conn.Do(ctx, "CLIENT", "TRACKING", "ON", "BCAST").Err()
		if err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Fatalf("CLIENT TRACKING ON BCAST: %v, want NOPERM", err)
		}
		b.Set(ctx, Prefix(sb.Name)+"private-key-name", "x", 0)
	})
	t.Run("COPY to another database is refused", func(t *testing.T) {
		a.Set(ctx, pa+"src", "v", 0)
		for _, args := range [][]any{{"COPY", pa + "src", pa + "dst", "DB", "1"}, {"MOVE", pa + "src", "1"}, {"SELECT", "1"}, {"SWAPDB", "0", "1"}} {
			if err := a.Do(ctx, args...).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
				t.Errorf("%v: %v, want NOPERM", args, err)
			}
		}
	})
	for _, args := range [][]any{
		{"MEMORY", "STATS"}, {"MEMORY", "DOCTOR"}, {"INFO", "keyspace"}, {"DBSIZE"}, {"KEYS", "*"}, {"SCAN", "0"}, {"RANDOMKEY"},
		{"PUBSUB", "CHANNELS"}, {"CLIENT", "LIST"}, {"CLIENT", "KILL", "USER", sb.Name}, {"OBJECT", "ENCODING", pa + "src"},
		{"EVAL", "return redis.call('get', KEYS[1])", "1", pa + "src"}, {"FUNCTION", "LIST"}, {"SCRIPT", "FLUSH"},
		{"FLUSHDB"}, {"FLUSHALL"}, {"CONFIG", "GET", "*"}, {"ACL", "LIST"}, {"MONITOR"},
		{"WAIT", "0", "0"}, {"MIGRATE", "127.0.0.1", "1", pa + "src", "0", "1"}, {"RESTORE", pa + "r", "0", "x"},
		// Not in any allowed category nor listed: what a newer Redis adds
		// lands here, refused until allowed.
		{"LOLWUT"}, {"LATENCY", "LATEST"},
		// Reach past the prefix by pattern, or are @admin.
		{"SORT", pa + "l", "BY", "nosort", "GET", Prefix(sb.Name) + "*"}, {"SORT_RO", pa + "l"}, {"PFSELFTEST"}, {"PFDEBUG", "GETREG", pa + "hll"},
		{"PSUBSCRIBE", "*"},
		{"GET", Prefix(sb.Name) + "private-key-name"}, {"SET", "unprefixed", "x"}, {"PUBLISH", Prefix(sb.Name) + "chan", "x"},
	} {
		t.Run(fmt.Sprint(args...), func(t *testing.T) {
			if err := a.Do(ctx, args...).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
				t.Errorf("%v: %v, want NOPERM", args, err)
			}
		})
	}
	t.Run("the rules are an allow-list", func(t *testing.T) {
		v, err := adminClient(t, admin).Do(ctx, "ACL", "GETUSER", sa.Name).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(fmt.Sprint(v), "-@all") {
			t.Errorf("ACL GETUSER %s = %v: does not start from -@all", sa.Name, v)
		}
	})
	t.Run("what applications do still works", func(t *testing.T) {
		pipe := a.TxPipeline()
		pipe.Set(ctx, pa+"s", "1", time.Minute)
		pipe.Incr(ctx, pa+"s")
		pipe.HSet(ctx, pa+"h", "f", "v")
		pipe.LPush(ctx, pa+"l", "x")
		pipe.SAdd(ctx, pa+"set", "x")
		pipe.ZAdd(ctx, pa+"z", goredis.Z{Score: 1, Member: "x"})
		pipe.XAdd(ctx, &goredis.XAddArgs{Stream: pa + "st", Values: []any{"k", "v"}})
		pipe.PFAdd(ctx, pa+"hll", "x")
		pipe.GeoAdd(ctx, pa+"geo", &goredis.GeoLocation{Name: "x", Longitude: 1, Latitude: 1})
		pipe.SetBit(ctx, pa+"bits", 3, 1)
		pipe.Expire(ctx, pa+"h", time.Minute)
		pipe.TTL(ctx, pa+"h")
		pipe.Exists(ctx, pa+"s")
		pipe.Type(ctx, pa+"s")
		pipe.Rename(ctx, pa+"l", pa+"l2")
		pipe.Del(ctx, pa+"set")
		pipe.Unlink(ctx, pa+"z")
		if _, err := pipe.Exec(ctx); err != nil {
			t.Errorf("MULTI ... EXEC of data commands: %v", err)
		}
		for _, args := range [][]any{{"PING"}, {"ECHO", "x"}, {"CLIENT", "SETNAME", "app"}, {"CLIENT", "GETNAME"}, {"CLIENT", "ID"}, {"COMMAND", "COUNT"}} {
			if err := a.Do(ctx, args...).Err(); err != nil {
				t.Errorf("%v: %v", args, err)
			}
		}
		sub := a.Subscribe(ctx, pa+"chan")
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Errorf("SUBSCRIBE to its own channel: %v", err)
		}
		if err := a.Publish(ctx, pa+"chan", "hi").Err(); err != nil {
			t.Errorf("PUBLISH to its own channel: %v", err)
		}
	})
}

func TestProvisionAndTeardownCutOffAtAnyStepAreFinished(t *testing.T) {
	admin := adminURL(t)
	requireACL(t, admin)
	r := New()
	c := adminClient(t, admin)
	left := func(s adapters.Slice) (marker, user bool) {
		n, _ := c.Exists(context.Background(), markerPrefix+s.Name).Result()
		exists, _, _ := userPasswordIs(context.Background(), c, s.Name, "")
		return n == 1, exists
	}
	for _, step := range []string{"redis.marked"} {
		t.Run("provision cut at "+step, func(t *testing.T) {
			ctx := context.Background()
			s := testSlice(t, admin, "cut")
			if err := r.Provision(adapters.WithSteps(ctx, failAt(step)), s); err == nil {
				t.Fatal("not cut")
			}
			found, _ := r.List(ctx, admin)
			var listed bool
			for _, o := range found {
				listed = listed || (o.Slice == s.Name && o.Owner.Is(s.Owner()))
			}
			if m, _ := left(s); m != listed {
				t.Errorf("marker left=%v, listed for gc=%v", m, listed)
			}
			if err := r.Provision(ctx, s); err != nil {
				t.Fatalf("provision again: %v", err)
			}
		})
	}
	for _, step := range []string{"redis.teardown.user_dropped", "redis.teardown.keys_deleted"} {
		t.Run("teardown cut at "+step, func(t *testing.T) {
			ctx := context.Background()
			s := testSlice(t, admin, "down")
			if err := r.Provision(ctx, s); err != nil {
				t.Fatal(err)
			}
			c.Set(ctx, Prefix(s.Name)+"k", "v", 0)
			if err := r.Teardown(adapters.WithSteps(ctx, failAt(step)), s); err == nil {
				t.Fatal("not cut")
			}
			if err := r.Teardown(ctx, s); err != nil {
				t.Fatalf("teardown again: %v", err)
			}
			if m, u := left(s); m || u {
				t.Errorf("after teardown: marker=%v user=%v", m, u)
			}
			if n, _ := c.Exists(ctx, Prefix(s.Name)+"k").Result(); n != 0 {
				t.Error("a key survived")
			}
		})
	}
}

func failAt(step string) adapters.StepFunc {
	return func(s string) error {
		if s == step {
			return fmt.Errorf("cut off at %s", s)
		}
		return nil
	}
}

// A server binky cannot ask (refused here: nothing listens) is an error
// for Resolve, never a world URL with the admin's password in it.
func TestAWorldNeverGetsTheAdminsPasswordWhenTheServerCannotBeAsked(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s := adapters.Slice{Name: "acme_main", World: "w1", AdminURL: "redis://:ADMINPW@127.0.0.1:1/0", Password: "worldpw"}
	addr, err := New().Resolve(ctx, s)
	if err == nil || strings.Contains(addr["url"], "ADMINPW") {
		t.Fatalf("resolve against a server that cannot be asked: %v, %v", addr, err)
	}
	if strings.Contains(err.Error(), "ADMINPW") {
		t.Fatalf("the error holds the admin's password: %v", err)
	}
}

// The slice name "binky" would own every marker; another database than 0
// would split a world from its marker and teardown. Both are refused.
func TestNamesAndDatabasesThatWouldBreakMarkersAreRefused(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	r := New()
	if err := r.Provision(ctx, adapters.Slice{Name: "binky", World: "w", AdminURL: admin, Password: "pw"}); !errors.Is(err, adapters.ErrTaken) {
		t.Errorf("provision of slice binky: %v, want ErrTaken", err)
	}
	if err := r.Teardown(ctx, adapters.Slice{Name: "binky", World: "w", AdminURL: admin, Password: "pw"}); !errors.Is(err, adapters.ErrNotOurs) {
		t.Errorf("teardown of slice binky: %v, want ErrNotOurs", err)
	}
	u, _ := url.Parse(admin)
	u.Path = "/3"
	err := r.Provision(ctx, adapters.Slice{Name: "acme_db3", World: "w", AdminURL: u.String(), Password: "pw"})
	if err == nil || !strings.Contains(err.Error(), "names database 3") {
		t.Errorf("provision on database 3: %v", err)
	}
}

// A Redis killed before it saved its keys loses the markers, but keeps the
// users (its ACL file is saved at once): a user with this home's password
// for the slice is still this home's, so the world comes up again and its
// teardown drops the user, where every up said "exists and binky did not
// make it" and the user stayed for good. Another home's is still refused.
func TestASliceWhoseMarkerWasLostIsStillItsHomes(t *testing.T) {
	admin := adminURL(t)
	requireACL(t, admin)
	ctx := context.Background()
	c := adminClient(t, admin)
	r := New()
	s := testSlice(t, admin, "lost")
	if err := r.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, Prefix(s.Name)+"job", "1", 0)
	lose := func() { c.Del(ctx, markerPrefix+s.Name) }

	lose()
	theirs := s
	theirs.Password, theirs.Home = adapters.Password([]byte("another home"), "redis", s.Name), "another-home"
	if err := r.Provision(ctx, theirs); !errors.Is(err, adapters.ErrTaken) {
		t.Errorf("another home's provision of a user it did not make: %v, want ErrTaken", err)
	}
	if err := r.Teardown(ctx, theirs); !errors.Is(err, adapters.ErrNotOurs) {
		t.Errorf("another home's teardown: %v, want ErrNotOurs", err)
	}
	if err := r.Provision(ctx, s); err != nil {
		t.Fatalf("provision after the marker was lost: %v", err)
	}
	if n, _ := c.Exists(ctx, markerPrefix+s.Name).Result(); n != 1 {
		t.Error("the marker was not written again")
	}
	lose()
	if err := r.Teardown(ctx, s); err != nil {
		t.Fatalf("teardown after the marker was lost: %v", err)
	}
	if exists, _, _ := userPasswordIs(ctx, c, s.Name, ""); exists {
		t.Error("the user outlived its teardown")
	}
	if n, _ := c.Exists(ctx, Prefix(s.Name)+"job").Result(); n != 0 {
		t.Error("the prefix's keys outlived its teardown")
	}
}
