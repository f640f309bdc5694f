package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/git-binky/git-binky/adapters"
)

// A spare is a template's next clone, made in the background after each
// clone, so that the next world's up renames it (instant) instead of
// copying the template while it waits (40-300 ms for 21.6 MiB, seconds for
// a large one). It costs one more copy of each template on disk; dropping
// the template drops it.
//
// The spare database and a NOLOGIN role of its own share a name and are
// marked as the template is; the role owns the database until a world
// takes it, so a spare a crash left unmarked is provably binky's (only
// binky creates a database owned by that role). It must not be owned by
// the template's role: every clone runs REASSIGN OWNED BY that role, which
// would hand a spare it owned (a shared object) to the cloning world.
//
// Once copied, a spare is prepared: everything in it that was the
// template role's (and its schema public) is handed to the spare's role,
// from a connection into it. A world then takes a prepared spare in one
// transaction that renames the database and that role to the world's, so
// its up opens no connection into its new database (a backend's start was
// ~20 ms of each up on a VM). A spare that is not prepared (a crash, or an
// older binky made it) is taken the first way: renamed, then its objects
// handed over from inside.
const spareSuffix = adapters.SpareSuffix

// spareOf is the spare's name, or "" for a template whose name leaves no
// room for the suffix.
func spareOf(template string) string {
	if len(template)+len(spareSuffix) > 63 {
		return ""
	}
	return template + spareSuffix
}

// spareLocks is the advisory-lock space (its first key, "bink") of the
// session lock that orders making, taking and dropping a template's spare,
// and dropping the template, across connections and processes.
const spareLocks = 0x62696e6b

// lockSpare takes that lock for template on c, and returns its release.
func lockSpare(ctx context.Context, c *pgx.Conn, template string) (func(), error) {
	if _, err := c.Exec(ctx, "SELECT pg_advisory_lock($1, hashtext($2))", spareLocks, template); err != nil {
		return nil, fmt.Errorf("lock the spare of %s: %w", template, err)
	}
	return func() {
		// A session lock outlives its holder's use of the connection: one
		// that could not be released must not go back to a pool holding it.
		if _, err := c.Exec(context.Background(), "SELECT pg_advisory_unlock($1, hashtext($2))", spareLocks, template); err != nil {
			c.Close(context.Background())
		}
	}, nil
}

// spares are the spares being made in this process, by server and template.
var spares adapters.Background

func spareKey(adminURL, template string) string { return adminURL + "\x00" + template }

// waitSpare returns once no spare of template is being made here.
func waitSpare(ctx context.Context, adminURL, template string) error {
	return spares.Wait(ctx, spareKey(adminURL, template))
}

// makeSpare starts making template's spare, unless it is being made.
// Failing is harmless: the next clone copies the template as before.
func makeSpare(adminURL, template string) {
	if spareOf(template) == "" {
		return
	}
	spares.Go(spareKey(adminURL, template), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		_ = createSpare(ctx, adminURL, template)
	})
}

// MakeSpare starts making template's spare (adapters.Sparer).
func (p *Postgres) MakeSpare(adminURL, template string) { makeSpare(adminURL, template) }

// HasSpare reports whether template's spare exists or is being made here
// (adapters.Sparer).
func (p *Postgres) HasSpare(ctx context.Context, adminURL, template string) (bool, error) {
	spare := spareOf(template)
	if spare == "" {
		return false, nil
	}
	if spares.Running(spareKey(adminURL, template)) {
		return true, nil
	}
	return p.Exists(ctx, adminURL, spare)
}

func createSpare(ctx context.Context, adminURL, template string) error {
	c, release, err := copyingAdmin(ctx, adminURL)
	if err != nil {
		return err
	}
	defer release()
	// Under the lock the template's Teardown takes: a template dropped
	// meanwhile is seen gone here, and never gets a spare role it would
	// not drop.
	unlock, err := lockSpare(ctx, c, template)
	if err != nil {
		return err
	}
	defer unlock()
	spare := spareOf(template)
	tmpl, err := database(ctx, c, template)
	if err != nil || !tmpl.exists || !tmpl.marked {
		return err
	}
	mark, err := literal(adapters.Mark(tmpl.mark))
	if err != nil {
		return err
	}
	ro, exists, marked, err := roleOwner(ctx, c, spare)
	switch {
	case err != nil:
		return err
	case !exists:
		if err := inTx(ctx, c, "CREATE ROLE "+ident(spare)+" NOLOGIN", "COMMENT ON ROLE "+ident(spare)+" IS "+mark, "GRANT "+ident(spare)+" TO CURRENT_USER"); err != nil {
			return err
		}
	case !marked || ro != tmpl.mark:
		return nil // a role of that name that is not binky's: no spare
	}
	if sd, err := database(ctx, c, spare); err != nil {
		return err
	} else if sd.exists {
		// One an older binky prepared is finished here, once: no world
		// takes it until then.
		if ours, err := isSpareOf(ctx, c, sd, tmpl, spare); err != nil || !ours {
			return err
		}
		if o, err := spareOwnership(ctx, c, spare, template); err != nil || !o.preparedBefore() {
			return err
		}
		return prepareSpare(ctx, c, adminURL, spare, template)
	}
	stmt, err := createStatement(ctx, c, spare, spare, template, forSpare)
	if err != nil {
		return err
	}
	// Nobody connects to a spare from the moment it exists (CREATE
	// DATABASE alone would give PUBLIC CONNECT until the REVOKE): a world's
	// session in it would write into the next world's database, and hold
	// off its rename. Taking it allows connections again.
	if _, err := c.Exec(ctx, stmt+" ALLOW_CONNECTIONS false"); err != nil {
		return err
	}
	if err := inTx(ctx, c, "REVOKE ALL ON DATABASE "+ident(spare)+" FROM PUBLIC", "COMMENT ON DATABASE "+ident(spare)+" IS "+mark); err != nil {
		return err
	}
	return prepareSpare(ctx, c, adminURL, spare, template)
}

// prepareSpare hands what the template's role owns in the spare, and its
// schema public, to the spare's role. The spare is opened for it: no world
// may connect to it by then (CONNECT is revoked from PUBLIC), and it is
// closed again however this ends, so that no session sits in it when it
// is renamed. Cut off, the spare stays as copied, and is taken the slower
// way.
func prepareSpare(ctx context.Context, c *pgx.Conn, adminURL, spare, template string) error {
	if _, err := c.Exec(ctx, "ALTER DATABASE "+ident(spare)+" ALLOW_CONNECTIONS true"); err != nil {
		return err
	}
	defer c.Exec(context.WithoutCancel(ctx), "ALTER DATABASE "+ident(spare)+" ALLOW_CONNECTIONS false")
	dc, err := connect(ctx, adminURL, spare)
	if err != nil {
		return err
	}
	defer dc.Close(context.WithoutCancel(ctx))
	stmts, err := handOver(ctx, dc, template, spare)
	if err != nil {
		return err
	}
	return inTx(ctx, dc, append(stmts, "ALTER SCHEMA public OWNER TO "+ident(spare))...)
}

// ownership is who owns what of a spare, as PostgreSQL records it for
// every database in pg_shdepend (readable from the admin's own database).
type ownership struct {
	// tmpl: the template's role owns something in the spare that REASSIGN
	// OWNED moves. Not its default privileges (tmplDefaults), nor its user
	// mappings, which stay in every copy.
	tmpl bool
	// tmplDefaults: the template's role still has default privileges in
	// the spare, which REASSIGN leaves where they are and prepareSpare
	// moves with their own statements: a spare an older binky prepared.
	tmplDefaults bool
	// inside: the spare's role owns something in the spare (its schema
	// public at least, once prepareSpare ran).
	inside bool
	// elsewhere: the spare's role owns something anywhere else than in
	// the spare and the spare database itself (a world an older binky
	// made from a prepared spare): renaming it would hand that to a world.
	elsewhere bool
}

// prepared reports whether prepareSpare ran to the end on a spare whose
// role owns nothing else: the one kind the quick take may rename to a
// world's role.
func (o ownership) prepared() bool { return !o.tmpl && !o.tmplDefaults && o.inside && !o.elsewhere }

// preparedBefore reports whether an older binky prepared the spare, before
// default privileges were moved: prepareSpare, run again, finishes it.
func (o ownership) preparedBefore() bool {
	return !o.tmpl && o.tmplDefaults && o.inside && !o.elsewhere
}

// unprepared reports whether the spare is as copied: its role owns nothing
// in it, so a world that takes the database alone and hands the template
// role's objects to itself owns everything in it.
func (o ownership) unprepared() bool { return !o.inside }

func spareOwnership(ctx context.Context, c *pgx.Conn, spare, template string) (ownership, error) {
	var o ownership
	err := c.QueryRow(ctx, `WITH sd AS (SELECT oid FROM pg_database WHERE datname = $1),
		sr AS (SELECT oid FROM pg_roles WHERE rolname = $1), tr AS (SELECT oid FROM pg_roles WHERE rolname = $2),
		owned AS (SELECT * FROM pg_shdepend WHERE deptype = 'o')
	SELECT
		EXISTS (SELECT FROM owned WHERE dbid = (SELECT oid FROM sd) AND refobjid = (SELECT oid FROM tr)
			AND classid NOT IN ('pg_default_acl'::regclass, 'pg_user_mapping'::regclass)),
		EXISTS (SELECT FROM owned WHERE dbid = (SELECT oid FROM sd) AND refobjid = (SELECT oid FROM tr)
			AND classid = 'pg_default_acl'::regclass),
		EXISTS (SELECT FROM owned WHERE dbid = (SELECT oid FROM sd) AND refobjid = (SELECT oid FROM sr)),
		EXISTS (SELECT FROM owned WHERE refobjid = (SELECT oid FROM sr) AND dbid IS DISTINCT FROM (SELECT oid FROM sd)
			AND NOT (dbid = 0 AND classid = 'pg_database'::regclass AND objid = (SELECT oid FROM sd)))`,
		spare, template).Scan(&o.tmpl, &o.tmplDefaults, &o.inside, &o.elsewhere)
	return o, err
}

// spareRoleIs reports whether the spare's role is marked as owner.
func spareRoleIs(ctx context.Context, c *pgx.Conn, spare string, owner adapters.Owner) (bool, error) {
	ro, exists, marked, err := roleOwner(ctx, c, spare)
	return exists && marked && ro == owner, err
}

// isSpareOf reports whether the database sd, named spare, is binky's
// spare of the template tmpl: marked as the template is, or unmarked and
// owned by the spare's role, marked so (a crash between copy and mark).
func isSpareOf(ctx context.Context, c *pgx.Conn, sd, tmpl dbInfo, spare string) (bool, error) {
	if !tmpl.marked {
		return false, nil
	}
	if sd.marked {
		return sd.mark == tmpl.mark, nil
	}
	if sd.owner != spare {
		return false, nil
	}
	return spareRoleIs(ctx, c, spare, tmpl.mark)
}

// spareToTake waits for a spare of template being made here, takes the
// lock that orders spares (the caller releases it) and reports whether
// there is a spare of binky's to take, and who owns what of it.
func spareToTake(ctx context.Context, c *pgx.Conn, adminURL, template string) (ours bool, o ownership, unlock func(), err error) {
	unlock = func() {}
	spare := spareOf(template)
	if spare == "" {
		return false, o, unlock, nil
	}
	if err := waitSpare(ctx, adminURL, template); err != nil {
		return false, o, unlock, err
	}
	if unlock, err = lockSpare(ctx, c, template); err != nil {
		return false, o, func() {}, err
	}
	// The template, whose mark its spare carries, read under the lock.
	tmpl, err := database(ctx, c, template)
	if err != nil || !tmpl.exists {
		return false, o, unlock, err
	}
	sd, err := database(ctx, c, spare)
	if err != nil || !sd.exists {
		return false, o, unlock, err
	}
	if ours, err = isSpareOf(ctx, c, sd, tmpl, spare); err != nil || !ours {
		return false, o, unlock, err
	}
	o, err = spareOwnership(ctx, c, spare, template)
	return ours, o, unlock, err
}

// takePreparedSpare makes the slice s out of template's prepared spare in
// one transaction: the database renamed, opened and handed to the admin,
// the spare's role (which owns everything in it) renamed to the slice's
// role and given its login clause (password and connection limit), both marked with mark (a quoted literal), and
// CONNECT for the role only. It reports whether it did: with no prepared
// spare of binky's, or a failure (nothing changed), the caller makes the
// slice the other way. The slice's role must not exist yet.
func takePreparedSpare(ctx context.Context, c *pgx.Conn, s adapters.Slice, template, login, mark string) (bool, error) {
	ours, o, unlock, err := spareToTake(ctx, c, s.AdminURL, template)
	defer unlock()
	if err != nil || !ours || !o.prepared() {
		return false, err
	}
	spare, name := ident(spareOf(template)), ident(s.Name)
	err = inTx(ctx, c,
		"ALTER DATABASE "+spare+" RENAME TO "+name,
		"ALTER DATABASE "+name+" ALLOW_CONNECTIONS true",
		"ALTER DATABASE "+name+" OWNER TO CURRENT_USER",
		"ALTER ROLE "+spare+" RENAME TO "+name,
		"ALTER ROLE "+name+" "+login,
		"COMMENT ON ROLE "+name+" IS "+mark,
		"COMMENT ON DATABASE "+name+" IS "+mark,
		"REVOKE ALL ON DATABASE "+name+" FROM PUBLIC",
		"GRANT CONNECT, TEMPORARY, CREATE ON DATABASE "+name+" TO "+name)
	return err == nil, nil
}

// takeSpare renames template's spare to name and marks it with mark (a
// quoted literal), in one transaction, if there is a spare of binky's that
// its role owns nothing in (waiting for one being made here): it reports
// whether it did. The caller then hands the template role's objects to its
// own. A spare its role owns anything in is left alone: that role will be
// the next spare's, so a world taking the database alone would share it.
// A spare another up renamed first is no error: the caller copies the
// template.
func takeSpare(ctx context.Context, c *pgx.Conn, adminURL, template, name, mark string) (bool, error) {
	ours, o, unlock, err := spareToTake(ctx, c, adminURL, template)
	defer unlock()
	if err != nil || !ours || !o.unprepared() {
		return false, err
	}
	spare := spareOf(template)
	// Renamed, opened, the admin's and this slice's at once: a crash
	// leaves either the spare or the slice's marked database, and the
	// spare's role owns nothing the template's Teardown would trip on.
	err = inTx(ctx, c, "ALTER DATABASE "+ident(spare)+" RENAME TO "+ident(name), "ALTER DATABASE "+ident(name)+" ALLOW_CONNECTIONS true",
		"ALTER DATABASE "+ident(name)+" OWNER TO CURRENT_USER", "COMMENT ON DATABASE "+ident(name)+" IS "+mark)
	return err == nil, nil
}

// dropSpare drops the spare of s, database and role, when s is a template
// whose spare is binky's. The caller holds lockSpare: a spare being made
// meanwhile waits for it, then finds its template gone.
func dropSpare(ctx context.Context, c *pgx.Conn, s adapters.Slice) error {
	spare := spareOf(s.Name)
	if spare == "" {
		return nil
	}
	roleOurs, err := spareRoleIs(ctx, c, spare, s.Owner())
	if err != nil {
		return err
	}
	sd, err := database(ctx, c, spare)
	if err != nil {
		return err
	}
	if sd.exists {
		switch {
		case sd.marked && sd.mark.Is(s.Owner()), !sd.marked && sd.owner == spare && roleOurs:
			if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(spare)+" WITH (FORCE)"); err != nil {
				return fmt.Errorf("drop database %s: %w", spare, err)
			}
		case sd.owner == spare:
			return nil // not binky's, and owned by the role: both left alone
		}
	}
	if roleOurs {
		return dropRole(ctx, c, s.AdminURL, spare)
	}
	return nil
}

// purpose is what a database is made for, which decides how it is copied.
type purpose int

const (
	// forWorld: a world's database, on its up's path.
	forWorld purpose = iota
	// forSpare: a template's next clone, made in the background.
	forSpare
	// forTemplate: a golden template, built once and copied by every
	// clone after it.
	forTemplate
)

// createStatement is the CREATE DATABASE of name, owned by owner, copied
// from template (template1 when ""), with the copy strategy that suits
// what the database is for: the fastest for the template's size on an
// up's path; for a spare, the one ready soonest with the least CPU; for a
// golden template, the one that leaves its first copy least to sync.
func createStatement(ctx context.Context, c *pgx.Conn, name, owner, template string, why purpose) (string, error) {
	stmt := "CREATE DATABASE " + ident(name) + " OWNER " + ident(owner)
	if template == "" {
		// template1 is copied only with no one connected: a world may
		// connect there on a server of your own, and one that held a
		// session open made every new database fail. Worlds' sessions go;
		// anyone else's stay (and the copy waits for them as before).
		if _, err := c.Exec(ctx, `SELECT pg_terminate_backend(a.pid) FROM pg_stat_activity a JOIN pg_roles r ON r.oid = a.usesysid
			WHERE a.datname = 'template1' AND a.pid <> pg_backend_pid() AND shobj_description(r.oid, 'pg_authid') LIKE 'binky:%'`); err != nil {
			return "", err
		}
		// A golden template's ~300 files are copied and synced as they are
		// made (FILE_COPY), for about what WAL_LOG takes on a fresh server:
		// made through the WAL, they were all left for the checkpoint that
		// begins its first clone (a spare's FILE_COPY), which synced 319
		// files rather than 52 and delayed the first world by ~80 ms
		// (docs/performance.md, round 21).
		if why == forTemplate && serverVersion(ctx, c) >= 150000 {
			stmt += " STRATEGY FILE_COPY"
		}
		return stmt, nil
	}
	// A template cannot be copied while anyone is connected to it.
	if _, err := c.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, template); err != nil {
		return "", err
	}
	stmt += " TEMPLATE " + ident(template)
	// PostgreSQL 15 copies through the WAL by default: for a small
	// template that beats FILE_COPY, whose two forced checkpoints and
	// per-file fsyncs cost a fixed ~100 ms; a large one is written twice
	// that way, and copying its files is faster (measured in
	// docs/performance.md; crossover near 40 MiB).
	//
	// A spare is copied off every up's path, and what an up waits for is
	// that it be ready: back-to-back ups on two cores waited 40-150 ms
	// each for a WAL_LOG spare, which copies every page through shared
	// buffers and the WAL on one core beside the next up's own work.
	// FILE_COPY copies files in the kernel and spends its time waiting on
	// fsync: every spare was ready in time (docs/performance.md, round 8).
	if serverVersion(ctx, c) >= 150000 {
		if why == forSpare {
			return stmt + " STRATEGY FILE_COPY", nil
		}
		var size int64
		if err := c.QueryRow(ctx, "SELECT pg_database_size($1::text)", template).Scan(&size); err != nil || size > walLogUpTo {
			stmt += " STRATEGY FILE_COPY"
		}
	}
	return stmt, nil
}

// serverVersion is the server's server_version_num, or 0 when it cannot
// be read (which chooses the server's default strategy).
func serverVersion(ctx context.Context, c *pgx.Conn) int {
	var version int
	if err := c.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return 0
	}
	return version
}
