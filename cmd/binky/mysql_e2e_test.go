package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/git-binky/git-binky/adapters"
	// The adapter also registers go-sql-driver's "mysql" with database/sql.
	"github.com/git-binky/git-binky/adapters/mysql"
	"github.com/git-binky/git-binky/world"
)

// mysqlConfig uses the managed MariaDB (no admin_url) under an alias, with
// a golden template: migrate and seed run once, through the mariadb client
// with the world's own credentials, and count their runs in $GC_DIR/seeded.
const mysqlConfig = `[project]
name = "shop"
[services.db]
adapter = "mariadb"
migrate = "MYSQL_PWD=\"$DB_PASSWORD\" mariadb --no-defaults -h \"$DB_HOST\" -P \"$DB_PORT\" -u \"$DB_USER\" \"$DB_NAME\" -e 'CREATE TABLE IF NOT EXISTS items (id INT PRIMARY KEY, note TEXT)'"
seed = "MYSQL_PWD=\"$DB_PASSWORD\" mariadb --no-defaults -h \"$DB_HOST\" -P \"$DB_PORT\" -u \"$DB_USER\" \"$DB_NAME\" -e 'INSERT INTO items (id) VALUES (1), (2), (3)' && echo seeded >> $GC_DIR/seeded"
clone_from = "golden"
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["db"]
env = { DATABASE_URL = "${db.url}", GO_DSN = "${db.dsn}" }
`

func mysqlQuery(t *testing.T, dsn, q string, args ...any) (int, error) {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	err = db.QueryRow(q, args...).Scan(&n)
	return n, err
}

func mysqlExec(t *testing.T, dsn, stmt string) {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// stopMariaDB stops the home's shared mariadb and waits until it is gone,
// its files left in place.
func stopMariaDB(t *testing.T, home string) {
	t.Helper()
	pidfile := filepath.Join(home, "servers", "mysql", "data", "mysql.pid")
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("the shared mariadb's pid: %v", err)
	}
	var pid int
	fmt.Sscanf(string(b), "%d", &pid)
	if pid <= 1 {
		t.Fatalf("pid file %s holds %q", pidfile, b)
	}
	signalPID(pid, syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for signalPID(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the shared mariadb did not stop in 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestTwoWorldsOnTheManagedMariaDBEachGetADatabaseAndUserOfTheirOwn(t *testing.T) {
	if adapters.FindServerBinary("mariadbd") == "" || adapters.FindServerBinary("mariadb-install-db") == "" {
		t.Skip("no MariaDB server binaries (make test installs mariadb-server)")
	}
	if _, err := os.Stat("/usr/bin/mariadb"); err != nil {
		t.Skip("no mariadb client for migrate and seed (it comes with mariadb-server)")
	}
	f := newFixture(t, mysqlConfig)
	// At once: the shared server is created once, the golden template
	// built once, and both worlds cloned from it side by side.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, n := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, stderr, err := f.binky(f.repo, "up", n); err != nil {
				errs[i] = fmt.Errorf("up %s: %v\n%s", n, err, stderr)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
			t.Fatalf("%v\ndaemon log:\n%s", err, log)
		}
	}
	t.Cleanup(func() {
		f.binky(f.repo, "remove", "a", "--force")
		f.binky(f.repo, "remove", "b", "--force")
	})
	if n := seeded(f); n != 1 {
		t.Errorf("migrate+seed ran %d times for 2 worlds, want once (the golden template)", n)
	}
	if log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log")); !strings.Contains(string(log), "slice cloned") || strings.Contains(string(log), "clone_fallback") {
		t.Errorf("the worlds were not cloned from the golden template; daemon log:\n%s", log)
	}
	st := f.status()
	var running bool
	for _, s := range st.Servers {
		running = running || (s.Kind == "mysql" && s.Running)
	}
	if !running {
		t.Errorf("status does not show the shared mysql server running: %+v", st.Servers)
	}

	ea, eb := f.envOf("a"), f.envOf("b")
	for _, e := range []map[string]string{ea, eb} {
		if !strings.HasPrefix(e["DB_URL"], "mysql://"+e["DB_USER"]+":") || !strings.HasSuffix(e["DB_URL"], "/"+e["DB_NAME"]) {
			t.Errorf("DB_URL %s does not carry the world's user and database", adapters.Redact(e["DB_URL"]))
		}
		if e["API_DATABASE_URL"] != "" && e["API_DATABASE_URL"] != e["DB_URL"] {
			t.Errorf("the api sees DATABASE_URL %s", adapters.Redact(e["API_DATABASE_URL"]))
		}
		if n, err := mysqlQuery(t, e["DB_DSN"], "SELECT COUNT(*) FROM items"); err != nil || n != 3 {
			t.Errorf("%s has %d seeded rows (%v), want 3", e["DB_NAME"], n, err)
		}
	}
	if ea["DB_NAME"] == eb["DB_NAME"] || ea["DB_USER"] == eb["DB_USER"] {
		t.Fatalf("both worlds got database %s and user %s", ea["DB_NAME"], ea["DB_USER"])
	}
	mysqlExec(t, ea["DB_DSN"], "INSERT INTO items (id, note) VALUES (4, 'only in a')")
	if n, _ := mysqlQuery(t, eb["DB_DSN"], "SELECT COUNT(*) FROM items"); n != 3 {
		t.Errorf("b sees %d rows after a wrote one, want its own 3", n)
	}
	if _, err := mysqlQuery(t, ea["DB_DSN"], fmt.Sprintf("SELECT COUNT(*) FROM `%s`.items", eb["DB_NAME"])); err == nil {
		t.Error("a's user read b's database")
	}
	// Nor can a world's CREATE put files outside the server's folder (an
	// attack made tables in another home's server's data folder): DATA
	// DIRECTORY needs symbolic links, which binky's server has off.
	outside, err := os.MkdirTemp("", "binky-outside")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(outside)
	os.Chmod(outside, 0o777) // the server's account could write there
	mysqlExec(t, ea["DB_DSN"], "CREATE TABLE placed (x INT) ENGINE=MyISAM DATA DIRECTORY='"+outside+"' INDEX DIRECTORY='"+outside+"'")
	mysqlExec(t, ea["DB_DSN"], "CREATE TABLE placed_innodb (x INT) ENGINE=InnoDB DATA DIRECTORY='"+outside+"'")
	if files, _ := filepath.Glob(filepath.Join(outside, "*")); len(files) > 0 {
		t.Errorf("a world's CREATE TABLE made files outside the server's folder: %v", files)
	}

	// The server outlives the daemon; stopped, it starts again on the next
	// up with its data (its folder is made once).
	f.mustBinky(f.repo, "daemon", "stop")
	if n, err := mysqlQuery(t, ea["DB_DSN"], "SELECT COUNT(*) FROM items"); err != nil || n != 4 {
		t.Fatalf("the managed mariadb stopped with the daemon: %d rows, %v", n, err)
	}
	stopMariaDB(t, f.home)
	if _, err := mysqlQuery(t, ea["DB_DSN"], "SELECT 1"); err == nil {
		t.Fatal("the managed mariadb still answers after it was stopped")
	}
	f.mustBinky(f.repo, "down", "a")
	f.mustBinky(f.repo, "up", "a")
	if n, err := mysqlQuery(t, ea["DB_DSN"], "SELECT COUNT(*) FROM items"); err != nil || n != 4 {
		t.Errorf("after the shared mariadb restarted, a has %d rows (%v), want its 4", n, err)
	}

	// The admin, to see what remove leaves.
	pw, _ := os.ReadFile(filepath.Join(f.home, "servers", "mysql", "admin.password"))
	port, _ := os.ReadFile(filepath.Join(f.home, "servers", "mysql", "port"))
	if fi, err := os.Stat(filepath.Join(f.home, "servers", "mysql", "admin.password")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin password file: %v %v", fi, err)
	}
	admin := fmt.Sprintf("binky:%s@tcp(127.0.0.1:%s)/", strings.TrimSpace(string(pw)), strings.TrimSpace(string(port)))
	exists := func(db, user string) (int, int) {
		nd, err := mysqlQuery(t, admin, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", db)
		if err != nil {
			t.Fatal(err)
		}
		nu, _ := mysqlQuery(t, admin, "SELECT COUNT(*) FROM mysql.user WHERE User = ?", user)
		return nd, nu
	}
	if nd, nu := exists(ea["DB_NAME"], ea["DB_USER"]); nd != 1 || nu != 1 {
		t.Fatalf("a's database (%d) or user (%d) is missing before remove", nd, nu)
	}
	// A crash between provision and record: a marked slice of this home
	// whose world is gone. gc drops its database and user, and nothing
	// of the live worlds.
	homeID, err := world.Home{Dir: f.home}.ID()
	if err != nil {
		t.Fatal(err)
	}
	adminURL := fmt.Sprintf("mysql://binky:%s@127.0.0.1:%s/", strings.TrimSpace(string(pw)), strings.TrimSpace(string(port)))
	orphan := adapters.Slice{Name: "shop_crashed", World: "00deadbeef00", Home: homeID, AdminURL: adminURL, Password: "abc123"}
	if err := mysql.New().Provision(context.Background(), orphan); err != nil {
		t.Fatal(err)
	}
	if out := f.mustBinky(f.repo, "gc"); !strings.Contains(out, "shop_crashed") || strings.Contains(out, ea["DB_NAME"]) || strings.Contains(out, eb["DB_NAME"]) {
		t.Errorf("gc:\n%s", out)
	}
	if nd, nu := exists("shop_crashed", "shop_crashed"); nd != 0 || nu != 0 {
		t.Errorf("gc left the orphan's database (%d) or user (%d)", nd, nu)
	}
	if nd, nu := exists(ea["DB_NAME"], ea["DB_USER"]); nd != 1 || nu != 1 {
		t.Fatalf("gc dropped a live world's database (%d) or user (%d)", nd, nu)
	}

	f.mustBinky(f.repo, "remove", "a", "--force")
	if nd, nu := exists(ea["DB_NAME"], ea["DB_USER"]); nd != 0 || nu != 0 {
		t.Errorf("remove left a's database (%d) or user (%d)", nd, nu)
	}
	if nd, nu := exists(eb["DB_NAME"], eb["DB_USER"]); nd != 1 || nu != 1 {
		t.Errorf("removing a took b's database (%d) or user (%d)", nd, nu)
	}
	f.mustBinky(f.repo, "remove", "b", "--force")
	if nd, nu := exists(eb["DB_NAME"], eb["DB_USER"]); nd != 0 || nu != 0 {
		t.Errorf("remove left b's database (%d) or user (%d)", nd, nu)
	}
	if out := f.mustBinky(f.repo, "status"); strings.Contains(out, strings.TrimSpace(string(pw))) {
		t.Error("status prints the admin password")
	}
}
