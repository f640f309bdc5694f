// Package postgres is the Postgres adapter: a database and a login role of
// its own per world, carved from one shared server. It is the only importer
// of pgx. Every identifier is quoted with pgx.Identifier; the only literals
// written into statements are binky's own (hex passwords and marks).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"

	"github.com/jackc/pgx/v5"

	"github.com/git-binky/git-binky/adapters"
)

// Postgres implements adapters.Adapter, Cloner and Lister.
type Postgres struct{}

// New returns the adapter.
func New() *Postgres { return &Postgres{} }

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

// literal quotes a string literal; used only for binky-made values (hex
// passwords, marks), which cannot hold a quote, and checked anyway.
func literal(s string) (string, error) {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == ':' || r == '=' || r == ';' || r == '_' || r == '-') {
			return "", fmt.Errorf("refusing to write %q into SQL", s)
		}
	}
	return "'" + s + "'", nil
}

func connect(ctx context.Context, adminURL, db string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(adminURL)
	if err != nil {
		return nil, fmt.Errorf("postgres admin_url %s: %w", adapters.Redact(adminURL), err)
	}
	if db != "" {
		cfg.Database = db
	}
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres at %s: %w", adapters.Redact(adminURL), err)
	}
	return c, nil
}

// owner returns the owner marked on database name, whether it exists.
func owner(ctx context.Context, c *pgx.Conn, name string) (adapters.Owner, bool, error) {
	return marked(ctx, c, `SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1`, name)
}

// roleOwner is owner for roles.
func roleOwner(ctx context.Context, c *pgx.Conn, name string) (adapters.Owner, bool, error) {
	return marked(ctx, c, `SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = $1`, name)
}

// marked runs a query for one object's comment and reads binky's mark in it.
func marked(ctx context.Context, c *pgx.Conn, query, name string) (adapters.Owner, bool, error) {
	var comment *string
	err := c.QueryRow(ctx, query, name).Scan(&comment)
	if errors.Is(err, pgx.ErrNoRows) {
		return adapters.Owner{}, false, nil
	}
	if err != nil {
		return adapters.Owner{}, false, err
	}
	if comment == nil {
		return adapters.Owner{}, true, nil
	}
	o, _ := adapters.ParseMark(*comment)
	return o, true, nil
}

// Provision creates the world's role and database, marks both, and shuts
// every other role (PUBLIC) out of the database.
func (p *Postgres) Provision(ctx context.Context, s adapters.Slice) error {
	return p.create(ctx, s, "")
}

// walLogUpTo is the largest template cloned with STRATEGY WAL_LOG.
const walLogUpTo = 32 << 20

// Clone creates the world's database as a copy of template.
func (p *Postgres) Clone(ctx context.Context, template string, s adapters.Slice) error {
	return p.create(ctx, s, template)
}

func (p *Postgres) create(ctx context.Context, s adapters.Slice, template string) error {
	c, err := connect(ctx, s.AdminURL, "")
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	pw, err := literal(s.Password)
	if err != nil {
		return err
	}
	mark, err := literal(adapters.Mark(s.Owner()))
	if err != nil {
		return err
	}
	if w, exists, err := roleOwner(ctx, c, s.Name); err != nil {
		return err
	} else if exists && !w.Is(s.Owner()) {
		return fmt.Errorf("postgres role %s: %w", s.Name, adapters.ErrTaken)
	} else if !exists {
		if _, err := c.Exec(ctx, "CREATE ROLE "+ident(s.Name)+" LOGIN PASSWORD "+pw); err != nil {
			return fmt.Errorf("create role %s: %w", s.Name, err)
		}
		// An admin that is not a superuser (CREATEROLE, CREATEDB) must be
		// a member of a role to create a database owned by it.
		if _, err := c.Exec(ctx, "GRANT "+ident(s.Name)+" TO CURRENT_USER"); err != nil {
			return fmt.Errorf("grant role %s to the admin: %w", s.Name, err)
		}
		if _, err := c.Exec(ctx, "COMMENT ON ROLE "+ident(s.Name)+" IS "+mark); err != nil {
			return err
		}
	} else if _, err := c.Exec(ctx, "ALTER ROLE "+ident(s.Name)+" LOGIN PASSWORD "+pw); err != nil {
		return err
	}
	w, exists, err := owner(ctx, c, s.Name)
	if err != nil {
		return err
	}
	if exists && !w.Is(s.Owner()) {
		return fmt.Errorf("postgres database %s: %w", s.Name, adapters.ErrTaken)
	}
	if !exists {
		stmt := "CREATE DATABASE " + ident(s.Name) + " OWNER " + ident(s.Name)
		if template != "" {
			// A template cannot be copied while anyone is connected to it.
			if _, err := c.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, template); err != nil {
				return err
			}
			stmt += " TEMPLATE " + ident(template)
			// PostgreSQL 15 copies through the WAL by default: for a small
			// template that beats FILE_COPY, whose two forced checkpoints
			// and per-file fsyncs cost a fixed ~100 ms; a large one is
			// written twice that way, and copying its files is faster
			// (measured in docs/performance.md; crossover near 40 MiB).
			var version int
			if err := c.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err == nil && version >= 150000 {
				var size int64
				if err := c.QueryRow(ctx, "SELECT pg_database_size($1::text)", template).Scan(&size); err != nil || size > walLogUpTo {
					stmt += " STRATEGY FILE_COPY"
				}
			}
		}
		if _, err := c.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("create database %s: %w", s.Name, err)
		}
		if _, err := c.Exec(ctx, "COMMENT ON DATABASE "+ident(s.Name)+" IS "+mark); err != nil {
			return err
		}
	}
	for _, stmt := range []string{
		"REVOKE CONNECT, TEMPORARY ON DATABASE " + ident(s.Name) + " FROM PUBLIC",
		"GRANT CONNECT, TEMPORARY ON DATABASE " + ident(s.Name) + " TO " + ident(s.Name),
	} {
		if _, err := c.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	if template != "" {
		// The copy's objects belong to the template's role; hand them to
		// this world's role, inside the copy only.
		dc, err := connect(ctx, s.AdminURL, s.Name)
		if err != nil {
			return err
		}
		defer dc.Close(ctx)
		if _, exists, _ := roleOwner(ctx, dc, template); exists {
			if _, err := dc.Exec(ctx, "REASSIGN OWNED BY "+ident(template)+" TO "+ident(s.Name)); err != nil {
				return fmt.Errorf("reassign objects of %s in %s: %w", template, s.Name, err)
			}
		}
		if _, err := dc.Exec(ctx, "ALTER SCHEMA public OWNER TO "+ident(s.Name)); err != nil {
			return err
		}
	}
	return nil
}

// PrepareTemplate makes a built golden database ready to be copied: it
// must not belong to its own role, or handing that role's objects to each
// world (REASSIGN OWNED) would hand it the template too. Callers serialise
// it (the golden lock): two first ALTERs at once conflict.
func (p *Postgres) PrepareTemplate(ctx context.Context, adminURL, name string) error {
	c, err := connect(ctx, adminURL, "")
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "ALTER DATABASE "+ident(name)+" OWNER TO CURRENT_USER"); err != nil {
		return fmt.Errorf("template %s: %w", name, err)
	}
	return nil
}

// Resolve returns the world's URL: its own role, never the admin's.
func (p *Postgres) Resolve(ctx context.Context, s adapters.Slice) (adapters.Address, error) {
	admin, err := url.Parse(s.AdminURL)
	if err != nil {
		return nil, fmt.Errorf("postgres admin_url: %w", err)
	}
	host, port := admin.Hostname(), admin.Port()
	if port == "" {
		port = "5432"
	}
	if host == "" {
		host = "127.0.0.1"
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword(s.Name, s.Password), Host: net.JoinHostPort(host, port), Path: "/" + s.Name}
	q := url.Values{}
	if mode := admin.Query().Get("sslmode"); mode != "" {
		q.Set("sslmode", mode)
	}
	u.RawQuery = q.Encode()
	return adapters.Address{"url": u.String(), "host": host, "port": port, "name": s.Name, "database": s.Name,
		"user": s.Name, "password": s.Password}, nil
}

// Teardown ends the slice's sessions and drops its database and role, each
// only if marked for s.World.
func (p *Postgres) Teardown(ctx context.Context, s adapters.Slice) error {
	c, err := connect(ctx, s.AdminURL, "")
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	var errs []error
	w, exists, err := owner(ctx, c, s.Name)
	switch {
	case err != nil:
		return err
	case exists && !w.Is(s.Owner()):
		errs = append(errs, fmt.Errorf("database %s: %w", s.Name, adapters.ErrNotOurs))
	case exists:
		if _, err := c.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, s.Name); err != nil {
			return err
		}
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(s.Name)+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database %s: %w", s.Name, err)
		}
	}
	rw, rexists, err := roleOwner(ctx, c, s.Name)
	switch {
	case err != nil:
		return err
	case rexists && !rw.Is(s.Owner()):
		errs = append(errs, fmt.Errorf("role %s: %w", s.Name, adapters.ErrNotOurs))
	case rexists:
		if _, err := c.Exec(ctx, "DROP ROLE IF EXISTS "+ident(s.Name)); err != nil {
			return fmt.Errorf("drop role %s: %w", s.Name, err)
		}
	}
	return errors.Join(errs...)
}

// List returns the databases and roles binky marked on the server.
func (p *Postgres) List(ctx context.Context, adminURL string) ([]adapters.Owned, error) {
	c, err := connect(ctx, adminURL, "")
	if err != nil {
		return nil, err
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT 'database', datname, shobj_description(oid, 'pg_database') FROM pg_database WHERE NOT datistemplate
		UNION ALL SELECT 'role', rolname, shobj_description(oid, 'pg_authid') FROM pg_roles`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []adapters.Owned
	for rows.Next() {
		var kind, name string
		var comment *string
		if err := rows.Scan(&kind, &name, &comment); err != nil {
			return nil, err
		}
		if comment != nil {
			if o, ok := adapters.ParseMark(*comment); ok {
				out = append(out, adapters.Owned{Slice: name, Kind: kind, Name: name, Owner: o})
			}
		}
	}
	return out, rows.Err()
}

// Capabilities says Postgres clones server-side and lists its slices.
func (p *Postgres) Capabilities() adapters.Capabilities {
	return adapters.Capabilities{Clone: true, List: true}
}

// Exists reports whether a database of that name exists (for golden
// templates).
func (p *Postgres) Exists(ctx context.Context, adminURL, name string) (bool, error) {
	c, err := connect(ctx, adminURL, "")
	if err != nil {
		return false, err
	}
	defer c.Close(ctx)
	_, exists, err := owner(ctx, c, name)
	return exists, err
}

var (
	_ adapters.Adapter = (*Postgres)(nil)
	_ adapters.Cloner  = (*Postgres)(nil)
	_ adapters.Lister  = (*Postgres)(nil)
)
