// Package adapterstest is the conformance suite every adapter passes
// against its real server: provision is idempotent, worlds get distinct
// slices, teardown drops exactly the world's own slice and never another's
// or an unmarked one, hostile names are safe, and listing finds marked
// slices.
package adapterstest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/git-binky/git-binky/adapters"
)

// Run runs the suite against adminURL.
func Run(t *testing.T, a adapters.Adapter, adminURL string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	secret := []byte("conformance-secret-0123456789abcdef")
	run := fmt.Sprintf("%x", time.Now().UnixNano())[6:]
	slice := func(project, worktree, world string) adapters.Slice {
		name := adapters.SliceName(project, worktree, world, 0)
		return adapters.Slice{Name: name, World: world, AdminURL: adminURL, Password: adapters.Password(secret, "test", name)}
	}

	t.Run("provision is idempotent and resolve gives an address", func(t *testing.T) {
		s := slice("conf"+run, "idem", "w-idem-"+run)
		t.Cleanup(func() { a.Teardown(context.Background(), s) })
		for i := 0; i < 2; i++ {
			if err := a.Provision(ctx, s); err != nil {
				t.Fatalf("provision #%d: %v", i+1, err)
			}
		}
		addr, err := a.Resolve(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if addr["url"] == "" {
			t.Errorf("address %v has no url", addr)
		}
		if strings.Contains(addr["url"], passwordOf(adminURL)) && passwordOf(adminURL) != "" && addr["password"] != "" {
			t.Errorf("the world's url carries the admin's password: %s", adapters.Redact(addr["url"]))
		}
	})

	t.Run("two worlds get distinct slices and teardown drops only its own", func(t *testing.T) {
		sa, sb := slice("conf"+run, "a", "w-a-"+run), slice("conf"+run, "b", "w-b-"+run)
		t.Cleanup(func() { a.Teardown(context.Background(), sa); a.Teardown(context.Background(), sb) })
		for _, s := range []adapters.Slice{sa, sb} {
			if err := a.Provision(ctx, s); err != nil {
				t.Fatal(err)
			}
		}
		ra, _ := a.Resolve(ctx, sa)
		rb, _ := a.Resolve(ctx, sb)
		if ra["url"] == rb["url"] {
			t.Fatalf("both worlds resolve to %s", adapters.Redact(ra["url"]))
		}
		// B's slice cannot be torn down in A's name.
		imposter := sb
		imposter.World = sa.World
		if err := a.Teardown(ctx, imposter); !errors.Is(err, adapters.ErrNotOurs) {
			t.Errorf("teardown of another world's slice: %v, want ErrNotOurs", err)
		}
		if err := a.Teardown(ctx, sa); err != nil {
			t.Fatal(err)
		}
		if l, ok := a.(adapters.Lister); ok {
			found, err := l.List(ctx, adminURL)
			if err != nil {
				t.Fatal(err)
			}
			if _, still := found[sa.Name]; still {
				t.Errorf("%s still listed after teardown", sa.Name)
			}
			if found[sb.Name] != sb.World {
				t.Errorf("%s not listed as %s's: %v", sb.Name, sb.World, found)
			}
		}
	})

	t.Run("a name taken by another world is refused", func(t *testing.T) {
		s := slice("conf"+run, "taken", "w-owner-"+run)
		t.Cleanup(func() { a.Teardown(context.Background(), s) })
		if err := a.Provision(ctx, s); err != nil {
			t.Fatal(err)
		}
		other := s
		other.World = "w-other-" + run
		if err := a.Provision(ctx, other); !errors.Is(err, adapters.ErrTaken) {
			t.Errorf("provision over another world's slice: %v, want ErrTaken", err)
		}
	})

	t.Run("hostile worktree names provision safely", func(t *testing.T) {
		for i, wt := range []string{`x"; DROP DATABASE postgres; --`, "it's", strings.Repeat("long", 50), "ünïcødé-wörld", "a*b?[c]"} {
			s := slice("conf"+run, wt, fmt.Sprintf("w-hostile-%d-%s", i, run))
			if len(s.Name) > 63 || strings.ContainsAny(s.Name, `"'; *?[]-`) {
				t.Errorf("slice name %q is not sanitised", s.Name)
			}
			if err := a.Provision(ctx, s); err != nil {
				t.Errorf("provision %q: %v", wt, err)
			}
			if err := a.Teardown(ctx, s); err != nil {
				t.Errorf("teardown %q: %v", wt, err)
			}
		}
	})
}

func passwordOf(u string) string {
	at := strings.LastIndex(u, "@")
	colon := strings.LastIndex(u[:max(at, 0)], ":")
	if at < 0 || colon < 0 {
		return ""
	}
	return u[colon+1 : at]
}
