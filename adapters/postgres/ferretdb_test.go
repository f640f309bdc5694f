package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ferretDatabase makes a database laid out as a FerretDB's (one schema per
// world, owned by the world's role, which GrantSchema made) and returns
// the admin's URL to it and a connection as the world's role.
func ferretDatabase(t *testing.T, guard bool) (dbURL string, world *pgx.Conn, schema string) {
	t.Helper()
	ctx := context.Background()
	admin := adminURL(t)
	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	db, role := "binky_guardtest_"+run, "mongo_guard_"+run
	schema = "guard_" + run
	ac := adminConn(t, admin)
	if _, err := ac.Exec(ctx, "CREATE DATABASE "+ident(db)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ac.Exec(context.Background(), "DROP DATABASE "+ident(db)+" WITH (FORCE)")
		ac.Exec(context.Background(), "DROP ROLE IF EXISTS "+ident(role))
	})
	u, _ := url.Parse(admin)
	u.Path = "/" + db
	dbURL = u.String()
	if guard {
		if err := GuardFerretDatabase(ctx, dbURL); err != nil {
			t.Fatalf("guard a clean database: %v", err)
		}
	}
	inDatabase(t, admin, db, "CREATE SCHEMA "+ident(schema)+"; CREATE TABLE "+ident(schema)+"._ferretdb_database_metadata (_jsonb jsonb)")
	if err := GrantSchema(ctx, dbURL, role, "guard-pw-1", schema, nil); err != nil {
		t.Fatal(err)
	}
	wu := *u
	wu.User = url.UserPassword(role, "guard-pw-1")
	c, err := pgx.Connect(ctx, wu.String())
	if err != nil {
		t.Fatalf("connect as the world's role: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return dbURL, c, schema
}

// A world's role owns its FerretDB schema, and FerretDB reads every
// schema's metadata table as binky's admin when it starts (its first
// client loads the catalog). An attack replaced a world's metadata table
// with a view calling its own function: the function would run as the
// admin. The guard refuses every DDL but FerretDB's own (tables and
// indexes) to a world's role.
func TestAWorldsRoleCannotPlantCodeInFerretDBsDatabase(t *testing.T) {
	_, w, schema := ferretDatabase(t, true)
	ctx := context.Background()
	s := ident(schema)
	for _, q := range []string{
		"CREATE TABLE " + s + ".coll (_jsonb jsonb)",
		"CREATE UNIQUE INDEX coll_id ON " + s + ".coll ((_jsonb -> '_id'))",
		"DROP INDEX " + s + ".coll_id",
		"DROP TABLE " + s + ".coll",
		"CREATE TABLE " + s + ".capped (_ferretdb_record_id bigint PRIMARY KEY, _jsonb jsonb)",
	} {
		if _, err := w.Exec(ctx, q); err != nil {
			t.Errorf("FerretDB's own DDL, as the world: %s: %v", q, err)
		}
	}
	if _, err := w.Exec(ctx, "CREATE TABLE "+s+".t (_jsonb jsonb)"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE FUNCTION " + s + ".evil() RETURNS jsonb LANGUAGE sql AS $$SELECT '{}'::jsonb$$",
		"CREATE VIEW " + s + ".v AS SELECT now() AS _jsonb",
		"DROP TABLE " + s + "._ferretdb_database_metadata; CREATE VIEW " + s + "._ferretdb_database_metadata AS SELECT '{}'::jsonb AS _jsonb",
		"CREATE RULE r AS ON INSERT TO " + s + ".t DO ALSO NOTIFY x",
		"ALTER TABLE " + s + ".t ENABLE ROW LEVEL SECURITY",
		"CREATE POLICY p ON " + s + ".t USING (true)",
		"CREATE TRIGGER tr BEFORE INSERT ON " + s + ".t FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()",
		"GRANT SELECT ON " + s + ".t TO PUBLIC",
		// CREATE TABLE goes through, but not with a CHECK or DEFAULT: the
		// admin writing a row would run what they call (an attack used
		// query_to_xml, which runs any SELECT), nor with anything else
		// FerretDB never makes.
		"CREATE TABLE " + s + ".c1 (_jsonb jsonb CHECK (query_to_xml('select 1', true, false, '') IS NOT NULL))",
		"CREATE TABLE " + s + ".c2 (_jsonb jsonb DEFAULT (query_to_xml('select 1', true, false, '')::text)::jsonb)",
		"CREATE TABLE " + s + ".c3 (_jsonb jsonb, extra text)",
		"CREATE TABLE " + s + ".c4 (_jsonb text)",
		"CREATE TABLE " + s + ".c5 () INHERITS (" + s + ".t)",
		"CREATE TABLE " + s + ".c6 (_jsonb jsonb) PARTITION BY LIST (_jsonb)",
		"CREATE TABLE " + s + ".c7 (_ferretdb_record_id bigint REFERENCES " + s + ".capped, _jsonb jsonb)",
		"CREATE TABLE " + s + ".c8 (LIKE " + s + ".capped INCLUDING ALL, n serial)",
	} {
		_, err := w.Exec(ctx, q)
		if err == nil || !strings.Contains(err.Error(), "binky") {
			t.Errorf("as a world's role: %s: %v, want binky's refusal", q, err)
		}
	}
	var view bool
	if err := w.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_class WHERE relkind = 'v' AND relnamespace = $1::regnamespace)", schema).Scan(&view); err != nil || view {
		t.Errorf("a view in the world's schema: %v (err %v)", view, err)
	}
	if _, err := w.Exec(ctx, "DROP SCHEMA "+s+" CASCADE"); err != nil {
		t.Errorf("dropDatabase, as the world: %v", err)
	}
}

// What a world planted before the guard was there (or where the admin is
// no superuser and cannot install it) is found, named, and refused:
// binky's admin will not read that database through FerretDB.
func TestCodePlantedBeforeTheGuardIsRefused(t *testing.T) {
	dbURL, w, schema := ferretDatabase(t, false)
	ctx := context.Background()
	s := ident(schema)
	if _, err := w.Exec(ctx, "CREATE FUNCTION "+s+".evil() RETURNS jsonb LANGUAGE sql AS $$SELECT '{}'::jsonb$$; "+
		"DROP TABLE "+s+"._ferretdb_database_metadata; "+
		"CREATE VIEW "+s+"._ferretdb_database_metadata AS SELECT "+s+".evil() AS _jsonb; "+
		"CREATE TABLE "+s+".trap (_jsonb jsonb CHECK (query_to_xml('select 1', true, false, '') IS NOT NULL))"); err != nil {
		t.Fatal(err)
	}
	err := GuardFerretDatabase(ctx, dbURL)
	if !errors.Is(err, ErrPlanted) {
		t.Fatalf("guard a database holding a planted view: %v, want ErrPlanted", err)
	}
	for _, want := range []string{"function " + schema + ".evil", "view " + schema + "._ferretdb_database_metadata", "constraint trap_check on " + schema + ".trap"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not name %q: %v", want, err)
		}
	}
	ac := adminConn(t, dbURL)
	var guarded bool
	if err := ac.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_event_trigger WHERE evtname = $1)", guardTrigger).Scan(&guarded); err != nil || guarded {
		t.Errorf("the guard was installed over planted code (%v, %v): nothing may be read before they are gone", guarded, err)
	}
	if _, err := ac.Exec(ctx, "DROP VIEW "+s+"._ferretdb_database_metadata; DROP FUNCTION "+s+".evil(); DROP TABLE "+s+".trap"); err != nil {
		t.Fatal(err)
	}
	if err := GuardFerretDatabase(ctx, dbURL); err != nil {
		t.Fatalf("guard the database once they are gone: %v", err)
	}
	if _, err := w.Exec(ctx, "CREATE VIEW "+s+".v AS SELECT 1 AS x"); err == nil {
		t.Error("after the guard, the world still makes a view")
	}
}

// A template's role loses its login and its sessions: its builder knew
// its password. GrantSchema (a rebuild's provision) gives the login back.
func TestLockRoleEndsATemplatesSessionsAndLogins(t *testing.T) {
	dbURL, w, _ := ferretDatabase(t, true)
	ctx := context.Background()
	role := w.Config().User
	if err := LockRole(ctx, dbURL, role); err != nil {
		t.Fatal(err)
	}
	if err := w.Ping(ctx); err == nil {
		t.Error("the role's kept session still answers after LockRole")
	}
	u, _ := url.Parse(dbURL)
	u.User = url.UserPassword(role, "guard-pw-1")
	if c, err := pgx.Connect(ctx, u.String()); err == nil {
		c.Close(ctx)
		t.Error("the role still logs in after LockRole")
	}
	if err := LockRole(ctx, dbURL, role); err != nil {
		t.Fatalf("lock it again (every up that copies it does): %v", err)
	}
	if err := LockRole(ctx, dbURL, "no_such_role_x"); err != nil {
		t.Fatalf("lock a role that is not there: %v", err)
	}
	schema := strings.TrimPrefix(role, "mongo_")
	if err := GrantSchema(ctx, dbURL, role, "guard-pw-1", schema, nil); err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatalf("after GrantSchema, the role: %v", err)
	}
	c.Close(ctx)
}

// A world's role that owns something outside FerretDB's database (here a
// large object in another database it could connect to) cannot be
// dropped: it is kept, but it may no longer log in with the password its
// world knew, which a world of the same name would get again.
func TestARoleThatCannotBeDroppedNoLongerLogsIn(t *testing.T) {
	dbURL, w, _ := ferretDatabase(t, true)
	ctx := context.Background()
	role := w.Config().User
	admin := adminURL(t)
	ac := adminConn(t, admin)
	other := "binky_pin_" + fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	if _, err := ac.Exec(ctx, "CREATE DATABASE "+ident(other)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ac.Exec(context.Background(), "DROP DATABASE "+ident(other)+" WITH (FORCE)")
		ac.Exec(context.Background(), "DROP ROLE IF EXISTS "+ident(role))
	})
	if _, err := ac.Exec(ctx, "GRANT CONNECT ON DATABASE "+ident(other)+" TO "+ident(role)); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(dbURL)
	u.User = url.UserPassword(role, "guard-pw-1")
	u.Path = "/" + other
	pin, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pin.Exec(ctx, "SELECT lo_create(0)"); err != nil {
		t.Fatal(err)
	}
	pin.Close(ctx)
	if err := DropSchemaRole(ctx, dbURL, role); err == nil {
		t.Fatal("dropped a role that owns a large object in another database")
	}
	var login bool
	if err := ac.QueryRow(ctx, "SELECT rolcanlogin FROM pg_roles WHERE rolname = $1", role).Scan(&login); err != nil || login {
		t.Errorf("the kept role can log in: %v (err %v)", login, err)
	}
}

// A postgres world may GRANT on its tables to any role it can name, a
// FerretDB world's among them: that grant lives in the postgres world's
// database and does not keep the FerretDB world's role from being dropped.
func TestAGrantFromAPostgresWorldDoesNotKeepAFerretRoleAlive(t *testing.T) {
	dbURL, w, _ := ferretDatabase(t, true)
	ctx := context.Background()
	role := w.Config().User
	admin := adminURL(t)
	p := New()
	granter := testSlice(t, admin, "granter")
	if err := p.Provision(ctx, granter); err != nil {
		t.Fatal(err)
	}
	gc := asWorld(t, p, granter)
	if _, err := gc.Exec(ctx, "CREATE TABLE shared (x int); GRANT SELECT ON shared TO "+ident(role)); err != nil {
		t.Fatal(err)
	}
	w.Close(ctx)
	if err := DropSchemaRole(ctx, dbURL, role); err != nil {
		t.Fatalf("drop the FerretDB world's role: %v", err)
	}
	var n int
	if err := adminConn(t, admin).QueryRow(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = $1", role).Scan(&n); err != nil || n != 0 {
		t.Errorf("the role is still there (%d, %v)", n, err)
	}
}
