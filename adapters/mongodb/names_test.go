package mongodb

import (
	"context"
	"errors"
	"testing"

	"github.com/git-binky/git-binky/adapters"
)

// A worktree whose name folds to a database the server keeps for itself
// never gets it, whatever the server holds yet: refused before any
// connection.
func TestASliceNamedLikeTheServersOwnDatabaseIsRefused(t *testing.T) {
	m := New()
	for _, name := range []string{"admin", "local", "config", "binky"} {
		s := adapters.Slice{Name: name, World: "w", AdminURL: "mongodb://root:pw@127.0.0.1:1/", Password: "pw"}
		if err := m.Provision(context.Background(), s); !errors.Is(err, adapters.ErrTaken) {
			t.Errorf("provision %s: %v, want ErrTaken", name, err)
		}
		if err := m.Clone(context.Background(), "tmpl", s); !errors.Is(err, adapters.ErrTaken) {
			t.Errorf("clone into %s: %v, want ErrTaken", name, err)
		}
	}
}
