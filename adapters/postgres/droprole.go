package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// dropRole drops a role of binky's. A world may GRANT on its own tables,
// or ALTER DEFAULT PRIVILEGES ... TO, any role it can name: another
// world's, a template's, a spare's. Each such privilege lives in the
// granting world's database and makes DROP ROLE fail (2BP01), which would
// leave the role behind for good. So on that failure, in each database
// that holds only privileges for the role, they are taken back (DROP
// OWNED, which then drops nothing) and the drop is tried again. Objects the
// role owns in another database (a world that could connect there, on a
// server binky does not run; a clone a crash left half handed over) are
// neither dropped nor given to the admin, who may be a superuser: the role
// stays, unable to log in, and the error names the database.
func dropRole(ctx context.Context, c *pgx.Conn, adminURL, role string) error {
	_, err := c.Exec(ctx, "DROP ROLE IF EXISTS "+ident(role))
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) || pe.Code != "2BP01" {
		return dropRoleErr(role, err)
	}
	// A database (or tablespace) it owns is a shared object, recorded in
	// pg_shdepend with no database of its own (dbid 0): the query below
	// never sees it, and the role kept its login.
	var shared []string
	if err := c.QueryRow(ctx, `SELECT coalesce(array_agg(what ORDER BY what), '{}') FROM (
		SELECT 'database ' || quote_ident(datname) AS what FROM pg_database d JOIN pg_roles r ON r.oid = d.datdba WHERE r.rolname = $1
		UNION ALL SELECT 'tablespace ' || quote_ident(spcname) FROM pg_tablespace t JOIN pg_roles r ON r.oid = t.spcowner WHERE r.rolname = $1) o`, role).Scan(&shared); err != nil {
		return err
	}
	if len(shared) > 0 {
		return shutRole(ctx, c, role, "it owns "+strings.Join(shared, ", "))
	}
	rows, err := c.Query(ctx, `SELECT d.datname, bool_or(s.deptype = 'o') FROM pg_shdepend s
		JOIN pg_database d ON d.oid = s.dbid JOIN pg_roles r ON r.oid = s.refobjid
		WHERE s.refclassid = 'pg_authid'::regclass AND r.rolname = $1 AND d.datallowconn
		GROUP BY d.datname ORDER BY d.datname`, role)
	if err != nil {
		return err
	}
	type holder struct {
		DB   string
		Owns bool
	}
	holders, err := pgx.CollectRows(rows, pgx.RowToStructByPos[holder])
	if err != nil {
		return err
	}
	for _, h := range holders {
		if h.Owns {
			return shutRole(ctx, c, role, "it owns objects in database "+h.DB)
		}
	}
	for _, h := range holders {
		if err := revokeIn(ctx, adminURL, h.DB, role); err != nil {
			return fmt.Errorf("drop role %s: take back what database %s grants it: %w", role, h.DB, err)
		}
	}
	_, err = c.Exec(ctx, "DROP ROLE IF EXISTS "+ident(role))
	return dropRoleErr(role, err)
}

// shutRole keeps a role binky cannot drop, because it owns what binky
// leaves as it is, but shut: a removed world's URL must not log in (an
// attack planted a large object in the postgres database, and another
// made a database owned by the role, and kept its login past the remove),
// nor a session stay open.
func shutRole(ctx context.Context, c *pgx.Conn, role, why string) error {
	shut := "the role can no longer log in"
	if _, err := c.Exec(ctx, "ALTER ROLE "+ident(role)+" NOLOGIN PASSWORD NULL"); err != nil {
		shut = fmt.Sprintf("and could not be shut: %v", err)
	}
	_, _ = c.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, role)
	return fmt.Errorf("drop role %s: %s, which binky leaves as it is (%s): "+
		"drop it or give it another owner (REASSIGN OWNED BY %s TO <role>, ALTER DATABASE ... OWNER TO), then run git binky gc", role, why, shut, ident(role))
}

// revokeIn takes back, in db, every privilege and default privilege
// granted to role, which owns nothing there. A world holding locks there
// makes it wait 10 s at most, not for good.
func revokeIn(ctx context.Context, adminURL, db, role string) error {
	c, err := connect(ctx, adminURL, db)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	return inTx(ctx, c, "SET LOCAL lock_timeout = '10s'", "DROP OWNED BY "+ident(role))
}

func dropRoleErr(role string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("drop role %s: %w%s", role, err, dependents(err))
}
