package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/adapterstest"
)

func adminURL(t *testing.T) string {
	u := os.Getenv("BINKY_TEST_CLICKHOUSE")
	if u == "" {
		t.Skip("BINKY_TEST_CLICKHOUSE is unset (make test starts a throwaway clickhouse-server and sets it)")
	}
	return u
}

func admin(t *testing.T) *server {
	s, err := New().connect(adminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func must(t *testing.T, s *server, q string) {
	t.Helper()
	if _, err := s.exec(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestConformance(t *testing.T) {
	s := admin(t)
	adapterstest.RunServer(t, New(), adapterstest.Server{
		AdminURL: adminURL(t),
		// A database an admin made by hand, with a table in it.
		Foreign: func(ctx context.Context, name string) error {
			if _, err := s.exec(ctx, "CREATE DATABASE "+Ident(name)); err != nil {
				return err
			}
			_, err := s.exec(ctx, "CREATE TABLE "+Ident(name)+".precious (x UInt8) ENGINE = TinyLog")
			return err
		},
		Intact: func(ctx context.Context, name string) (bool, error) {
			ok, err := s.exists(ctx, "SELECT name FROM system.tables WHERE database = "+Literal(name)+" AND name = 'precious'")
			s.exec(ctx, "DROP DATABASE IF EXISTS "+Ident(name))
			return ok, err
		},
	})
}

func slice(name, world string) adapters.Slice {
	return adapters.Slice{Name: name, World: world, Home: "home-test", AdminURL: os.Getenv("BINKY_TEST_CLICKHOUSE"),
		Password: adapters.Password([]byte("test-secret"), "clickhouse", name)}
}

// query runs a statement through a world's own url, as an app would.
func query(ctx context.Context, worldURL, q string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, worldURL, strings.NewReader(q))
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", serverError(resp.StatusCode, b)
	}
	return strings.TrimSpace(string(b)), nil
}

func TestTheWorldsURLReachesItsDatabase(t *testing.T) {
	adminURL(t)
	ctx := context.Background()
	c := New()
	sl := slice(fmt.Sprintf("churl_%d", time.Now().UnixNano()%1e9), "w-url")
	if err := c.Provision(ctx, sl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Teardown(context.Background(), sl) })
	addr, err := c.Resolve(ctx, sl)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := query(ctx, addr["url"], "SELECT currentDatabase()"); err != nil || got != sl.Name {
		t.Fatalf("the world's url runs in database %q (%v), want %s", got, err, sl.Name)
	}
	if _, err := query(ctx, addr["url"], "CREATE TABLE t (x UInt32) ENGINE = MergeTree ORDER BY x"); err != nil {
		t.Fatalf("the world cannot create a table in its database: %v", err)
	}
	if addr["name"] != sl.Name || addr["database"] != sl.Name || addr["host"] == "" || addr["port"] == "" {
		t.Errorf("address %v", addr)
	}
}

// On a server without SQL users (Debian's 18.16) the world has the admin's
// credentials: the address must say isolation is not enforced, never claim
// a user it does not have.
func TestAServerWithoutUsersSaysIsolationIsNone(t *testing.T) {
	ctx := context.Background()
	s := admin(t)
	users, err := s.hasUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if users {
		t.Skip("this ClickHouse has SQL users: TestAWorldsUserReachesOnlyItsDatabase covers it")
	}
	c := New()
	sl := slice(fmt.Sprintf("chnone_%d", time.Now().UnixNano()%1e9), "w-none")
	if err := c.Provision(ctx, sl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Teardown(context.Background(), sl) })
	addr, err := c.Resolve(ctx, sl)
	if err != nil {
		t.Fatal(err)
	}
	if addr["isolation"] != IsolationNone || addr["user"] != s.user {
		t.Errorf("isolation %q with user %q on a server without users, want %q with the admin %q", addr["isolation"], addr["user"], IsolationNone, s.user)
	}
	// What "not enforced" means, shown: the world reaches binky's marks.
	if _, err := query(ctx, addr["url"], "SELECT count() FROM binky.marks"); err != nil {
		t.Errorf("on 18.16 the world was expected to reach binky.marks (no users to stop it): %v", err)
	}
}

// Where the server has SQL users, one world's user cannot read, write or
// drop another world's database, read binky's marks, or make users.
func TestAWorldsUserReachesOnlyItsDatabase(t *testing.T) {
	ctx := context.Background()
	s := admin(t)
	users, err := s.hasUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !users {
		t.Skip("this ClickHouse has no SQL users (18.16?): point BINKY_TEST_CLICKHOUSE at ClickHouse 20.5+ to run the user path")
	}
	c := New()
	run := time.Now().UnixNano() % 1e9
	sa, sb := slice(fmt.Sprintf("chiso_a_%d", run), "w-iso-a"), slice(fmt.Sprintf("chiso_b_%d", run), "w-iso-b")
	for _, sl := range []adapters.Slice{sa, sb} {
		if err := c.Provision(ctx, sl); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Teardown(context.Background(), sl) })
	}
	ra, _ := c.Resolve(ctx, sa)
	rb, _ := c.Resolve(ctx, sb)
	if ra["user"] != sa.Name || ra["isolation"] != IsolationUser {
		t.Fatalf("world A resolves to user %q isolation %q", ra["user"], ra["isolation"])
	}
	if _, err := query(ctx, rb["url"], "CREATE TABLE secret (x String) ENGINE = MergeTree ORDER BY x"); err != nil {
		t.Fatal(err)
	}
	if _, err := query(ctx, rb["url"], "INSERT INTO secret VALUES ('b')"); err != nil {
		t.Fatal(err)
	}
	b := Ident(sb.Name)
	for what, q := range map[string]string{
		"read B's table":        "SELECT * FROM " + b + ".secret",
		"write B's table":       "INSERT INTO " + b + ".secret VALUES ('a')",
		"drop B's database":     "DROP DATABASE " + b,
		"create in B":           "CREATE TABLE " + b + ".x (x UInt8) ENGINE = Memory",
		"read binky's marks":    "SELECT * FROM binky.marks",
		"write binky's marks":   "INSERT INTO binky.marks (slice) VALUES ('x')",
		"create a user":         "CREATE USER evil IDENTIFIED WITH sha256_password BY 'x'",
		"grant itself B":        "GRANT ALL ON " + b + ".* TO " + Ident(sa.Name),
		"create a database":     "CREATE DATABASE evil",
		"read another's grants": "SHOW GRANTS FOR " + Ident(sb.Name),
	} {
		if _, err := query(ctx, ra["url"], q); err == nil {
			t.Errorf("%s with A's user: allowed, want refused", what)
		}
	}
	if got, err := query(ctx, rb["url"], "SELECT * FROM secret"); err != nil || got != "b" {
		t.Errorf("B's table after A's attempts: %q, %v", got, err)
	}
	if err := c.Teardown(ctx, sa); err != nil {
		t.Fatal(err)
	}
	if _, err := query(ctx, ra["url"], "SELECT 1"); err == nil {
		t.Error("A's user still works after teardown")
	}
}

func TestCloneCopiesEveryTableAndItsRows(t *testing.T) {
	adminURL(t)
	ctx := context.Background()
	s := admin(t)
	c := New()
	run := time.Now().UnixNano() % 1e9
	tmpl := slice(fmt.Sprintf("chgold_%d", run), "golden")
	if err := c.Provision(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Teardown(context.Background(), tmpl) })
	must(t, s, "CREATE TABLE "+Ident(tmpl.Name)+".users (id UInt32, name String) ENGINE = MergeTree ORDER BY id")
	must(t, s, "INSERT INTO "+Ident(tmpl.Name)+".users VALUES (1, 'ada'), (2, 'bob')")
	must(t, s, "CREATE TABLE "+Ident(tmpl.Name)+".`odd name` (x UInt8) ENGINE = TinyLog")
	must(t, s, "INSERT INTO "+Ident(tmpl.Name)+".`odd name` VALUES (7)")
	if ok, err := c.Exists(ctx, adminURL(t), tmpl.Name); err != nil || !ok {
		t.Fatalf("Exists(template) = %v, %v", ok, err)
	}
	dst := slice(fmt.Sprintf("chclone_%d", run), "w-clone")
	if err := c.Clone(ctx, tmpl.Name, dst); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Teardown(context.Background(), dst) })
	addr, _ := c.Resolve(ctx, dst)
	if got, err := query(ctx, addr["url"], "SELECT count() FROM users"); err != nil || got != "2" {
		t.Errorf("clone's users: %q, %v", got, err)
	}
	if got, err := query(ctx, addr["url"], "SELECT x FROM `odd name`"); err != nil || got != "7" {
		t.Errorf("clone's `odd name`: %q, %v", got, err)
	}
	// A copy, not a view: the template's rows stay as they were.
	if _, err := query(ctx, addr["url"], "INSERT INTO users VALUES (3, 'cy')"); err != nil {
		t.Fatal(err)
	}
	if rows, _ := s.rows(ctx, "SELECT count() AS n FROM "+Ident(tmpl.Name)+".users"); len(rows) != 1 || num(rows[0]["n"]) != 2 {
		t.Errorf("the template changed with its clone: %v", rows)
	}
	if got, _ := c.List(ctx, adminURL(t)); !listed(got, dst.Name, dst.Owner()) {
		t.Errorf("the clone is not listed with its owner: %v", got)
	}
}

func TestACloneOfATemplateWithAViewFailsSoBinkyFallsBack(t *testing.T) {
	adminURL(t)
	ctx := context.Background()
	s := admin(t)
	c := New()
	run := time.Now().UnixNano() % 1e9
	tmpl := slice(fmt.Sprintf("chgoldv_%d", run), "golden")
	if err := c.Provision(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Teardown(context.Background(), tmpl) })
	must(t, s, "CREATE TABLE "+Ident(tmpl.Name)+".t (x UInt8) ENGINE = TinyLog")
	must(t, s, "CREATE VIEW "+Ident(tmpl.Name)+".v AS SELECT x FROM "+Ident(tmpl.Name)+".t")
	dst := slice(fmt.Sprintf("chclonev_%d", run), "w-clonev")
	t.Cleanup(func() { c.Teardown(context.Background(), dst) })
	if err := c.Clone(ctx, tmpl.Name, dst); err == nil || !strings.Contains(err.Error(), "View") {
		t.Errorf("clone of a template with a view: %v, want an error naming the engine", err)
	}
	if ok, _ := s.databaseExists(ctx, dst.Name); ok {
		t.Error("the refused clone left a database behind")
	}
}

func TestTheMarksDatabaseIsNoSlice(t *testing.T) {
	adminURL(t)
	sl := slice(marksDB, "w-marks")
	if err := New().Provision(context.Background(), sl); !errors.Is(err, adapters.ErrTaken) {
		t.Errorf("provision of a slice named %q: %v, want ErrTaken", marksDB, err)
	}
	if err := New().Teardown(context.Background(), sl); !errors.Is(err, adapters.ErrNotOurs) {
		t.Errorf("teardown of a slice named %q: %v, want ErrNotOurs", marksDB, err)
	}
}

func listed(found []adapters.Owned, name string, o adapters.Owner) bool {
	for _, f := range found {
		if f.Slice == name && f.Kind == "database" && f.Owner.Is(o) {
			return true
		}
	}
	return false
}

func TestQuoting(t *testing.T) {
	for in, want := range map[string]string{
		"plain":      "`plain`",
		"a`b":        "`a\\`b`",
		`back\slash`: "`back\\\\slash`",
	} {
		if got := Ident(in); got != want {
			t.Errorf("Ident(%q) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"it's":         `'it\'s'`,
		`a\'; DROP --`: `'a\\\'; DROP --'`,
		"line\nbreak":  `'line\nbreak'`,
		"nul\x00":      `'nul\0'`,
	} {
		if got := Literal(in); got != want {
			t.Errorf("Literal(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestAdminURLs(t *testing.T) {
	for _, tc := range []struct{ in, base, user, pass, err string }{
		{"clickhouse://default:pw@127.0.0.1:8123", "http://127.0.0.1:8123", "default", "pw", ""},
		{"clickhouse://127.0.0.1", "http://127.0.0.1:8123", "default", "", ""},
		{"clickhouses://admin:p%40ss@db.internal", "https://db.internal:8443", "admin", "p@ss", ""},
		{"http://u:p@[::1]:18123", "http://[::1]:18123", "u", "p", ""},
		{"clickhouse://u:p@h:8123?secure=true", "https://h:8123", "u", "p", ""},
		{"tcp://u:p@h:9000", "", "", "", "scheme"},
		{"clickhouse://", "", "", "", "no host"},
	} {
		base, user, pass, err := parseAdmin(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseAdmin(%q): %v, want an error about %s", tc.in, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "p@h") {
				t.Errorf("error carries the password: %v", err)
			}
			continue
		}
		if err != nil || base.String() != tc.base || user != tc.user || pass != tc.pass {
			t.Errorf("parseAdmin(%q) = %s %s %s %v, want %s %s %s", tc.in, base.String(), user, pass, err, tc.base, tc.user, tc.pass)
		}
	}
}

func TestServerErrorsReadTheirCode(t *testing.T) {
	for body, code := range map[string]int{
		"Code: 60, e.displayText() = DB::Exception: Table system.users doesn't exist., e.what() = DB::Exception": 60,
		"Code: 497. DB::Exception: default: Not enough privileges. (ACCESS_DENIED) (version 24.3.1.1)":           497,
		"Bad Gateway": 0,
	} {
		err := serverError(500, []byte(body))
		var e *Error
		if !errors.As(err, &e) || e.Code != code {
			t.Errorf("serverError(%q) = %v, want code %d", body, err, code)
		}
	}
}

// A template's table that reads or writes elsewhere is never copied: the
// admin's INSERT ... SELECT would read what the template's user pointed
// it at (here another world's table, through a Merge table), and the
// copy would keep reaching it. The clone fails, and binky falls back to
// provision, migrate and seed.
func TestACloneNeverCopiesATableThatReadsElsewhere(t *testing.T) {
	adminURL(t)
	ctx := context.Background()
	s := admin(t)
	c := New()
	run := time.Now().UnixNano() % 1e9
	victim := slice(fmt.Sprintf("chvictim_%d", run), "w-victim")
	if err := c.Provision(ctx, victim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Teardown(context.Background(), victim) })
	must(t, s, "CREATE TABLE "+Ident(victim.Name)+".secrets (s String) ENGINE = TinyLog")
	must(t, s, "INSERT INTO "+Ident(victim.Name)+".secrets VALUES ('victim''s')")
	for _, table := range []string{
		"(s String) ENGINE = Merge(" + Literal(victim.Name) + ", '^secrets$')",
		"(s String) ENGINE = Buffer(" + Ident(victim.Name) + ", secrets, 1, 10, 100, 10000, 1000000, 10000000, 100000000)",
		// Computed by the admin's INSERT: the template's user chose it.
		"(s String, m UInt64 MATERIALIZED rand()) ENGINE = TinyLog",
	} {
		tmpl := slice(fmt.Sprintf("chgoldm_%d", run), "golden")
		if err := c.Provision(ctx, tmpl); err != nil {
			t.Fatal(err)
		}
		must(t, s, "CREATE TABLE "+Ident(tmpl.Name)+".t "+table)
		dst := slice(fmt.Sprintf("chclonem_%d", run), "w-clonem")
		err := c.Clone(ctx, tmpl.Name, dst)
		if err == nil || !strings.Contains(err.Error(), "engine") && !strings.Contains(err.Error(), "MATERIALIZED") {
			t.Errorf("clone of a template with a table %s: %v, want a refusal naming the engine or column", table, err)
		}
		if ok, _ := s.databaseExists(ctx, dst.Name); ok {
			t.Errorf("the refused clone (%s) left a database behind", table)
		}
		c.Teardown(ctx, dst)
		c.Teardown(ctx, tmpl)
	}
}

func TestOnlyTablesHoldingTheirOwnRowsAreCopyable(t *testing.T) {
	for engine, want := range map[string]bool{
		"MergeTree": true, "ReplacingMergeTree": true, "AggregatingMergeTree": true, "TinyLog": true, "Memory": true,
		"ReplicatedMergeTree": false, "Merge": false, "Buffer": false, "Distributed": false, "View": false,
		"MaterializedView": false, "Dictionary": false, "URL": false, "File": false, "MySQL": false, "Kafka": false,
	} {
		if got := copyable(engine); got != want {
			t.Errorf("copyable(%s) = %v, want %v", engine, got, want)
		}
	}
}
