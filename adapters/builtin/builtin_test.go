package builtin

import (
	"testing"

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
