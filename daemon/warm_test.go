package daemon

import (
	"slices"
	"testing"

	"github.com/git-binky/git-binky/world"
)

// An up that creates a worktree starts the servers binky runs itself for
// that config while git works: each kind once, and none for a service on
// a server of the user's (admin_url) or one binky cannot run.
func TestAnUpWarmsOnlyTheManagedServersItsServicesUse(t *testing.T) {
	cfg, diags := world.ParseConfig("binky.toml", []byte(`[project]
name = "acme"
[services.db]
adapter = "postgres"
[services.analytics]
adapter = "postgres"
[services.cache]
adapter = "redis"
[services.orders]
adapter = "mysql"
admin_url = "mysql://root:pw@127.0.0.1:3306"
[services.web]
cmd = "npm run dev"
`))
	if cfg == nil {
		t.Fatalf("config: %v", diags)
	}
	kinds := managedKinds(cfg)
	slices.Sort(kinds)
	if want := []string{"postgres", "redis"}; !slices.Equal(kinds, want) {
		t.Fatalf("warmed %v, want %v", kinds, want)
	}
}
