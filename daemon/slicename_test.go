package daemon

import (
	"testing"

	"github.com/git-binky/git-binky/world"
)

// Each adapter service of a world gets a slice name of its own, however
// its name folds; a world with one slice of a kind keeps the name it
// always had.
func TestEveryAdapterServiceOfAWorldGetsASliceNameOfItsOwn(t *testing.T) {
	cfg, diags := world.ParseConfig("binky.toml", []byte(`[project]
name = "acme"
[services.db]
adapter = "postgres"
[services.analytics]
adapter = "postgres"
[services.db_1]
adapter = "postgres"
[services.db-1]
adapter = "postgres"
[services.cache]
adapter = "redis"
`))
	if cfg == nil {
		t.Fatalf("config: %v", diags)
	}
	w := &world.World{Project: "acme", Name: "login-fix", ID: "0123456789ab", Config: cfg}
	seen := map[string]string{}
	for _, n := range []string{"db", "analytics", "db_1", "db-1"} {
		name := sliceName(w, n, 0)
		if other, dup := seen[name]; dup {
			t.Errorf("services %s and %s both get slice %s", other, n, name)
		}
		seen[name] = n
	}
	if got := sliceName(w, "db", 0); got != "acme_login_fix_db" {
		t.Errorf("db's slice: %s", got)
	}
	if got := sliceName(w, "cache", 0); got != "acme_login_fix" {
		t.Errorf("the only redis slice: %s, want the name single slices always had", got)
	}
	if a, b := sliceName(w, "db_1", 1), sliceName(w, "db_1", 2); a == b {
		t.Errorf("salts 1 and 2 give one name: %s", a)
	}
}

// A slice an older binky gave two services is seen as shared when their
// admin_url references differ as written but name one server, and only
// then.
func TestASharedSliceIsSeenWhateverNamesItsServer(t *testing.T) {
	slice := func(service, admin string) world.SliceRecord {
		return world.SliceRecord{Service: service, Adapter: "postgres", Name: "acme_w", Config: map[string]any{"admin": admin}}
	}
	urls := map[string]string{"${env.A}": "postgres://binky@127.0.0.1:5432", "${env.B}": "postgres://binky@127.0.0.1:5432", "${env.C}": "postgres://binky@127.0.0.1:6543"}
	same := func(a, b string) bool { return urls[a] != "" && urls[a] == urls[b] }
	for _, tc := range []struct {
		analytics, db string
		want          string
	}{
		{"${env.A}", "${env.A}", "analytics"},
		{"${env.A}", "${env.B}", "analytics"}, // written apart, one server
		{"${env.A}", "${env.C}", ""},          // one name on two servers: two slices
	} {
		rec := &world.Record{Slices: []world.SliceRecord{slice("analytics", tc.analytics), slice("db", tc.db)}}
		if got := sharesSlice(rec, &rec.Slices[1], same); got != tc.want {
			t.Errorf("analytics on %s, db on %s: db shares with %q, want %q", tc.analytics, tc.db, got, tc.want)
		}
		if got := sharesSlice(rec, &rec.Slices[0], same); got != "" {
			t.Errorf("analytics sorts first: it shares with %q, want none", got)
		}
	}
}
