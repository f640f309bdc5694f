package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/adapterstest"
)

// spareMarks says whether the template's spare schema exists, and which
// marks name it, by kind, with the owner each names.
func spareMarks(t *testing.T, db *sql.DB, template string) (exists bool, marks map[string]adapters.Owner) {
	t.Helper()
	spare := spareOf(DBName(template))
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", spare).Scan(&n); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query("SELECT `kind`, `world`, `home` FROM binky.marks WHERE `name` = ?", spare)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	marks = map[string]adapters.Owner{}
	for rows.Next() {
		var kind string
		var o adapters.Owner
		rows.Scan(&kind, &o.World, &o.Home)
		marks[kind] = o
	}
	return n > 0, marks
}

// withSpare makes sure the template has a complete spare.
func withSpare(t *testing.T, gold adapters.Slice) {
	t.Helper()
	ctx := context.Background()
	tmpl := DBName(gold.Name)
	waitSpare(ctx, gold.AdminURL, tmpl)
	if err := createSpare(ctx, gold.AdminURL, tmpl); err != nil {
		t.Fatal(err)
	}
}

// withoutSpare drops the template's spare, as its Teardown would.
func withoutSpare(t *testing.T, gold adapters.Slice) {
	t.Helper()
	ctx := context.Background()
	tmpl := DBName(gold.Name)
	waitSpare(ctx, gold.AdminURL, tmpl)
	c, err := connect(ctx, gold.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	unlock, err := c.lockSpare(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if err := c.dropSpare(ctx, tmpl, gold.Owner()); err != nil {
		t.Fatal(err)
	}
}

// customer reports whether the world's database has a customer of email.
func customer(t *testing.T, db *sql.DB, s adapters.Slice, email string) bool {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM "+ident(DBName(s.Name))+".customers WHERE email = ?", email).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func TestTheNextCloneIsTheSpareMadeAfterTheLast(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	m, db := New(), admin(t, u)
	gold := goldenTemplate(t, u)
	tmpl, spare := DBName(gold.Name), spareOf(DBName(gold.Name))
	a, b := testSlice(t, u, "a"), testSlice(t, u, "b")
	if err := m.Clone(ctx, gold.Name, a); err != nil {
		t.Fatal(err)
	}
	waitSpare(ctx, u, tmpl)
	exists, marks := spareMarks(t, db, gold.Name)
	if !exists || !marks["database"].Is(gold.Owner()) || !marks[spareReady].Is(gold.Owner()) {
		t.Fatalf("after the first clone: spare exists=%v, marks %v; want it made, marked complete as its template's %v", exists, marks, gold.Owner())
	}
	// gc finds it, under the template's slice (whose Teardown drops it).
	found, err := m.List(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, o := range found {
		if o.Name == spare {
			listed = o.Kind == "database" && o.Slice == gold.Name && o.Owner.Is(gold.Owner())
		}
	}
	if !listed {
		t.Errorf("List does not show the spare as the template's database: %v", found)
	}
	// Its base tables only: MariaDB will not move a table with triggers to
	// another schema, and views and routines are made in the world's.
	sp := shape(t, db, spare)
	if len(sp["views"])+len(sp["triggers"])+len(sp["routines"]) > 0 || len(sp["fks"]) != 1 {
		t.Fatalf("the spare holds more or less than the template's tables: %v", sp)
	}
	// No world reaches a spare, which will be the next world's tables.
	aa, _ := m.Resolve(ctx, a)
	wa := open(t, aa["dsn"])
	if _, err := wa.Exec("SELECT * FROM " + ident(spare) + ".customers"); err == nil {
		t.Fatal("a world's user reads the spare")
	}

	// A row only the spare has shows which copy the next world got.
	if _, err := db.Exec("INSERT INTO " + ident(spare) + ".customers (email, name) VALUES ('spare@x', 'Zed')"); err != nil {
		t.Fatal(err)
	}
	want, moved := shape(t, db, tmpl), shape(t, db, spare)
	want["rows"] = moved["rows"]
	// The spare's tables with their counters (customers' moved on by the
	// spare's row), and the template's views beside them.
	tables := moved["tables"]
	for _, v := range want["tables"] {
		if strings.Contains(v, ":VIEW:") {
			tables = append(tables, v)
		}
	}
	sort.Strings(tables)
	want["tables"] = tables

	if err := m.Clone(ctx, gold.Name, b); err != nil {
		t.Fatal(err)
	}
	if !customer(t, db, b, "spare@x") {
		t.Fatal("b does not have the spare's row: it was not made from the spare")
	}
	if customer(t, db, a, "spare@x") {
		t.Fatal("a has the row put into the spare after it was made")
	}
	clonedWell(t, db, gold, b, want)
	movedTablesWork(t, db, b)

	// The next spare was made after b's: a copy of the template, not of
	// what the last one held.
	waitSpare(ctx, u, tmpl)
	if exists, marks := spareMarks(t, db, gold.Name); !exists || !marks[spareReady].Is(gold.Owner()) {
		t.Fatalf("no complete spare after the spare was taken: exists=%v, marks %v", exists, marks)
	}
	var n int
	db.QueryRow("SELECT COUNT(*) FROM " + ident(spare) + ".customers").Scan(&n)
	if n != 3 {
		t.Fatalf("the new spare has %d customers, want the template's 3", n)
	}

	if err := m.Teardown(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := m.Teardown(ctx, gold); err != nil {
		t.Fatal(err)
	}
	if exists, marks := spareMarks(t, db, gold.Name); exists || len(marks) > 0 {
		t.Errorf("the spare outlived its template: exists=%v, marks %v", exists, marks)
	}
}

// movedTablesWork checks, on a world whose tables were moved in from a
// spare, what a rename could break: its foreign key names the world's own
// table, its generated column computes, its user alters its tables, and it
// holds no grant or object outside its database.
func movedTablesWork(t *testing.T, db *sql.DB, s adapters.Slice) {
	t.Helper()
	name, user := DBName(s.Name), UserName(s.Name)
	var schema, table string
	if err := db.QueryRow("SELECT REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME FROM information_schema.KEY_COLUMN_USAGE "+
		"WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'orders' AND REFERENCED_TABLE_NAME IS NOT NULL", name).Scan(&schema, &table); err != nil {
		t.Fatal(err)
	}
	if schema != name || table != "customers" {
		t.Errorf("orders' foreign key references %s.%s, want the world's own %s.customers", schema, table, name)
	}
	a, _ := New().Resolve(context.Background(), s)
	w := open(t, a["dsn"])
	if _, err := w.Exec("DELETE FROM customers WHERE id = 1"); err == nil {
		t.Error("a customer with orders was deleted: the foreign key does not hold after the move")
	}
	var total string
	if _, err := w.Exec("INSERT INTO orders (customer_id, qty, price) VALUES (2, 3, 2.50)"); err != nil {
		t.Fatal(err)
	}
	if err := w.QueryRow("SELECT total FROM orders WHERE id = LAST_INSERT_ID()").Scan(&total); err != nil || total != "7.50" {
		t.Errorf("the generated column gives %q (%v), want 7.50", total, err)
	}
	for _, stmt := range []string{"ALTER TABLE orders ADD COLUMN note TEXT", "CREATE INDEX by_qty ON orders (qty)",
		"ALTER TABLE customers DROP INDEX by_name", "CREATE TABLE mine (id INT)", "DROP TABLE mine"} {
		if _, err := w.Exec(stmt); err != nil {
			t.Errorf("the world's user cannot change its own tables: %s: %v", stmt, err)
		}
	}
	var outside int
	if err := db.QueryRow("SELECT (SELECT COUNT(*) FROM mysql.db WHERE User = ? AND Db <> ?) + "+
		"(SELECT COUNT(*) FROM mysql.tables_priv WHERE User = ?) + (SELECT COUNT(*) FROM mysql.columns_priv WHERE User = ?) + "+
		"(SELECT COUNT(*) FROM information_schema.VIEWS WHERE DEFINER = CONCAT(?, '@%') AND TABLE_SCHEMA <> ?) + "+
		"(SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE DEFINER = CONCAT(?, '@%') AND TRIGGER_SCHEMA <> ?) + "+
		"(SELECT COUNT(*) FROM information_schema.ROUTINES WHERE DEFINER = CONCAT(?, '@%') AND ROUTINE_SCHEMA <> ?)",
		user, escapeGrant(name), user, user, user, name, user, name, user, name).Scan(&outside); err != nil {
		t.Fatal(err)
	}
	if outside != 0 {
		t.Errorf("the world's user holds %d grants or objects outside its database", outside)
	}
}

func TestASpareCutOffWhileMadeIsNeverTakenAndIsMadeAgain(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	m, db := New(), admin(t, u)
	gold := goldenTemplate(t, u)
	tmpl, spare := DBName(gold.Name), spareOf(DBName(gold.Name))
	withoutSpare(t, gold)
	steps := stepsOf(t, making, func(ctx context.Context) error { return createSpare(ctx, u, tmpl) })
	if len(steps) != 4 {
		t.Fatalf("making a spare passed steps %v", steps)
	}
	for i, step := range steps {
		t.Run("cut at "+step, func(t *testing.T) {
			withoutSpare(t, gold)
			if err := createSpare(adapters.WithSteps(ctx, adapterstest.FailAt(step)), u, tmpl); err == nil {
				t.Fatal("the cut did not stop it")
			}
			// Marked before it exists: gc and the template's Teardown see it.
			exists, marks := spareMarks(t, db, gold.Name)
			if !marks["database"].Is(gold.Owner()) {
				t.Fatalf("the cut left a spare (exists=%v) whose mark is %v, want its template's", exists, marks)
			}
			last := i == len(steps)-1
			if _, ready := marks[spareReady]; ready != last {
				t.Fatalf("cut at %s, the spare is marked complete: %v", step, ready)
			}
			if step == "mysql.spare.copied" {
				// Every row is in, but not marked so: still never taken.
				if _, err := db.Exec("INSERT INTO " + ident(spare) + ".customers (email) VALUES ('half@x')"); err != nil {
					t.Fatal(err)
				}
			}
			w := testSlice(t, u, "aftercut")
			if err := m.Clone(ctx, gold.Name, w); err != nil {
				t.Fatal(err)
			}
			complete(t, w)
			if customer(t, db, w, "half@x") {
				t.Fatal("a spare not marked complete was taken")
			}
			// The clone's own spare replaced what the cut left.
			waitSpare(ctx, u, tmpl)
			exists, marks = spareMarks(t, db, gold.Name)
			var n int
			db.QueryRow("SELECT COUNT(*) FROM " + ident(spare) + ".customers").Scan(&n)
			if !exists || !marks[spareReady].Is(gold.Owner()) || n != 3 {
				t.Fatalf("after the next clone the spare exists=%v with %d customers, marks %v: want a new complete one", exists, n, marks)
			}
		})
		t.Run("cut at "+step+", then the template dropped", func(t *testing.T) {
			gold := goldenTemplate(t, u)
			if err := createSpare(adapters.WithSteps(ctx, adapterstest.FailAt(step)), u, DBName(gold.Name)); err == nil {
				t.Fatal("the cut did not stop it")
			}
			if err := m.Teardown(ctx, gold); err != nil {
				t.Fatal(err)
			}
			if exists, marks := spareMarks(t, db, gold.Name); exists || len(marks) > 0 {
				t.Errorf("left behind: spare exists=%v, marks %v", exists, marks)
			}
		})
	}
	t.Run("the template's teardown cut at its spare", func(t *testing.T) {
		gold := goldenTemplate(t, u)
		withSpare(t, gold)
		if err := m.Teardown(adapters.WithSteps(ctx, adapterstest.FailAt("mysql.teardown.spare_dropped")), gold); err == nil {
			t.Fatal("the cut did not stop it")
		}
		if err := m.Teardown(ctx, gold); err != nil {
			t.Fatal(err)
		}
		if exists, marks := spareMarks(t, db, gold.Name); exists || len(marks) > 0 {
			t.Errorf("left behind: spare exists=%v, marks %v", exists, marks)
		}
		gone(t, db, gold)
	})
}

// A template dropped while clones of it copy or take its spare leaves no
// spare behind: a spare started after the drop waits for it, then finds its
// template gone.
func TestATemplateDroppedDuringClonesLeavesNoSpare(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	m, db := New(), admin(t, u)
	for round := 0; round < 3; round++ {
		gold := goldenTemplate(t, u)
		if _, err := db.Exec("INSERT INTO " + ident(DBName(gold.Name)) + ".customers (email) SELECT CONCAT('c', seq, '@x') FROM " + ident(DBName(gold.Name)) + ".seq_1_to_30000"); err != nil {
			t.Fatal(err)
		}
		// Round 0: dropped while the first clone's spare is being made;
		// 1: beside two clones; 2: beside two clones, one taking a spare.
		if round != 1 {
			if err := m.Clone(ctx, gold.Name, testSlice(t, u, "first")); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for i := 0; i < 2 && round > 0; i++ {
			w := testSlice(t, u, "race")
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.Clone(ctx, gold.Name, w) // may fail: its template is being dropped
			}()
		}
		err := m.Teardown(ctx, gold)
		wg.Wait()
		waitSpare(ctx, u, DBName(gold.Name))
		if there, _ := New().Exists(ctx, u, gold.Name); err != nil || there {
			t.Logf("round %d: the template outlived its Teardown (%v): nothing to check", round, err)
			continue
		}
		if exists, marks := spareMarks(t, db, gold.Name); exists || len(marks) > 0 {
			t.Fatalf("round %d: the template is gone but its spare is left: exists=%v, marks %v", round, exists, marks)
		}
	}
}

// A schema with a spare's name that binky did not mark as its template's
// (someone's own, or another home's spare) is never taken, dropped or
// marked.
func TestASchemaNamedLikeASpareIsNeitherTakenDroppedNorMarked(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	m, db := New(), admin(t, u)
	for _, c := range []struct {
		whose string
		marks []string // the marks it carries, as INSERT values
	}{
		{"nobody's", nil},
		{"another home's", []string{"database", spareReady}},
	} {
		t.Run(c.whose, func(t *testing.T) {
			gold := goldenTemplate(t, u)
			tmpl, spare := DBName(gold.Name), spareOf(DBName(gold.Name))
			other := adapters.Owner{World: gold.World, Home: "another-home"}
			stmts := []string{"CREATE DATABASE " + ident(spare)}
			for _, table := range []string{"audit", "customers", "orders"} {
				stmts = append(stmts, "CREATE TABLE "+ident(spare)+"."+table+" LIKE "+ident(tmpl)+"."+table)
			}
			stmts = append(stmts, "INSERT INTO "+ident(spare)+".customers (email) VALUES ('theirs@x')")
			for _, kind := range c.marks {
				stmts = append(stmts, "INSERT INTO binky.marks (kind, name, slice, world, home) VALUES ('"+kind+"', '"+spare+"', '"+gold.Name+"', '"+other.World+"', '"+other.Home+"')")
			}
			for _, stmt := range stmts {
				if _, err := db.Exec(stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			t.Cleanup(func() {
				db.Exec("DROP DATABASE IF EXISTS " + ident(spare))
				db.Exec("DELETE FROM binky.marks WHERE name = ?", spare)
			})
			w := testSlice(t, u, "look")
			if err := m.Clone(ctx, gold.Name, w); err != nil {
				t.Fatal(err)
			}
			complete(t, w)
			if customer(t, db, w, "theirs@x") {
				t.Fatal("binky took a schema it did not make for a spare")
			}
			waitSpare(ctx, u, tmpl)
			if err := m.Teardown(ctx, gold); err != nil {
				t.Fatal(err)
			}
			exists, marks := spareMarks(t, db, gold.Name)
			if !exists {
				t.Fatal("binky dropped a schema it did not make")
			}
			var n int
			db.QueryRow("SELECT COUNT(*) FROM " + ident(spare) + ".customers WHERE email = 'theirs@x'").Scan(&n)
			if n != 1 {
				t.Error("binky changed what is in a schema it did not make")
			}
			for _, kind := range c.marks {
				if !marks[kind].Is(other) {
					t.Errorf("its %s mark is now %v, want %v's", kind, marks[kind], other)
				}
			}
			if len(marks) != len(c.marks) {
				t.Errorf("binky marked a schema it did not make: %v", marks)
			}
		})
	}
}

// Two daemons on one server take turns on a template's spare: a clone
// waits for the lock another process holds, and finds the spare gone once
// that process took it.
func TestACloneWaitsForAnotherProcessTakingTheSpare(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	m, db := New(), admin(t, u)
	gold := goldenTemplate(t, u)
	tmpl, spare := DBName(gold.Name), spareOf(DBName(gold.Name))
	withSpare(t, gold)
	if _, err := db.Exec("INSERT INTO " + ident(spare) + ".customers (email) VALUES ('spare@x')"); err != nil {
		t.Fatal(err)
	}
	other, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	lock := ac.spareLock(tmpl) // the admin's name for it, as another process of binky's computes it
	ac.Close()
	defer func() {
		// Released however the test ends: a pooled connection keeps it.
		other.ExecContext(ctx, "DO RELEASE_LOCK(?)", lock)
		other.Close()
	}()
	var got int
	if err := other.QueryRowContext(ctx, "SELECT GET_LOCK(?, 10)", lock).Scan(&got); err != nil || got != 1 {
		t.Fatalf("the other process's lock: %d, %v", got, err)
	}
	w := testSlice(t, u, "turn")
	done := make(chan error, 1)
	go func() { done <- m.Clone(ctx, gold.Name, w) }()
	// The clone asks for the lock, and waits.
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT GET_LOCK(%'").Scan(&n)
		if n > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the clone finished (%v) while another process held the spare's lock", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the clone never asked for the spare's lock")
		}
	}
	// What the other process's take leaves: no spare.
	for _, stmt := range []string{"DELETE FROM binky.marks WHERE name = '" + spare + "'", "DROP DATABASE " + ident(spare), "DO RELEASE_LOCK('" + lock + "')"} {
		if _, err := other.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	complete(t, w)
	if customer(t, db, w, "spare@x") {
		t.Fatal("the clone took the spare another process held")
	}
}

// A built template's user logs in no more, and a session it kept open is
// ended: its password was given to the migrate and seed that built it,
// which could otherwise change what every later world starts from. (An
// attack did: a branch's seed kept the URL and poisoned later worlds.) A
// rebuild provisions it again and it logs in for its migrate and seed.
func TestABuiltTemplatesUserCannotChangeItAnyMore(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	m := New()
	gold := goldenTemplate(t, u)
	ga, _ := m.Resolve(ctx, gold)
	kept := open(t, ga["dsn"])
	if _, err := kept.Exec("SELECT 1"); err != nil {
		t.Fatal(err)
	}
	if err := m.PrepareTemplate(ctx, u, gold.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := kept.Exec("CREATE TABLE poison (id int)"); err == nil {
		t.Error("a session the template's user kept open still writes into it")
	}
	fresh := open(t, ga["dsn"])
	if err := fresh.Ping(); err == nil {
		t.Error("the template's user still logs in after the template was built")
	}
	if err := m.PrepareTemplate(ctx, u, gold.Name); err != nil {
		t.Fatalf("prepared again (every up that copies it does): %v", err)
	}
	if err := m.Provision(ctx, gold); err != nil {
		t.Fatal(err)
	}
	again := open(t, ga["dsn"])
	if err := again.Ping(); err != nil {
		t.Errorf("after provisioning again, the template's user: %v", err)
	}
}

// A world cannot hold the ups that take a template's spare waiting: lock
// names are the server's and any user may take one, so the spare's is not
// one a world can compute from the template's name. (An attack held
// GET_LOCK on the old name, the template's hash, and every up hung.)
func TestAWorldCannotHoldTheSparesLock(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	m := New()
	gold := goldenTemplate(t, u)
	tmpl := DBName(gold.Name)
	withSpare(t, gold)
	w := testSlice(t, u, "holder")
	if err := m.Provision(ctx, w); err != nil {
		t.Fatal(err)
	}
	wa, _ := m.Resolve(ctx, w)
	holder := open(t, wa["dsn"])
	sum := sha256.Sum256([]byte(tmpl))
	for _, guess := range []string{"binky_spare_" + hex.EncodeToString(sum[:8]), "binky_spare_" + hex.EncodeToString(sum[:16])} {
		var got int
		if err := holder.QueryRow("SELECT GET_LOCK(?, 1)", guess).Scan(&got); err != nil || got != 1 {
			t.Fatalf("the world's lock %s: %d %v", guess, got, err)
		}
	}
	next := testSlice(t, u, "next")
	done := make(chan error, 1)
	go func() { done <- m.Clone(ctx, gold.Name, next) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a clone waits on a lock a world holds")
	}
}
