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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

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

// pools keeps connections per admin URL, so that a burst of ups shares
// them: a new connection costs a backend process, TCP and SCRAM (~3 ms on
// a quick machine, 10-40 ms where page faults are dear, as in a VM), and
// one up made four of them before. Idle ones are closed after the pool's
// idle time, since each holds memory; one is pinged before reuse, so a restarted server
// costs a reconnect, not an error. A connection given back inside a
// transaction, or broken, is closed, never reused.
type pools struct {
	mu    sync.Mutex
	max   int32
	idle  time.Duration // an idle connection is closed within 1.5x this
	pools map[string]*pgxpool.Pool
}

// admins run short statements on the admin URL's own database.
var admins = &pools{max: 32, idle: time.Second}

// copiers run CREATE DATABASE ... TEMPLATE, apart from the admins: a
// backend that copied a database has mapped the ~16 MiB ring of shared
// buffers the copy went through, so it is large in RSS while kept, and a
// fresh backend pays for mapping them again (page faults: a copy of a 21.6
// MiB template took ~300 ms in new backends and ~120 ms in a kept one on a
// VM). Kept half a second after a copy, they serve the back-to-back
// copies of a burst of ups (each up's spare), and are gone within 750 ms
// of the last: a kept copier's RSS counts the shared buffers it mapped.
var copiers = &pools{max: 8, idle: 500 * time.Millisecond}

// acquire returns a connection to the admin URL's own database and the
// function that gives it back.
func (ps *pools) acquire(ctx context.Context, adminURL string) (*pgx.Conn, func(), error) {
	ps.mu.Lock()
	pool := ps.pools[adminURL]
	if pool == nil {
		cfg, err := pgxpool.ParseConfig(adminURL)
		if err != nil {
			ps.mu.Unlock()
			return nil, nil, fmt.Errorf("postgres admin_url %s: %w", adapters.Redact(adminURL), err)
		}
		safeSearchPath(cfg.ConnConfig)
		cfg.MinConns, cfg.MaxConns = 0, ps.max
		cfg.MaxConnIdleTime, cfg.HealthCheckPeriod = ps.idle, ps.idle/2
		cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return true }
		if pool, err = pgxpool.NewWithConfig(context.Background(), cfg); err != nil {
			ps.mu.Unlock()
			return nil, nil, fmt.Errorf("postgres admin_url %s: %w", adapters.Redact(adminURL), err)
		}
		if ps.pools == nil {
			ps.pools = map[string]*pgxpool.Pool{}
		}
		ps.pools[adminURL] = pool
	}
	ps.mu.Unlock()
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to postgres at %s: %w", adapters.Redact(adminURL), err)
	}
	return pc.Conn(), pc.Release, nil
}

// acquireAdmin returns a pooled admin connection for short statements.
func acquireAdmin(ctx context.Context, adminURL string) (*pgx.Conn, func(), error) {
	return admins.acquire(ctx, adminURL)
}

// copyingAdmin returns a pooled admin connection for copying a database.
func copyingAdmin(ctx context.Context, adminURL string) (*pgx.Conn, func(), error) {
	return copiers.acquire(ctx, adminURL)
}

// inTx runs stmts in one transaction: all of them happen, or none.
func inTx(ctx context.Context, c *pgx.Conn, stmts ...string) error {
	tx, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	for _, stmt := range stmts {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			tx.Rollback(ctx)
			return err
		}
	}
	return tx.Commit(ctx)
}

// safeSearchPath has an admin session find functions and operators in
// pg_catalog only. The admin works inside databases whose public schema a
// world's role (or the golden template's, i.e. a branch's migrate and
// seed) owns, and a function planted there that matches a call's argument
// types more closely than the built-in one would be chosen over it and run
// with the admin's rights (CVE-2018-1058); pg_temp last keeps temporary
// objects from being found first. Sent at connection start, it overrides
// any ALTER DATABASE/ROLE ... SET search_path.
func safeSearchPath(cfg *pgx.ConnConfig) {
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["search_path"] = "pg_catalog, pg_temp"
}

func connect(ctx context.Context, adminURL, db string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(adminURL)
	if err != nil {
		return nil, fmt.Errorf("postgres admin_url %s: %w", adapters.Redact(adminURL), err)
	}
	if db != "" {
		cfg.Database = db
	}
	safeSearchPath(cfg)
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres at %s: %w", adapters.Redact(adminURL), err)
	}
	return c, nil
}

// dbInfo is what binky reads of a database: the owner its mark names, and
// the role that owns it (its datdba).
type dbInfo struct {
	exists bool
	mark   adapters.Owner
	marked bool
	owner  string
}

func database(ctx context.Context, c *pgx.Conn, name string) (dbInfo, error) {
	var comment *string
	var d dbInfo
	err := c.QueryRow(ctx, `SELECT shobj_description(d.oid, 'pg_database'), pg_get_userbyid(d.datdba) FROM pg_database d WHERE datname = $1`, name).Scan(&comment, &d.owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, nil
	}
	if err != nil {
		return d, err
	}
	d.exists = true
	if comment != nil {
		d.mark, d.marked = adapters.ParseMark(*comment)
	}
	return d, nil
}

// roleOwner returns the owner marked on role name, and whether it exists.
func roleOwner(ctx context.Context, c *pgx.Conn, name string) (o adapters.Owner, exists, marked bool, err error) {
	var comment *string
	err = c.QueryRow(ctx, `SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = $1`, name).Scan(&comment)
	if errors.Is(err, pgx.ErrNoRows) {
		return o, false, false, nil
	}
	if err != nil {
		return o, false, false, err
	}
	if comment != nil {
		o, marked = adapters.ParseMark(*comment)
	}
	return o, true, marked, nil
}

// adoptable reports a mark an older binky wrote for this world, before
// marks named the home: the daemon provisions only the slices of its own
// records, so it is read as this home's and rewritten with the home.
func adoptable(o adapters.Owner, s adapters.Slice) bool { return o.Legacy() && o.World == s.World }

// ours reports whether database d is the slice's: marked so, or (what a
// crash between CREATE DATABASE and its mark leaves) unmarked and owned by
// the slice's role, which is marked as the slice's. Only binky creates a
// database owned by a world's role: the role itself cannot create one.
func (d dbInfo) ours(s adapters.Slice, roleIsOurs bool) bool {
	if d.marked {
		return d.mark.Is(s.Owner())
	}
	return d.owner == s.Name && roleIsOurs
}

// Provision creates the world's role and database, marks both, and shuts
// every other role (PUBLIC) out of the database.
func (p *Postgres) Provision(ctx context.Context, s adapters.Slice) error {
	return p.create(ctx, s, "")
}

// maxConnections caches each server's max_connections, by admin URL: it
// changes only with a restart, and a stale value moves a world's cap only.
var maxConnections sync.Map

// connectionLimit is how many connections the slice's role may hold at
// once: its options' connection_limit (0: no cap), else a third of the
// server's max_connections (at least 10). A world leaking connections, or
// opening all it can, then runs out of its own, not everyone's.
func connectionLimit(ctx context.Context, c *pgx.Conn, s adapters.Slice) (int, error) {
	if v, ok := s.Config["connection_limit"]; ok {
		n, err := adapters.OptionInt(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("postgres slice %s: options.connection_limit = %v: want a whole number of connections (0 for no cap)", s.Name, v)
		}
		if n == 0 {
			return -1, nil
		}
		return n, nil
	}
	mc, ok := maxConnections.Load(s.AdminURL)
	if !ok {
		var n int
		if err := c.QueryRow(ctx, "SELECT current_setting('max_connections')::int").Scan(&n); err != nil {
			return 0, err
		}
		maxConnections.Store(s.AdminURL, n)
		mc = n
	}
	return max(10, mc.(int)/3), nil
}

// walLogUpTo is the largest template cloned with STRATEGY WAL_LOG.
const walLogUpTo = 32 << 20

// Clone creates the world's database as a copy of template.
func (p *Postgres) Clone(ctx context.Context, template string, s adapters.Slice) error {
	return p.create(ctx, s, template)
}

// create makes the slice in steps, each of which a crash can cut off, and
// each of which the next create (or Teardown) recognises as binky's:
//  1. the role, its mark and the admin's membership, in one transaction;
//  2. the database, owned by that role (so an unmarked one is provably
//     ours), then its mark;
//  3. the database handed to the admin (the world's role must not own it,
//     or it could COMMENT ON DATABASE and rewrite its own mark), CONNECT
//     for the role only; in the database, the public schema (and a clone's
//     objects) handed to the role.
func (p *Postgres) create(ctx context.Context, s adapters.Slice, template string) error {
	// A pooled connection for everything but the copy itself (taking a
	// spare copies nothing): back-to-back ups skip a connection's start.
	c, release, err := acquireAdmin(ctx, s.AdminURL)
	if err != nil {
		return err
	}
	defer release()
	pw, err := literal(s.Password)
	if err != nil {
		return err
	}
	mark, err := literal(adapters.Mark(s.Owner()))
	if err != nil {
		return err
	}
	limit, err := connectionLimit(ctx, c, s)
	if err != nil {
		return err
	}
	// The role's login clause: its password, and how many connections it
	// may hold at once.
	login := "LOGIN PASSWORD " + pw + " CONNECTION LIMIT " + strconv.Itoa(limit)
	role := ident(s.Name)
	ro, exists, marked, err := roleOwner(ctx, c, s.Name)
	switch {
	case err != nil:
		return err
	case !exists:
		db, err := database(ctx, c, s.Name)
		if err != nil {
			return err
		}
		if db.exists && !db.ours(s, false) && !(db.marked && adoptable(db.mark, s)) {
			// Someone else's database of this name: refused before a role
			// is made for it, which nothing would then drop (the world
			// takes a salted name).
			return fmt.Errorf("postgres database %s: %w", s.Name, adapters.ErrTaken)
		}
		if template != "" {
			// The quick way, when the template has a prepared spare: role
			// and database in one transaction (spare.go).
			if !db.exists {
				// A template's first clone has no spare yet: it waits for
				// the one it starts, and takes it. Copying the template
				// itself beside that spare's copy, as it did, ran two copies
				// at once on the disk, and each took twice as long
				// (docs/performance.md, round 21).
				if spare := spareOf(template); spare != "" {
					if sd, err := database(ctx, c, spare); err == nil && !sd.exists {
						makeSpare(s.AdminURL, template)
					}
				}
				took, err := takePreparedSpare(ctx, c, s, template, login, mark)
				if err != nil {
					return err
				}
				if took {
					makeSpare(s.AdminURL, template)
					return adapters.Step(ctx, "postgres.spare_taken")
				}
			}
		}
		// An admin that is not a superuser (CREATEROLE, CREATEDB) must be
		// a member of a role to create a database owned by it.
		if err := inTx(ctx, c, "CREATE ROLE "+role+" "+login, "COMMENT ON ROLE "+role+" IS "+mark, "GRANT "+role+" TO CURRENT_USER"); err != nil {
			return fmt.Errorf("create role %s: %w", s.Name, err)
		}
	case marked && ro.Is(s.Owner()):
		if _, err := c.Exec(ctx, "ALTER ROLE "+role+" "+login); err != nil {
			return err
		}
	case marked && adoptable(ro, s):
		for _, stmt := range []string{"ALTER ROLE " + role + " " + login, "COMMENT ON ROLE " + role + " IS " + mark} {
			if _, err := c.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("upgrade the mark of role %s: %w", s.Name, err)
			}
		}
	default:
		return fmt.Errorf("postgres role %s: %w", s.Name, adapters.ErrTaken)
	}
	if err := adapters.Step(ctx, "postgres.role_created"); err != nil {
		return err
	}
	db, err := database(ctx, c, s.Name)
	if err != nil {
		return err
	}
	switch {
	case !db.exists:
		took := false
		if template != "" {
			if took, err = takeSpare(ctx, c, s.AdminURL, template, s.Name, mark); err != nil {
				return err
			}
			// The next world's copy starts now: beside this one's grants,
			// migrate and the next up's start, or, with no spare to take
			// (a template's first world), beside this copy, on the
			// other core.
			makeSpare(s.AdminURL, template)
		}
		if !took {
			// Connected before the template's sessions are ended, so the
			// copy follows at once.
			cc, closeCopier, err := copyingAdmin(ctx, s.AdminURL)
			if err != nil {
				return err
			}
			why := forWorld
			if s.Template {
				why = forTemplate
			}
			stmt, err := createStatement(ctx, cc, s.Name, s.Name, template, why)
			if err == nil {
				// Closed until PUBLIC's CONNECT is revoked (below): a
				// session another world opened in between would stay.
				_, err = cc.Exec(ctx, stmt+" ALLOW_CONNECTIONS false")
			}
			closeCopier()
			if err != nil {
				return fmt.Errorf("create database %s: %w", s.Name, err)
			}
			if template == "" {
				if err := refusePlanted(ctx, c, s.Name); err != nil {
					return err
				}
			}
		}
		if err := adapters.Step(ctx, "postgres.database_created"); err != nil {
			return err
		}
		fallthrough
	case db.ours(s, true) && !db.marked, db.marked && adoptable(db.mark, s):
		if _, err := c.Exec(ctx, "COMMENT ON DATABASE "+role+" IS "+mark); err != nil {
			return fmt.Errorf("mark database %s: %w", s.Name, err)
		}
		if err := adapters.Step(ctx, "postgres.database_marked"); err != nil {
			return err
		}
	case db.ours(s, true):
	default:
		return fmt.Errorf("postgres database %s: %w", s.Name, adapters.ErrTaken)
	}
	// Handed to the admin before the grants: a change of owner rewrites
	// the grants the old owner held. Opened (it was made closed) only once
	// PUBLIC may no longer connect. One round trip.
	grants := "ALTER DATABASE " + role + " OWNER TO CURRENT_USER; " +
		"REVOKE ALL ON DATABASE " + role + " FROM PUBLIC; " +
		"GRANT CONNECT, TEMPORARY, CREATE ON DATABASE " + role + " TO " + role + "; " +
		"ALTER DATABASE " + role + " ALLOW_CONNECTIONS true"
	if _, err := c.Exec(ctx, grants); err != nil {
		return fmt.Errorf("hand database %s to the admin and grant it to its role: %w", s.Name, err)
	}
	dc, err := connect(ctx, s.AdminURL, s.Name)
	if err != nil {
		return err
	}
	defer dc.Close(ctx)
	if template != "" {
		// The copy's objects and default privileges belong to the
		// template's role; hand them to this world's role, inside the copy
		// only, in one transaction.
		stmts, err := handOver(ctx, dc, template, s.Name)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		if len(stmts) > 0 {
			if err := inTx(ctx, dc, stmts...); err != nil {
				return fmt.Errorf("reassign objects of %s in %s: %w", template, s.Name, err)
			}
		}
	}
	// Owning the public schema is what an application needs to create and
	// alter its tables; owning the database is not.
	if _, err := dc.Exec(ctx, "ALTER SCHEMA public OWNER TO "+role); err != nil {
		return fmt.Errorf("hand schema public of %s to its role: %w", s.Name, err)
	}
	if err := adapters.Step(ctx, "postgres.schema_granted"); err != nil {
		return err
	}
	return nil
}

// Harden closes what a server binky runs itself leaves open to every
// role: CONNECT on the postgres and template1 databases (so a world's role
// reaches only its own database). It changes the whole server, so the
// daemon calls it only for its managed server, never for an admin_url
// server it did not create.
//
// Every up of a world on the managed server calls it, many at once: it
// changes nothing once done (a read), one at a time in this process, and
// a REVOKE another process raced ("tuple concurrently updated") is tried
// again, so that no up fails for it.
func (p *Postgres) Harden(ctx context.Context, adminURL string) error {
	c, release, err := acquireAdmin(ctx, adminURL)
	if err != nil {
		return err
	}
	defer release()
	const open = `SELECT EXISTS (SELECT 1 FROM pg_database d, aclexplode(coalesce(d.datacl, acldefault('d', d.datdba))) a
		WHERE d.datname IN ('postgres', 'template1') AND a.grantee = 0 AND a.privilege_type IN ('CONNECT', 'TEMPORARY'))`
	hardening.Lock()
	defer hardening.Unlock()
	for attempt := 1; ; attempt++ {
		var public bool
		if err := c.QueryRow(ctx, open).Scan(&public); err != nil {
			return fmt.Errorf("postgres at %s: read who may connect to postgres and template1: %w", adapters.Redact(adminURL), err)
		}
		if !public {
			return nil
		}
		_, err := c.Exec(ctx, "REVOKE CONNECT, TEMPORARY ON DATABASE postgres, template1 FROM PUBLIC")
		if err == nil {
			return nil
		}
		var pe *pgconn.PgError
		if attempt < 5 && errors.As(err, &pe) && strings.Contains(pe.Message, "concurrently updated") {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Duration(attempt) * 10 * time.Millisecond):
			}
			continue
		}
		return fmt.Errorf("postgres at %s: revoke CONNECT on postgres and template1: %w", adapters.Redact(adminURL), err)
	}
}

// hardening orders this process's Harden calls: two REVOKEs of one
// database's privileges at once make one fail.
var hardening sync.Mutex

// PrepareTemplate makes a built golden database ready to be copied: it
// must not belong to its own role, or handing that role's objects to each
// world (REASSIGN OWNED) would hand it the template too; and its role may
// no longer log in, nor keep a session: its URL was given to the migrate
// and seed that built it (a branch's code), which could otherwise change
// what every later world starts from. A rebuild provisions it again, which
// gives the login back. Callers serialise it (the golden lock): two first
// ALTERs at once conflict.
func (p *Postgres) PrepareTemplate(ctx context.Context, adminURL, name string) error {
	lit, err := literal(name)
	if err != nil {
		return err
	}
	c, release, err := acquireAdmin(ctx, adminURL)
	if err != nil {
		return err
	}
	defer release()
	// One round trip: it runs on every up that copies the template.
	if _, err := c.Exec(ctx, "ALTER DATABASE "+ident(name)+" OWNER TO CURRENT_USER; "+lockRole(name, lit)); err != nil {
		return fmt.Errorf("template %s: %w", name, err)
	}
	return nil
}

// Resolve returns the world's URL: its own role, never the admin's.
func (p *Postgres) Resolve(ctx context.Context, s adapters.Slice) (adapters.Address, error) {
	admin, err := adapters.ParseURL(s.AdminURL)
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
// only if it is the slice's (marked for s.World and s.Home, or, for a
// database a crash left unmarked, owned by the slice's marked role). The
// database goes first: a teardown cut off between the two leaves the
// marked role, which the next teardown (or gc) drops.
func (p *Postgres) Teardown(ctx context.Context, s adapters.Slice) error {
	c, release, err := acquireAdmin(ctx, s.AdminURL)
	if err != nil {
		return err
	}
	defer release()
	var errs []error
	ro, rexists, rmarked, err := roleOwner(ctx, c, s.Name)
	if err != nil {
		return err
	}
	roleOurs := rexists && rmarked && ro.Is(s.Owner())
	// A template's spare first, and the template after it, under the lock
	// that making and taking a spare take (spare.go).
	unlock, err := lockSpare(ctx, c, s.Name)
	if err != nil {
		return err
	}
	defer unlock()
	if err := dropSpare(ctx, c, s); err != nil {
		return err
	}
	db, err := database(ctx, c, s.Name)
	dbLeft := false
	switch {
	case err != nil:
		return err
	case db.exists && !db.ours(s, roleOurs):
		errs = append(errs, fmt.Errorf("database %s: %w", s.Name, adapters.ErrNotOurs))
		dbLeft = true
	case db.exists:
		if _, err := c.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, s.Name); err != nil {
			return err
		}
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(s.Name)+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database %s: %w", s.Name, err)
		}
		if err := adapters.Step(ctx, "postgres.teardown.database_dropped"); err != nil {
			return err
		}
	}
	switch {
	case rexists && !roleOurs && !dbLeft:
		// The database (this world's) is gone, its data with it: only the
		// role is left, which is not marked as this world's. Said as
		// such: "left alone" had a reset keep a record of data that was
		// no longer there.
		gone := "dropped"
		if !db.exists {
			gone = "not there"
		}
		return adapters.Kept("postgres database %s %s; role %s kept: it is not marked as this world's (drop it by hand if it is yours: DROP ROLE %s)",
			s.Name, gone, s.Name, ident(s.Name))
	case rexists && !roleOurs:
		errs = append(errs, fmt.Errorf("role %s: %w", s.Name, adapters.ErrNotOurs))
	case rexists:
		if err := dropRole(ctx, c, s.AdminURL, s.Name); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// refusePlanted drops the database just made from template1 and refuses
// it when it holds objects a role of binky's owns: on a server of your
// own, worlds may connect to template1 (see SECURITY.md), and one that
// could create there (a public schema open to all, as before PostgreSQL
// 15) planted a function every later world's database copied and ran as
// that world's role. A world's role owns nothing in template1 honestly.
func refusePlanted(ctx context.Context, c *pgx.Conn, db string) error {
	var owner string
	err := c.QueryRow(ctx, `SELECT r.rolname FROM pg_shdepend s JOIN pg_database d ON d.oid = s.dbid
		JOIN pg_roles r ON r.oid = s.refobjid
		WHERE d.datname = $1 AND s.refclassid = 'pg_authid'::regclass AND s.deptype = 'o'
		AND shobj_description(r.oid, 'pg_authid') LIKE 'binky:%' LIMIT 1`, db).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check database %s for objects a world planted in template1: %w", db, err)
	}
	_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(db)+" WITH (FORCE)")
	return fmt.Errorf("postgres database %s: template1, which new databases copy, holds objects that binky's role %s owns (a world can plant them where it may connect to template1): "+
		"drop them there (as the admin, in template1: REASSIGN OWNED BY %s TO <role> or DROP OWNED BY %s), close template1 to worlds (REVOKE CONNECT ON DATABASE template1 FROM PUBLIC), then up again",
		db, owner, ident(owner), ident(owner))
}

// List returns the databases and roles binky marked on the server, and the
// databases a crash left unmarked that are provably binky's: owned by a
// marked role of the same name.
func (p *Postgres) List(ctx context.Context, adminURL string) ([]adapters.Owned, error) {
	c, release, err := acquireAdmin(ctx, adminURL)
	if err != nil {
		return nil, err
	}
	defer release()
	rows, err := c.Query(ctx, `SELECT 'database', d.datname, coalesce(shobj_description(d.oid, 'pg_database'),
			CASE WHEN r.rolname = d.datname THEN shobj_description(r.oid, 'pg_authid') END)
		FROM pg_database d LEFT JOIN pg_roles r ON r.oid = d.datdba WHERE NOT d.datistemplate
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
	c, release, err := acquireAdmin(ctx, adminURL)
	if err != nil {
		return false, err
	}
	defer release()
	d, err := database(ctx, c, name)
	return d.exists, err
}

var (
	_ adapters.Adapter = (*Postgres)(nil)
	_ adapters.Cloner  = (*Postgres)(nil)
	_ adapters.Lister  = (*Postgres)(nil)
)

// dependents is what PostgreSQL says still depends on a role it refused to
// drop (2BP01: which objects, in which databases), for the error's reader.
func dependents(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "2BP01" && pe.Detail != "" {
		return " (" + strings.ReplaceAll(pe.Detail, "\n", "; ") + ")"
	}
	return ""
}
