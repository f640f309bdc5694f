package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/world"
)

// trustConfig is a project on the test servers: postgres (cloned from the
// golden template, seeded with 100 rows; migrate fails while $GC_DIR/broken
// exists) and redis.
func trustConfig(project string, clone bool) string {
	c := `[project]
name = "` + project + `"
[services.db]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
migrate = "test ! -e $GC_DIR/broken && psql \"$DB_URL\" -q -v ON_ERROR_STOP=1 -c 'CREATE TABLE IF NOT EXISTS items (id int)'"
seed = "psql \"$DB_URL\" -q -v ON_ERROR_STOP=1 -c 'INSERT INTO items SELECT generate_series(1, 100)'"
`
	if clone {
		c += "clone_from = \"golden\"\n"
	}
	return c + `[services.cache]
adapter = "redis"
admin_url = "${env.BINKY_TEST_REDIS}"
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["db", "cache"]
`
}

func redisClient(t *testing.T, u string) *goredis.Client {
	t.Helper()
	opt, err := goredis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	opt.DisableIdentity, opt.Protocol = true, 2
	c := goredis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// leftOf lists what the servers hold whose name starts with prefix:
// databases, roles, redis markers and ACL users (golden templates aside).
func leftOf(t *testing.T, pg, rd, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT 'database ' || datname FROM pg_database WHERE starts_with(datname, $1)
		UNION ALL SELECT 'role ' || rolname FROM pg_roles WHERE starts_with(rolname, $1) ORDER BY 1`, prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out = append(out, s)
	}
	rows.Close()
	r := redisClient(t, rd)
	keys, _ := r.Keys(ctx, "binky:slice:"+prefix+"*").Result()
	for _, k := range keys {
		out = append(out, "marker "+k)
	}
	keys, _ = r.Keys(ctx, prefix+"*").Result()
	for _, k := range keys {
		out = append(out, "key "+k)
	}
	users, _ := r.Do(ctx, "ACL", "USERS").StringSlice()
	for _, u := range users {
		if strings.HasPrefix(u, prefix) {
			out = append(out, "user "+u)
		}
	}
	return out
}

// complete checks that a world's slices work and hold what migrate and
// seed made.
func complete(t *testing.T, f *fixture, name string) {
	t.Helper()
	env := f.envOf(name)
	if got := count(t, env["DB_URL"], "SELECT count(*) FROM items"); got != 100 {
		t.Errorf("%s's database has %d rows, want 100", name, got)
	}
	r := redisClient(t, env["CACHE_URL"])
	if err := r.Set(context.Background(), env["CACHE_PREFIX"]+"k", "v", 0).Err(); err != nil {
		t.Errorf("%s's redis user: %v", name, err)
	}
	for _, w := range f.status().Worlds {
		for _, sl := range w.Slices {
			if w.Worktree == name && sl.Made != "cloned" && sl.Made != "provisioned" {
				t.Errorf("%s's slice %s is %q after up", name, sl.Name, sl.Made)
			}
		}
	}
}

func runID() string { return fmt.Sprintf("%x", time.Now().UnixNano()&0xffffff) }

// Issue 11, item 1: two homes on one server; gc in one drops nothing of the
// other's live world, and leaves a mark an older binky wrote (no home)
// alone, saying so.
func TestGCInOneHomeDropsNothingOfAnotherHomesLiveWorld(t *testing.T) {
	pg, rd := needServers(t)
	project := "team" + runID()
	home1 := newFixture(t, trustConfig(project, true))
	home2 := newFixture(t, trustConfig(project, true))
	home1.mustBinky(home1.repo, "up", "bob")
	t.Cleanup(func() { home1.binky(home1.repo, "remove", "bob", "--force") })
	home2.mustBinky(home2.repo, "up", "alice")
	t.Cleanup(func() { home2.binky(home2.repo, "remove", "alice", "--force") })
	alice := home2.envOf("alice")
	// Each home clones from a golden template of its own: home 1's is not
	// home 2's to take, and its name is not a reason to salt alice's.
	for _, w := range home2.status().Worlds {
		for _, sl := range w.Slices {
			if sl.Name != project+"_alice" || (sl.Adapter == "postgres" && sl.Made != "cloned") {
				t.Errorf("home 2's slice %s is %q (%s)", sl.Name, sl.Made, sl.Template)
			}
		}
	}

	ctx := context.Background()
	legacy := project + "_legacy"
	admin, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	admin.Exec(ctx, "CREATE DATABASE "+legacy)
	admin.Exec(ctx, "COMMENT ON DATABASE "+legacy+" IS 'binky:world=0123456789abcdef'")
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+legacy) })
	r := redisClient(t, rd)
	r.Set(ctx, "binky:slice:"+legacy, "0123456789abcdef", 0)
	t.Cleanup(func() { r.Del(context.Background(), "binky:slice:"+legacy) })

	out := home1.mustBinky(home1.repo, "gc")
	if strings.Contains(out, "alice") || strings.Contains(out, "dropped") {
		t.Errorf("gc in home 1:\n%s", out)
	}
	if !strings.Contains(out, "left alone postgres "+legacy) || !strings.Contains(out, "left alone redis "+legacy) || !strings.Contains(out, "older binky") {
		t.Errorf("gc does not report the legacy marks:\n%s", out)
	}
	if got := count(t, alice["DB_URL"], "SELECT count(*) FROM items"); got != 100 {
		t.Errorf("alice's database has %d rows after home 1's gc", got)
	}
	if err := redisClient(t, alice["CACHE_URL"]).Ping(ctx).Err(); err != nil {
		t.Errorf("alice's redis user after home 1's gc: %v", err)
	}
	if n := count(t, pg, "SELECT count(*) FROM pg_database WHERE datname = '"+legacy+"'"); n != 1 {
		t.Error("gc dropped a legacy-marked database")
	}
}

// Issue 11, item 2: an admin's own user and key under what would be a
// world's prefix are neither taken over nor dropped.
func TestUpNeverTakesOverARedisUserBinkyDidNotMake(t *testing.T) {
	_, rd := needServers(t)
	project := "acme" + runID()
	f := newFixture(t, trustConfig(project, false))
	ctx := context.Background()
	r := redisClient(t, rd)
	victim := project + "_victim"
	r.Do(ctx, "ACL", "SETUSER", victim, "on", ">victimpw", "~*", "+@all")
	r.Set(ctx, victim+":data", "important", 0)
	t.Cleanup(func() {
		r.Do(context.Background(), "ACL", "DELUSER", victim)
		r.Del(context.Background(), victim+":data")
	})
	f.mustBinky(f.repo, "up", "victim")
	env := f.envOf("victim")
	if env["CACHE_PREFIX"] == victim+":" {
		t.Fatalf("the world got the admin's prefix %s", env["CACHE_PREFIX"])
	}
	if v, err := redisClient(t, env["CACHE_URL"]).Get(ctx, victim+":data").Result(); err == nil {
		t.Errorf("the world reads the admin's key: %q", v)
	}
	f.mustBinky(f.repo, "remove", "victim", "--force")
	u, _ := url.Parse(rd)
	u.User = url.UserPassword(victim, "victimpw")
	if v, err := redisClient(t, u.String()).Get(ctx, victim+":data").Result(); v != "important" {
		t.Errorf("after up and remove, the admin's user or key changed: %q, %v", v, err)
	}
}

// Issue 11, item 7: a database a failed up left is dropped and made again,
// never reused as if cloned; status says how each slice was made.
func TestAHalfMadeDatabaseIsNeverReusedAsAClone(t *testing.T) {
	needServers(t)
	f := newFixture(t, trustConfig("rss"+runID(), true))
	broken := filepath.Join(f.gcDir, "broken")
	os.WriteFile(broken, nil, 0o600)
	if _, _, err := f.binky(f.repo, "up", "reader"); err == nil {
		t.Fatal("up with a failing migrate succeeded")
	}
	t.Cleanup(func() { f.binky(f.repo, "remove", "reader", "--force") })
	os.Remove(broken)
	f.mustBinky(f.repo, "up", "reader")
	complete(t, f, "reader")
	out := f.mustBinky(f.repo, "status")
	if !strings.Contains(out, "cloned from binky_golden_") || !strings.Contains(out, " ms)") {
		t.Errorf("status does not say the slice was cloned, from which template, how long:\n%s", out)
	}
}

// Issue 11, item 10: records hold neither the derived slice passwords nor
// an admin_url's password; the world's env still carries them.
func TestWorldRecordsHoldNoPasswords(t *testing.T) {
	pg, rd := needServers(t)
	f := newFixture(t, trustConfig("pw"+runID(), false))
	f.mustBinky(f.repo, "up", "p1")
	t.Cleanup(func() { f.binky(f.repo, "remove", "p1", "--force") })
	env := f.envOf("p1")
	var secrets []string
	for _, u := range []string{env["DB_URL"], env["CACHE_URL"], pg, rd} {
		parsed, err := url.Parse(u)
		if err != nil || parsed.User == nil {
			t.Fatalf("no password in %s", u)
		}
		pw, _ := parsed.User.Password()
		secrets = append(secrets, pw)
	}
	if got := count(t, env["DB_URL"], "SELECT 1"); got != 1 {
		t.Fatal("the world's url does not work")
	}
	records, _ := filepath.Glob(filepath.Join(f.home, "worlds", "*.json"))
	copies, _ := filepath.Glob(filepath.Join(f.repo, ".git", "worktrees", "*", "binky", "world.json"))
	if len(records) == 0 || len(copies) == 0 {
		t.Fatalf("records %v, copies %v", records, copies)
	}
	for _, p := range append(records, copies...) {
		b, _ := os.ReadFile(p)
		for _, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds a password (%d chars)", p, len(s))
			}
		}
	}
}

// crash runs args with the daemon started by it under BINKY_TEST_CRASH_AT
// (so it kills itself at step), and reports whether the step was reached.
func crash(t *testing.T, f *fixture, step string, args ...string) bool {
	t.Helper()
	f.binky(f.repo, "daemon", "stop")
	f.extraEnv = []string{"BINKY_TEST_CRASH_AT=" + step}
	defer func() { f.extraEnv = nil }()
	// The client may retry a request on a new daemon (which inherits the
	// variable): what the test checks is what the servers hold after.
	f.binky(f.repo, args...)
	log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
	reached := strings.Contains(string(log), `"step":"`+step+`"`)
	// The next command starts a daemon without the variable, once the
	// killed one is gone (its lock is released only when the kernel has
	// finished it, which on a loaded machine can take a while).
	f.binky(f.repo, "daemon", "stop")
	lock := flock.New(filepath.Join(f.home, "daemon.lock"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if ok, err := lock.TryLockContext(ctx, 20*time.Millisecond); err != nil || !ok {
		t.Fatalf("the killed daemon's lock is still held: %v", err)
	}
	lock.Unlock()
	return reached
}

// A golden template whose build was cut off, and whose world went without
// another up of the same key, was left on the server for good: no marker
// named it, so neither golden nor gc saw it. An up its remove ends drops
// its template at once; one a crash ended is gc's.
func TestAHalfBuiltGoldenTemplateIsNeverLeftBehind(t *testing.T) {
	pg, rd := needServers(t)
	t.Run("its up ended by the worktree's removal", func(t *testing.T) {
		project := "gs" + runID()
		f := newFixture(t, strings.Replace(trustConfig(project, true), `migrate = "`, `migrate = "sleep 3; `, 1))
		f.mustBinky(f.repo, "install")
		f.mustGit(f.repo, "worktree", "add", "-q", "../g1", "-b", "g1")
		f.eventually("the template's build started", func() bool {
			return len(leftOf(t, pg, rd, "binky_golden_"+project)) > 0
		})
		f.mustGit(f.repo, "worktree", "remove", "--force", "../g1")
		t.Cleanup(func() { // it failed once in CI, and nothing said why
			if t.Failed() {
				b, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
				t.Logf("left: %v\ndaemon.log:\n%s", leftOf(t, pg, rd, "binky_golden_"+project), b)
			}
		})
		f.eventually("the half-built template dropped", func() bool {
			return len(leftOf(t, pg, rd, "binky_golden_"+project)) == 0
		})
	})
	t.Run("its daemon killed", func(t *testing.T) {
		project := "gk" + runID()
		f := newFixture(t, trustConfig(project, true))
		if !crash(t, f, "golden.migrated", "up", "g2") {
			t.Fatal("up never reached golden.migrated")
		}
		f.mustBinky(f.repo, "remove", "g2", "--force")
		if left := leftOf(t, pg, rd, "binky_golden_"+project); len(left) == 0 {
			t.Fatal("the crash left no template: nothing for gc to find")
		}
		// What it would do, as it then does: it said "left alone" and
		// then dropped it.
		if out := f.mustBinky(f.repo, "gc", "--dry-run"); !strings.Contains(out, "would drop postgres binky_golden_"+project) ||
			!strings.Contains(out, "a golden template whose build did not finish") {
			t.Errorf("gc --dry-run does not say it would drop the half-built template:\n%s", out)
		}
		f.mustBinky(f.repo, "gc")
		if left := leftOf(t, pg, rd, "binky_golden_"+project); len(left) != 0 {
			t.Errorf("after gc: %v", left)
		}
	})
}

// Issue 11, item 6: kill -9 of the daemon at every step of provisioning,
// golden build, clone and teardown; a re-up of the same world finishes it,
// and remove (or gc) leaves nothing behind, databases and roles included.
func TestAKilledDaemonAtAnyStepLeavesNothingBehind(t *testing.T) {
	pg, rd := needServers(t)
	up := []struct {
		step  string
		clone bool
	}{
		{"slice.pending_saved", false}, {"postgres.role_created", false}, {"postgres.database_created", false},
		{"postgres.database_marked", false}, {"postgres.schema_granted", false}, {"slice.provisioned", false},
		{"slice.migrated", false}, {"slice.seeded", false}, {"redis.marked", false},
		{"golden.provisioned", true}, {"golden.migrated", true}, {"golden.prepared", true},
		{"postgres.database_created", true}, {"slice.cloned", true},
	}
	for i, c := range up {
		how := "provision"
		if c.clone {
			how = "clone"
		}
		t.Run("up killed at "+c.step+" ("+how+")", func(t *testing.T) {
			project := fmt.Sprintf("k%d%s", i, runID())
			f := newFixture(t, trustConfig(project, c.clone))
			if !crash(t, f, c.step, "up", "k4") {
				t.Fatalf("up never reached %s", c.step)
			}
			// The same world again: finished, complete.
			f.mustBinky(f.repo, "up", "k4")
			complete(t, f, "k4")
			f.mustBinky(f.repo, "remove", "k4", "--force")
			if left := leftOf(t, pg, rd, project+"_"); len(left) != 0 {
				t.Errorf("after re-up and remove: %v", left)
			}
			if c.clone && strings.HasPrefix(c.step, "golden.") {
				return // the template is built now: a second world would not reach the step
			}
			// Another world killed at the same step, then removed without a
			// re-up: nothing left either.
			if !crash(t, f, c.step, "up", "k5") {
				t.Fatalf("up of a second world never reached %s", c.step)
			}
			f.mustBinky(f.repo, "remove", "k5", "--force")
			if left := leftOf(t, pg, rd, project+"_"); len(left) != 0 {
				t.Errorf("after remove: %v", left)
			}
			if out := f.mustBinky(f.repo, "gc", "--dry-run"); !strings.Contains(out, "no orphaned slices") {
				t.Errorf("gc --dry-run after remove:\n%s", out)
			}
		})
	}
	for i, step := range []string{"postgres.teardown.database_dropped", "redis.teardown.user_dropped", "redis.teardown.keys_deleted", "teardown.slice_dropped"} {
		t.Run("remove killed at "+step, func(t *testing.T) {
			project := fmt.Sprintf("r%d%s", i, runID())
			f := newFixture(t, trustConfig(project, false))
			f.mustBinky(f.repo, "up", "k4")
			if !crash(t, f, step, "remove", "k4", "--force") {
				t.Fatalf("remove never reached %s", step)
			}
			// remove takes the worktree away before the world's data, so
			// the crash left a world whose worktree is gone: remove again
			// finishes it, unless the restarted daemon's watcher got there
			// first (then there is nothing left to name).
			for _, w := range f.status().Worlds {
				if w.Worktree == "k4" {
					if _, stderr, err := f.binky(f.repo, "remove", "k4", "--force"); err != nil {
						if !strings.Contains(stderr, "no such worktree") {
							t.Fatalf("remove again: %v\n%s", err, stderr)
						}
						for _, w := range f.status().Worlds {
							if w.Worktree == "k4" {
								t.Fatalf("remove again said no such worktree, and the world is still listed: %+v", w)
							}
						}
					}
				}
			}
			if left := leftOf(t, pg, rd, project+"_"); len(left) != 0 {
				t.Errorf("after remove: %v", left)
			}
			if out := f.mustBinky(f.repo, "gc", "--dry-run"); !strings.Contains(out, "no orphaned slices") {
				t.Errorf("gc --dry-run:\n%s", out)
			}
		})
	}
}

// Issue 11, item 1: marks an older binky wrote (no home) on this home's
// slices are rewritten with the home when the daemon starts, and a remove
// of a slice still marked the old way drops it.
func TestOlderMarksOfThisHomesSlicesAreUpgraded(t *testing.T) {
	pg, rd := needServers(t)
	project := "old" + runID()
	f := newFixture(t, trustConfig(project, false))
	f.mustBinky(f.repo, "up", "w1")
	var id, name string
	for _, w := range f.status().Worlds {
		if w.Worktree == "w1" {
			id = w.ID
			for _, sl := range w.Slices {
				name = sl.Name
			}
		}
	}
	if id == "" || name == "" {
		t.Fatal("no world w1 with slices in status")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	r := redisClient(t, rd)
	olden := func() {
		for _, stmt := range []string{"COMMENT ON DATABASE " + name + " IS 'binky:world=" + id + "'", "COMMENT ON ROLE " + name + " IS 'binky:world=" + id + "'"} {
			if _, err := admin.Exec(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		r.Set(ctx, "binky:slice:"+name, id, 0)
	}
	olden()
	f.mustBinky(f.repo, "daemon", "stop")
	f.mustBinky(f.repo, "down", "w1") // waits for the new daemon's adoption, re-marking included
	home, _ := os.ReadFile(filepath.Join(f.home, "home-id"))
	var dbMark, roleMark string
	admin.QueryRow(ctx, "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1", name).Scan(&dbMark)
	admin.QueryRow(ctx, "SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = $1", name).Scan(&roleMark)
	marker, _ := r.Get(ctx, "binky:slice:"+name).Result()
	for what, mark := range map[string]string{"database": dbMark, "role": roleMark, "redis marker": marker} {
		if !strings.Contains(mark, "home="+string(home)) {
			t.Errorf("%s mark after a daemon start: %q, want home %s", what, mark, home)
		}
	}
	olden()
	f.mustBinky(f.repo, "remove", "w1", "--force")
	if left := leftOf(t, pg, rd, project+"_"); len(left) != 0 {
		t.Errorf("remove of a slice with older marks left %v", left)
	}
}

// Issue 11, item 11: on binky's own server, a world's role reaches its own
// database and neither postgres nor template1.
func TestOnTheManagedServerAWorldCannotOpenThePostgresDatabase(t *testing.T) {
	if _, err := os.Stat("/usr/lib/postgresql"); err != nil && os.Getenv("BINKY_TEST_PG") == "" {
		t.Skip("no PostgreSQL server binaries (make test installs them)")
	}
	f := newFixture(t, `[project]
name = "hard"
[services.db]
adapter = "postgres"
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["db"]
`)
	f.mustBinky(f.repo, "up")
	env := f.envOf("acme")
	if got := count(t, env["DB_URL"], "SELECT 1"); got != 1 {
		t.Fatal("the world cannot open its own database")
	}
	u, err := url.Parse(env["DB_URL"])
	if err != nil {
		t.Fatal(err)
	}
	for _, db := range []string{"postgres", "template1"} {
		u.Path = "/" + db
		c, err := pgx.Connect(context.Background(), u.String())
		if err == nil {
			c.Close(context.Background())
			t.Errorf("a world's role opened %s on the managed server", db)
		} else if !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("open %s: %v, want permission denied", db, err)
		}
	}
}

// migrate and seed of a slice on binky's own PostgreSQL find that server's
// client programs first (Debian: /usr/lib/postgresql/<v>/bin/psql, not
// postgresql-common's Perl wrapper in /usr/bin).
func TestMigrateOnTheManagedServerRunsTheServersOwnPsql(t *testing.T) {
	if _, err := os.Stat("/usr/lib/postgresql"); err != nil && os.Getenv("BINKY_TEST_PG") == "" {
		t.Skip("no PostgreSQL server binaries (make test installs them)")
	}
	k, _ := adapters.Lookup("postgres")
	dir := k.Server.ClientDir()
	if dir == "" {
		t.Skip("the PostgreSQL server's folder holds no psql: nothing to put first on PATH")
	}
	f := newFixture(t, `[project]
name = "tools"
[services.db]
adapter = "postgres"
migrate = "command -v psql >> $GC_DIR/psql && psql \"$DATABASE_URL\" -qc 'CREATE TABLE IF NOT EXISTS t (id int)'"
seed = "command -v psql >> $GC_DIR/psql"
clone_from = "golden"
`)
	f.mustBinky(f.repo, "up")
	f.mustBinky(f.repo, "up", "second")
	b, err := os.ReadFile(filepath.Join(f.gcDir, "psql"))
	if err != nil {
		t.Fatal(err)
	}
	// The golden's migrate and seed, then the clone's migrate.
	got := strings.Fields(string(b))
	if len(got) != 4 {
		t.Fatalf("migrate and seed ran %d times (%q), want 4: the golden's migrate and seed, each clone's migrate", len(got), got)
	}
	for _, p := range got {
		if p != filepath.Join(dir, "psql") {
			t.Errorf("migrate or seed ran %s, want the server's own %s", p, filepath.Join(dir, "psql"))
		}
	}
}

// A remove whose client goes away (Ctrl-C, a closed MCP client) once the
// worktree is gone still drops the world's slices: nothing else would (an
// attack interrupted one and left its role, and a database, that no record
// named any more).
func TestARemoveWhoseClientGoesAwayStillDropsTheWorldsData(t *testing.T) {
	pg, rd := needServers(t)
	project := "g" + runID()
	f := newFixture(t, trustConfig(project, false))
	f.mustBinky(f.repo, "up", "k4")
	wt := f.world("k4").Path
	if left := leftOf(t, pg, rd, project+"_"); len(left) == 0 {
		t.Fatal("the world has no database or role to drop")
	}
	// The next daemon waits 2 s between dropping the database and the role.
	f.mustBinky(f.repo, "daemon", "stop")
	f.extraEnv = []string{"BINKY_TEST_PAUSE_AT=postgres.teardown.database_dropped"}
	cmd := exec.Command(filepath.Join(binDir, "git-binky"), "remove", "k4", "--force")
	cmd.Dir, cmd.Env = f.repo, append(os.Environ(), f.env()...)
	f.extraEnv = nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	f.eventually("the worktree removed", func() bool {
		_, err := os.Stat(wt)
		return errors.Is(err, os.ErrNotExist)
	})
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for left := leftOf(t, pg, rd, project+"_"); len(left) != 0; left = leftOf(t, pg, rd, project+"_") {
		if time.Now().After(deadline) {
			t.Fatalf("20 s after a remove's client went away, its world left %v", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A Redis killed before it saved its keys keeps its users (the ACL file is
// saved at once) but loses binky's markers. A world whose name folds to
// another's slice name (ab_c beside ab-c) then found that world's user,
// made with this home's secret, took it for its own, and shared the
// slice: removing it dropped the other world's keys. A name another world
// of the home records is never given out, whatever the server says.
func TestAWorldNeverTakesAnotherWorldsSliceWhoseMarkerWasLost(t *testing.T) {
	_, rd := needServers(t)
	project := "fold" + runID()
	f := newFixture(t, trustConfig(project, false))
	f.mustBinky(f.repo, "up", "ab-c")
	t.Cleanup(func() { f.binky(f.repo, "remove", "ab-c", "--force") })
	first := f.envOf("ab-c")
	ctx := context.Background()
	if err := redisClient(t, first["CACHE_URL"]).Set(ctx, first["CACHE_PREFIX"]+"precious", "42", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// What a crash before the save loses: the marker, not the user.
	admin := redisClient(t, rd)
	if n, err := admin.Del(ctx, "binky:slice:"+first["CACHE_USER"]).Result(); err != nil || n != 1 {
		t.Fatalf("deleting ab-c's marker: %d, %v", n, err)
	}

	f.mustBinky(f.repo, "up", "ab_c")
	second := f.envOf("ab_c")
	if second["CACHE_USER"] == first["CACHE_USER"] || second["CACHE_URL"] == first["CACHE_URL"] {
		t.Fatalf("ab_c shares ab-c's redis slice %s", first["CACHE_USER"])
	}
	f.mustBinky(f.repo, "remove", "ab_c", "--force")
	if v, err := redisClient(t, first["CACHE_URL"]).Get(ctx, first["CACHE_PREFIX"]+"precious").Result(); err != nil || v != "42" {
		t.Errorf("after removing ab_c, ab-c's key reads %q, %v", v, err)
	}
}

// A damaged home secret (every slice's password comes from it): env said
// nothing and printed no DB_URL, a reload stopped the world before its up
// failed on it, and doctor saw nothing. env and reload now fail on it,
// the world still running, and doctor names it.
func TestADamagedSecretIsSaidAndStopsNothing(t *testing.T) {
	needServers(t)
	f := newFixture(t, trustConfig("sec"+runID(), false))
	f.mustBinky(f.repo, "up", "w1")
	t.Cleanup(func() { f.binky(f.repo, "remove", "w1", "--force") })
	secret := filepath.Join(f.home, "secret")
	b, err := os.ReadFile(secret)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(secret, b, 0o600) })
	if err := os.WriteFile(secret, b[:5], 0o600); err != nil {
		t.Fatal(err)
	}
	if out, stderr, err := f.binky(f.repo, "env", "w1"); err == nil || !strings.Contains(stderr, "is damaged") {
		t.Errorf("env with a damaged secret: %v\n%s%s", err, out, stderr)
	}
	if _, stderr, err := f.binky(f.repo, "reload", "w1"); err == nil || !strings.Contains(stderr, "is damaged") {
		t.Errorf("reload with a damaged secret: %v\n%s", err, stderr)
	}
	if w := f.world("w1"); w.State != "running" || service(w, "api").State != "healthy" {
		t.Errorf("the refused reload stopped the world: %s %+v", w.State, w.Services)
	}
	if out, _, _ := f.binky(f.repo, "doctor"); !strings.Contains(out, "is damaged") {
		t.Errorf("doctor does not name the damaged secret:\n%s", out)
	}
}

// An up cut off while it looked for a free slice name leaves its record
// naming another world's slice, not complete: neither its next up (which
// drops an incomplete slice to make it again) nor its remove drops it.
func TestARecordNamingAnotherWorldsSliceDropsNothingOfIt(t *testing.T) {
	needServers(t)
	f := newFixture(t, trustConfig("held"+runID(), false))
	f.mustBinky(f.repo, "up", "one")
	t.Cleanup(func() { f.binky(f.repo, "remove", "one", "--force") })
	f.mustBinky(f.repo, "up", "two")
	one := f.envOf("one")
	ctx := context.Background()
	if err := redisClient(t, one["CACHE_URL"]).Set(ctx, one["CACHE_PREFIX"]+"precious", "42", 0).Err(); err != nil {
		t.Fatal(err)
	}
	home := world.Home{Dir: f.home}
	rec, err := home.LoadRecord(f.world("two").ID)
	if err != nil {
		t.Fatal(err)
	}
	for i, sl := range rec.Slices {
		if sl.Service == "cache" {
			rec.Slices[i].Name, rec.Slices[i].Ready = one["CACHE_USER"], false
		}
	}
	if err := home.SaveRecord(rec); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := f.binky(f.repo, "remove", "two", "--force", "--json")
	if err != nil {
		t.Fatalf("remove two: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "was left alone: another world of this home names it") {
		t.Errorf("remove does not say what it left alone:\n%s", out)
	}
	if v, err := redisClient(t, one["CACHE_URL"]).Get(ctx, one["CACHE_PREFIX"]+"precious").Result(); err != nil || v != "42" {
		t.Errorf("after removing two, one's key reads %q, %v", v, err)
	}
}

// A world whose database was dropped on the server (by hand, or with the
// server's data) was made again empty by its next up: no migrate, no seed,
// no word, and status still said "cloned". It is made again as a new
// world's is, cloned from the template, and the up says why.
func TestAWorldWhoseDatabaseIsGoneGetsANewCloneAndSaysSo(t *testing.T) {
	pg, _ := needServers(t)
	f := newFixture(t, trustConfig("gone"+runID(), true))
	f.mustBinky(f.repo, "up", "w1")
	t.Cleanup(func() { f.binky(f.repo, "remove", "w1", "--force") })
	name := f.envOf("w1")["DB_NAME"]
	f.mustBinky(f.repo, "down", "w1")
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `DROP DATABASE "`+name+`" WITH (FORCE)`); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := f.binky(f.repo, "up", "w1")
	if err != nil {
		t.Fatalf("up: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "is gone from the server") {
		t.Errorf("up does not say the slice was gone:\n%s", stderr)
	}
	complete(t, f, "w1") // the seed's 100 rows, as a new clone has
}
