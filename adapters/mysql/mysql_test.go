package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/adapterstest"
)

func adminURL(t *testing.T) string {
	u := os.Getenv("BINKY_TEST_MYSQL")
	if u == "" {
		t.Skip("BINKY_TEST_MYSQL is unset: make test (scripts/testservers/mysql.sh) starts a throwaway MariaDB and sets it")
	}
	return u
}

// admin opens a plain admin connection pool, for what the tests do by hand.
func admin(t *testing.T, u string) *sql.DB {
	cfg, err := Config(u)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	return db
}

// open connects with a world's DSN.
func open(t *testing.T, dsn string) *sql.DB {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // one session: USE and KILL tests rely on it
	t.Cleanup(func() { db.Close() })
	return db
}

func TestConformance(t *testing.T) {
	u := adminURL(t)
	db := admin(t, u)
	adapterstest.RunServer(t, New(), adapterstest.Server{
		AdminURL: u,
		// What a person makes by hand under a slice's name: a database
		// with a row in it and a user, neither marked.
		Foreign: func(ctx context.Context, slice string) error {
			for _, stmt := range []string{
				"CREATE DATABASE " + ident(slice),
				"CREATE TABLE " + ident(slice) + ".`precious` (`x` INT)",
				"INSERT INTO " + ident(slice) + ".`precious` VALUES (42)",
				"CREATE USER " + account(UserName(slice)) + " IDENTIFIED BY 'theirs'",
			} {
				if _, err := db.ExecContext(ctx, stmt); err != nil {
					return err
				}
			}
			t.Cleanup(func() {
				db.Exec("DROP DATABASE IF EXISTS " + ident(slice))
				db.Exec("DROP USER IF EXISTS " + account(UserName(slice)))
			})
			return nil
		},
		Intact: func(ctx context.Context, slice string) (bool, error) {
			var x, users int
			if err := db.QueryRowContext(ctx, "SELECT `x` FROM "+ident(slice)+".`precious`").Scan(&x); err != nil {
				return false, err
			}
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM mysql.user WHERE `User` = ?", UserName(slice)).Scan(&users); err != nil {
				return false, err
			}
			// Still theirs: the password binky would have set does not work.
			return x == 42 && users == 1, nil
		},
	})
}

// pair provisions two worlds and returns their slices and addresses.
func pair(t *testing.T, u, tag string) (sa, sb adapters.Slice, ra, rb adapters.Address) {
	ctx := context.Background()
	m := New()
	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	secret := []byte("mysql-test-secret")
	mk := func(w string) adapters.Slice {
		name := adapters.SliceName("iso"+run, tag+"_"+w, "w-"+w+run, 0)
		return adapters.Slice{Name: name, World: "w-" + w + run, Home: "home" + run, AdminURL: u, Password: adapters.Password(secret, "mysql", name)}
	}
	sa, sb = mk("a"), mk("b")
	for _, s := range []adapters.Slice{sa, sb} {
		if err := m.Provision(ctx, s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Teardown(context.Background(), s) })
	}
	ra, _ = m.Resolve(ctx, sa)
	rb, _ = m.Resolve(ctx, sb)
	return
}

func TestAWorldsUserIsRefusedEverythingOutsideItsDatabase(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	sa, sb, ra, rb := pair(t, u, "attack")
	a := open(t, ra["dsn"])
	b := open(t, rb["dsn"])
	if _, err := a.ExecContext(ctx, "CREATE TABLE mine (id INT PRIMARY KEY, v TEXT)"); err != nil {
		t.Fatalf("A cannot create a table in its own database: %v", err)
	}
	if _, err := a.ExecContext(ctx, "INSERT INTO mine VALUES (1, 'a')"); err != nil {
		t.Fatalf("A cannot write its own table: %v", err)
	}
	if _, err := b.ExecContext(ctx, "CREATE TABLE secret (v TEXT)"); err != nil {
		t.Fatal(err)
	}
	b.ExecContext(ctx, "INSERT INTO secret VALUES ('b-only')")

	var bID int64
	if err := b.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&bID); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "in.csv"), []byte("1\n"), 0o644)
	refused := []struct{ what, stmt string }{
		{"read B's table", "SELECT * FROM " + ident(sb.Name) + ".secret"},
		{"USE B's database", "USE " + ident(sb.Name)},
		{"create a table in B's database", "CREATE TABLE " + ident(sb.Name) + ".planted (x INT)"},
		// The grant's '_' is escaped: it is no wildcard matching a
		// look-alike name.
		{"create a look-alike database the grant's _ would match", "CREATE DATABASE " + ident(strings.Replace(sa.Name, "_", "x", 1))},
		{"create another database", "CREATE DATABASE someone_else"},
		{"CREATE USER", "CREATE USER intruder IDENTIFIED BY 'x'"},
		{"GRANT to another user", "GRANT SELECT ON " + ident(sa.Name) + ".* TO " + account(UserName(sb.Name))},
		{"SELECT ... INTO OUTFILE", "SELECT 1 INTO OUTFILE '" + filepath.Join(dir, "out.txt") + "'"},
		{"LOAD DATA INFILE", "LOAD DATA INFILE '" + filepath.Join(dir, "in.csv") + "' INTO TABLE mine"},
		{"LOAD_FILE", "SELECT IF(LOAD_FILE('/etc/passwd') IS NULL, 1/0, 1) FROM DUAL WHERE LOAD_FILE('/etc/passwd') IS NOT NULL"},
		{"read mysql.user", "SELECT User, authentication_string FROM mysql.user"},
		{"read mysql.global_priv", "SELECT * FROM mysql.global_priv"},
		{"read binky's marks", "SELECT * FROM binky.marks"},
		{"erase binky's marks", "DELETE FROM binky.marks"},
		{"forge a mark", "INSERT INTO binky.marks (kind, name, slice, world, home) VALUES ('database', 'x', 'x', 'w', 'h')"},
		{"kill B's connection", fmt.Sprintf("KILL %d", bID)},
		{"set a global variable", "SET GLOBAL max_connections = 1"},
		{"SHUTDOWN", "SHUTDOWN"},
	}
	for _, r := range refused {
		t.Run(r.what, func(t *testing.T) {
			res, err := a.ExecContext(ctx, r.stmt)
			if r.what == "LOAD_FILE" {
				// LOAD_FILE without FILE returns NULL, not an error: the
				// query above fails only if it read the file.
				if err != nil {
					t.Errorf("A read /etc/passwd with LOAD_FILE: %v", err)
				}
				return
			}
			if err == nil {
				n, _ := res.RowsAffected()
				t.Errorf("%s: allowed (%d rows)", r.stmt, n)
			} else if n := errNumber(err); n != 1044 && n != 1045 && n != 1142 && n != 1227 && n != 1095 {
				// Refused, but not for want of a privilege: the test
				// would prove nothing.
				t.Errorf("%s: %v, want an access-denied error", r.stmt, err)
			}
		})
	}
	// LOAD DATA LOCAL (client-side files) is the driver's to allow; the
	// server-side forms above are what the grants refuse.
	if _, err := os.Stat(filepath.Join(dir, "out.txt")); err == nil {
		t.Error("INTO OUTFILE wrote a file")
	}
	// B is still connected, and its data is untouched.
	var v string
	if err := b.QueryRowContext(ctx, "SELECT v FROM secret").Scan(&v); err != nil || v != "b-only" {
		t.Errorf("B's session or data was harmed: %q, %v", v, err)
	}

	t.Run("SHOW DATABASES shows A only its own", func(t *testing.T) {
		rows, err := a.QueryContext(ctx, "SHOW DATABASES")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var seen []string
		for rows.Next() {
			var n string
			rows.Scan(&n)
			seen = append(seen, n)
		}
		sort.Strings(seen)
		if want := []string{"information_schema", sa.Name}; strings.Join(seen, ",") != strings.Join(want, ",") {
			t.Errorf("A sees databases %v, want %v", seen, want)
		}
		var n int
		a.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", sb.Name).Scan(&n)
		if n != 0 {
			t.Error("information_schema.SCHEMATA shows A B's database")
		}
		a.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER <> ?", ra["user"]).Scan(&n)
		if n != 0 {
			t.Errorf("A sees %d sessions of other users", n)
		}
	})

	t.Run("A's grants are its database's and nothing else", func(t *testing.T) {
		rows, err := a.QueryContext(ctx, "SHOW GRANTS")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var g string
			rows.Scan(&g)
			switch {
			case strings.HasPrefix(g, "GRANT USAGE ON *.*"):
			case strings.HasPrefix(g, "GRANT ALL PRIVILEGES ON "+grantDB(sa.Name)+".* TO"):
				if strings.Contains(g, "GRANT OPTION") {
					t.Errorf("A may grant: %s", g)
				}
			default:
				t.Errorf("unexpected grant: %s", g)
			}
		}
	})

	t.Run("B's user cannot log in to A's database", func(t *testing.T) {
		cross := strings.Replace(rb["dsn"], "/"+sb.Name, "/"+sa.Name, 1)
		c := open(t, cross)
		if err := c.PingContext(ctx); err == nil {
			t.Error("B's user opened A's database")
		}
	})
}

func TestTeardownEndsTheWorldsSessionsAndDropsDatabaseAndUser(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	m := New()
	sa, _, ra, _ := pair(t, u, "down")
	a := open(t, ra["dsn"])
	if err := a.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	var id int64
	a.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id)
	if err := m.Teardown(ctx, sa); err != nil {
		t.Fatal(err)
	}
	db := admin(t, u)
	var n int
	db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n)
	if n != 0 {
		t.Error("the world's session survived teardown")
	}
	db.QueryRow("SELECT COUNT(*) FROM mysql.user WHERE User = ?", ra["user"]).Scan(&n)
	if n != 0 {
		t.Error("the world's user survived teardown")
	}
	db.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", sa.Name).Scan(&n)
	if n != 0 {
		t.Error("the world's database survived teardown")
	}
	db.QueryRow("SELECT COUNT(*) FROM binky.marks WHERE slice = ?", sa.Name).Scan(&n)
	if n != 0 {
		t.Errorf("%d marks of the world survived teardown", n)
	}
}

func TestAMarkWrittenBeforeACrashIsFinishedOrDropped(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	m := New()
	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	s := adapters.Slice{Name: "crash_" + run, World: "w-crash" + run, Home: "h" + run, AdminURL: u, Password: "00ff00ff00ff"}
	db := admin(t, u)
	// What a crash between the mark and the CREATE leaves: marks, no objects.
	c, err := connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ensureMarks(ctx); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"database", "user"} {
		name := s.Name
		if kind == "user" {
			name = UserName(s.Name)
		}
		if _, err := c.claim(ctx, kind, name, s); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	found, err := m.List(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	var listed int
	for _, o := range found {
		if o.Slice == s.Name && o.Owner.Is(s.Owner()) {
			listed++
		}
	}
	if listed != 2 {
		t.Errorf("gc's List finds %d of the 2 marks a crash left", listed)
	}
	// Another world cannot take the name meanwhile.
	other := s
	other.World = "w-other" + run
	if err := m.Provision(ctx, other); !errors.Is(err, adapters.ErrTaken) {
		t.Errorf("another world provisioned over a pending mark: %v", err)
	}
	// Re-provision finishes the job.
	if err := m.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	var n int
	db.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", s.Name).Scan(&n)
	if n != 1 {
		t.Error("re-provision did not create the database a crash left marked")
	}
	// And teardown of marks whose objects are gone still clears them.
	db.Exec("DROP DATABASE " + ident(s.Name))
	db.Exec("DROP USER " + account(UserName(s.Name)))
	if err := m.Teardown(ctx, s); err != nil {
		t.Fatal(err)
	}
	db.QueryRow("SELECT COUNT(*) FROM binky.marks WHERE slice = ?", s.Name).Scan(&n)
	if n != 0 {
		t.Errorf("%d marks left after teardown", n)
	}
}

func TestLongNamesFitMySQL8sUserLimit(t *testing.T) {
	for _, name := range []string{"short", strings.Repeat("a", 32), strings.Repeat("long_", 12) + "end"} {
		u := UserName(name)
		if len(u) > MaxUser {
			t.Errorf("UserName(%q) = %q: %d bytes", name, u, len(u))
		}
		if len(name) <= MaxUser && u != name {
			t.Errorf("UserName(%q) = %q, want the name itself", name, u)
		}
	}
	if UserName(strings.Repeat("x", 40)+"_a") == UserName(strings.Repeat("x", 40)+"_b") {
		t.Error("two long names fold to one user")
	}
}

func TestIdentifiersAreQuoted(t *testing.T) {
	for in, want := range map[string]string{"a": "`a`", "a`b": "`a``b`", "`; DROP DATABASE x; --": "```; DROP DATABASE x; --`"} {
		if got := ident(in); got != want {
			t.Errorf("ident(%q) = %s, want %s", in, got, want)
		}
	}
	if got := grantDB("acme_a%"); got != "`acme\\_a\\%`" {
		t.Errorf("grantDB = %s", got)
	}
	for _, bad := range []string{"", "it's", "a b", `x\`} {
		if _, err := literal(bad); err == nil {
			t.Errorf("literal(%q) accepted", bad)
		}
	}
}

func TestResolveGivesTheWorldsOwnUserAndADSN(t *testing.T) {
	s := adapters.Slice{Name: "acme_login", AdminURL: "mysql://root:adminpw@127.0.0.1:3307/", Password: "abc123"}
	addr, err := New().Resolve(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	want := adapters.Address{"url": "mysql://acme_login:abc123@127.0.0.1:3307/acme_login", "host": "127.0.0.1", "port": "3307",
		"name": "acme_login", "database": "acme_login", "user": "acme_login", "password": "abc123",
		"dsn": "acme_login:abc123@tcp(127.0.0.1:3307)/acme_login"}
	for k, v := range want {
		if addr[k] != v {
			t.Errorf("%s = %q, want %q", k, addr[k], v)
		}
	}
	if strings.Contains(fmt.Sprint(addr), "adminpw") {
		t.Error("the world's address carries the admin's password")
	}
	if _, err := Config("postgres://x@y/"); err == nil {
		t.Error("a postgres URL was taken for a mysql admin_url")
	}
	if _, err := Config("mysql://root:s3cret@127.0.0.1:notaport/"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("a bad admin_url: %v (it must fail without showing the password)", err)
	}
}
