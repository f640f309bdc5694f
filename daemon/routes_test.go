package daemon

import (
	"io"
	"log/slog"
	"testing"

	"github.com/git-binky/git-binky/proxy"
	"github.com/git-binky/git-binky/world"
)

// Two records that claim one host (written before URL labels were kept
// unique) must not let one world's URL reach the other's service.
func TestAHostTwoWorldsClaimRoutesToNeither(t *testing.T) {
	home := world.Home{Dir: t.TempDir()}
	d := New(home, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	d.proxy = proxy.New()
	for i, id := range []string{"aaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbb"} {
		rec := &world.Record{ID: id, Project: "acme", Worktree: []string{"Foo_Bar", "foo-bar"}[i],
			Ports: map[string]int{"web": 4000 + i, "api": 5000 + i},
			Hosts: map[string]string{"web": "web.foo-bar.acme.localhost", "api": []string{"api.foo-bar.acme.localhost", "api.foo-bar-1.acme.localhost"}[i]}}
		if err := home.SaveRecord(rec); err != nil {
			t.Fatal(err)
		}
	}
	d.refreshRoutes()
	hosts := map[string]int{}
	for _, rt := range d.proxy.Routes() {
		hosts[rt.Host] = rt.Port
	}
	if p, ok := hosts["web.foo-bar.acme.localhost"]; ok {
		t.Errorf("the host both worlds claim routes to :%d", p)
	}
	if hosts["api.foo-bar.acme.localhost"] != 5000 || hosts["api.foo-bar-1.acme.localhost"] != 5001 {
		t.Errorf("hosts only one world claims must still route: %v", hosts)
	}
}
