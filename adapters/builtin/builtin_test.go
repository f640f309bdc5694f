package builtin

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/managed"
)

func TestEveryRowHasItsCode(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range adapters.Kinds {
		for _, n := range append([]string{k.Name}, k.Aliases...) {
			if seen[n] {
				t.Errorf("name %q is in the table twice", n)
			}
			seen[n] = true
			a, err := Lookup(n)
			if err != nil {
				t.Errorf("Lookup(%q): %v", n, err)
				continue
			}
			if External(n) {
				t.Errorf("%q is in the table but External says it is not built in", n)
			}
			if a.Capabilities().List {
				if _, ok := a.(adapters.Lister); !ok {
					t.Errorf("%s says it lists but is no Lister", n)
				}
			}
			if a.Capabilities().Clone {
				if _, ok := a.(adapters.Cloner); !ok {
					t.Errorf("%s says it clones but is no Cloner", n)
				}
			}
		}
		if (k.Server != nil) != managed.Runs(k.Name) {
			t.Errorf("%s: the table says managed server %v, package managed says %v", k.Name, k.Server != nil, managed.Runs(k.Name))
		}
		if len(k.Fields) == 0 || k.Slice == "" || k.Tested == "" {
			t.Errorf("%s: the row needs Slice, Fields and Tested", k.Name)
		}
	}
	for n := range constructors {
		if k, ok := adapters.Lookup(n); !ok || k.Name != n {
			t.Errorf("constructor %q has no row of its own in adapters.Kinds", n)
		}
	}
	for _, n := range managed.Kinds() {
		if k, ok := adapters.Lookup(n); !ok || k.Server == nil {
			t.Errorf("package managed runs %q, which has no managed server in adapters.Kinds", n)
		}
	}
}

func TestUnknownNamesAreExternal(t *testing.T) {
	if !External("filestore") {
		t.Error("filestore should be external")
	}
	if _, err := Lookup("no-such-adapter-xyz"); err == nil {
		t.Error("an unknown adapter with no binky-adapter-<name> on PATH should be an error")
	}
}

// A malformed admin_url (here a password with a bad %-escape) is reported
// without the password: Go's url.Error quotes the whole URL, and adapter
// errors reach the terminal and the daemon's log.
func TestABadAdminURLsErrorNeverHoldsItsPassword(t *testing.T) {
	for name, scheme := range map[string]string{"postgres": "postgres", "redis": "redis", "mysql": "mysql", "mongodb": "mongodb",
		"s3": "s3", "rabbitmq": "amqp", "kafka": "kafka", "clickhouse": "clickhouse", "elasticsearch": "http", "qdrant": "http"} {
		a, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s := adapters.Slice{Name: "acme_main", World: "w1", Home: "h1", Password: "pw", AdminURL: scheme + "://admin:p%zzSECRET@127.0.0.1:1"}
		for op, f := range map[string]func() error{
			"provision": func() error { return a.Provision(ctx, s) },
			"resolve":   func() error { _, err := a.Resolve(ctx, s); return err },
			"teardown":  func() error { return a.Teardown(ctx, s) },
		} {
			if err := f(); err != nil && strings.Contains(err.Error(), "SECRET") {
				t.Errorf("%s %s: %v", name, op, err)
			}
		}
		cancel()
	}
}
