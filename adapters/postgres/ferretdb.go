package postgres

// What the mongodb adapter needs of the PostgreSQL behind a FerretDB 1.x:
// FerretDB keeps each MongoDB database as a schema of one PostgreSQL
// database and passes every client's credentials through to PostgreSQL,
// so a world's MongoDB user is a PostgreSQL role that owns its schema and
// nothing else. These functions live here because this package is the only
// importer of pgx.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/git-binky/git-binky/adapters"
)

// RoleExists reports whether a role of that name exists on the server of
// adminURL.
func RoleExists(ctx context.Context, adminURL, role string) (bool, error) {
	c, release, err := acquireAdmin(ctx, adminURL)
	if err != nil {
		return false, err
	}
	defer release()
	var n int
	err = c.QueryRow(ctx, `SELECT count(*) FROM pg_roles WHERE rolname = $1`, role).Scan(&n)
	return n > 0, err
}

// SchemaExists reports whether schema exists in adminURL's database.
func SchemaExists(ctx context.Context, adminURL, schema string) (bool, error) {
	c, release, err := acquireAdmin(ctx, adminURL)
	if err != nil {
		return false, err
	}
	defer release()
	var n int
	err = c.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, schema).Scan(&n)
	return n > 0, err
}

// GrantSchema makes role a login role with password (creating it if
// absent; the caller has checked that it is binky's) and hands it schema
// and every table in it, in adminURL's database: the role can then do
// anything inside its schema and nothing outside it (it gets no CREATE on
// the database, so it cannot make another schema).
func GrantSchema(ctx context.Context, adminURL, role, password, schema string, options map[string]any) error {
	c, release, err := acquireAdmin(ctx, adminURL)
	if err != nil {
		return err
	}
	defer release()
	pw, err := literal(password)
	if err != nil {
		return err
	}
	// As a postgres world's role: a third of the server's connections, or
	// what the service's options say.
	limit, err := connectionLimit(ctx, c, adapters.Slice{Name: schema, AdminURL: adminURL, Config: options})
	if err != nil {
		return err
	}
	login := "LOGIN PASSWORD " + pw + " CONNECTION LIMIT " + strconv.Itoa(limit)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_roles WHERE rolname = $1`, role).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		if _, err := c.Exec(ctx, "CREATE ROLE "+ident(role)+" NOCREATEDB NOCREATEROLE "+login); err != nil {
			return fmt.Errorf("create role %s: %w", role, err)
		}
	} else if _, err := c.Exec(ctx, "ALTER ROLE "+ident(role)+" "+login); err != nil {
		return fmt.Errorf("alter role %s: %w", role, err)
	}
	// An admin that is not a superuser must be a member of a role to give
	// it objects.
	if _, err := c.Exec(ctx, "GRANT "+ident(role)+" TO CURRENT_USER"); err != nil {
		return fmt.Errorf("grant role %s to the admin: %w", role, err)
	}
	var db string
	if err := c.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		return err
	}
	stmts := []string{
		"GRANT CONNECT ON DATABASE " + ident(db) + " TO " + ident(role),
		"ALTER SCHEMA " + ident(schema) + " OWNER TO " + ident(role),
	}
	rows, err := c.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename`, schema)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, t := range tables {
		stmts = append(stmts, "ALTER TABLE "+pgx.Identifier{schema, t}.Sanitize()+" OWNER TO "+ident(role))
	}
	for _, stmt := range stmts {
		if _, err := c.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// DropSchemaRole ends role's sessions, drops what it owns or was granted
// in adminURL's database (its schema, if FerretDB has not dropped it yet),
// and drops the role, taking back what other databases granted it (a
// postgres world may grant on its tables to any role). The caller has
// checked that the role is binky's.
func DropSchemaRole(ctx context.Context, adminURL, role string) error {
	c, release, err := acquireAdmin(ctx, adminURL)
	if err != nil {
		return err
	}
	defer release()
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_roles WHERE rolname = $1`, role).Scan(&n); err != nil || n == 0 {
		return err
	}
	if _, err := c.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, role); err != nil {
		return err
	}
	if _, err := c.Exec(ctx, "DROP OWNED BY "+ident(role)); err != nil {
		return fmt.Errorf("DROP OWNED BY %s: %w", role, err)
	}
	// As a postgres world's role: what other databases grant it is taken
	// back, what it owns there keeps it.
	if err := dropRole(ctx, c, adminURL, role); err != nil {
		// Kept: it must not log in with the password its world knew,
		// which a world of the same name would get again.
		_, _ = c.Exec(ctx, "ALTER ROLE "+ident(role)+" NOLOGIN")
		return err
	}
	return nil
}

// DropSchema drops schema and everything in it, if it is there, waiting
// 10 s at most for a lock a session holds on it.
func DropSchema(ctx context.Context, adminURL, schema string) error {
	c, release, err := acquireAdmin(ctx, adminURL)
	if err != nil {
		return err
	}
	defer release()
	if err := inTx(ctx, c, "SET LOCAL lock_timeout = '10s'", "DROP SCHEMA IF EXISTS "+ident(schema)+" CASCADE"); err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	return nil
}

// LockRole makes role unable to log in and ends its sessions, if it
// exists: a template's role, whose password its builder knew.
// GrantSchema gives the login back.
func LockRole(ctx context.Context, adminURL, role string) error {
	lit, err := literal(role)
	if err != nil {
		return err
	}
	c, release, err := acquireAdmin(ctx, adminURL)
	if err != nil {
		return err
	}
	defer release()
	if _, err := c.Exec(ctx, lockRole(role, lit)); err != nil {
		return fmt.Errorf("lock role %s: %w", role, err)
	}
	return nil
}

// lockRole is LockRole's statement, one round trip: it runs on every up
// that copies a template.
func lockRole(role, lit string) string {
	return "DO $$BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = " + lit + " AND rolcanlogin) THEN ALTER ROLE " + ident(role) + " NOLOGIN; END IF; END$$; " +
		"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = " + lit
}

// CopyFerretTables copies every document of every collection of FerretDB
// database from into database to, server-side (INSERT ... SELECT), by the
// tables FerretDB's metadata names. The collections must already exist in
// to (created through FerretDB, so that its catalog knows them).
func CopyFerretTables(ctx context.Context, adminURL, from, to string) error {
	c, release, err := acquireAdmin(ctx, adminURL)
	if err != nil {
		return err
	}
	defer release()
	tables := func(schema string) (map[string]string, error) {
		rows, err := c.Query(ctx, "SELECT _jsonb->>'_id', _jsonb->>'table' FROM "+pgx.Identifier{schema, "_ferretdb_database_metadata"}.Sanitize())
		if err != nil {
			return nil, fmt.Errorf("read FerretDB's metadata of %s: %w", schema, err)
		}
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var coll, table string
			if err := rows.Scan(&coll, &table); err != nil {
				return nil, err
			}
			out[coll] = table
		}
		return out, rows.Err()
	}
	src, err := tables(from)
	if err != nil {
		return err
	}
	dst, err := tables(to)
	if err != nil {
		return err
	}
	tx, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	for coll, st := range src {
		dt, ok := dst[coll]
		if !ok {
			return fmt.Errorf("collection %q of %s was not created in %s", coll, from, to)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+pgx.Identifier{to, dt}.Sanitize()+" (_jsonb) SELECT _jsonb FROM "+pgx.Identifier{from, st}.Sanitize()); err != nil {
			return fmt.Errorf("copy %s.%s to %s: %w", from, coll, to, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return errors.Join(errors.New("copy FerretDB collections"), err)
	}
	return nil
}

// EnsureDatabase creates database name on adminURL's server if it is
// absent, for a FerretDB to keep its schemas in, and shuts PUBLIC out of
// it: only the roles GrantSchema names may connect. It is not marked, so
// the postgres adapter (and its gc) never takes it for a slice.
func EnsureDatabase(ctx context.Context, adminURL, name string) error {
	c, release, err := acquireAdmin(ctx, adminURL)
	if err != nil {
		return err
	}
	defer release()
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, name).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		if _, err := c.Exec(ctx, "CREATE DATABASE "+ident(name)); err != nil {
			return fmt.Errorf("create database %s: %w", name, err)
		}
	}
	if _, err := c.Exec(ctx, "REVOKE CONNECT, TEMPORARY ON DATABASE "+ident(name)+" FROM PUBLIC"); err != nil {
		return fmt.Errorf("revoke connect on %s: %w", name, err)
	}
	return nil
}

// FerretSchemas lists the schemas of adminURL's database that FerretDB
// made (those holding its metadata table): the databases it serves.
func FerretSchemas(ctx context.Context, adminURL string) ([]string, error) {
	c, release, err := acquireAdmin(ctx, adminURL)
	if err != nil {
		return nil, err
	}
	defer release()
	rows, err := c.Query(ctx, `SELECT schemaname FROM pg_tables WHERE tablename = '_ferretdb_database_metadata' ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// guardTrigger is the event trigger that keeps a FerretDB's database free
// of anything that runs code: see GuardFerretDatabase.
const guardTrigger = "binky_ferret_guard"

// guardFunction refuses, for every role but a superuser, any DDL that
// FerretDB itself never issues. A world's role owns its schema and could
// otherwise plant a view, rule, trigger, policy or function there; the
// admin reads every schema's metadata table when FerretDB loads its
// catalog (after each start) and a template's tables when binky clones
// it, and a planted view would run its code as the admin. The function is
// the admin's, in public (which no world may write), and resolves names
// in pg_catalog only.
const guardFunction = `CREATE OR REPLACE FUNCTION public.` + guardTrigger + `() RETURNS event_trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $guard$
BEGIN
	IF tg_tag IN ('CREATE TABLE', 'CREATE INDEX', 'DROP TABLE', 'DROP INDEX', 'DROP SCHEMA') THEN
		RETURN;
	END IF;
	IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
		RETURN;
	END IF;
	RAISE EXCEPTION 'binky: % is refused in FerretDB''s database: a world''s role may make only what FerretDB makes (tables and indexes)', tg_tag
		USING ERRCODE = 'insufficient_privilege';
END
$guard$`

// shapeTrigger refuses, at the end of a CREATE TABLE by any role but a
// superuser, a table FerretDB would not make (see misshapen): the DDL
// trigger before it lets CREATE TABLE through, and its clauses are where
// a CHECK or DEFAULT would hide.
const shapeTrigger = "binky_ferret_shape"

var shapeFunction = `CREATE OR REPLACE FUNCTION public.` + shapeTrigger + `() RETURNS event_trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $shape$
DECLARE
	bad text;
BEGIN
	IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
		RETURN;
	END IF;
	SELECT string_agg(what, ', ') INTO bad FROM (` + misshapen(`SELECT e.objid FROM pg_event_trigger_ddl_commands() e JOIN pg_class c ON c.oid = e.objid
		WHERE e.classid = 'pg_catalog.pg_class'::regclass AND c.relkind IN ('r', 'p')`) + `) v(what);
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'binky: a table in FerretDB''s database may have only FerretDB''s columns (_jsonb, _ferretdb_record_id), no defaults, checks, inheritance or partitions: %', bad
			USING ERRCODE = 'insufficient_privilege';
	END IF;
END
$shape$`

// plantedObjects lists, in the current database, what a role other than a
// superuser or the admin made that could run code when another role reads
// or writes its tables: views (and materialized and foreign tables),
// functions, triggers, rules, policies, row security, and tables of a
// shape FerretDB does not make (misshapen). FerretDB makes none of these.
var plantedObjects = `
WITH planter AS (SELECT oid FROM pg_roles WHERE NOT rolsuper AND rolname <> current_user),
ns AS (SELECT oid, nspname FROM pg_namespace
	WHERE nspname NOT IN ('pg_catalog', 'information_schema') AND nspname !~ '^pg_(toast|temp_)')
SELECT what FROM (
	SELECT CASE c.relkind WHEN 'v' THEN 'view ' WHEN 'm' THEN 'materialized view ' ELSE 'foreign table ' END
		|| quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS what
	FROM pg_class c JOIN ns n ON n.oid = c.relnamespace
	WHERE c.relkind IN ('v', 'm', 'f') AND c.relowner IN (SELECT oid FROM planter)
	UNION ALL
	SELECT 'row security on ' || quote_ident(n.nspname) || '.' || quote_ident(c.relname)
	FROM pg_class c JOIN ns n ON n.oid = c.relnamespace
	WHERE c.relrowsecurity AND c.relowner IN (SELECT oid FROM planter)
	UNION ALL
	SELECT 'trigger ' || quote_ident(t.tgname) || ' on ' || quote_ident(n.nspname) || '.' || quote_ident(c.relname)
	FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN ns n ON n.oid = c.relnamespace
	WHERE NOT t.tgisinternal AND c.relowner IN (SELECT oid FROM planter)
	UNION ALL
	SELECT 'rule ' || quote_ident(r.rulename) || ' on ' || quote_ident(n.nspname) || '.' || quote_ident(c.relname)
	FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class JOIN ns n ON n.oid = c.relnamespace
	WHERE c.relkind NOT IN ('v', 'm') AND c.relowner IN (SELECT oid FROM planter)
	UNION ALL
	SELECT 'policy ' || quote_ident(p.polname) || ' on ' || quote_ident(n.nspname) || '.' || quote_ident(c.relname)
	FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid JOIN ns n ON n.oid = c.relnamespace
	WHERE c.relowner IN (SELECT oid FROM planter)
	UNION ALL
	SELECT 'function ' || quote_ident(n.nspname) || '.' || quote_ident(p.proname)
	FROM pg_proc p JOIN ns n ON n.oid = p.pronamespace
	WHERE p.proowner IN (SELECT oid FROM planter)
	UNION ALL
	` + misshapen(`SELECT c.oid FROM pg_class c JOIN ns n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p') AND c.relowner IN (SELECT oid FROM planter)`) + `
) o ORDER BY what LIMIT 10`

// misshapen lists what makes a table of tables (a query of pg_class oids)
// other than the tables FerretDB makes, whose only columns are _jsonb and,
// when capped, _ferretdb_record_id as the primary key: a default (or
// generated column), a CHECK, foreign key or exclusion constraint, another
// column, inheritance, partitioning. A CHECK or DEFAULT runs whatever it
// calls (query_to_xml runs any SELECT) as whoever writes a row: it is how
// a world's table would run its code as the admin.
func misshapen(tables string) string {
	return `SELECT 'partitioned table ' || c.oid::regclass::text FROM pg_class c WHERE c.relkind = 'p' AND c.oid IN (` + tables + `)
	UNION ALL
	SELECT 'default on ' || d.adrelid::regclass::text || '.' || quote_ident(a.attname)
	FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE d.adrelid IN (` + tables + `)
	UNION ALL
	SELECT 'constraint ' || quote_ident(k.conname) || ' on ' || k.conrelid::regclass::text
	FROM pg_constraint k WHERE k.contype NOT IN ('p', 'u') AND k.conrelid IN (` + tables + `)
	UNION ALL
	SELECT 'column ' || quote_ident(a.attname) || ' of ' || a.attrelid::regclass::text
	FROM pg_attribute a WHERE a.attnum > 0 AND NOT a.attisdropped AND a.attrelid IN (` + tables + `)
		AND NOT (a.attname = '_jsonb' AND a.atttypid = 'pg_catalog.jsonb'::regtype)
		AND NOT (a.attname = '_ferretdb_record_id' AND a.atttypid = 'pg_catalog.int8'::regtype)
	UNION ALL
	SELECT 'inheritance of ' || i.inhrelid::regclass::text FROM pg_inherits i WHERE i.inhrelid IN (` + tables + `)`
}

// ErrPlanted is a FerretDB database holding something a world's role
// made that FerretDB never makes, and that could run code as the admin.
var ErrPlanted = errors.New("a world's role made objects in FerretDB's database that FerretDB never makes")

// GuardFerretDatabase makes sure that nothing in adminURL's database (a
// FerretDB's) can run code as the admin: each world's role owns its
// schema, and FerretDB reads every schema's metadata table as the first
// client after it starts (binky's admin), so a view planted in its place
// would run as the admin. Where the admin is a superuser, two event
// triggers (installed once) refuse other roles every DDL but FerretDB's
// own, and every table of another shape than FerretDB's;
// every call also checks that nothing of the kind is there already (made
// before the trigger, or on a server where the admin could not install
// it), and refuses with ErrPlanted naming it. One round trip when the
// trigger is in place.
func GuardFerretDatabase(ctx context.Context, adminURL string) error {
	c, release, err := acquireAdmin(ctx, adminURL)
	if err != nil {
		return err
	}
	defer release()
	var guarded, super bool
	var planted []string
	if err := c.QueryRow(ctx, `SELECT (SELECT count(*) = 2 FROM pg_event_trigger WHERE evtname IN ('`+guardTrigger+`', '`+shapeTrigger+`') AND evtenabled <> 'D'), `+
		`(SELECT rolsuper FROM pg_roles WHERE rolname = current_user), ARRAY(`+plantedObjects+`)`).Scan(&guarded, &super, &planted); err != nil {
		return fmt.Errorf("check FerretDB's database for planted objects: %w", err)
	}
	if len(planted) > 0 {
		return fmt.Errorf("%w: %s. FerretDB reads each database's tables as binky's admin when it starts, so these could run code as the admin; "+
			"binky serves no MongoDB world until they are gone: drop them (or the world whose schema holds them)", ErrPlanted, strings.Join(planted, ", "))
	}
	if guarded || !super {
		return nil
	}
	// Two binkys may install it at once: the loser's CREATE fails on the
	// name, and the trigger is there either way.
	_, err = c.Exec(ctx, guardFunction+"; "+shapeFunction+
		"; DROP EVENT TRIGGER IF EXISTS "+guardTrigger+"; DROP EVENT TRIGGER IF EXISTS "+shapeTrigger+
		"; CREATE EVENT TRIGGER "+guardTrigger+" ON ddl_command_start EXECUTE FUNCTION public."+guardTrigger+"()"+
		"; CREATE EVENT TRIGGER "+shapeTrigger+" ON ddl_command_end WHEN TAG IN ('CREATE TABLE') EXECUTE FUNCTION public."+shapeTrigger+"()")
	if err != nil {
		var again bool
		if qerr := c.QueryRow(ctx, `SELECT count(*) = 2 FROM pg_event_trigger WHERE evtname IN ('`+guardTrigger+`', '`+shapeTrigger+`')`).Scan(&again); qerr == nil && again {
			return nil
		}
		return fmt.Errorf("install binky's guard on FerretDB's database: %w", err)
	}
	return nil
}
