package mysql

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/git-binky/git-binky/adapters"
)

// A spare is the tables of a template's next clone, made in the background
// after each clone (the template's first included), so that the next
// world's up moves them into its database with one RENAME TABLE instead of
// copying every row while it waits (~370 ms for 200,000 rows on a 2-core
// VM). It costs one more template-size of disk; dropping the template
// drops it.
//
// The spare is a schema, `<template>_spare`, holding the template's base
// tables and their rows, nothing else: MariaDB refuses to RENAME a table
// with triggers into another schema, and views and routines belong to
// their schema, so a world makes those from the template's, as a copy
// does. No world's user has any grant on it.
//
// Its mark (kind database, under the template's slice, with the template's
// owner) is written before the schema exists, so that gc lists it and the
// template's Teardown drops it from then on. A second mark, of kind
// spare_ready, is written once every table and row is in, and deleted
// first when the spare is taken: a spare without it (a crash while it was
// made or taken) is never taken, and the next one made drops it first.
//
// Making, taking and dropping a template's spare, and dropping the
// template, hold one GET_LOCK named from the template, on the connection
// that does them: two daemons on one server take turns, and a spare made
// after its template was dropped finds it gone. A schema of a spare's name
// that is not marked as its template is (someone's own, or another home's
// spare) is never taken, dropped or marked.
const spareSuffix = adapters.SpareSuffix

// spareReady is the kind of the mark that says a spare is complete.
const spareReady = "spare_ready"

// spareOf is the spare's name, or "" for a template whose name leaves no
// room for the suffix in MySQL's 64 bytes.
func spareOf(template string) string {
	if len(template)+len(spareSuffix) > 64 {
		return ""
	}
	return template + spareSuffix
}

// spareLock is the name of the lock of a template's spare. Lock names are
// the server's, and any user may take one (GET_LOCK needs no privilege),
// so the name is a hash of the template's with the admin's password: a
// world that knows the template's name cannot hold every up that takes
// its spare waiting (an attack did). MySQL takes 64 characters.
func (c *session) spareLock(template string) string {
	sum := sha256.Sum256([]byte(c.lockKey + "\x00" + template))
	return "binky_spare_" + hex.EncodeToString(sum[:16])
}

// lockSpare takes the lock of template's spare on c's connection and
// returns its release. It asks a second at a time, so that ctx can end the
// wait: a server waiting in GET_LOCK does not notice its client gone.
func (c *session) lockSpare(ctx context.Context, template string) (func(), error) {
	name := c.spareLock(template)
	for {
		var got sql.NullInt64
		if err := c.c.QueryRowContext(ctx, "SELECT GET_LOCK(?, 1)", name).Scan(&got); err != nil {
			return nil, fmt.Errorf("mysql: lock the spare of %s: %w", template, err)
		}
		if !got.Valid {
			return nil, fmt.Errorf("mysql: lock the spare of %s: GET_LOCK(%s) failed", template, name)
		}
		if got.Int64 == 1 {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("mysql: lock the spare of %s: %w", template, err)
		}
	}
	return func() {
		// A lock that could not be released goes with its connection,
		// which no one reuses: every session is closed after its call.
		c.c.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK(?)", name)
	}, nil
}

// spares are the spares being made in this process, by server and template.
var spares adapters.Background

func spareKey(adminURL, template string) string { return adminURL + "\x00" + template }

// waitSpare returns once no spare of template is being made here.
func waitSpare(ctx context.Context, adminURL, template string) error {
	return spares.Wait(ctx, spareKey(adminURL, template))
}

// makeSpare starts making template's spare in the background, unless it
// is being made here. The clone's steps (the daemon's failure points, a
// test's cuts) reach it; the clone's end does not. Failing is harmless:
// the next clone copies the template.
func makeSpare(ctx context.Context, adminURL, template string) {
	if spareOf(template) == "" {
		return
	}
	ctx = context.WithoutCancel(ctx)
	spares.Go(spareKey(adminURL, template), func() {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		_ = createSpare(ctx, adminURL, template)
	})
}

// spare is what binky reads of a template's spare, under its lock.
type spare struct {
	name     string
	template adapters.Owner // the template's mark, which the spare's names
	marked   bool           // the spare's name is marked as the template is
	exists   bool           // its schema exists
	ready    bool           // and every table and row is in
}

// readSpare reads the spare of template. ok is false when there is no
// marked template to have one, or when the spare's name is not binky's to
// use: marked as another's, or a schema binky did not mark.
func (c *session) readSpare(ctx context.Context, template string) (sp spare, ok bool, err error) {
	sp.name = spareOf(template)
	if sp.name == "" {
		return sp, false, nil
	}
	var marked bool
	if sp.template, marked, err = c.mark(ctx, "database", template); err != nil || !marked {
		return sp, false, err
	}
	if there, err := c.exists(ctx, "database", template); err != nil || !there {
		return sp, false, err
	}
	o, marked, err := c.mark(ctx, "database", sp.name)
	if err != nil || (marked && !o.Is(sp.template)) {
		return sp, false, err
	}
	sp.marked = marked
	if sp.exists, err = c.exists(ctx, "database", sp.name); err != nil || (sp.exists && !sp.marked) {
		return sp, false, err
	}
	if sp.marked && sp.exists {
		r, ready, err := c.mark(ctx, spareReady, sp.name)
		if err != nil {
			return sp, false, err
		}
		sp.ready = ready && r.Is(sp.template)
	}
	return sp, true, nil
}

// createSpare makes template's spare, unless it has a complete one or
// cannot have one. What a cut left of one is dropped and made again.
func createSpare(ctx context.Context, adminURL, template string) error {
	c, err := connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer c.Close()
	unlock, err := c.lockSpare(ctx, template)
	if err != nil {
		return err
	}
	defer unlock()
	sp, ok, err := c.readSpare(ctx, template)
	if err != nil || !ok || sp.ready {
		return err
	}
	if !sp.marked {
		if err := c.insertMark(ctx, "database", sp.name, template, sp.template); err != nil {
			return fmt.Errorf("mysql: mark the spare %s: %w", sp.name, err)
		}
		if err := adapters.Step(ctx, "mysql.spare.marked"); err != nil {
			return err
		}
	}
	if err := c.unmark(ctx, spareReady, sp.name); err != nil {
		return err
	}
	if sp.exists {
		if err := c.exec(ctx, "DROP DATABASE IF EXISTS "+ident(sp.name)); err != nil {
			return err
		}
	}
	if err := c.exec(ctx, "CREATE DATABASE "+ident(sp.name)+" CHARACTER SET utf8mb4"); err != nil {
		return err
	}
	if err := adapters.Step(ctx, "mysql.spare.created"); err != nil {
		return err
	}
	if err := c.copyTables(ctx, template, sp.name); err != nil {
		return fmt.Errorf("spare of %s: %w", template, err)
	}
	if err := adapters.Step(ctx, "mysql.spare.copied"); err != nil {
		return err
	}
	if err := c.insertMark(ctx, spareReady, sp.name, template, sp.template); err != nil {
		return fmt.Errorf("mysql: mark the spare %s complete: %w", sp.name, err)
	}
	return adapters.Step(ctx, "mysql.spare.made")
}

// takeSpare moves the tables of template's spare into db, a new world's
// empty database, when the spare is binky's and complete (waiting for one
// being made here), then drops the spare's empty schema and its mark. It
// reports whether it did: with no such spare, or a RENAME the server
// refuses, db is as it was and the caller copies the template.
func (c *session) takeSpare(ctx context.Context, adminURL, template, db string) (bool, error) {
	if spareOf(template) == "" {
		return false, nil
	}
	if err := waitSpare(ctx, adminURL, template); err != nil {
		return false, err
	}
	unlock, err := c.lockSpare(ctx, template)
	if err != nil {
		return false, err
	}
	defer unlock()
	sp, ok, err := c.readSpare(ctx, template)
	if err != nil || !ok || !sp.ready {
		return false, err
	}
	tables, err := c.baseTables(ctx, sp.name)
	if err != nil {
		return false, err
	}
	// Not complete from here on: a cut leaves a spare no one takes.
	if err := c.unmark(ctx, spareReady, sp.name); err != nil {
		return false, err
	}
	if len(tables) > 0 {
		moves := make([]string, len(tables))
		for i, t := range tables {
			moves[i] = ident(sp.name) + "." + ident(t) + " TO " + ident(db) + "." + ident(t)
		}
		// One statement, atomic in MariaDB 10.6+ and MySQL 8: every table
		// moves, foreign keys following the tables they name, or none does.
		if _, err := c.c.ExecContext(ctx, "RENAME TABLE "+strings.Join(moves, ", ")); err != nil {
			return false, nil
		}
	}
	if err := adapters.Step(ctx, "mysql.spare_taken"); err != nil {
		return true, err
	}
	if err := c.exec(ctx, "DROP DATABASE IF EXISTS "+ident(sp.name)); err != nil {
		return true, err
	}
	if err := c.unmark(ctx, "database", sp.name); err != nil {
		return true, err
	}
	return true, adapters.Step(ctx, "mysql.spare_dropped")
}

// dropSpare drops template's spare, schema and marks, when it is marked as
// owner's; a schema of that name binky did not mark, or another's, is left
// alone. The caller holds the spare's lock.
func (c *session) dropSpare(ctx context.Context, template string, owner adapters.Owner) error {
	name := spareOf(template)
	o, marked, err := c.mark(ctx, "database", name)
	if err != nil || !marked || !o.Is(owner) {
		return err
	}
	if err := c.unmark(ctx, spareReady, name); err != nil {
		return err
	}
	if err := c.exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	if err := c.unmark(ctx, "database", name); err != nil {
		return err
	}
	return adapters.Step(ctx, "mysql.teardown.spare_dropped")
}
