package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/git-binky/git-binky/adapters"
)

// Clone creates the world's slice as a server-side copy of the template
// database: each base table from its SHOW CREATE TABLE (indexes, foreign
// keys and the AUTO_INCREMENT counter with it; CREATE TABLE ... LIKE would
// drop the foreign keys), its rows by INSERT ... SELECT with foreign key
// checks off, then routines, views and triggers from their SHOW CREATE,
// rewritten to the new schema and to the world's user as definer.
// Triggers come last, so the copied rows do not fire them. Anything it
// cannot copy faithfully (sequences, events) is an error: the daemon then
// falls back to provision + migrate + seed.
//
// The tables and rows come from the template's spare when it has a
// complete one (spare.go): moved in by one RENAME TABLE rather than copied
// on the up's path. The next spare is made in the background once the
// clone is done.
//
// A clone cut off (a crash, a failure at any step) left its database with
// part of a copy, which nothing can finish: the next Clone of the slice
// drops it and begins again.
func (m *MySQL) Clone(ctx context.Context, template string, s adapters.Slice) error {
	c, err := connect(ctx, s.AdminURL)
	if err != nil {
		return err
	}
	defer c.Close()
	template = DBName(template)
	if reserved[template] {
		return fmt.Errorf("mysql: %s cannot be a template", template)
	}
	if there, err := c.exists(ctx, "database", template); err != nil {
		return err
	} else if !there {
		return fmt.Errorf("mysql: template database %s does not exist", template)
	}
	db, user := DBName(s.Name), UserName(s.Name)
	if err := c.copyable(ctx, template); err != nil {
		return fmt.Errorf("clone %s from %s: %w", s.Name, template, err)
	}
	if err := c.dropCutClone(ctx, db, s); err != nil {
		return err
	}
	if err := m.provision(ctx, c, s); err != nil {
		return err
	}
	// The template's tables come from its spare when it has one (spare.go),
	// else from the template itself.
	took, err := c.takeSpare(ctx, s.AdminURL, template, db)
	if err != nil {
		return fmt.Errorf("clone %s from %s: %w", s.Name, template, err)
	}
	if !took {
		if err := c.copyTables(ctx, template, db); err != nil {
			return fmt.Errorf("clone %s from %s: %w", s.Name, template, err)
		}
		if err := adapters.Step(ctx, "mysql.tables_copied"); err != nil {
			return err
		}
	}
	if err := c.copyObjects(ctx, template, db, user); err != nil {
		return fmt.Errorf("clone %s from %s: %w", s.Name, template, err)
	}
	if err := adapters.Step(ctx, "mysql.objects_copied"); err != nil {
		return err
	}
	// The next world's tables, made while this one migrates and starts.
	makeSpare(ctx, s.AdminURL, template)
	return nil
}

// dropCutClone drops the slice's database when it exists and is marked as
// the slice's: only a clone cut off leaves one (the daemon clones a slice
// only when it has none it saw complete). Its marks stay, for provision.
func (c *session) dropCutClone(ctx context.Context, db string, s adapters.Slice) error {
	o, marked, err := c.mark(ctx, "database", db)
	if err != nil || !marked || !o.Is(s.Owner()) {
		return err
	}
	if err := c.dropDatabase(ctx, db); err != nil {
		return fmt.Errorf("drop the cut-off clone %s to begin again: %w", db, err)
	}
	return nil
}

func (c *session) strings(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := c.c.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// showCreate runs SHOW CREATE <what> and returns the column named col and
// the sql_mode the object was made under ("" for tables, which have none).
func (c *session) showCreate(ctx context.Context, what, col string) (stmt, mode string, err error) {
	rows, err := c.c.QueryContext(ctx, "SHOW CREATE "+what)
	if err != nil {
		return "", "", err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", "", err
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return "", "", err
		}
		return "", "", fmt.Errorf("SHOW CREATE %s returned nothing", what)
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return "", "", err
	}
	for i, name := range cols {
		switch {
		case strings.EqualFold(name, col):
			if !vals[i].Valid {
				return "", "", fmt.Errorf("SHOW CREATE %s: no %s (missing privilege?)", what, col)
			}
			stmt = vals[i].String
		case strings.EqualFold(name, "sql_mode"):
			mode = vals[i].String
		}
	}
	if stmt == "" {
		return "", "", fmt.Errorf("SHOW CREATE %s has no column %q", what, col)
	}
	return stmt, mode, nil
}

// definer matches the DEFINER clause at the head of a view, trigger or
// routine's CREATE statement.
var definer = regexp.MustCompile("DEFINER\\s*=\\s*(`(?:[^`]|``)*`|'[^']*'|[^\\s@]+)@(`(?:[^`]|``)*`|'[^']*'|[^\\s]+)")

// rewrite points a CREATE statement of the template at the new schema and
// makes the world's user its definer (else the copy would run with the
// golden user's rights, which reach the template and not the copy).
func rewrite(stmt, from, to, user string) string {
	if loc := definer.FindStringIndex(stmt); loc != nil {
		stmt = stmt[:loc[0]] + "DEFINER=" + account(user) + stmt[loc[1]:]
	}
	// Qualified names of the template: `tmpl`.x or tmpl.x (the golden
	// template's name is binky's, distinctive, and never a column's).
	qualified := regexp.MustCompile("(`" + regexp.QuoteMeta(strings.ReplaceAll(from, "`", "``")) + "`|\\b" + regexp.QuoteMeta(from) + "\\b)\\s*\\.")
	return qualified.ReplaceAllLiteralString(stmt, ident(to)+".")
}

// copyable refuses a template with what a clone cannot copy faithfully.
func (c *session) copyable(ctx context.Context, from string) error {
	if n, err := c.strings(ctx, "SELECT EVENT_NAME FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ?", from); err != nil {
		return err
	} else if len(n) > 0 {
		return fmt.Errorf("the template has events (%s), which binky does not copy", strings.Join(n, ", "))
	}
	if seqs, err := c.strings(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'SEQUENCE'", from); err != nil {
		return err
	} else if len(seqs) > 0 {
		return fmt.Errorf("the template has sequences (%s), which binky does not copy", strings.Join(seqs, ", "))
	}
	// A system-versioned table is no BASE TABLE: the copy would leave it
	// out. A MERGE table's rows are its underlying tables': copying both
	// would copy them twice.
	if odd, err := c.strings(ctx, "SELECT CONCAT(TABLE_NAME, ' (', COALESCE(ENGINE, TABLE_TYPE), IF(TABLE_TYPE = 'SYSTEM VERSIONED', ', system-versioned', ''), ')') "+
		"FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND (TABLE_TYPE = 'SYSTEM VERSIONED' OR ENGINE IN ('MRG_MyISAM', 'MRG_MYISAM', 'FEDERATED', 'CONNECT')) ORDER BY TABLE_NAME", from); err != nil {
		return err
	} else if len(odd) > 0 {
		return fmt.Errorf("the template has tables binky does not copy: %s", strings.Join(odd, ", "))
	}
	// The admin's INSERT ... SELECT computes stored generated columns and
	// checks constraints with the admin's rights; DES_DECRYPT with the
	// server's key file is the built-in allowed there whose answer depends
	// on them (an attack decrypted with it in a clone).
	if exprs, err := c.strings(ctx, "SELECT CONCAT(TABLE_NAME, '.', COLUMN_NAME) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND LOWER(GENERATION_EXPRESSION) REGEXP 'des_(de|en)crypt' "+
		"UNION ALL SELECT CONCAT(TABLE_NAME, ' check ', CONSTRAINT_NAME) FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ? AND LOWER(CHECK_CLAUSE) REGEXP 'des_(de|en)crypt'", from, from); err != nil {
		return err
	} else if len(exprs) > 0 {
		return fmt.Errorf("the template computes DES_DECRYPT or DES_ENCRYPT (%s), which a copy would run with the admin's rights", strings.Join(exprs, ", "))
	}
	return nil
}

// baseTables lists a schema's base tables, by name.
func (c *session) baseTables(ctx context.Context, schema string) ([]string, error) {
	return c.strings(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME", schema)
}

// copyTables copies every base table of from into to, with its rows.
func (c *session) copyTables(ctx context.Context, from, to string) error {
	// Session state for the copy: the new schema is the current one (an
	// unqualified name in a CREATE binds to it), and rows load in any
	// order whatever their foreign keys say. With both checks off, MariaDB
	// loads an INSERT ... SELECT into an empty table in bulk (MDEV-24621),
	// building each index once: a quarter to a third less time than with
	// them on. Each statement already takes that path on its own: one
	// transaction around all of them was measured no faster.
	//
	// NO_DIR_IN_CREATE: a template's table made with DATA DIRECTORY (where
	// the server allows symbolic links: an admin_url server may) would
	// otherwise have the admin create its copy's files at that path.
	for _, stmt := range []string{"USE " + ident(to), "SET SESSION FOREIGN_KEY_CHECKS = 0", "SET SESSION UNIQUE_CHECKS = 0",
		"SET SESSION sql_mode = CONCAT_WS(',', NULLIF(@@SESSION.sql_mode, ''), 'NO_DIR_IN_CREATE')"} {
		if err := c.exec(ctx, stmt); err != nil {
			return err
		}
	}
	defer c.c.ExecContext(context.Background(), "SET SESSION FOREIGN_KEY_CHECKS = 1")
	tables, err := c.baseTables(ctx, from)
	if err != nil {
		return err
	}
	for _, t := range tables {
		stmt, _, err := c.showCreate(ctx, "TABLE "+ident(from)+"."+ident(t), "Create Table")
		if err != nil {
			return fmt.Errorf("table %s: %w", t, err)
		}
		if err := c.exec(ctx, stmt); err != nil {
			return fmt.Errorf("table %s: %w", t, err)
		}
		// Named columns, not *: generated columns cannot be written, and
		// MariaDB's invisible columns are not in *.
		cols, err := c.strings(ctx, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? "+
			"AND (GENERATION_EXPRESSION IS NULL OR GENERATION_EXPRESSION = '') ORDER BY ORDINAL_POSITION", from, t)
		if err != nil {
			return err
		}
		list := make([]string, len(cols))
		for i, col := range cols {
			list[i] = ident(col)
		}
		colList := strings.Join(list, ", ")
		if err := c.exec(ctx, "INSERT INTO "+ident(to)+"."+ident(t)+" ("+colList+") SELECT "+colList+" FROM "+ident(from)+"."+ident(t)); err != nil {
			return fmt.Errorf("rows of %s: %w", t, err)
		}
	}
	return nil
}

// copyObjects copies the routines, views and triggers of from into to,
// whose tables are in already, each with user as its definer.
func (c *session) copyObjects(ctx context.Context, from, to, user string) error {
	// Unqualified names in a view's or a routine's CREATE bind to the
	// current schema.
	if err := c.exec(ctx, "USE "+ident(to)); err != nil {
		return err
	}
	type routine struct{ name, kind string }
	var routines []routine
	rows, err := c.c.QueryContext(ctx, "SELECT ROUTINE_NAME, ROUTINE_TYPE FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ? ORDER BY ROUTINE_NAME", from)
	if err != nil {
		return err
	}
	for rows.Next() {
		var r routine
		if err := rows.Scan(&r.name, &r.kind); err != nil {
			rows.Close()
			return err
		}
		routines = append(routines, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range routines {
		if r.kind != "PROCEDURE" && r.kind != "FUNCTION" {
			return fmt.Errorf("routine %s is a %s, which binky does not copy", r.name, r.kind)
		}
		col := "Create Procedure"
		if r.kind == "FUNCTION" {
			col = "Create Function"
		}
		stmt, mode, err := c.showCreate(ctx, r.kind+" "+ident(from)+"."+ident(r.name), col)
		if err != nil {
			return fmt.Errorf("%s %s: %w", strings.ToLower(r.kind), r.name, err)
		}
		if err := c.createAs(ctx, rewrite(stmt, from, to, user), mode); err != nil {
			return fmt.Errorf("%s %s: %w", strings.ToLower(r.kind), r.name, err)
		}
	}
	views, err := c.strings(ctx, "SELECT TABLE_NAME FROM information_schema.VIEWS WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME", from)
	if err != nil {
		return err
	}
	// A view may select from another view: create what can be created
	// until nothing more can.
	pending := views
	for len(pending) > 0 {
		var next []string
		var lastErr error
		for _, v := range pending {
			stmt, _, err := c.showCreate(ctx, "TABLE "+ident(from)+"."+ident(v), "Create View")
			if err != nil {
				return fmt.Errorf("view %s: %w", v, err)
			}
			if err := c.exec(ctx, rewrite(stmt, from, to, user)); err != nil {
				next, lastErr = append(next, v), fmt.Errorf("view %s: %w", v, err)
			}
		}
		if len(next) == len(pending) {
			return lastErr
		}
		pending = next
	}
	triggers, err := c.strings(ctx, "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? ORDER BY EVENT_OBJECT_TABLE, ACTION_ORDER", from)
	if err != nil {
		return err
	}
	for _, tr := range triggers {
		stmt, mode, err := c.showCreate(ctx, "TRIGGER "+ident(from)+"."+ident(tr), "SQL Original Statement")
		if err != nil {
			return fmt.Errorf("trigger %s: %w", tr, err)
		}
		if err := c.createAs(ctx, rewrite(stmt, from, to, user), mode); err != nil {
			return fmt.Errorf("trigger %s: %w", tr, err)
		}
	}
	return nil
}

// createAs runs a CREATE under the sql_mode its original was made under,
// which decides how its body parses and behaves.
func (c *session) createAs(ctx context.Context, stmt, mode string) error {
	var saved string
	if err := c.c.QueryRowContext(ctx, "SELECT @@SESSION.sql_mode").Scan(&saved); err != nil {
		return err
	}
	if _, err := c.c.ExecContext(ctx, "SET SESSION sql_mode = ?", mode); err != nil {
		return fmt.Errorf("set sql_mode %q: %w", mode, err)
	}
	err := c.exec(ctx, stmt)
	if _, rerr := c.c.ExecContext(ctx, "SET SESSION sql_mode = ?", saved); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return err
}
