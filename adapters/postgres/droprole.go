package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// dropRole drops a role of binky's. A world may GRANT on its own tables,
// or ALTER DEFAULT PRIVILEGES ... TO, any role it can name: another
// world's, a template's, a spare's. Each such privilege lives in the
// granting world's database and makes DROP ROLE fail (2BP01), which would
// leave the role behind for good. So on that failure, in each database that
// still holds something for the role, what it owns passes to the admin
// (REASSIGN OWNED: nothing is dropped) and what was granted to it is taken
// back (DROP OWNED, which then drops nothing), and the drop is tried again.
func dropRole(ctx context.Context, c *pgx.Conn, adminURL, role string) error {
	_, err := c.Exec(ctx, "DROP ROLE IF EXISTS "+ident(role))
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) || pe.Code != "2BP01" {
		return dropRoleErr(role, err)
	}
	rows, err := c.Query(ctx, `SELECT DISTINCT d.datname FROM pg_shdepend s
		JOIN pg_database d ON d.oid = s.dbid JOIN pg_roles r ON r.oid = s.refobjid
		WHERE s.refclassid = 'pg_authid'::regclass AND r.rolname = $1 AND d.datallowconn`, role)
	if err != nil {
		return err
	}
	dbs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, db := range dbs {
		if err := releaseIn(ctx, adminURL, db, role); err != nil {
			return fmt.Errorf("drop role %s: take back what database %s holds for it: %w", role, db, err)
		}
	}
	_, err = c.Exec(ctx, "DROP ROLE IF EXISTS "+ident(role))
	return dropRoleErr(role, err)
}

func releaseIn(ctx context.Context, adminURL, db, role string) error {
	c, err := connect(ctx, adminURL, db)
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	return inTx(ctx, c, "REASSIGN OWNED BY "+ident(role)+" TO CURRENT_USER", "DROP OWNED BY "+ident(role))
}

func dropRoleErr(role string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("drop role %s: %w%s", role, err, dependents(err))
}
