package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/git-binky/git-binky/adapters"
)

// goldWithRows provisions a template with three rows, runs migrate in it as
// the template's role (as a golden's migrate would), and prepares it.
func goldWithRows(t *testing.T, admin string, migrate ...string) adapters.Slice {
	t.Helper()
	ctx := context.Background()
	p := New()
	gold := testSlice(t, admin, "gold")
	gold.World, gold.Template = "golden", true
	t.Cleanup(func() { p.Teardown(context.Background(), gold) })
	if err := p.Provision(ctx, gold); err != nil {
		t.Fatal(err)
	}
	ga, _ := p.Resolve(ctx, gold)
	gc, err := pgx.Connect(ctx, ga["url"])
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range append([]string{"CREATE TABLE items (id int); INSERT INTO items VALUES (1), (2), (3)"}, migrate...) {
		if _, err := gc.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	gc.Close(ctx)
	if err := p.PrepareTemplate(ctx, admin, gold.Name); err != nil {
		t.Fatal(err)
	}
	return gold
}

// inDatabase runs sql as the admin inside database db.
func inDatabase(t *testing.T, admin, db, sql string) {
	t.Helper()
	u, _ := url.Parse(admin)
	u.Path = "/" + db
	c, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
}

// asWorld connects to the slice's database as its own role.
func asWorld(t *testing.T, p *Postgres, s adapters.Slice) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	a, _ := p.Resolve(ctx, s)
	c, err := pgx.Connect(ctx, a["url"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func rows(t *testing.T, p *Postgres, s adapters.Slice) int {
	t.Helper()
	ctx := context.Background()
	c := asWorld(t, p, s)
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM items").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func markOf(t *testing.T, c *pgx.Conn, db string) string {
	t.Helper()
	var m *string
	c.QueryRow(context.Background(), "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1", db).Scan(&m)
	if m == nil {
		return ""
	}
	return *m
}

// ownsItsObjects checks, as the world's role, that it owns the copy's
// table and the public schema: it alters the one and creates in the other.
func ownsItsObjects(t *testing.T, p *Postgres, s adapters.Slice) {
	t.Helper()
	ctx := context.Background()
	c := asWorld(t, p, s)
	var table, schema string
	c.QueryRow(ctx, "SELECT tableowner, (SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'public') FROM pg_tables WHERE tablename = 'items'").Scan(&table, &schema)
	if table != s.Name || schema != s.Name {
		t.Fatalf("items is owned by %q and schema public by %q, want the world's role %q", table, schema, s.Name)
	}
	if _, err := c.Exec(ctx, "ALTER TABLE items ADD COLUMN extra int; CREATE TABLE mine (id int)"); err != nil {
		t.Fatalf("the world cannot change its own database: %v", err)
	}
}

func TestTheNextCloneIsTheSpareMadeAfterTheLast(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p, c := New(), adminConn(t, admin)
	gold := goldWithRows(t, admin)
	spare := spareOf(gold.Name)
	a, b := testSlice(t, admin, "a"), testSlice(t, admin, "b")
	if err := p.Clone(ctx, gold.Name, a); err != nil {
		t.Fatal(err)
	}
	waitSpare(ctx, admin, gold.Name)
	if db, _ := objects(t, c, spare); !db {
		t.Fatal("no spare after a clone")
	}
	if m := markOf(t, c, spare); m != adapters.Mark(gold.Owner()) {
		t.Fatalf("spare marked %q, want its template's %q", m, adapters.Mark(gold.Owner()))
	}
	// No world reaches a spare, which will be the next world's database.
	aa, _ := p.Resolve(ctx, a)
	u, _ := url.Parse(aa["url"])
	u.Path = "/" + spare
	if wc, err := pgx.Connect(ctx, u.String()); err == nil {
		wc.Close(ctx)
		t.Fatal("a world's role connects to the spare")
	}
	var open bool
	c.QueryRow(ctx, "SELECT datallowconn FROM pg_database WHERE datname = $1", spare).Scan(&open)
	if open {
		t.Fatal("the spare allows connections before it is taken")
	}
	// A row only the spare has shows which copy the next world got.
	c.Exec(ctx, "ALTER DATABASE "+ident(spare)+" ALLOW_CONNECTIONS true")
	inDatabase(t, admin, spare, "INSERT INTO items VALUES (99)")
	c.Exec(ctx, "ALTER DATABASE "+ident(spare)+" ALLOW_CONNECTIONS false")
	if o, err := spareOwnership(ctx, c, spare, gold.Name); err != nil || !o.prepared() {
		t.Fatalf("the spare is not prepared (its objects handed to its role): %+v %v", o, err)
	}
	if err := p.Clone(ctx, gold.Name, b); err != nil {
		t.Fatal(err)
	}
	if n := rows(t, p, b); n != 4 {
		t.Fatalf("b has %d rows: it was not made from the spare", n)
	}
	ownsItsObjects(t, p, b)
	if m := markOf(t, c, b.Name); m != adapters.Mark(b.Owner()) {
		t.Fatalf("the taken spare is marked %q, want b's %q", m, adapters.Mark(b.Owner()))
	}
	var owner string
	c.QueryRow(ctx, "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = $1", b.Name).Scan(&owner)
	if owner == b.Name || owner == gold.Name {
		t.Fatalf("b's database is owned by %s, want the admin", owner)
	}
	waitSpare(ctx, admin, gold.Name)
	if db, _ := objects(t, c, spare); !db {
		t.Fatal("no new spare after the spare was taken")
	}
	// Every clone hands the template role's objects to its world
	// (REASSIGN OWNED): a spare must never be among them.
	if err := p.Clone(ctx, gold.Name, testSlice(t, admin, "c")); err != nil {
		t.Fatal(err)
	}
	waitSpare(ctx, admin, gold.Name)
	c.QueryRow(ctx, "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = $1", spare).Scan(&owner)
	if owner != spare {
		t.Fatalf("the spare is owned by %s after a clone, want its own role %s", owner, spare)
	}
	// b's role was the spare's: the spares made since, and the worlds
	// that took them, own nothing in b.
	if others := ownersIn(t, c, b.Name); len(others) != 1 || others[0] != b.Name {
		t.Fatalf("objects in b are owned by %v, want only b's role", others)
	}
	if err := p.Teardown(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := p.Teardown(ctx, gold); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{spare, gold.Name} {
		if db, role := objects(t, c, name); db || role {
			t.Errorf("%s left after its template was dropped: database=%v role=%v", name, db, role)
		}
	}
}

// checkpointsRequested is how many checkpoints the server was asked for:
// pg_stat_bgwriter's count until PostgreSQL 17 moved it to
// pg_stat_checkpointer.
func checkpointsRequested(t *testing.T, c *pgx.Conn) int64 {
	t.Helper()
	q := "SELECT checkpoints_req FROM pg_stat_bgwriter"
	if serverVersion(context.Background(), c) >= 170000 {
		q = "SELECT num_requested FROM pg_stat_checkpointer"
	}
	var n int64
	if err := c.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A spare is copied off the up's path, where what counts is that it be
// ready soon with the least CPU: file by file (STRATEGY FILE_COPY, whose
// two checkpoints the server counts as requested), not page by page
// through the WAL as a small template's clone on the path is.
func TestASpareIsCopiedFileByFile(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p, c := New(), adminConn(t, admin)
	var version int
	c.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version)
	if version < 150000 {
		t.Skipf("server_version_num is %d: before PostgreSQL 15 every copy is file by file", version)
	}
	requested := func() int64 { return checkpointsRequested(t, c) }
	gold := goldWithRows(t, admin)
	before := requested()
	if err := p.Clone(ctx, gold.Name, testSlice(t, admin, "a")); err != nil {
		t.Fatal(err)
	}
	waitSpare(ctx, admin, gold.Name)
	if db, _ := objects(t, c, spareOf(gold.Name)); !db {
		t.Fatal("no spare after a clone")
	}
	// Read in a new snapshot of the server's statistics.
	c.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
	if n := requested() - before; n < 2 {
		t.Fatalf("%d checkpoints requested while the clone and its spare were copied, want the spare's two (FILE_COPY)", n)
	}
}

// A template's first world has no spare to take: it waits for the one its
// clone starts and takes that, rather than copy the template beside it
// (two copies at once on one disk each took twice as long).
func TestATemplatesFirstCloneTakesTheSpareItStarts(t *testing.T) {
	admin := adminURL(t)
	p, c := New(), adminConn(t, admin)
	gold := goldWithRows(t, admin)
	if db, _ := objects(t, c, spareOf(gold.Name)); db {
		t.Fatal("a spare exists before the template's first clone")
	}
	var steps []string
	ctx := adapters.WithSteps(context.Background(), func(step string) error {
		steps = append(steps, step)
		return nil
	})
	a := testSlice(t, admin, "a")
	if err := p.Clone(ctx, gold.Name, a); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(steps, "postgres.spare_taken") {
		t.Fatalf("the first clone took no spare (steps %v): it copied the template itself", steps)
	}
	if n := rows(t, p, a); n != 3 {
		t.Fatalf("the first world has %d rows, want the template's 3", n)
	}
	ownsItsObjects(t, p, a)
	waitSpare(context.Background(), admin, gold.Name)
	if db, _ := objects(t, c, spareOf(gold.Name)); !db {
		t.Fatal("no spare for the next world after the first took one")
	}
}

// A golden template is made from template1 file by file (FILE_COPY, two
// checkpoints requested), its files synced as they are made, so that its
// first copy syncs only what its migrate and seed wrote. A world's
// database, on its up's path, is made the quicker way for a small
// template1 (through the WAL).
func TestAGoldenTemplateIsMadeFileByFile(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p, c := New(), adminConn(t, admin)
	if v := serverVersion(ctx, c); v < 150000 {
		t.Skipf("server_version_num is %d: before PostgreSQL 15 every copy is file by file", v)
	}
	for _, tc := range []struct {
		why  purpose
		want bool
	}{{forTemplate, true}, {forWorld, false}} {
		stmt, err := createStatement(ctx, c, "x", "x", "", tc.why)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(stmt, "STRATEGY FILE_COPY"); got != tc.want {
			t.Errorf("purpose %d: %q, want FILE_COPY %v", tc.why, stmt, tc.want)
		}
	}
	requested := func() int64 {
		c.Exec(ctx, "SELECT pg_stat_clear_snapshot()")
		return checkpointsRequested(t, c)
	}
	gold := testSlice(t, admin, "gold")
	gold.World, gold.Template = "golden", true
	before := requested()
	if err := p.Provision(ctx, gold); err != nil {
		t.Fatal(err)
	}
	if n := requested() - before; n < 2 {
		t.Fatalf("%d checkpoints requested while a template was provisioned, want FILE_COPY's two", n)
	}
}

// A crash between a spare's copy and its mark leaves it unmarked, owned by
// its marked role: provably binky's, so it is taken like any other.
func TestASpareACrashLeftUnmarkedIsTaken(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p, c := New(), adminConn(t, admin)
	gold := goldWithRows(t, admin)
	spare := spareOf(gold.Name)
	for _, stmt := range []string{"CREATE ROLE " + ident(spare) + " NOLOGIN", "COMMENT ON ROLE " + ident(spare) + " IS '" + adapters.Mark(gold.Owner()) + "'",
		"CREATE DATABASE " + ident(spare) + " OWNER " + ident(spare) + " TEMPLATE " + ident(gold.Name)} {
		if _, err := c.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	inDatabase(t, admin, spare, "INSERT INTO items VALUES (99)")
	w := testSlice(t, admin, "w")
	if err := p.Clone(ctx, gold.Name, w); err != nil {
		t.Fatal(err)
	}
	if n := rows(t, p, w); n != 4 {
		t.Fatalf("the world has %d rows: the unmarked spare was not taken", n)
	}
	// Its objects are the template role's, as copied: the take hands them
	// to the world.
	ownsItsObjects(t, p, w)
}

// A database that only has a spare's name is someone else's: never taken,
// never dropped.
func TestADatabaseNamedLikeASpareIsNotTakenNorDropped(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p, c := New(), adminConn(t, admin)
	gold := goldWithRows(t, admin)
	spare := spareOf(gold.Name)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+ident(spare)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+ident(spare)) })
	w := testSlice(t, admin, "w")
	if err := p.Clone(ctx, gold.Name, w); err != nil {
		t.Fatal(err)
	}
	waitSpare(ctx, admin, gold.Name)
	if n := rows(t, p, w); n != 3 {
		t.Fatalf("the world has %d rows, want the template's 3", n)
	}
	if err := p.Teardown(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := p.Teardown(ctx, gold); err != nil {
		t.Fatal(err)
	}
	if db, _ := objects(t, c, spare); !db {
		t.Fatal("binky dropped a database it did not make")
	}
	if m := markOf(t, c, spare); m != "" {
		t.Fatalf("binky marked a database it did not make: %q", m)
	}
}

// A template dropped while clones of it are still copying leaves no spare
// behind: the spare a finished copy starts waits for the drop, then finds
// its template gone.
func TestATemplateDroppedDuringClonesLeavesNoSpare(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p, c := New(), adminConn(t, admin)
	for round := 0; round < 3; round++ {
		gold := goldWithRows(t, admin)
		spare := spareOf(gold.Name)
		inDatabase(t, admin, gold.Name, "INSERT INTO items SELECT generate_series(1, 300000)")
		var wg sync.WaitGroup
		for i := 0; i < 3; i++ {
			w := testSlice(t, admin, fmt.Sprintf("race%d", i))
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(i*40) * time.Millisecond)
				p.Clone(ctx, gold.Name, w) // may fail: its template is being dropped
			}()
		}
		time.Sleep(time.Duration(60+round*30) * time.Millisecond)
		err := p.Teardown(ctx, gold)
		wg.Wait()
		waitSpare(ctx, admin, gold.Name)
		if db, _ := objects(t, c, gold.Name); err != nil || db {
			continue // the template outlived its Teardown (an error said why): nothing to check
		}
		if db, role := objects(t, c, spare); db || role {
			t.Fatalf("round %d: the template is gone but its spare is left: database=%v role=%v", round, db, role)
		}
	}
}

// ownersIn lists the roles that own something inside database db.
func ownersIn(t *testing.T, c *pgx.Conn, db string) []string {
	t.Helper()
	rs, err := c.Query(context.Background(), `SELECT DISTINCT r.rolname FROM pg_shdepend s JOIN pg_database d ON d.oid = s.dbid
		JOIN pg_roles r ON r.oid = s.refobjid WHERE d.datname = $1 AND s.deptype = 'o' ORDER BY 1`, db)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// A world whose role exists already (its first clone was cut off after
// making it) copies the template: a prepared spare's objects belong to the
// spare's role, which the next spare keeps, so taking the database alone
// would leave the world's tables to whoever takes that spare.
func TestAWorldWhoseRoleExistsCopiesRatherThanTakeAPreparedSpare(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p, c := New(), adminConn(t, admin)
	gold := goldWithRows(t, admin)
	spare := spareOf(gold.Name)
	if err := p.Clone(ctx, gold.Name, testSlice(t, admin, "a")); err != nil {
		t.Fatal(err)
	}
	waitSpare(ctx, admin, gold.Name)
	// w's first try made its role, as create's first step does, then
	// stopped.
	w := testSlice(t, admin, "w")
	pw, _ := literal(w.Password)
	mark, _ := literal(adapters.Mark(w.Owner()))
	if err := inTx(ctx, c, "CREATE ROLE "+ident(w.Name)+" LOGIN PASSWORD "+pw, "COMMENT ON ROLE "+ident(w.Name)+" IS "+mark, "GRANT "+ident(w.Name)+" TO CURRENT_USER"); err != nil {
		t.Fatal(err)
	}
	if _, role := objects(t, c, w.Name); !role {
		t.Fatal("the cut clone left no role to try again with")
	}
	if err := p.Clone(ctx, gold.Name, w); err != nil {
		t.Fatal(err)
	}
	ownsItsObjects(t, p, w)
	if owners := ownersIn(t, c, w.Name); len(owners) != 1 || owners[0] != w.Name {
		t.Fatalf("objects in w are owned by %v, want only w's role", owners)
	}
	if db, _ := objects(t, c, spare); !db {
		t.Fatal("the prepared spare was taken by a world whose role existed")
	}
	if o, err := spareOwnership(ctx, c, spare, gold.Name); err != nil || !o.prepared() {
		t.Fatalf("the spare is no longer prepared: %+v %v", o, err)
	}
}

// A template whose migrations set default privileges (as its role) gives
// each world the same defaults for the world's own role, whether the world
// copied the template or took its spare; the template's role keeps none in
// the copies, so the template can be dropped while its worlds live on.
func TestATemplatesDefaultPrivilegesBecomeEachWorldsOwn(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p, c := New(), adminConn(t, admin)
	// A role the template's migrations grant to (cluster-wide, as roles
	// are); dropped last, once no world names it.
	reader := fmt.Sprintf("reader_%x", time.Now().UnixNano())
	if _, err := c.Exec(ctx, "CREATE ROLE "+ident(reader)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Exec(context.Background(), "DROP ROLE IF EXISTS "+ident(reader)) })
	gold := goldWithRows(t, admin, // its migrations, as the template's role
		"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO PUBLIC",
		"ALTER DEFAULT PRIVILEGES REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC",
		"ALTER DEFAULT PRIVILEGES REVOKE TRUNCATE ON TABLES FROM CURRENT_USER",
		"ALTER DEFAULT PRIVILEGES GRANT USAGE ON SEQUENCES TO "+ident(reader)+" WITH GRANT OPTION",
		// Its own grant option: a revoke and a grant for the same privilege.
		"ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO CURRENT_USER WITH GRANT OPTION")
	spare := spareOf(gold.Name)
	a, b := testSlice(t, admin, "a"), testSlice(t, admin, "b")
	if err := p.Clone(ctx, gold.Name, a); err != nil { // copies the template
		t.Fatal(err)
	}
	waitSpare(ctx, admin, gold.Name)
	if o, err := spareOwnership(ctx, c, spare, gold.Name); err != nil || !o.prepared() {
		t.Fatalf("the spare of a template with default privileges is not prepared: %+v %v", o, err)
	}
	if err := p.Clone(ctx, gold.Name, b); err != nil { // takes the spare
		t.Fatal(err)
	}
	waitSpare(ctx, admin, gold.Name)
	for _, w := range []adapters.Slice{a, b} {
		if n := templateDefaultsIn(t, c, w.Name, gold.Name); n != 0 {
			t.Errorf("the template's role keeps %d default privileges in %s", n, w.Name)
		}
	}
	if err := p.Teardown(ctx, gold); err != nil {
		t.Fatalf("the template's teardown while its worlds exist: %v", err)
	}
	for _, w := range []adapters.Slice{a, b} {
		ownsItsObjects(t, p, w)
		wc := asWorld(t, p, w)
		if _, err := wc.Exec(ctx, "INSERT INTO items VALUES (4)"); err != nil {
			t.Errorf("%s cannot write its own table: %v", w.Name, err)
		}
		if _, err := wc.Exec(ctx, "CREATE TABLE fresh (id int); CREATE SEQUENCE n; CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1'"); err != nil {
			t.Fatal(err)
		}
		var publicReads, publicRuns, ownerTruncates, publicCounts bool
		if err := wc.QueryRow(ctx, `SELECT has_table_privilege('public', 'fresh', 'SELECT'),
			has_function_privilege('public', 'f()', 'EXECUTE'), has_table_privilege(current_user, 'fresh', 'TRUNCATE'),
			has_sequence_privilege($1, 'n', 'USAGE WITH GRANT OPTION')`, reader).
			Scan(&publicReads, &publicRuns, &ownerTruncates, &publicCounts); err != nil {
			t.Fatal(err)
		}
		if !publicReads || publicRuns || ownerTruncates || !publicCounts {
			t.Errorf("%s's new objects: PUBLIC reads its table %v (want true), runs its function %v (want false), "+
				"its role truncates %v (want false), the reader uses its sequence with grant option %v (want true)",
				w.Name, publicReads, publicRuns, ownerTruncates, publicCounts)
		}
		if err := p.Teardown(ctx, w); err != nil {
			t.Errorf("teardown %s: %v", w.Name, err)
		}
	}
}

// templateDefaultsIn counts the default privileges the template's role has
// in database db.
func templateDefaultsIn(t *testing.T, c *pgx.Conn, db, template string) int {
	t.Helper()
	var n int
	if err := c.QueryRow(context.Background(), `SELECT count(*) FROM pg_shdepend
		WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) AND classid = 'pg_default_acl'::regclass
		AND refobjid = (SELECT oid FROM pg_roles WHERE rolname = $2)`, db, template).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A spare an older binky prepared still holds the template role's default
// privileges: no world takes it as it is. The next clone copies the
// template, and the spare is finished in the background for the one after.
func TestASparePreparedBeforeDefaultPrivilegesMovedIsFinishedFirst(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p, c := New(), adminConn(t, admin)
	gold := goldWithRows(t, admin, "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO PUBLIC")
	spare := spareOf(gold.Name)
	a, b, d := testSlice(t, admin, "a"), testSlice(t, admin, "b"), testSlice(t, admin, "d")
	if err := p.Clone(ctx, gold.Name, a); err != nil {
		t.Fatal(err)
	}
	waitSpare(ctx, admin, gold.Name)
	// What an older binky's prepareSpare left: the template's default
	// privileges where REASSIGN left them.
	if _, err := c.Exec(ctx, "ALTER DATABASE "+ident(spare)+" ALLOW_CONNECTIONS true"); err != nil {
		t.Fatal(err)
	}
	inDatabase(t, admin, spare, "ALTER DEFAULT PRIVILEGES FOR ROLE "+ident(gold.Name)+" IN SCHEMA public GRANT SELECT ON TABLES TO PUBLIC")
	if _, err := c.Exec(ctx, "ALTER DATABASE "+ident(spare)+" ALLOW_CONNECTIONS false"); err != nil {
		t.Fatal(err)
	}
	oid := func(db string) (o uint32) {
		c.QueryRow(ctx, "SELECT oid FROM pg_database WHERE datname = $1", db).Scan(&o)
		return o
	}
	old := oid(spare)
	if o, err := spareOwnership(ctx, c, spare, gold.Name); err != nil || !o.preparedBefore() || o.prepared() {
		t.Fatalf("an older binky's spare reads as %+v (%v), want prepared before, not prepared", o, err)
	}
	if err := p.Clone(ctx, gold.Name, b); err != nil {
		t.Fatal(err)
	}
	if oid(b.Name) == old {
		t.Fatal("a world took the spare that still held the template's default privileges")
	}
	waitSpare(ctx, admin, gold.Name)
	if oid(spare) != old {
		t.Fatal("the older binky's spare was replaced, not finished")
	}
	if o, err := spareOwnership(ctx, c, spare, gold.Name); err != nil || !o.prepared() {
		t.Fatalf("the older binky's spare was not finished: %+v %v", o, err)
	}
	if err := p.Clone(ctx, gold.Name, d); err != nil {
		t.Fatal(err)
	}
	if oid(d.Name) != old {
		t.Fatal("the finished spare was not taken")
	}
	for _, w := range []adapters.Slice{b, d} {
		if n := templateDefaultsIn(t, c, w.Name, gold.Name); n != 0 {
			t.Errorf("the template's role keeps %d default privileges in %s", n, w.Name)
		}
	}
}

// A spare role that owns something in a world (an older binky took a
// prepared spare the old way, and the next spare kept the role) is never
// renamed to a new world's role: that would hand the new world the old
// one's tables. The new world copies the template.
func TestASpareRoleOwningAnotherWorldsTablesIsNeverAWorldsRole(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p, c := New(), adminConn(t, admin)
	gold := goldWithRows(t, admin)
	spare := spareOf(gold.Name)
	if err := p.Clone(ctx, gold.Name, testSlice(t, admin, "a")); err != nil {
		t.Fatal(err)
	}
	waitSpare(ctx, admin, gold.Name)
	// What an older binky's take of a prepared spare left: the database
	// renamed, its tables still the spare role's.
	old := testSlice(t, admin, "old")
	unlock, err := lockSpare(ctx, c, gold.Name)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Exec(ctx, "ALTER DATABASE "+ident(spare)+" RENAME TO "+ident(old.Name))
	unlock()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+ident(old.Name)+" WITH (FORCE)") })
	makeSpare(admin, gold.Name)
	waitSpare(ctx, admin, gold.Name)
	if o, err := spareOwnership(ctx, c, spare, gold.Name); err != nil || !o.elsewhere || o.prepared() {
		t.Fatalf("ownership %+v %v: want the spare role seen owning tables elsewhere", o, err)
	}
	w := testSlice(t, admin, "w")
	if err := p.Clone(ctx, gold.Name, w); err != nil {
		t.Fatal(err)
	}
	ownsItsObjects(t, p, w)
	for _, o := range ownersIn(t, c, old.Name) {
		if o == w.Name {
			t.Fatalf("the new world's role owns objects in %s: owners %v", old.Name, ownersIn(t, c, old.Name))
		}
	}
}

// A role PostgreSQL refuses to drop for what depends on it is reported
// with what and where, one line.
func TestARoleStillDependedOnSaysWhere(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: "2BP01", Message: "role cannot be dropped",
		Detail: "privileges for default privileges on new relations belonging to role r in schema public\n1 object in database w_a"})
	want := " (privileges for default privileges on new relations belonging to role r in schema public; 1 object in database w_a)"
	if got := dependents(err); got != want {
		t.Errorf("dependents = %q, want %q", got, want)
	}
	if got := dependents(errors.New("other")); got != "" {
		t.Errorf("dependents of another error = %q, want nothing", got)
	}
}

// A built template's role logs in no more, and a session it kept open is
// ended: its URL was given to the migrate and seed that built it, which
// could otherwise change what every later world starts from. (An attack
// did: a branch's seed kept the URL and poisoned later worlds' data.)
func TestABuiltTemplatesRoleCannotChangeItAnyMore(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p := New()
	gold := testSlice(t, admin, "lock")
	gold.World = "golden"
	t.Cleanup(func() { p.Teardown(context.Background(), gold) })
	if err := p.Provision(ctx, gold); err != nil {
		t.Fatal(err)
	}
	ga, _ := p.Resolve(ctx, gold)
	kept, err := pgx.Connect(ctx, ga["url"])
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close(ctx)
	if _, err := kept.Exec(ctx, "CREATE TABLE items (id int)"); err != nil {
		t.Fatal(err)
	}
	if err := p.PrepareTemplate(ctx, admin, gold.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := kept.Exec(ctx, "INSERT INTO items VALUES (666)"); err == nil {
		t.Error("a session the template's role kept open still writes into it")
	}
	if c, err := pgx.Connect(ctx, ga["url"]); err == nil {
		c.Close(ctx)
		t.Error("the template's role still logs in after the template was built")
	}
	// Prepared again (every up that copies it does): no error.
	if err := p.PrepareTemplate(ctx, admin, gold.Name); err != nil {
		t.Fatal(err)
	}
	// A rebuild provisions it again: it logs in for its migrate and seed.
	if err := p.Provision(ctx, gold); err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, ga["url"])
	if err != nil {
		t.Fatalf("after provisioning again, the template's role: %v", err)
	}
	c.Close(ctx)
}
