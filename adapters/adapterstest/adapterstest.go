// Package adapterstest is the conformance suite every adapter passes
// against its real server: provision is idempotent, worlds get distinct
// slices, teardown drops exactly the world's own slice and never another
// world's, another home's or an unmarked one, an object binky did not make
// is never taken over, hostile names are safe, listing finds every marked
// object with its owner, and a provision or teardown cut off at any step it
// reports (adapters.Step) is finished by the next one.
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

// Server is the real server an adapter is tested against.
type Server struct {
	AdminURL string
	// Foreign, when set, creates what an admin could make by hand under a
	// slice's name without binky (a database, a user, a key under the
	// prefix, a bucket...), and Intact reports whether it is still there
	// untouched. The suite then checks that binky refuses the name and
	// never drops or changes what it did not make.
	Foreign func(ctx context.Context, slice string) error
	Intact  func(ctx context.Context, slice string) (bool, error)
	// Config, when set, is every slice's options (Slice.Config).
	Config map[string]any
}

// Run runs the suite against adminURL.
func Run(t *testing.T, a adapters.Adapter, adminURL string) {
	RunServer(t, a, Server{AdminURL: adminURL})
}

// RunServer runs the suite against srv.
func RunServer(t *testing.T, a adapters.Adapter, srv Server) {
	adminURL := srv.AdminURL
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	secret := []byte("conformance-secret-0123456789abcdef")
	run := fmt.Sprintf("%x", time.Now().UnixNano())[6:]
	home := "home" + run
	slice := func(project, worktree, world string) adapters.Slice {
		name := adapters.SliceName(project, worktree, world, 0)
		return adapters.Slice{Name: name, World: world, Home: home, AdminURL: adminURL, Password: adapters.Password(secret, "test", name), Config: srv.Config}
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
		// Only where the server can have users: an adapter reports a server
		// without them with isolation = "none" (the admin's credentials).
		if strings.Contains(addr["url"], passwordOf(adminURL)) && passwordOf(adminURL) != "" && addr["password"] != "" &&
			addr["isolation"] != adapters.IsolationNone {
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
		// One endpoint can serve both (S3: the bucket and keys differ).
		if fmt.Sprint(ra) == fmt.Sprint(rb) {
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
			var ofB int
			for _, o := range found {
				if o.Slice == sa.Name {
					t.Errorf("%s %s of %s still listed after teardown", o.Kind, o.Name, sa.Name)
				}
				if o.Slice == sb.Name {
					ofB++
					if !o.Owner.Is(sb.Owner()) {
						t.Errorf("%s %s listed as %+v's, want %+v", o.Kind, o.Name, o.Owner, sb.Owner())
					}
				}
			}
			if ofB == 0 {
				t.Errorf("%s not listed: %v", sb.Name, found)
			}
		}
	})

	t.Run("another home's slice of the same world is neither taken nor dropped", func(t *testing.T) {
		s := slice("conf"+run, "homes", "w-homes-"+run)
		t.Cleanup(func() { a.Teardown(context.Background(), s) })
		if err := a.Provision(ctx, s); err != nil {
			t.Fatal(err)
		}
		other := s
		other.Home = "otherhome" + run
		if err := a.Provision(ctx, other); !errors.Is(err, adapters.ErrTaken) {
			t.Errorf("provision from another home: %v, want ErrTaken", err)
		}
		if err := a.Teardown(ctx, other); !errors.Is(err, adapters.ErrNotOurs) {
			t.Errorf("teardown from another home: %v, want ErrNotOurs", err)
		}
		if _, err := a.Resolve(ctx, s); err != nil {
			t.Errorf("the slice is gone after another home's teardown: %v", err)
		}
		if err := a.Provision(ctx, s); err != nil {
			t.Errorf("the owner cannot provision its slice again: %v", err)
		}
	})

	if srv.Foreign != nil {
		t.Run("what binky did not make is never taken over or dropped", func(t *testing.T) {
			s := slice("conf"+run, "foreign", "w-foreign-"+run)
			if err := srv.Foreign(ctx, s.Name); err != nil {
				t.Fatalf("make the foreign object: %v", err)
			}
			if err := a.Provision(ctx, s); !errors.Is(err, adapters.ErrTaken) {
				t.Errorf("provision over an object binky did not make: %v, want ErrTaken", err)
			}
			if err := a.Teardown(ctx, s); !errors.Is(err, adapters.ErrNotOurs) {
				t.Errorf("teardown of an object binky did not make: %v, want ErrNotOurs", err)
			}
			if ok, err := srv.Intact(ctx, s.Name); err != nil || !ok {
				t.Errorf("the foreign object was changed or dropped (intact=%v, err=%v)", ok, err)
			}
		})
	}

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

	t.Run("provision and teardown cut off at any step are finished by the next", func(t *testing.T) {
		record := func(fn func(ctx context.Context) error) []string {
			var steps []string
			if err := fn(adapters.WithSteps(ctx, func(s string) error { steps = append(steps, s); return nil })); err != nil {
				t.Fatal(err)
			}
			return steps
		}
		probe := slice("conf"+run, "probe", "w-probe-"+run)
		up := record(func(ctx context.Context) error { return a.Provision(ctx, probe) })
		down := record(func(ctx context.Context) error { return a.Teardown(ctx, probe) })
		if len(up)+len(down) == 0 {
			t.Skip("the adapter reports no steps (adapters.Step)")
		}
		for i, step := range up {
			s := slice("conf"+run, fmt.Sprintf("cut%d", i), fmt.Sprintf("w-cut-%d-%s", i, run))
			t.Cleanup(func() { a.Teardown(context.Background(), s) })
			if err := a.Provision(adapters.WithSteps(ctx, FailAt(step)), s); err == nil {
				t.Errorf("provision cut at %s did not stop", step)
			}
			leftOf(t, a, adminURL, s, true)
			if err := a.Provision(ctx, s); err != nil {
				t.Errorf("provision again after a cut at %s: %v", step, err)
			}
			if err := a.Teardown(ctx, s); err != nil {
				t.Errorf("teardown after a cut at %s: %v", step, err)
			}
			leftOf(t, a, adminURL, s, false)
		}
		for i, step := range down {
			s := slice("conf"+run, fmt.Sprintf("cutdown%d", i), fmt.Sprintf("w-cutdown-%d-%s", i, run))
			t.Cleanup(func() { a.Teardown(context.Background(), s) })
			if err := a.Provision(ctx, s); err != nil {
				t.Fatal(err)
			}
			if err := a.Teardown(adapters.WithSteps(ctx, FailAt(step)), s); err == nil {
				t.Errorf("teardown cut at %s did not stop", step)
			}
			if err := a.Teardown(ctx, s); err != nil {
				t.Errorf("teardown again after a cut at %s: %v", step, err)
			}
			leftOf(t, a, adminURL, s, false)
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

// FailAt is a step hook (adapters.WithSteps) that fails at step, leaving
// what a crash right after it would leave.
func FailAt(step string) adapters.StepFunc {
	return func(s string) error {
		if s == step {
			return fmt.Errorf("cut off at %s on purpose", s)
		}
		return nil
	}
}

// leftOf checks, for an adapter that lists, that every object of s it
// lists names s's owner (so gc finds what a cut left), and, unless
// mayRemain, that none is left.
func leftOf(t *testing.T, a adapters.Adapter, adminURL string, s adapters.Slice, mayRemain bool) {
	t.Helper()
	l, ok := a.(adapters.Lister)
	if !ok {
		return
	}
	found, err := l.List(context.Background(), adminURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range found {
		if o.Slice != s.Name {
			continue
		}
		if !mayRemain {
			t.Errorf("%s %s of %s is left after teardown", o.Kind, o.Name, s.Name)
		} else if !o.Owner.Is(s.Owner()) {
			t.Errorf("%s %s of %s is listed as %+v's, want %+v (gc would not drop it)", o.Kind, o.Name, s.Name, o.Owner, s.Owner())
		}
	}
}
