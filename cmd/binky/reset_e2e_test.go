package main

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A branch whose migrations changed since its world was made: up says its
// data may lack them, and 'git binky reset --service db' drops the world's
// database and clones the branch's new template, keeping the worktree, the
// ports and the other slices' data. The advice was 'remove and up', which
// deleted the worktree.
func TestResetClonesTheBranchsNewTemplateAndKeepsTheRest(t *testing.T) {
	pg, _ := needServers(t)
	project := "reset" + runID()
	f := newFixture(t, migrationsConfig(project))
	commit := func(dir, rel, body string) { commitFile(t, f, dir, rel, body) }
	commit(f.repo, "migrations/001.sql", "CREATE TABLE IF NOT EXISTS items (id int);\n")
	f.mustBinky(f.repo, "up", "rs")
	t.Cleanup(func() { f.binky(f.repo, "remove", "rs", "--force") })
	before := f.world("rs")
	env := f.envOf("rs")
	ctx := context.Background()
	db, err := pgx.Connect(ctx, env["DB_URL"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "INSERT INTO items VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	db.Close(ctx)
	if err := redisClient(t, env["CACHE_URL"]).Set(ctx, env["CACHE_PREFIX"]+"kept", "yes", 0).Err(); err != nil {
		t.Fatal(err)
	}

	commit(before.Path, "migrations/002.sql", "CREATE TABLE IF NOT EXISTS entries (id int);\n")
	if _, stderr, err := f.binky(before.Path, "up"); err != nil || !strings.Contains(stderr, "git binky reset --service db") {
		t.Errorf("up after a new migration: %v, and does not say to reset:\n%s", err, stderr)
	}
	stdout, stderr, err := f.binky(before.Path, "reset", "--service", "db")
	if err != nil {
		t.Fatalf("reset: %v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "reset: rs") {
		t.Errorf("reset's output:\n%s", stdout)
	}
	after := f.world("rs")
	if after.State != "running" || after.Ports["api"] != before.Ports["api"] {
		t.Errorf("after reset: %s on port %d, want running on %d", after.State, after.Ports["api"], before.Ports["api"])
	}
	env = f.envOf("rs")
	if !tableExists(t, env["DB_URL"], "entries") {
		t.Error("the reset database lacks the branch's migration 002")
	}
	if n := count(t, env["DB_URL"], "SELECT count(*) FROM items"); n != 1 {
		t.Errorf("items has %d rows after reset, want the seed's 1", n)
	}
	if v, err := redisClient(t, env["CACHE_URL"]).Get(ctx, env["CACHE_PREFIX"]+"kept").Result(); err != nil || v != "yes" {
		t.Errorf("the cache, which reset was not asked to make again: %q, %v", v, err)
	}
	if _, stderr, _ := f.binky(before.Path, "up"); strings.Contains(stderr, "lack this branch's migrations") {
		t.Errorf("up still says the data is behind:\n%s", stderr)
	}
	// The old database went: one database of the project is left.
	admin, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var dbs int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname LIKE $1", project+"%").Scan(&dbs); err != nil || dbs != 1 {
		t.Errorf("%d databases of %s after reset, want 1 (%v)", dbs, project, err)
	}

	_, stderr, err = f.binky(before.Path, "reset", "--service", "api")
	if err == nil || !strings.Contains(stderr, "not a data service") || !strings.Contains(stderr, "cache, db") {
		t.Errorf("reset of a service with no data: %v\n%s", err, stderr)
	}
}

// migrationsConfig is a world whose database is cloned from a golden
// template built by the SQL files in migrations/, beside a cache and an
// API that uses both.
func migrationsConfig(project string) string {
	return `[project]
name = "` + project + `"
[services.db]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
migrate = "for m in migrations/*.sql; do psql \"$DB_URL\" -q -v ON_ERROR_STOP=1 -f $m || exit 1; done"
seed = "psql \"$DB_URL\" -q -v ON_ERROR_STOP=1 -c 'INSERT INTO items VALUES (1)'"
clone_from = "golden"
golden_key = ["migrations/**"]
[services.cache]
adapter = "redis"
admin_url = "${env.BINKY_TEST_REDIS}"
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["db", "cache"]
`
}

// commitFile writes body to rel in the worktree dir and commits it.
func commitFile(t *testing.T, f *fixture, dir, rel, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	f.mustGit(dir, "add", "-A")
	f.mustGit(dir, "commit", "-qm", "add "+rel)
}

// A reset on a branch whose new migration fails refuses before it stops
// or drops anything: the template its data would be cloned from is built
// first. It dropped the database, then the up found the migrate broken,
// and the world was left with no data until the migration was fixed.
func TestAResetWhoseTemplateDoesNotBuildKeepsTheWorldAndItsData(t *testing.T) {
	needServers(t)
	f := newFixture(t, migrationsConfig("rbroken"+runID()))
	commitFile(t, f, f.repo, "migrations/001.sql", "CREATE TABLE IF NOT EXISTS items (id int);\n")
	f.mustBinky(f.repo, "up", "rb")
	t.Cleanup(func() { f.binky(f.repo, "remove", "rb", "--force") })
	before := f.world("rb")
	env := f.envOf("rb")
	ctx := context.Background()
	db, err := pgx.Connect(ctx, env["DB_URL"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "INSERT INTO items VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	db.Close(ctx)

	commitFile(t, f, before.Path, "migrations/002.sql", "CREATE TABLE broken (id int;\n")
	_, stderr, err := f.binky(before.Path, "reset", "--service", "db")
	if err == nil || !strings.Contains(stderr, "nothing was stopped or dropped") || !strings.Contains(stderr, "002.sql") {
		t.Fatalf("reset with a broken migration: %v, and does not say its data was kept or what failed:\n%s", err, stderr)
	}
	if after := f.world("rb"); after.State != "running" {
		t.Errorf("after the refused reset the world is %s, want running", after.State)
	}
	if n := count(t, f.envOf("rb")["DB_URL"], "SELECT count(*) FROM items"); n != 2 {
		t.Errorf("items has %d rows after the refused reset, want the 2 it had", n)
	}

	commitFile(t, f, before.Path, "migrations/002.sql", "CREATE TABLE IF NOT EXISTS fixed (id int);\n")
	if _, stderr, err := f.binky(before.Path, "reset", "--service", "db"); err != nil {
		t.Fatalf("reset once the migration is fixed: %v\n%s", err, stderr)
	}
	env = f.envOf("rb")
	if !tableExists(t, env["DB_URL"], "fixed") || count(t, env["DB_URL"], "SELECT count(*) FROM items") != 1 {
		t.Error("the reset after the fix did not clone the branch's new template")
	}
}

// A reset cut off anywhere after it began to drop (a crash after one
// slice, or in the middle of a Redis teardown, which deletes keys in
// batches) leaves the world stopped: the next up makes every slice it was
// asked to reset again, whole. A Redis slice half deleted was taken back
// as it was, reported "provisioned", seed and all.
func TestAResetCutOffIsMadeWholeByTheNextUp(t *testing.T) {
	needServers(t)
	f := newFixture(t, trustConfig("rcut"+runID(), true))
	f.mustBinky(f.repo, "up", "w1")
	t.Cleanup(func() { f.binky(f.repo, "remove", "w1", "--force") })
	ctx := context.Background()
	for _, step := range []string{"reset.slice_dropped", "redis.teardown.user_dropped"} {
		env := f.envOf("w1")
		db, err := pgx.Connect(ctx, env["DB_URL"])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, "INSERT INTO items VALUES (0)"); err != nil {
			t.Fatal(err)
		}
		db.Close(ctx)
		if err := redisClient(t, env["CACHE_URL"]).Set(ctx, env["CACHE_PREFIX"]+"old", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		f.mustBinky(f.repo, "daemon", "stop")
		f.extraEnv = []string{"BINKY_TEST_CRASH_AT=" + step}
		_, stderr, err := f.binky(f.repo, "reset", "w1")
		f.extraEnv = nil
		if err == nil {
			t.Fatalf("a reset whose daemon died at %s succeeded:\n%s", step, stderr)
		}
		if _, stderr, err := f.binky(f.repo, "up", "w1"); err != nil {
			t.Fatalf("up after a reset cut off at %s: %v\n%s", step, err, stderr)
		}
		complete(t, f, "w1") // the seed's 100 rows, not 101
		env = f.envOf("w1")
		if n, err := redisClient(t, env["CACHE_URL"]).Exists(ctx, env["CACHE_PREFIX"]+"old").Result(); err != nil || n != 0 {
			t.Errorf("cut off at %s: the cache's old key is still there (%d, %v)", step, n, err)
		}
	}
}

// A record an older binky wrote, where two services share one slice:
// resetting one gives it a slice of its own and leaves the other's data.
// The shared database was dropped, and the other service's rows with it.
func TestResetOfAServiceSharingItsSliceLeavesTheOthersData(t *testing.T) {
	needServers(t)
	project := "rshare" + runID()
	f := newFixture(t, `[project]
name = "`+project+`"
[services.db]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
[services.db2]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
`)
	f.mustBinky(f.repo, "up", "sh")
	t.Cleanup(func() { f.binky(f.repo, "remove", "sh", "--force") })
	env := f.envOf("sh")
	ctx := context.Background()
	db, err := pgx.Connect(ctx, env["DB_URL"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "CREATE TABLE precious (id int); INSERT INTO precious VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	db.Close(ctx)
	f.mustBinky(f.repo, "down", "sh")
	// What an older binky wrote: db2's entry names db's slice. (An up
	// would split them; the reset comes first.)
	editRecord(t, f, "sh", func(list []any) []any {
		var dbEntry map[string]any
		for _, x := range list {
			if e := x.(map[string]any); e["service"] == "db" {
				dbEntry = e
			}
		}
		for i, x := range list {
			if x.(map[string]any)["service"] == "db2" {
				shared := maps.Clone(dbEntry)
				shared["service"] = "db2"
				list[i] = shared
			}
		}
		return list
	})
	if _, stderr, err := f.binky(f.repo, "reset", "sh", "--service", "db2"); err != nil {
		t.Fatalf("reset: %v\n%s", err, stderr)
	}
	env = f.envOf("sh")
	if n := count(t, env["DB_URL"], "SELECT count(*) FROM precious"); n != 1 {
		t.Errorf("db's table has %d rows after db2's reset, want 1", n)
	}
	if env["DB2_NAME"] == env["DB_NAME"] {
		t.Errorf("db2 still shares db's database %s", env["DB_NAME"])
	}
}

// A world with no record has nothing to reset, and says how to make one.
func TestResetOfAWorldNeverUpSaysSo(t *testing.T) {
	f := newFixture(t, oneService)
	_, stderr, err := f.binky(f.repo, "reset")
	if err == nil || !strings.Contains(stderr, "has no world yet") {
		t.Errorf("reset before any up: %v\n%s", err, stderr)
	}
}

// A record that lost a data service's slice (edited by hand): the reset
// drops the slice still on the server, marked as this world's, rather than
// let the up take it back, data and all, and say "reset".
func TestResetDropsASliceItsRecordLost(t *testing.T) {
	needServers(t)
	f := newFixture(t, trustConfig("rlost"+runID(), false))
	f.mustBinky(f.repo, "up", "lo")
	t.Cleanup(func() { f.binky(f.repo, "remove", "lo", "--force") })
	ctx := context.Background()
	db, err := pgx.Connect(ctx, f.envOf("lo")["DB_URL"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "INSERT INTO items VALUES (0)"); err != nil {
		t.Fatal(err)
	}
	db.Close(ctx)
	f.mustBinky(f.repo, "down", "lo")
	editRecord(t, f, "lo", func(list []any) []any {
		return slices.DeleteFunc(list, func(x any) bool { return x.(map[string]any)["service"] == "db" })
	})
	if _, stderr, err := f.binky(f.repo, "reset", "lo", "--service", "db"); err != nil {
		t.Fatalf("reset: %v\n%s", err, stderr)
	}
	complete(t, f, "lo") // the seed's 100 rows, not 101
}

// editRecord rewrites the slices of world name's record with edit, as a
// hand (or an older binky) would.
func editRecord(t *testing.T, f *fixture, name string, edit func([]any) []any) {
	t.Helper()
	path := filepath.Join(f.home, "worlds", f.world(name).ID+".json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	list, _ := rec["slices"].([]any)
	rec["slices"] = edit(list)
	if b, err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A world's database marked as its own, whose role lost its mark (a hand
// that commented it): Postgres drops the database and leaves the role. The
// reset called the slice "left alone", kept its data, and failed, with its
// database gone; it now says what it dropped and what it left, and the up
// makes the slice again under another name.
func TestAResetWhoseRoleLostItsMarkSaysTheDataWentAndTheRoleStayed(t *testing.T) {
	pg, _ := needServers(t)
	f := newFixture(t, trustConfig("rrole"+runID(), false))
	f.mustBinky(f.repo, "up", "ro")
	t.Cleanup(func() { f.binky(f.repo, "remove", "ro", "--force") })
	role := f.envOf("ro")["DB_USER"]
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "COMMENT ON ROLE "+pgx.Identifier{role}.Sanitize()+" IS NULL"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize()) })
	stdout, stderr, err := f.binky(f.repo, "reset", "ro", "--service", "db")
	if err != nil {
		t.Fatalf("reset: %v\n%s%s", err, stdout, stderr)
	}
	if !strings.Contains(stderr, "postgres database "+role+" dropped; role "+role+" kept") {
		t.Errorf("reset does not say the database went and its role stayed:\n%s", stderr)
	}
	complete(t, f, "ro")
	if f.envOf("ro")["DB_USER"] == role {
		t.Errorf("the new slice took the role %s binky no longer calls its own", role)
	}
}

// A golden template that cannot be built for a reason other than the
// branch's migrate or seed (its name held by a database binky did not
// mark) does not refuse the reset: the up after the drop provisions,
// migrates and seeds, as any up does then. The reset refused, telling
// the user to fix what was not theirs to fix.
func TestAResetWhoseTemplateNameIsTakenStillResets(t *testing.T) {
	pg, _ := needServers(t)
	f := newFixture(t, migrationsConfig("rtaken"+runID()))
	commitFile(t, f, f.repo, "migrations/001.sql", "CREATE TABLE IF NOT EXISTS items (id int);\n")
	f.mustBinky(f.repo, "up", "rt")
	t.Cleanup(func() { f.binky(f.repo, "remove", "rt", "--force") })
	golden := ""
	for _, s := range f.world("rt").Slices {
		if s.Service == "db" {
			golden = s.Template
		}
	}
	if golden == "" {
		t.Fatalf("no template: %+v", f.world("rt").Slices)
	}
	// The template's marker goes, and its database is one binky did not
	// make: the next build of that name finds it taken.
	os.Remove(filepath.Join(f.home, "golden", golden+".json"))
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	quoted := pgx.Identifier{golden}.Sanitize()
	for _, q := range []string{"ALTER DATABASE " + quoted + " IS_TEMPLATE false", "DROP DATABASE " + quoted + " WITH (FORCE)", "CREATE DATABASE " + quoted} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+quoted+" WITH (FORCE)") })
	env := f.envOf("rt")
	db, err := pgx.Connect(ctx, env["DB_URL"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "INSERT INTO items VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	db.Close(ctx)
	_, stderr, err := f.binky(f.repo, "reset", "rt", "--service", "db")
	if err != nil {
		t.Fatalf("reset with its template's name taken: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "provisioned, migrated and seeded instead") {
		t.Errorf("the reset does not say it made the slice without its template:\n%s", stderr)
	}
	if n := count(t, f.envOf("rt")["DB_URL"], "SELECT count(*) FROM items"); n != 1 {
		t.Errorf("items has %d rows after the reset, want the seed's 1", n)
	}
}

// A reload or a reset ends with an up; when that up fails, the error names
// the command the user ran, not an "up" they never typed.
func TestAFailedReloadOrResetNamesItself(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.store]
adapter = "filestore"
options = { root = "`+filepath.Join(t.TempDir(), "root")+`" }
[services.api]
cmd = "if [ -e $GC_DIR/fail ]; then exec testsvc -exit 3; fi; exec testsvc"
url = "api"
depends_on = ["store"]
`)
	f.mustBinky(f.repo, "up")
	t.Cleanup(func() { f.binky(f.repo, "remove", "acme", "--force") })
	if err := os.WriteFile(filepath.Join(f.gcDir, "fail"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, command := range []string{"reload", "reset"} {
		_, stderr, err := f.binky(f.repo, command)
		if err == nil || !strings.Contains(stderr, "git-binky: "+command+" acme: ") || strings.Contains(stderr, "up acme:") ||
			!strings.Contains(stderr, "service api exited with code 3") {
			t.Errorf("%s whose up fails: %v\n%s", command, err, stderr)
		}
	}
}
