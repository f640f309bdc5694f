package main

import (
	"context"
	"os"
	"path/filepath"
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
	f := newFixture(t, `[project]
name = "`+project+`"
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
`)
	commit := func(dir, rel, body string) {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		f.mustGit(dir, "add", "-A")
		f.mustGit(dir, "commit", "-qm", "add "+rel)
	}
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

// A reset cut off after it dropped a database, before its record said so,
// leaves the world stopped and a record naming a database gone from its
// server: the next up makes it again, whole, and says why.
func TestAResetCutOffAfterItsDropIsMadeWholeByTheNextUp(t *testing.T) {
	needServers(t)
	f := newFixture(t, trustConfig("rcut"+runID(), true))
	f.mustBinky(f.repo, "up", "w1")
	t.Cleanup(func() { f.binky(f.repo, "remove", "w1", "--force") })
	f.mustBinky(f.repo, "daemon", "stop")
	f.extraEnv = []string{"BINKY_TEST_FAIL_AT=reset.slice_dropped"}
	_, stderr, err := f.binky(f.repo, "reset", "w1", "--service", "db")
	if err == nil || !strings.Contains(stderr, "is stopped") {
		t.Fatalf("a reset failing after its first drop: %v\n%s", err, stderr)
	}
	f.mustBinky(f.repo, "daemon", "stop")
	f.extraEnv = nil
	if w := f.world("w1"); w.State != "stopped" {
		t.Errorf("after the failed reset the world is %s", w.State)
	}
	_, stderr, err = f.binky(f.repo, "up", "w1")
	if err != nil {
		t.Fatalf("up: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "is gone from the server") {
		t.Errorf("up does not say the slice was gone:\n%s", stderr)
	}
	complete(t, f, "w1")
}

// A world with no record has nothing to reset, and says how to make one.
func TestResetOfAWorldNeverUpSaysSo(t *testing.T) {
	f := newFixture(t, oneService)
	_, stderr, err := f.binky(f.repo, "reset")
	if err == nil || !strings.Contains(stderr, "has no world yet") {
		t.Errorf("reset before any up: %v\n%s", err, stderr)
	}
}
