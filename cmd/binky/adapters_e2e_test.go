package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/postgres"
	"github.com/git-binky/git-binky/adapters/redis"
	"github.com/git-binky/git-binky/world"
)

func needServers(t *testing.T) (pg, rd string) {
	t.Helper()
	pg, rd = os.Getenv("BINKY_TEST_PG"), os.Getenv("BINKY_TEST_REDIS")
	if pg == "" {
		t.Skip("BINKY_TEST_PG is not set (make test starts a throwaway Postgres and sets it)")
	}
	if rd == "" {
		t.Skip("BINKY_TEST_REDIS is not set (make test starts a throwaway Redis and sets it)")
	}
	return pg, rd
}

// sliceConfig is a project on the test servers; migrate and seed count
// their runs in $GC_DIR/seeded.
const sliceConfig = `[project]
name = "shop"
[services.db]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
migrate = "psql \"$DB_URL\" -q -v ON_ERROR_STOP=1 -c 'CREATE TABLE IF NOT EXISTS items (id int)'"
seed = "psql \"$DB_URL\" -q -v ON_ERROR_STOP=1 -c 'INSERT INTO items SELECT generate_series(1, 100)' && echo seeded >> $GC_DIR/seeded"
clone_from = "golden"
[services.cache]
adapter = "valkey"
admin_url = "${env.BINKY_TEST_REDIS}"
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["db", "cache"]
env = { DATABASE_URL = "${db.url}", REDIS_URL = "${cache.url}", REDIS_PREFIX = "${cache.prefix}" }
`

func (f *fixture) envOf(name string) map[string]string {
	f.t.Helper()
	var doc struct {
		Env map[string]string `json:"env"`
	}
	if err := json.Unmarshal([]byte(f.mustBinky(f.repo, "env", name, "--json")), &doc); err != nil {
		f.t.Fatal(err)
	}
	return doc.Env
}

func count(t *testing.T, dbURL, query string) int {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect %s: %v", adapters.Redact(dbURL), err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func databases(t *testing.T, admin, like string) []string {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, _ := c.Query(ctx, "SELECT datname FROM pg_database WHERE datname LIKE $1 ORDER BY 1", like)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		out = append(out, n)
	}
	return out
}

func seeded(f *fixture) int {
	b, _ := os.ReadFile(filepath.Join(f.gcDir, "seeded"))
	return strings.Count(string(b), "seeded")
}

func TestEightParallelUpsShareOneGoldenTemplateAndRemoveDropsOnlyTheirOwn(t *testing.T) {
	pg, _ := needServers(t)
	f := newFixture(t, sliceConfig)
	names := []string{"w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8"}
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, stderr, err := f.binky(f.repo, "up", n); err != nil {
				errs[i] = fmt.Errorf("up %s: %v: %s", n, err, stderr)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, n := range names {
			f.binky(f.repo, "remove", n, "--force")
		}
	})
	if n := seeded(f); n != 1 {
		t.Errorf("migrate+seed ran %d times for 8 worlds, want once (the golden template)", n)
	}
	urls := map[string]bool{}
	prefixes := map[string]bool{}
	for _, n := range names {
		env := f.envOf(n)
		if got := count(t, env["DB_URL"], "SELECT count(*) FROM items"); got != 100 {
			t.Errorf("%s has %d seeded rows, want 100", n, got)
		}
		urls[env["DB_URL"]] = true
		prefixes[env["CACHE_PREFIX"]] = true
		if strings.Contains(env["DB_URL"], "binky:binky-test") {
			t.Errorf("%s's url carries the admin credentials", n)
		}
	}
	if len(urls) != 8 || len(prefixes) != 8 {
		t.Fatalf("%d distinct databases and %d prefixes for 8 worlds", len(urls), len(prefixes))
	}
	// A database binky did not make, named like one it did, survives.
	ctx := context.Background()
	admin, _ := pgx.Connect(ctx, pg)
	defer admin.Close(ctx)
	admin.Exec(ctx, "DROP DATABASE IF EXISTS shop_w1_backup")
	admin.Exec(ctx, "CREATE DATABASE shop_w1_backup")
	defer admin.Exec(context.Background(), "DROP DATABASE IF EXISTS shop_w1_backup")

	w1 := f.envOf("w1")
	f.mustBinky(f.repo, "remove", "w1")
	left := databases(t, pg, "shop_w%")
	if strings.Contains(strings.Join(left, ","), "shop_w1,") || contains(left, "shop_w1") {
		t.Errorf("w1's database survived remove: %v", left)
	}
	if !contains(left, "shop_w1_backup") || !contains(left, "shop_w2") {
		t.Errorf("remove of w1 dropped more than w1's slice: %v", left)
	}
	if _, err := pgx.Connect(ctx, w1["DB_URL"]); err == nil {
		t.Error("w1's role still logs in after remove")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestAFailedCloneFallsBackToMigrateAndSeed(t *testing.T) {
	needServers(t)
	f := newFixture(t, strings.Replace(sliceConfig, `name = "shop"`, `name = "fallback"`, 1))
	f.extraEnv = []string{"BINKY_TEST_FAIL_CLONE=1"}
	_, stderr, err := f.binky(f.repo, "up", "fb")
	if err != nil {
		t.Fatalf("up: %v\n%s", err, stderr)
	}
	t.Cleanup(func() { f.binky(f.repo, "remove", "fb", "--force") })
	if got := count(t, f.envOf("fb")["DB_URL"], "SELECT count(*) FROM items"); got != 100 {
		t.Errorf("fallback world has %d rows", got)
	}
	if n := seeded(f); n != 2 {
		t.Errorf("seed ran %d times, want 2 (the template, then the fallback)", n)
	}
	log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
	if !strings.Contains(string(log), `"msg":"clone_fallback"`) {
		t.Error("the daemon log has no clone_fallback")
	}
}

func TestGCDropsWhatACrashLeftAndNothingElse(t *testing.T) {
	pg, _ := needServers(t)
	f := newFixture(t, strings.Replace(sliceConfig, `name = "shop"`, `name = "gcp"`, 1))
	f.mustBinky(f.repo, "up", "live")
	t.Cleanup(func() { f.binky(f.repo, "remove", "live", "--force") })
	// A crash between provision and record: a slice marked by this home,
	// no world.
	ctx := context.Background()
	homeID, err := world.Home{Dir: f.home}.ID()
	if err != nil {
		t.Fatal(err)
	}
	orphan := adapters.Slice{Name: "gcp_crashed", World: "00deadbeef00", Home: homeID, AdminURL: pg, Password: "abc123"}
	if err := postgres.New().Provision(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	out := f.mustBinky(f.repo, "gc", "--dry-run")
	if !strings.Contains(out, "would drop postgres gcp_crashed") || strings.Contains(out, "gcp_live") || strings.Contains(out, "golden") {
		t.Fatalf("gc --dry-run:\n%s", out)
	}
	if !contains(databases(t, pg, "gcp_%"), "gcp_crashed") {
		t.Fatal("--dry-run dropped something")
	}
	out = f.mustBinky(f.repo, "gc")
	if !strings.Contains(out, "dropped postgres gcp_crashed") {
		t.Errorf("gc:\n%s", out)
	}
	left := databases(t, pg, "%gcp%")
	if contains(left, "gcp_crashed") || !contains(left, "gcp_live") {
		t.Errorf("after gc: %v", left)
	}
}

func TestFilestoreExternalAdapterThroughBinky(t *testing.T) {
	f := newFixture(t, `[project]
name = "files"
[services.store]
adapter = "filestore"
options = { root = "`+filepath.Join(t.TempDir(), "root")+`" }
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["store"]
env = { STORE_DIR = "${store.path}" }
`)
	f.mustBinky(f.repo, "up", "ext")
	env := f.envOf("ext")
	dir := env["STORE_PATH"]
	if !strings.HasPrefix(env["STORE_URL"], "file://") || dir == "" {
		t.Fatalf("env: %v", env)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".binky-world")); err != nil || len(b) == 0 {
		t.Fatalf("the slice folder is not there or not marked: %v", err)
	}
	f.mustBinky(f.repo, "remove", "ext")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("remove left the slice folder: %v", err)
	}
}

func TestManagedPostgresAndRedisStartFromNothing(t *testing.T) {
	needPGBinaries(t)
	f := newFixture(t, `[project]
name = "managed"
[services.db]
adapter = "postgres"
[services.cache]
adapter = "redis"
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["db", "cache"]
`)
	start := time.Now()
	if _, stderr, err := f.binky(f.repo, "up"); err != nil {
		t.Fatalf("up with managed servers: %v\n%s", err, stderr)
	}
	t.Logf("first up, creating both servers: %s", time.Since(start).Round(time.Millisecond))
	st := f.status()
	if len(st.Servers) != 2 || !st.Servers[0].Running || !st.Servers[1].Running {
		t.Fatalf("servers: %+v", st.Servers)
	}
	env := f.envOf("acme")
	if got := count(t, env["DB_URL"], "SELECT 1"); got != 1 {
		t.Fatal("cannot query the world's managed database")
	}
	// The settings a world's speed and the server's footprint rest on
	// (docs/performance.md measures each), seen from the world's role.
	settings := `SELECT count(*) FROM pg_settings WHERE (name, setting) IN (('listen_addresses', '127.0.0.1'),
		('synchronous_commit', 'off'), ('shared_buffers', '2048'), ('wal_init_zero', 'off'), ('max_logical_replication_workers', '0'),
		('bgwriter_lru_maxpages', '0'))`
	if got := count(t, env["DB_URL"], settings); got != 6 {
		t.Errorf("the managed postgres runs with %d of its 6 settings", got)
	}
	// The servers outlive the daemon, and a new daemon uses them again.
	f.mustBinky(f.repo, "daemon", "stop")
	if got := count(t, env["DB_URL"], "SELECT 1"); got != 1 {
		t.Fatal("the managed postgres stopped with the daemon")
	}
	f.mustBinky(f.repo, "down")
	f.mustBinky(f.repo, "up")
	if again := f.envOf("acme"); again["DB_URL"] != env["DB_URL"] || again["CACHE_URL"] != env["CACHE_URL"] {
		t.Error("the world's slices changed across a daemon restart")
	}
	pw, err := os.ReadFile(filepath.Join(f.home, "servers", "postgres", "admin.password"))
	if fi, _ := os.Stat(filepath.Join(f.home, "servers", "postgres", "admin.password")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin password file: %v %v", fi, err)
	}
	if out := f.mustBinky(f.repo, "status"); strings.Contains(out, strings.TrimSpace(string(pw))) {
		t.Error("status prints the admin password")
	}
}

// Two services of one kind in a world are two slices: marks name the
// world, not the service, so they once shared one database (and one Redis
// prefix) without anyone noticing. A world an older binky recorded that
// way keeps the shared slice for the service that made it (the first by
// name) and gets the other one a slice of its own on its next up.
func TestTwoServicesOfOneKindGetASliceEach(t *testing.T) {
	pg, _ := needServers(t)
	f := newFixture(t, `[project]
name = "twok"
[services.db]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
[services.analytics]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
[services.cache]
adapter = "redis"
admin_url = "${env.BINKY_TEST_REDIS}"
[services.queue]
adapter = "redis"
admin_url = "${env.BINKY_TEST_REDIS}"
`)
	f.mustBinky(f.repo, "up", "two")
	t.Cleanup(func() { f.binky(f.repo, "remove", "two", "--force") })
	env := f.envOf("two")
	if env["DB_NAME"] == env["ANALYTICS_NAME"] || env["DB_URL"] == env["ANALYTICS_URL"] {
		t.Fatalf("db and analytics share a database: %s, %s", env["DB_NAME"], env["ANALYTICS_NAME"])
	}
	if env["CACHE_PREFIX"] == env["QUEUE_PREFIX"] {
		t.Fatalf("cache and queue share a prefix: %s", env["CACHE_PREFIX"])
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, env["ANALYTICS_URL"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE kept (id int)"); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	if n := count(t, env["DB_URL"], "SELECT count(*) FROM pg_tables WHERE tablename = 'kept'"); n != 0 {
		t.Fatal("a table made through ANALYTICS_URL shows through DB_URL")
	}

	// The record as an older binky wrote it: db on analytics's database.
	shared := env["ANALYTICS_NAME"]
	f.mustBinky(f.repo, "down", "two")
	var st struct {
		Worlds []struct{ ID string } `json:"worlds"`
	}
	if err := json.Unmarshal([]byte(f.mustBinky(f.repo, "status", "--json")), &st); err != nil || len(st.Worlds) == 0 {
		t.Fatalf("status: %v", err)
	}
	recPath := filepath.Join(f.home, "worlds", st.Worlds[0].ID+".json")
	var rec map[string]any
	b, err := os.ReadFile(recPath)
	if err != nil || json.Unmarshal(b, &rec) != nil {
		t.Fatalf("record: %v", err)
	}
	slices, _ := rec["slices"].([]any)
	for _, s := range slices {
		if m := s.(map[string]any); m["service"] == "db" {
			m["name"] = shared
		}
	}
	b, _ = json.Marshal(rec)
	if err := os.WriteFile(recPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f.mustBinky(f.repo, "up", "two")
	env = f.envOf("two")
	if env["ANALYTICS_NAME"] != shared || env["DB_NAME"] == shared {
		t.Fatalf("after the up: analytics on %s, db on %s; want analytics kept on %s and db on its own", env["ANALYTICS_NAME"], env["DB_NAME"], shared)
	}
	if n := count(t, env["ANALYTICS_URL"], "SELECT count(*) FROM pg_tables WHERE tablename = 'kept'"); n != 1 {
		t.Fatal("the shared database lost its table when db got its own")
	}
	f.mustBinky(f.repo, "remove", "two", "--force")
	left := databases(t, pg, "twok_%")
	for _, name := range []string{env["DB_NAME"], env["ANALYTICS_NAME"]} {
		if contains(left, name) {
			t.Errorf("after remove: %s is left", name)
		}
	}
}

// remove says what it could not drop, rather than "removed" alone: here a
// database whose mark names another world, which binky leaves alone.
func TestRemoveSaysWhatItLeftBehind(t *testing.T) {
	pg, _ := needServers(t)
	f := newFixture(t, strings.Replace(sliceConfig, `name = "shop"`, `name = "leftb"`, 1))
	f.mustBinky(f.repo, "up", "lb")
	name := f.envOf("lb")["DB_NAME"]
	ctx := context.Background()
	c, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	t.Cleanup(func() {
		c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		c.Exec(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{name}.Sanitize())
	})
	other := adapters.Mark(adapters.Owner{World: "someone-else", Home: "elsewhere"})
	for _, what := range []string{"DATABASE", "ROLE"} {
		if _, err := c.Exec(ctx, "COMMENT ON "+what+" "+pgx.Identifier{name}.Sanitize()+" IS '"+other+"'"); err != nil {
			t.Fatal(err)
		}
	}
	out, stderr, err := f.binky(f.repo, "remove", "lb", "--force")
	if err != nil {
		t.Fatalf("remove: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "removed: lb") || !strings.Contains(stderr, "warning: postgres slice "+name+" was left alone") {
		t.Fatalf("remove printed\n%s\nand on stderr\n%s\nwant it to say the database was left alone", out, stderr)
	}
	if !contains(databases(t, pg, name), name) {
		t.Fatal("the database marked as another world's was dropped")
	}
}

// An admin_url named in the project's env_file (not in any environment) is
// the same server on every up: the world's slice is kept and its seed not
// run again, and remove (after the worktree, and its .env, are gone) still
// drops it. (An attack saw every up make the slice again, the next one
// drop a live world's data, and remove leave the database.)
func TestAnAdminURLFromTheEnvFileKeepsTheWorldsSlice(t *testing.T) {
	pg, _ := needServers(t)
	f := newFixture(t, `[project]
name = "envfile"
env_file = ".env"
[services.db]
adapter = "postgres"
admin_url = "${env.PG_IN_ENV_FILE}"
seed = "psql \"$DB_URL\" -q -v ON_ERROR_STOP=1 -c 'CREATE TABLE seeded (id int PRIMARY KEY)' -c 'INSERT INTO seeded VALUES (1)'"
`)
	os.WriteFile(filepath.Join(f.repo, ".env"), []byte("PG_IN_ENV_FILE="+pg+"\n"), 0o600)
	f.mustGit(f.repo, "add", ".env")
	f.mustGit(f.repo, "commit", "-qm", "env file")
	f.mustBinky(f.repo, "up", "ef")
	name := f.envOf("ef")["DB_NAME"]
	ctx := context.Background()
	u, err := url.Parse(pg)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, "INSERT INTO seeded VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	f.mustBinky(f.repo, "down", "ef")
	f.mustBinky(f.repo, "up", "ef") // the seed, run again, would fail
	if c, err = pgx.Connect(ctx, u.String()); err != nil {
		t.Fatal(err)
	}
	var n int
	err = c.QueryRow(ctx, "SELECT count(*) FROM seeded WHERE id = 42").Scan(&n)
	c.Close(ctx)
	if err != nil || n != 1 {
		t.Fatalf("the world's row after down and up: %d, %v", n, err)
	}
	out, stderr, err := f.binky(f.repo, "remove", "ef", "--force")
	if err != nil || strings.Contains(stderr, "not dropped") {
		t.Fatalf("remove: %v\n%s%s", err, out, stderr)
	}
	if got := databases(t, pg, name); len(got) != 0 {
		t.Errorf("remove left the world's database: %v", got)
	}
}

// A Redis user whose marker key a killed server lost (it had not saved) is
// still found by gc: it is this home's by the password this home derives
// for it, and an orphan when no world records it. A user of that shape
// with another password, and a recorded world's user whose marker is
// gone too, are left.
func TestGCDropsARedisUserWhoseMarkerWasLostAndNoOneElses(t *testing.T) {
	_, rd := needServers(t)
	f := newFixture(t, `[project]
name = "rgc"
[services.cache]
adapter = "redis"
admin_url = "${env.BINKY_TEST_REDIS}"
`)
	f.mustBinky(f.repo, "up", "live")
	t.Cleanup(func() { f.binky(f.repo, "remove", "live", "--force") })
	ctx := context.Background()
	home := world.Home{Dir: f.home}
	homeID, err := home.ID()
	if err != nil {
		t.Fatal(err)
	}
	secret, err := home.Secret()
	if err != nil {
		t.Fatal(err)
	}
	orphan := adapters.Slice{Name: "rgc_crashed", World: "00deadbeef00", Home: homeID, AdminURL: rd, Password: adapters.Password(secret, "redis", "rgc_crashed")}
	if err := redis.New().Provision(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	opts, err := goredis.ParseURL(rd)
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opts)
	defer c.Close()
	t.Cleanup(func() { c.Do(ctx, "ACL", "DELUSER", "rgc_crashed", "rgc_foreign") })
	for _, cmd := range [][]any{
		{"DEL", "binky:slice:rgc_crashed", "binky:slice:rgc_live"}, // the markers a killed server lost
		{"ACL", "SETUSER", "rgc_foreign", "on", ">not-binkys-password", "~rgc_foreign:*", "+get"},
	} {
		if err := c.Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	out := f.mustBinky(f.repo, "gc", "--dry-run")
	if !strings.Contains(out, "rgc_crashed") || strings.Contains(out, "rgc_foreign") || strings.Contains(out, "rgc_live") {
		t.Fatalf("gc --dry-run:\n%s", out)
	}
	f.mustBinky(f.repo, "gc")
	users, err := c.Do(ctx, "ACL", "USERS").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(users, "rgc_crashed") || !slices.Contains(users, "rgc_foreign") || !slices.Contains(users, "rgc_live") {
		t.Errorf("ACL users after gc: %v; want rgc_crashed gone, rgc_foreign and rgc_live kept", users)
	}
}

// An up that reuses a slice says when the slice is behind the branch: a
// clone of another template than this branch's migrations make, or a
// slice made before its service had a migrate. It said nothing, and the
// app failed on a missing table. It says so once, not at every up.
func TestAnUpSaysWhenAReusedSliceIsBehindTheBranch(t *testing.T) {
	needServers(t)
	f := newFixture(t, `[project]
name = "behind"
[services.db]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
migrate = "psql \"$DATABASE_URL\" -q -f migrations/1.sql"
clone_from = "golden"
golden_key = ["migrations/*.sql"]
[services.stats]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
`)
	os.MkdirAll(filepath.Join(f.repo, "migrations"), 0o755)
	os.WriteFile(filepath.Join(f.repo, "migrations", "1.sql"), []byte("CREATE TABLE IF NOT EXISTS t (id int);\n"), 0o644)
	f.mustGit(f.repo, "add", "-A")
	f.mustGit(f.repo, "commit", "-qm", "migrations")
	f.mustBinky(f.repo, "up")
	t.Cleanup(func() { f.binky(f.repo, "remove", "--force") })
	if _, stderr, _ := f.binky(f.repo, "up"); strings.Contains(stderr, "cloned from") {
		t.Errorf("a slice in step with its branch is said to be behind:\n%s", stderr)
	}
	// The branch's migrations move on; stats gains a migrate.
	os.WriteFile(filepath.Join(f.repo, "migrations", "1.sql"), []byte("CREATE TABLE IF NOT EXISTS t (id int);\nCREATE TABLE IF NOT EXISTS audit (id int);\n"), 0o644)
	cfg, _ := os.ReadFile(filepath.Join(f.repo, "binky.toml"))
	os.WriteFile(filepath.Join(f.repo, "binky.toml"), append(cfg, []byte("migrate = \"true\"\n")...), 0o644)
	_, stderr, err := f.binky(f.repo, "up")
	if err != nil {
		t.Fatalf("up: %v\n%s", err, stderr)
	}
	for _, want := range []string{"behind_acme_db was cloned from binky_golden_behind_", "Run them against DB_URL",
		"behind_acme_stats was made before service stats had a migrate"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("up does not say %q:\n%s", want, stderr)
		}
	}
	// Said once: a user who ran the migrations by hand is not told again
	// at every up (the note never cleared), running or stopped.
	for _, step := range [][]string{{"up"}, {"down"}, {"up"}} {
		_, stderr, err := f.binky(f.repo, step...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", step, err, stderr)
		}
		if strings.Contains(stderr, "cloned from") || strings.Contains(stderr, "had a migrate") {
			t.Errorf("%v says it again:\n%s", step, stderr)
		}
	}
}

// A plain PostgreSQL world on binky's own server waited for CREATE
// DATABASE (a copy of template1) and a connection into it on every up.
// Now the first plain world starts a blank template's build (template1's
// copy), and later ones take its prepared spare: a database of their own,
// their schema public their role's, their migrate and seed run on it as on
// any plain world's.
func TestPlainWorldsOnTheManagedPostgresTakeTheBlankTemplatesSpare(t *testing.T) {
	needPGBinaries(t)
	f := newFixture(t, `[project]
name = "plain"
[services.db]
adapter = "postgres"
migrate = "psql \"$DATABASE_URL\" -q -v ON_ERROR_STOP=1 -c 'CREATE TABLE IF NOT EXISTS t (id int)'"
seed = "psql \"$DATABASE_URL\" -q -v ON_ERROR_STOP=1 -c 'INSERT INTO t VALUES (1)'"
`)
	t.Cleanup(func() {
		for _, w := range []string{"b1", "b2", "b3", "b4"} {
			f.binky(f.repo, "remove", w, "--force")
		}
	})
	f.mustBinky(f.repo, "up", "b1")
	var blank string
	f.eventually("the blank template is built after the first plain world", func() bool {
		out := f.mustBinky(f.repo, "golden")
		if !strings.Contains(out, "blank (template1's copy, for plain worlds)") {
			return false
		}
		blank, _, _ = strings.Cut(out, " ")
		return true
	})
	f.mustBinky(f.repo, "up", "b2")
	log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
	if !strings.Contains(string(log), `"msg":"slice made from the blank template","world":"b2"`) {
		t.Fatalf("b2's database was not made from the blank template:\n%s", log)
	}
	b1, b2 := f.envOf("b1")["DB_URL"], f.envOf("b2")["DB_URL"]
	if got := count(t, b2, "SELECT count(*) FROM t"); got != 1 {
		t.Errorf("b2 holds %d rows: want its own seed's one", got)
	}
	if got := count(t, b2, `SELECT count(*) FROM pg_namespace n JOIN pg_roles r ON r.oid = n.nspowner
		WHERE n.nspname = 'public' AND r.rolname = current_user`); got != 1 {
		t.Error("b2's role does not own its schema public")
	}
	count(t, b2, "WITH x AS (INSERT INTO t VALUES (2) RETURNING 1) SELECT count(*) FROM x")
	if got := count(t, b1, "SELECT count(*) FROM t"); got != 1 {
		t.Errorf("b1 holds %d rows after b2 wrote its own: the worlds share data", got)
	}
	// Neither the blank nor its spare is open to a world's role.
	u, _ := url.Parse(b2)
	for _, db := range []string{blank, blank + adapters.SpareSuffix} {
		u.Path = "/" + db
		if c, err := pgx.Connect(context.Background(), u.String()); err == nil {
			c.Close(context.Background())
			t.Errorf("b2's role connects to %s", db)
		}
	}
	// Dropped, with its spare; the next plain world is made from
	// template1 meanwhile, and starts the build again.
	admin := managedPGAdmin(f)
	// b2 took a spare; the next one is made behind it.
	f.eventually("the blank and its next spare", func() bool { return len(databases(t, admin, blank+"%")) == 2 })
	// A copy that fails is made from template1 instead.
	f.mustBinky(f.repo, "daemon", "stop")
	f.extraEnv = []string{"BINKY_TEST_FAIL_CLONE=1"}
	f.mustBinky(f.repo, "up", "b4")
	f.extraEnv = nil
	f.mustBinky(f.repo, "daemon", "stop")
	if log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log")); !strings.Contains(string(log), `"msg":"blank template not copied: making the database from template1","world":"b4"`) {
		t.Error("b4's failed copy of the blank was not said")
	}
	if got := count(t, f.envOf("b4")["DB_URL"], "SELECT count(*) FROM t"); got != 1 {
		t.Errorf("b4, made from template1 after a failed copy, holds %d rows", got)
	}
	f.mustBinky(f.repo, "golden", "drop", blank)
	if got := databases(t, admin, blank+"%"); len(got) != 0 {
		t.Errorf("golden drop left %v", got)
	}
	f.mustBinky(f.repo, "up", "b3")
	if got := count(t, f.envOf("b3")["DB_URL"], "SELECT count(*) FROM t"); got != 1 {
		t.Errorf("b3 holds %d rows", got)
	}
	f.eventually("the blank template is built again", func() bool {
		return strings.Contains(f.mustBinky(f.repo, "golden"), blank)
	})
}

// The blank template is built after an up, in the background: a daemon
// killed in the middle of its build leaves nothing the next build and gc
// do not finish or drop.
func TestABlankTemplateBuildCutOffIsBuiltAgainWhole(t *testing.T) {
	needPGBinaries(t)
	for _, step := range []string{"blank.provisioned", "blank.prepared"} {
		t.Run("killed at "+step, func(t *testing.T) {
			f := newFixture(t, `[project]
name = "cut"
[services.db]
adapter = "postgres"
`)
			t.Cleanup(func() {
				for _, w := range []string{"c1", "c2", "c3"} {
					f.binky(f.repo, "remove", w, "--force")
				}
			})
			// The build runs after c1's up has answered: the daemon is
			// waited for until it killed itself there.
			f.binky(f.repo, "daemon", "stop")
			f.extraEnv = []string{"BINKY_TEST_CRASH_AT=" + step}
			f.mustBinky(f.repo, "up", "c1")
			f.eventually("the daemon killed itself at "+step, func() bool {
				log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
				return strings.Contains(string(log), `"step":"`+step+`"`) && daemonGone(f)
			})
			f.extraEnv = nil
			f.mustBinky(f.repo, "up", "c2")
			var blank string
			f.eventually("the blank template is built again", func() bool {
				out := f.mustBinky(f.repo, "golden")
				blank, _, _ = strings.Cut(out, " ")
				return strings.HasPrefix(blank, "binky_blank_")
			})
			admin := managedPGAdmin(f)
			f.eventually("the blank's spare is made", func() bool { return len(databases(t, admin, "binky_blank_%")) == 2 })
			f.mustBinky(f.repo, "up", "c3")
			log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
			if !strings.Contains(string(log), `"msg":"slice made from the blank template","world":"c3"`) {
				t.Errorf("c3's database was not made from the rebuilt blank template")
			}
			// c3 took the spare; the next one is made behind it.
			f.eventually("the blank and its next spare, nothing else", func() bool {
				got := databases(t, admin, "binky_blank_%")
				return len(got) == 2 && got[0] == blank && got[1] == blank+adapters.SpareSuffix
			})
			if out := f.mustBinky(f.repo, "gc", "--dry-run"); !strings.Contains(out, "no orphaned slices") {
				t.Errorf("gc --dry-run:\n%s", out)
			}
		})
	}
}

// daemonGone reports whether no daemon holds f's home (its lock is free).
func daemonGone(f *fixture) bool {
	lock := flock.New(filepath.Join(f.home, "daemon.lock"))
	ok, err := lock.TryLock()
	if err == nil && ok {
		lock.Unlock()
	}
	return err == nil && ok
}

// needPGBinaries skips a test of binky's own PostgreSQL where its server
// binaries are missing.
func needPGBinaries(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/lib/postgresql"); err != nil && os.Getenv("BINKY_TEST_PG") == "" {
		t.Skip("no PostgreSQL server binaries in /usr/lib/postgresql, and BINKY_TEST_PG is unset (make test installs them)")
	}
}

// managedPGAdmin is the admin URL of f's home's own PostgreSQL.
func managedPGAdmin(f *fixture) string {
	pw, _ := os.ReadFile(filepath.Join(f.home, "servers", "postgres", "admin.password"))
	for _, sv := range f.status().Servers {
		if sv.Kind == "postgres" {
			return fmt.Sprintf("postgres://binky:%s@127.0.0.1:%d/postgres?sslmode=disable", strings.TrimSpace(string(pw)), sv.Port)
		}
	}
	f.t.Fatal("no managed postgres in status")
	return ""
}

// The time status gives a cloned slice is its copy and the copy's
// migrate, not the template's build before it: the first world of a
// branch said "cloned ... and migrated in" seconds of someone's seed.
func TestAClonedSlicesTimeLeavesOutItsTemplatesBuild(t *testing.T) {
	needServers(t)
	f := newFixture(t, `[project]
name = "took`+runID()+`"
[services.db]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
migrate = "psql \"$DB_URL\" -q -v ON_ERROR_STOP=1 -c 'CREATE TABLE IF NOT EXISTS items (id int)'"
seed = "sleep 2"
clone_from = "golden"
`)
	f.mustBinky(f.repo, "up", "tk")
	t.Cleanup(func() { f.binky(f.repo, "remove", "tk", "--force") })
	w := f.world("tk")
	if len(w.Slices) != 1 || w.Slices[0].Made != "cloned" {
		t.Fatalf("slices: %+v", w.Slices)
	}
	if took := w.Slices[0].TookMS; took >= 2000 {
		t.Errorf("the clone took %d ms by status, the 2 s seed of its template's build included", took)
	}
}

// A world's processes (its services, its migrate) do not inherit the
// variables that name the servers' admin credentials: with admin_url =
// "${env.X}", as the README has it, every world's worker held X, and one
// world took another's messages with it.
func TestAWorldsProcessesDoNotInheritTheAdminURLs(t *testing.T) {
	needServers(t)
	f := newFixture(t, `[project]
name = "noadmin`+runID()+`"
[services.db]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
migrate = "env > $GC_DIR/migrate.env"
[services.cache]
adapter = "redis"
admin_url = "${env.BINKY_TEST_REDIS}"
[services.api]
cmd = "env > $GC_DIR/api.env; exec testsvc"
url = "api"
depends_on = ["db", "cache"]
`)
	f.mustBinky(f.repo, "up", "na")
	t.Cleanup(func() { f.binky(f.repo, "remove", "na", "--force") })
	for _, file := range []string{"api.env", "migrate.env"} {
		b, err := os.ReadFile(filepath.Join(f.gcDir, file))
		if err != nil {
			t.Fatal(err)
		}
		env := string(b)
		for _, name := range []string{"BINKY_TEST_PG=", "BINKY_TEST_REDIS="} {
			if strings.Contains(env, "\n"+name) || strings.HasPrefix(env, name) {
				t.Errorf("%s: the process inherited %s", file, strings.TrimSuffix(name, "="))
			}
		}
		if !strings.Contains(env, "DB_URL=") || !strings.Contains(env, "GC_DIR=") {
			t.Errorf("%s: the world's own variables or the caller's others are missing:\n%s", file, env)
		}
	}
}
