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

	"github.com/jackc/pgx/v5"
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
func GrantSchema(ctx context.Context, adminURL, role, password, schema string) error {
	c, release, err := acquireAdmin(ctx, adminURL)
	if err != nil {
		return err
	}
	defer release()
	pw, err := literal(password)
	if err != nil {
		return err
	}
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_roles WHERE rolname = $1`, role).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		if _, err := c.Exec(ctx, "CREATE ROLE "+ident(role)+" LOGIN NOCREATEDB NOCREATEROLE PASSWORD "+pw); err != nil {
			return fmt.Errorf("create role %s: %w", role, err)
		}
	} else if _, err := c.Exec(ctx, "ALTER ROLE "+ident(role)+" LOGIN PASSWORD "+pw); err != nil {
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
// and drops the role. The caller has checked that the role is binky's.
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
	for _, stmt := range []string{"DROP OWNED BY " + ident(role), "DROP ROLE " + ident(role)} {
		if _, err := c.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
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
