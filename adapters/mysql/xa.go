package mysql

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// A prepared XA transaction (XA PREPARE) outlives the session that made
// it, a restart of the server, and its user being locked or dropped; any
// user may list them (XA RECOVER) and end them (XA COMMIT, XA ROLLBACK),
// and the server says neither whose one is nor which database it
// changes. So binky can neither end a world's own on its teardown nor
// keep a world from ending another's (SECURITY.md). What it does: refuse
// a template one still holds rows of (whoever commits it later would
// change every world copied from it since), and stop waiting for one in
// a drop after seconds, saying why, instead of the server's 50.

// errLockWait is ER_LOCK_WAIT_TIMEOUT.
const errLockWait = 1205

// dropWaitSeconds is how long a DROP DATABASE waits for rows a
// transaction holds. A world's sessions are killed first, so only a
// killed one still rolling back, or a prepared XA transaction, holds any.
const dropWaitSeconds = 10

// dropDatabase drops db, waiting at most dropWaitSeconds for a row lock,
// and says what to do when a transaction holds some.
func (c *session) dropDatabase(ctx context.Context, db string) error {
	if err := c.exec(ctx, fmt.Sprintf("SET SESSION innodb_lock_wait_timeout = %d", dropWaitSeconds)); err != nil {
		return err
	}
	err := c.exec(ctx, "DROP DATABASE IF EXISTS "+ident(db))
	if errNumber(err) == errLockWait {
		return fmt.Errorf("%w\n  a transaction still holds rows in %s: a prepared XA transaction outlives its session (as the admin, XA RECOVER lists them and XA ROLLBACK 'xid' ends one); then 'git binky gc' drops it", err, db)
	}
	return err
}

// preparedXA says how many prepared XA transactions the server holds, or
// -1 when it will not say (MySQL 8 asks for XA_RECOVER_ADMIN).
func (c *session) preparedXA(ctx context.Context) int {
	rows, err := c.c.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		return -1
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	if rows.Err() != nil {
		return -1
	}
	return n
}

// heldBy returns the first of db's base tables a transaction of another
// session has changed and not yet ended ("" when none). It asks InnoDB
// for a shared lock on each table (LOCK TABLES with autocommit off),
// which waits for any such transaction's intention lock: one statement,
// whatever the tables' size. Only a prepared XA transaction can hold one
// in a template: its user's sessions are killed before this runs.
func (c *session) heldBy(ctx context.Context, db string) (string, error) {
	tables, err := c.baseTables(ctx, db)
	if err != nil || len(tables) == 0 {
		return "", err
	}
	for _, stmt := range []string{"SET SESSION autocommit = 0", "SET SESSION innodb_lock_wait_timeout = 2"} {
		if err := c.exec(ctx, stmt); err != nil {
			return "", err
		}
	}
	defer func() {
		for _, stmt := range []string{"UNLOCK TABLES", "COMMIT", "SET SESSION autocommit = 1", "SET SESSION innodb_lock_wait_timeout = DEFAULT"} {
			c.c.ExecContext(context.Background(), stmt)
		}
	}()
	lock := func(tables []string) error {
		list := make([]string, len(tables))
		for i, t := range tables {
			list[i] = ident(db) + "." + ident(t) + " READ"
		}
		_, err := c.c.ExecContext(ctx, "LOCK TABLES "+strings.Join(list, ", "))
		if err == nil {
			// InnoDB's table locks last until the commit.
			_, err = c.c.ExecContext(ctx, "UNLOCK TABLES")
		}
		if err == nil {
			_, err = c.c.ExecContext(ctx, "COMMIT")
		}
		return err
	}
	err = lock(tables)
	if errNumber(err) != errLockWait {
		return "", err
	}
	// Which one, for the message: the rare path.
	for _, t := range tables {
		if err := lock([]string{t}); errNumber(err) == errLockWait {
			return t, nil
		} else if err != nil {
			return "", err
		}
	}
	return tables[0], nil
}

// checkNoPending refuses template db when a transaction still holds rows
// of it. It costs one XA RECOVER while the server holds no prepared XA
// transaction.
func (c *session) checkNoPending(ctx context.Context, db string) error {
	if c.preparedXA(ctx) == 0 {
		return nil
	}
	t, err := c.heldBy(ctx, db)
	if err != nil {
		return fmt.Errorf("check that no transaction holds its rows: %w", err)
	}
	if t != "" {
		return errors.New("a transaction left open holds rows of its table " + t + ", and could still change it after worlds are copied from it: " +
			"a prepared XA transaction outlives its session. End it in the migrate or seed (XA COMMIT or XA ROLLBACK), or as the admin (XA RECOVER lists them; XA ROLLBACK 'xid' ends one), then up again")
	}
	return nil
}
