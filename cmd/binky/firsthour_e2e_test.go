package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The first hour with a real app (issue 18), driven the way its user did.

// readEnvDump reads the KEY=value lines a service or step wrote with env.
func readEnvDump(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the command did not run: %v", err)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			out[k] = v
		}
	}
	return out
}

// migrate = "miniflux -migrate" read DATABASE_URL and saw only DB_URL.
// Migrations run on a clone too (a branch may add one), and golden_key
// makes an edited migration build a new template.
func TestMigrateSeesDatabaseURLAndBranchMigrationsReachClones(t *testing.T) {
	pg, _ := needServers(t)
	_ = pg
	f := newFixture(t, `[project]
name = "feeds"
[services.db]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
migrate = "env > $GC_DIR/migrate.$PGDATABASE.env && for m in migrations/*.sql; do psql \"$DATABASE_URL\" -q -v ON_ERROR_STOP=1 -f $m || exit 1; done"
seed = "psql \"$DATABASE_URL\" -q -c 'INSERT INTO feeds VALUES (1)' && echo seeded >> $GC_DIR/seeded"
clone_from = "golden"
golden_key = ["migrations/**"]
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["db"]
env = { DATABASE_URL = "${db.url}" }
`)
	write := func(dir, rel, body string) {
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(f.repo, "migrations/001.sql", "CREATE TABLE IF NOT EXISTS feeds (id int);\n")
	f.mustGit(f.repo, "add", "-A")
	f.mustGit(f.repo, "commit", "-qm", "migration 001")

	f.mustBinky(f.repo, "up", "main-a")
	t.Cleanup(func() { f.binky(f.repo, "remove", "main-a", "--force") })
	// The template's build and the clone's migrate each saw the names
	// tools read, for their own database.
	built, _ := filepath.Glob(filepath.Join(f.gcDir, "migrate.binky_golden_*.env"))
	if len(built) != 1 {
		t.Fatalf("migrate ran on %d golden templates, want 1", len(built))
	}
	mainA := f.envOf("main-a")
	for _, p := range []string{built[0], filepath.Join(f.gcDir, "migrate."+mainA["DB_NAME"]+".env")} {
		seesToolNames(t, p)
	}

	// branch commits files on a new branch, then adds its worktree (the
	// hook may start its world at once: the files must be there first).
	branch := func(name string, files map[string]string) string {
		f.mustGit(f.repo, "checkout", "-q", "-b", name)
		for rel, body := range files {
			write(f.repo, rel, body)
		}
		f.mustGit(f.repo, "add", "-A")
		f.mustGit(f.repo, "commit", "-qm", "branch "+name)
		f.mustGit(f.repo, "checkout", "-q", "main")
		wt := filepath.Join(filepath.Dir(f.repo), name)
		f.mustGit(f.repo, "worktree", "add", "-q", wt, name)
		return wt
	}

	// A branch that adds migration 002: golden_key gives it a template of
	// its own, and its world has the table.
	wt := branch("feat-133", map[string]string{"migrations/002.sql": "CREATE TABLE IF NOT EXISTS entries (id int);\n"})
	f.mustBinky(wt, "up")
	t.Cleanup(func() { f.binky(f.repo, "remove", "feat-133", "--force") })
	markers, _ := filepath.Glob(filepath.Join(f.gcDir, "migrate.binky_golden_*.env"))
	if len(markers) != 2 {
		t.Errorf("%d golden templates, want 2: editing migrations/ must build a new one", len(markers))
	}
	env := f.envOf("feat-133")
	if n := count(t, env["DB_URL"], "SELECT count(*) FROM entries"); n != 0 {
		t.Errorf("entries has %d rows", n)
	}
	if n := count(t, env["DB_URL"], "SELECT count(*) FROM feeds"); n != 1 {
		t.Errorf("the seed's row: %d rows in feeds", n)
	}

	// Without golden_key: the template is keyed by the commands only. A
	// branch built it at migration 001; a later branch adds 003, clones
	// that template, and gets 003 from the migrate run on its clone.
	src, _ := os.ReadFile(filepath.Join(f.repo, "binky.toml"))
	nokey := strings.Replace(string(src), `golden_key = ["migrations/**"]`, "", 1)
	f.mustBinky(branch("nokey", map[string]string{"binky.toml": nokey}), "up")
	t.Cleanup(func() { f.binky(f.repo, "remove", "nokey", "--force") })
	wt2 := branch("late", map[string]string{"binky.toml": nokey, "migrations/003.sql": "CREATE TABLE IF NOT EXISTS late (id int);\n"})
	f.mustBinky(wt2, "up")
	t.Cleanup(func() { f.binky(f.repo, "remove", "late", "--force") })
	if built, _ := filepath.Glob(filepath.Join(f.gcDir, "migrate.binky_golden_*.env")); len(built) != 3 {
		t.Errorf("%d golden templates, want 3 (late clones nokey's)", len(built))
	}
	late := f.envOf("late")
	if n := count(t, late["DB_URL"], "SELECT count(*) FROM late"); n != 0 {
		t.Errorf("late has %d rows", n)
	}
	// The migrate on late's clone saw the names tools read, for its own
	// database.
	seesToolNames(t, filepath.Join(f.gcDir, "migrate."+late["DB_NAME"]+".env"))
	if nk := f.envOf("nokey"); tableExists(t, nk["DB_URL"], "late") {
		t.Error("the template nokey was cloned from has migration 003: the test proves nothing")
	}
}

// clone_migrate = "changed": a world whose worktree is clean at the commit
// of the template's clean builder skips the migrate on its clone (the
// first world included); one on a branch that adds a migration runs it,
// and gets the migration.
func TestCloneMigrateChangedRunsTheMigrateOnlyWhereTheWorktreeDiffers(t *testing.T) {
	needServers(t)
	f := newFixture(t, `[project]
name = "feeds"
[services.db]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
migrate = "echo $PGDATABASE >> $GC_DIR/migrated && for m in migrations/*.sql; do psql \"$DATABASE_URL\" -q -v ON_ERROR_STOP=1 -f $m || exit 1; done"
seed = "psql \"$DATABASE_URL\" -q -c 'INSERT INTO feeds VALUES (1)'"
clone_from = "golden"
clone_migrate = "changed"
`)
	os.MkdirAll(filepath.Join(f.repo, "migrations"), 0o755)
	os.WriteFile(filepath.Join(f.repo, "migrations/001.sql"), []byte("CREATE TABLE IF NOT EXISTS feeds (id int);\n"), 0o644)
	f.mustGit(f.repo, "add", "-A")
	f.mustGit(f.repo, "commit", "-qm", "migration 001")
	ran := func() []string {
		b, _ := os.ReadFile(filepath.Join(f.gcDir, "migrated"))
		return strings.Fields(string(b))
	}

	out := f.mustBinky(f.repo, "up", "one")
	t.Cleanup(func() { f.binky(f.repo, "remove", "one", "--force") })
	f.mustBinky(f.repo, "up", "two")
	t.Cleanup(func() { f.binky(f.repo, "remove", "two", "--force") })
	if got := ran(); len(got) != 1 || !strings.HasPrefix(got[0], "binky_golden_") {
		t.Fatalf("migrate ran on %q, want the template only: both worlds are at its builder's commit, clean\nup said:\n%s", got, out)
	}
	if n := count(t, f.envOf("two")["DB_URL"], "SELECT count(*) FROM feeds"); n != 1 {
		t.Errorf("two's clone has %d rows in feeds, want the seed's 1", n)
	}

	f.mustGit(f.repo, "checkout", "-q", "-b", "feat")
	os.WriteFile(filepath.Join(f.repo, "migrations/002.sql"), []byte("CREATE TABLE IF NOT EXISTS entries (id int);\n"), 0o644)
	f.mustGit(f.repo, "add", "-A")
	f.mustGit(f.repo, "commit", "-qm", "migration 002")
	f.mustGit(f.repo, "checkout", "-q", "main")
	wt := filepath.Join(filepath.Dir(f.repo), "feat")
	f.mustGit(f.repo, "worktree", "add", "-q", wt, "feat")
	f.mustBinky(wt, "up")
	t.Cleanup(func() { f.binky(f.repo, "remove", "feat", "--force") })
	feat := f.envOf("feat")
	if got := ran(); len(got) != 2 || got[1] != feat["DB_NAME"] {
		t.Fatalf("migrate ran on %q, want the template and then feat's clone (%s)", got, feat["DB_NAME"])
	}
	if !tableExists(t, feat["DB_URL"], "entries") {
		t.Error("feat's clone lacks migration 002")
	}
	// Status says which clones were migrated: their time counts it.
	status := f.mustBinky(f.repo, "status")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`feeds_two \(cloned from binky_golden_\S+ in \d+ ms\)`),
		regexp.MustCompile(`feeds_feat \(cloned from binky_golden_\S+ and migrated in \d+ ms\)`),
	} {
		if !want.MatchString(status) {
			t.Errorf("status does not match %s:\n%s", want, status)
		}
	}
}

// seesToolNames fails unless the environment a migrate dumped to p held
// the names database tools read.
func seesToolNames(t *testing.T, p string) {
	t.Helper()
	env := readEnvDump(t, p)
	if !strings.HasPrefix(env["DATABASE_URL"], "postgres://") || env["PGHOST"] != "127.0.0.1" || env["PGUSER"] == "" || env["PGPASSWORD"] == "" {
		t.Fatalf("%s: migrate saw DATABASE_URL=%q PGHOST=%q PGUSER=%q: the names tools read are missing", filepath.Base(p), env["DATABASE_URL"], env["PGHOST"], env["PGUSER"])
	}
}

func tableExists(t *testing.T, dbURL, table string) bool {
	return count(t, dbURL, "SELECT count(*) FROM pg_tables WHERE tablename = '"+table+"'") == 1
}

// ${env.MF_ADMIN_PASSWORD} stayed literal in a world the hook started,
// and became the app's admin password. So did MF_STRIPE_KEY in the form
// init writes (the variable named after itself), the table's own literal
// taken for the variable being set.
func TestTheHookHandsItsEnvironmentAndAnUnsetVariableFailsTheUp(t *testing.T) {
	f := newFixture(t, `[services.app]
cmd = "env > $GC_DIR/$BINKY_WORKTREE.env; exec testsvc"
url = "app"
env = { ADMIN_PASSWORD = "${env.MF_ADMIN_PASSWORD}", LEVEL = "${env.MF_LOG_LEVEL:-info}", MF_STRIPE_KEY = "${env.MF_STRIPE_KEY}" }
`)
	_, stderr, err := f.binky(f.repo, "up", "nopw")
	t.Cleanup(func() { f.binky(f.repo, "remove", "nopw", "--force") })
	if err == nil || !strings.Contains(stderr, "${env.MF_ADMIN_PASSWORD} (service app)") || !strings.Contains(stderr, "${env.MF_STRIPE_KEY} (service app)") || strings.Contains(stderr, "MF_LOG_LEVEL") {
		t.Fatalf("up with MF_ADMIN_PASSWORD unset: err %v, stderr:\n%s", err, stderr)
	}
	out, _, _ := f.binky(f.repo, "check")
	if !strings.Contains(out, "${env.MF_ADMIN_PASSWORD} is not set in this shell") {
		t.Errorf("check does not warn of the unset variable:\n%s", out)
	}

	// The daemon runs (started above, without the variable); the shell
	// that runs `git worktree add` has it.
	f.mustBinky(f.repo, "install")
	f.extraEnv = []string{"MF_ADMIN_PASSWORD=from-the-shell", "MF_STRIPE_KEY=sk_from_the_shell"}
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat")
	f.waitHealthy("feat")
	t.Cleanup(func() { f.binky(f.repo, "remove", "feat", "--force") })
	env := readEnvDump(t, filepath.Join(f.gcDir, "feat.env"))
	if env["ADMIN_PASSWORD"] != "from-the-shell" || env["LEVEL"] != "info" || env["MF_STRIPE_KEY"] != "sk_from_the_shell" {
		t.Errorf("hook-started world: ADMIN_PASSWORD=%q LEVEL=%q MF_STRIPE_KEY=%q, want the shell's, the default and the shell's", env["ADMIN_PASSWORD"], env["LEVEL"], env["MF_STRIPE_KEY"])
	}
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX"} {
		if v, set := env[k]; set {
			t.Errorf("the service inherited the hook's %s=%s: its git commands would act on the admin folder", k, v)
		}
	}
}

// The app listened on *:PORT instead of its LISTEN_ADDR.
func TestPortEnvFalseLeavesPortOutAndCheckWarnsOfListenAddresses(t *testing.T) {
	f := newFixture(t, `[services.app]
cmd = "env > $GC_DIR/$BINKY_WORKTREE.env; PORT=$APP_PORT exec testsvc"
url = "app"
port_env = false
env = { LISTEN_ADDR = "127.0.0.1:${self.port}" }
[services.open]
cmd = "testsvc --host 0.0.0.0"
url = "open"
[groups]
only = ["app"]
`)
	out, _, _ := f.binky(f.repo, "check")
	if !strings.Contains(out, "cmd listens on 0.0.0.0") || strings.Contains(out, `service "app" sets its own listen address`) {
		t.Errorf("check:\n%s", out)
	}
	f.mustBinky(f.repo, "up", "quiet", "--group", "only")
	t.Cleanup(func() { f.binky(f.repo, "remove", "quiet", "--force") })
	env := readEnvDump(t, filepath.Join(f.gcDir, "quiet.env"))
	if v, set := env["PORT"]; set || env["LISTEN_ADDR"] != "127.0.0.1:"+env["APP_PORT"] {
		t.Errorf("port_env = false: PORT=%q (set %v), LISTEN_ADDR=%q, APP_PORT=%q", v, set, env["LISTEN_ADDR"], env["APP_PORT"])
	}
}

// "last output" of a failed migrate showed lines of earlier runs.
func TestAFailedMigrateShowsOnlyThisRunsOutput(t *testing.T) {
	_, _ = needServers(t)
	f := newFixture(t, `[services.db]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
migrate = "n=$(cat $GC_DIR/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > $GC_DIR/n; echo run $n says hello; echo run $n to $DB_URL failed >&2; seq 1 8 >&2; exit 3"
`)
	for run := 1; run <= 2; run++ {
		_, stderr, err := f.binky(f.repo, "up", "mig")
		if err == nil {
			t.Fatal("a failing migrate did not fail the up")
		}
		// The error's line, above eight of its stack's, and where the rest is.
		want := "run " + strconv.Itoa(run) + " to postgres://"
		if !strings.Contains(stderr, want) || !strings.Contains(stderr, "git binky logs mig --service db") {
			t.Errorf("run %d: %q or the logs command missing:\n%s", run, want, stderr)
		}
		// What it printed is shown with the world's password hidden.
		if !strings.Contains(stderr, ":xxxxx@") {
			t.Errorf("run %d: the migrate's URL is shown with its password:\n%s", run, stderr)
		}
		if run == 2 && strings.Contains(stderr, "run 1") {
			t.Errorf("run 2 shows run 1's output:\n%s", stderr)
		}
	}
	// The whole of it is in the service's log, which `logs` showed not
	// ("no logs yet"; --service db: "no service db with logs").
	for _, args := range [][]string{{"logs", "mig"}, {"logs", "mig", "--service", "db"}} {
		out, stderr, err := f.binky(f.repo, args...)
		if err != nil || !strings.Contains(out, "run 1 says hello") || !strings.Contains(out, "run 2 to postgres://") {
			t.Errorf("%v: %v, stderr %s, out:\n%s", args, err, stderr, out)
		}
	}
	f.binky(f.repo, "remove", "mig", "--force")
}

// The proxy's port held by another program: only daemon.log said so.
func TestAProxyPortHeldByAnotherProgramIsSaidByUpEnvStatusAndDoctor(t *testing.T) {
	f := newFixture(t, oneService)
	l, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(f.proxyPort))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() { // another program: it answers
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, stderr, err := f.binky(f.repo, "up", "busy")
	t.Cleanup(func() { f.binky(f.repo, "remove", "busy", "--force") })
	if err != nil || !strings.Contains(stderr, "the URL proxy is down") || !strings.Contains(stderr, strconv.Itoa(f.proxyPort)) {
		t.Fatalf("up: %v, stderr:\n%s", err, stderr)
	}
	out, stderr, _ := f.binky(f.repo, "env", "busy")
	if !strings.Contains(stderr, "the URL proxy is down") || strings.Contains(out, ":"+strconv.Itoa(f.proxyPort)) || !strings.Contains(out, "API_URL=http://127.0.0.1:") {
		t.Errorf("env while the proxy is down:\n%s%s", out, stderr)
	}
	if _, stderr, _ := f.binky(f.repo, "status"); !strings.Contains(stderr, "the URL proxy is down") {
		t.Errorf("status says nothing of the proxy:\n%s", stderr)
	}
	doc, _, _ := f.binky(f.repo, "doctor")
	var proxyLines []string
	for _, l := range strings.Split(doc, "\n") {
		if fs := strings.Fields(l); len(fs) > 1 && fs[1] == "proxy" {
			proxyLines = append(proxyLines, l)
		}
	}
	if len(proxyLines) != 1 || !strings.Contains(proxyLines[0], "problem") {
		t.Errorf("doctor's proxy lines, want one problem:\n%s", strings.Join(proxyLines, "\n"))
	}

	// The other program lets go of the port: the proxy takes it within
	// seconds, with no daemon restart, and URLs go through it again.
	l.Close()
	f.eventually("the proxy to listen once its port is free", func() bool {
		_, stderr, _ := f.binky(f.repo, "status")
		return !strings.Contains(stderr, "the URL proxy is down")
	})
	if out, stderr, _ := f.binky(f.repo, "env", "busy"); strings.Contains(stderr, "proxy is down") || !strings.Contains(out, ":"+strconv.Itoa(f.proxyPort)) {
		t.Errorf("env once the proxy is back:\n%s%s", out, stderr)
	}
	if code, _, err := f.viaProxy("api.busy.acme.localhost", "/"); err != nil || code != 200 {
		t.Errorf("a request through the proxy once it is back: %d, %v", code, err)
	}
}

// A settings.toml broken by hand, with no good copy to go on with, kept
// the proxy down until the daemon restarted, though the file was fixed.
func TestTheProxyComesBackOnceABrokenSettingsFileIsFixed(t *testing.T) {
	f := newFixture(t, oneService)
	path := filepath.Join(f.home, "settings.toml")
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append([]byte("proxy_port = \"not a number\"\n"), good[bytes.IndexByte(good, '\n')+1:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, _ := f.binky(f.repo, "status")
	if !strings.Contains(stderr, "the URL proxy is down") {
		t.Fatalf("status with a broken settings.toml and no good copy says nothing of the proxy:\n%s", stderr)
	}
	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	f.eventually("the proxy to listen once settings.toml is fixed", func() bool {
		_, stderr, _ := f.binky(f.repo, "status")
		return !strings.Contains(stderr, "the URL proxy is down")
	})
	f.mustBinky(f.repo, "up", "fixed")
	t.Cleanup(func() { f.binky(f.repo, "remove", "fixed", "--force") })
	if code, _, err := f.viaProxy("api.fixed.acme.localhost", "/"); err != nil || code != 200 {
		t.Errorf("a request through the proxy once settings.toml is fixed: %d, %v", code, err)
	}
}

// A check whose output ends without a newline ran into the summary.
func TestVerifyEndsACheckLineBeforeTheSummary(t *testing.T) {
	f := newFixture(t, oneService+"[agents]\nverify = [\"printf no-newline\"]\n")
	out := f.mustBinky(f.repo, "verify")
	if !strings.Contains(out, "no-newline\n\n") {
		t.Errorf("verify output:\n%q", out)
	}
}

// It took pg_ctl and DROP DATABASE.
func TestServersStopAndStartAndGoldenListAndDrop(t *testing.T) {
	pg, _ := needServers(t)
	f := newFixture(t, `[project]
name = "gold"
[services.db]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
migrate = "psql \"$DATABASE_URL\" -q -c 'CREATE TABLE IF NOT EXISTS t (id int)'"
clone_from = "golden"
[services.cache]
adapter = "redis"
`)
	f.mustBinky(f.repo, "up", "g1")
	t.Cleanup(func() { f.binky(f.repo, "remove", "g1", "--force") })
	list := f.mustBinky(f.repo, "golden")
	name, _, _ := strings.Cut(list, " ")
	if !strings.HasPrefix(name, "binky_golden_gold_") {
		t.Fatalf("golden:\n%s", list)
	}
	if got := databases(t, pg, name); len(got) != 1 {
		t.Fatalf("template %s not on the server: %v", name, got)
	}
	f.mustBinky(f.repo, "golden", "drop", name)
	if got := databases(t, pg, name); len(got) != 0 {
		t.Errorf("golden drop left %v", got)
	}
	if out := f.mustBinky(f.repo, "golden"); strings.Contains(out, name) {
		t.Errorf("golden still lists %s:\n%s", name, out)
	}

	if out := f.mustBinky(f.repo, "servers"); !strings.Contains(out, "redis       running on 127.0.0.1:") || !strings.Contains(out, "used by g1") {
		t.Fatalf("servers (want redis running, used by g1):\n%s", out)
	}
	// Stopping it said nothing of the worlds that lost their connections.
	if out, stderr, err := f.binky(f.repo, "servers", "stop", "redis"); err != nil || !strings.Contains(out, "redis       stopped") ||
		!strings.Contains(stderr, "1 world(s) with running services use the redis server you stopped (g1)") {
		t.Errorf("servers stop redis: %v\n%s%s", err, out, stderr)
	}
	if out := f.mustBinky(f.repo, "servers", "start", "redis"); !strings.Contains(out, "redis       running") {
		t.Errorf("servers start redis:\n%s", out)
	}
	// The slice survived: the world's user and prefix work again on reload.
	f.mustBinky(f.repo, "reload", "g1")
}

// A daemon killed -9 leaves binky's own servers running. 'servers stop'
// then stops them from their pid files, as the daemon would, and starts no
// daemon to do it (one started did nothing but outlive the command).
func TestServersStopWithoutADaemonStopsWhatAKilledDaemonLeftRunning(t *testing.T) {
	if os.Getenv("BINKY_TEST_REDIS") == "" {
		t.Skip("BINKY_TEST_REDIS is not set (make test installs redis-server, which binky's own Redis runs on, and sets it)")
	}
	f := newFixture(t, `[project]
name = "acme"
[services.cache]
adapter = "redis"
[services.api]
cmd = "testsvc"
depends_on = ["cache"]
`)
	f.mustBinky(f.repo, "up")
	b, err := os.ReadFile(filepath.Join(f.home, "servers", "redis", "redis.pid"))
	redisPID, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || !pidAlive(redisPID) {
		t.Fatalf("binky's redis is not running after up: %q, %v", b, err)
	}
	f.killDaemon()

	out, stderr, err := f.binky(f.repo, "servers", "stop", "redis")
	if err != nil || !strings.Contains(out, "redis       stopped") ||
		!strings.Contains(stderr, "1 world(s) with running services use the redis server you stopped (acme)") {
		t.Errorf("servers stop redis without a daemon: %v\n%s%s", err, out, stderr)
	}
	if pidAlive(redisPID) {
		t.Errorf("redis (pid %d) still runs after servers stop", redisPID)
	}
	if out, _, err := f.binky(f.repo, "daemon", "status"); err == nil {
		t.Errorf("servers stop started a daemon:\n%s", out)
	}
}

// A worktree no hook announced (hooks off, another tool's hooksPath) is
// found by the watcher: its world gets the environment of the repository's
// last explicit up, not the daemon's.
func TestAWorldTheWatcherStartsGetsTheEnvironmentOfTheRepositorysLastUp(t *testing.T) {
	f := newFixture(t, `[services.app]
cmd = "env > $GC_DIR/$BINKY_WORKTREE.env; exec testsvc"
url = "app"
env = { ADMIN_PASSWORD = "${env.MF_ADMIN_PASSWORD}" }
`)
	f.mustBinky(f.repo, "daemon", "start") // its own environment lacks the variable
	f.extraEnv = []string{"MF_ADMIN_PASSWORD=from-the-shell"}
	f.mustBinky(f.repo, "up")
	t.Cleanup(func() { f.binky(f.repo, "down") })
	f.extraEnv = nil
	f.mustGit(f.repo, "-c", "core.hooksPath=/dev/null", "worktree", "add", "-q", "../quiet", "-b", "quiet")
	f.waitHealthy("quiet")
	t.Cleanup(func() { f.binky(f.repo, "remove", "quiet", "--force") })
	if env := readEnvDump(t, filepath.Join(f.gcDir, "quiet.env")); env["ADMIN_PASSWORD"] != "from-the-shell" {
		t.Errorf("watcher-started world: ADMIN_PASSWORD=%q, want the last up's", env["ADMIN_PASSWORD"])
	}
}

// A changed key builds a new template; the old ones do not pile up: once a
// service has three templates used since, the one used least lately (and
// not for ten minutes) is dropped with its marker. Another service's
// template is not its to drop, however old.
func TestSupersededGoldenTemplatesAreDroppedBeyondTheThreeUsedLast(t *testing.T) {
	pg, _ := needServers(t)
	config := func(v int) string {
		return fmt.Sprintf(`[project]
name = "supersede"
[services.db]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
migrate = "psql \"$DATABASE_URL\" -q -c 'CREATE TABLE IF NOT EXISTS t (id int)'"
seed = "psql \"$DATABASE_URL\" -q -c 'INSERT INTO t VALUES (%d)'"
clone_from = "golden"
[services.stats]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
migrate = "psql \"$DATABASE_URL\" -q -c 'CREATE TABLE IF NOT EXISTS s (id int)'"
clone_from = "golden"
`, v)
	}
	f := newFixture(t, config(0))
	golden := filepath.Join(f.home, "golden")
	// templates are the service of each template this home keeps a
	// marker of, by name.
	templates := func() map[string]string {
		files, _ := filepath.Glob(filepath.Join(golden, "*.json"))
		out := map[string]string{}
		for _, p := range files {
			var m struct{ Name, Service string }
			if b, err := os.ReadFile(p); err == nil && json.Unmarshal(b, &m) == nil {
				out[m.Name] = m.Service
			}
		}
		return out
	}
	var db []string // db's templates, in the order they were built
	var stats string
	for v := 1; v <= 4; v++ {
		name := fmt.Sprintf("v%d", v)
		f.commitOnBranch(name, "binky.toml", config(v))
		before := templates()
		f.mustBinky(f.repo, "up", name)
		t.Cleanup(func() { f.binky(f.repo, "remove", name, "--force") })
		for n, svc := range templates() {
			if _, ok := before[n]; !ok && svc == "db" {
				db = append(db, n)
			} else if svc == "stats" {
				stats = n
			}
		}
		if v < 4 {
			// Every template so far last used an hour earlier than it was.
			files, _ := filepath.Glob(filepath.Join(golden, "*.json"))
			for _, p := range files {
				if fi, err := os.Stat(p); err == nil {
					os.Chtimes(p, fi.ModTime().Add(-time.Hour), fi.ModTime().Add(-time.Hour))
				}
			}
		}
	}
	if len(db) != 4 || stats == "" {
		t.Fatalf("db's templates built: %v, stats': %q; want 4 and 1", db, stats)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
			t.Logf("daemon.log:\n%s", b)
		}
	})
	f.eventually("the oldest of db's templates dropped", func() bool {
		_, kept := templates()[db[0]]
		return len(databases(t, pg, db[0])) == 0 && !kept
	})
	if out := f.mustBinky(f.repo, "golden"); strings.Contains(out, db[0]) {
		t.Errorf("golden still lists %s:\n%s", db[0], out)
	}
	for _, n := range append([]string{stats}, db[1:]...) {
		if _, kept := templates()[n]; len(databases(t, pg, n)) != 1 || !kept {
			t.Errorf("template %s was dropped; templates now %v", n, templates())
		}
	}
	// A world made again from the dropped key builds it again.
	f.mustBinky(f.repo, "remove", "v1", "--force")
	f.mustBinky(f.repo, "up", "v1")
	if _, kept := templates()[db[0]]; !kept || len(databases(t, pg, db[0])) != 1 {
		t.Errorf("the dropped template was not built again for its key: %v", templates())
	}
}

// 'service restart cache' on a Redis slice said only that the world runs
// no such service: say it is a slice, with no process to restart.
func TestServiceActionsOnASliceSayItIsOne(t *testing.T) {
	needServers(t)
	f := newFixture(t, oneService+`[services.db]
adapter = "postgres"
admin_url = "${env.BINKY_TEST_PG}"
`)
	f.mustBinky(f.repo, "up")
	t.Cleanup(func() { f.binky(f.repo, "remove", "acme", "--force") })
	_, stderr, err := f.binky(f.repo, "service", "restart", "db")
	if err == nil || !strings.Contains(stderr, `service "db" is a postgres slice`) || !strings.Contains(stderr, "nothing to restart") {
		t.Errorf("service restart of a slice: %v\n%s", err, stderr)
	}
	if _, stderr, err := f.binky(f.repo, "service", "restart", "nope"); err == nil || !strings.Contains(stderr, `runs no service "nope"`) {
		t.Errorf("service restart of no service: %v\n%s", err, stderr)
	}
}
