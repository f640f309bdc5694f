package mysql

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// prepareXA leaves a prepared XA transaction named xid that ran stmts, as
// a migrate or a world's code can: it outlives the session.
func prepareXA(t *testing.T, dsn, xid string, stmts ...string) {
	t.Helper()
	db := open(t, dsn)
	all := append([]string{"XA START '" + xid + "'"}, stmts...)
	all = append(all, "XA END '"+xid+"'", "XA PREPARE '"+xid+"'")
	for _, stmt := range all {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
}

// A template whose seed left a prepared XA transaction is refused: any
// session may commit it later (MariaDB lets every user end any XA), which
// would change the template after worlds were copied from it. (An attack
// committed one from another project's world, after the template's user
// was locked, and the next clone held its row.)
func TestATemplateAPreparedXATransactionHoldsRowsOfIsRefused(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	m := New()
	gold := goldenTemplate(t, u)
	ga, _ := m.Resolve(ctx, gold)
	xid := fmt.Sprintf("late-%x", time.Now().UnixNano())
	prepareXA(t, ga["dsn"], xid, "INSERT INTO customers (email, name) VALUES ('evil@x', 'backdoor')")
	a := admin(t, u)
	t.Cleanup(func() { a.Exec("XA ROLLBACK '" + xid + "'") })

	err := m.PrepareTemplate(ctx, u, gold.Name)
	if err == nil || !strings.Contains(err.Error(), "customers") || !strings.Contains(err.Error(), "XA") {
		t.Fatalf("a template with a prepared transaction holding its rows was accepted: %v", err)
	}
	if _, err := a.Exec("XA ROLLBACK '" + xid + "'"); err != nil {
		t.Fatal(err)
	}
	if err := m.PrepareTemplate(ctx, u, gold.Name); err != nil {
		t.Fatalf("once the transaction ended, the template is still refused: %v", err)
	}
}

// Another world's prepared transaction, in its own database, does not
// stop a template's preparation.
func TestAPreparedXATransactionElsewhereLeavesTheTemplateAlone(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	m := New()
	gold := goldenTemplate(t, u)
	if err := m.PrepareTemplate(ctx, u, gold.Name); err != nil {
		t.Fatal(err)
	}
	_, _, ra, _ := pair(t, u, "xa")
	open(t, ra["dsn"]).Exec("CREATE TABLE t (id INT PRIMARY KEY)")
	xid := fmt.Sprintf("other-%x", time.Now().UnixNano())
	prepareXA(t, ra["dsn"], xid, "INSERT INTO t VALUES (1)")
	a := admin(t, u)
	t.Cleanup(func() { a.Exec("XA ROLLBACK '" + xid + "'") })
	if err := m.PrepareTemplate(ctx, u, gold.Name); err != nil {
		t.Fatalf("a world's own prepared transaction refused the template: %v", err)
	}
}

// A world's prepared XA transaction holds its rows past its teardown's
// session kills: the drop gives up in seconds (not the server's 50) and
// says how to end it, and a teardown after that drops everything.
func TestATeardownHeldByAPreparedXATransactionSaysWhyAndFinishesLater(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	m := New()
	sa, _, ra, _ := pair(t, u, "xadrop")
	if _, err := open(t, ra["dsn"]).Exec("CREATE TABLE t (id INT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	xid := fmt.Sprintf("hold-%x", time.Now().UnixNano())
	prepareXA(t, ra["dsn"], xid, "INSERT INTO t VALUES (1)")
	a := admin(t, u)
	t.Cleanup(func() { a.Exec("XA ROLLBACK '" + xid + "'") })

	start := time.Now()
	err := m.Teardown(ctx, sa)
	if err == nil || !strings.Contains(err.Error(), "XA RECOVER") {
		t.Fatalf("teardown held by a prepared transaction: %v", err)
	}
	if took := time.Since(start); took > 3*dropWaitSeconds*time.Second/2 {
		t.Errorf("teardown waited %s for the held rows", took)
	}
	if _, err := a.Exec("XA ROLLBACK '" + xid + "'"); err != nil {
		t.Fatal(err)
	}
	if err := m.Teardown(ctx, sa); err != nil {
		t.Fatalf("teardown once the transaction ended: %v", err)
	}
	var n int
	a.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", DBName(sa.Name)).Scan(&n)
	if n != 0 {
		t.Error("the world's database survived its second teardown")
	}
}

// A template's table made with DATA DIRECTORY (a server that allows
// symbolic links honours it: the throwaway one does) is copied into the
// server's own folder: the admin never creates files where a world chose.
func TestACloneIgnoresATemplatesDataDirectory(t *testing.T) {
	u := adminURL(t)
	if !strings.Contains(u, "@127.0.0.1:") {
		t.Skip("the server is not on this machine: its files cannot be looked at")
	}
	ctx := context.Background()
	m := New()
	dir, err := os.MkdirTemp("", "binky-datadir")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777) // the server's account writes there
	gold := goldenTemplate(t, u)
	ga, _ := m.Resolve(ctx, gold)
	if _, err := open(t, ga["dsn"]).Exec("CREATE TABLE placed (a INT) ENGINE=MyISAM DATA DIRECTORY='" + dir + "' INDEX DIRECTORY='" + dir + "'"); err != nil {
		t.Fatal(err)
	}
	before, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(before) == 0 {
		t.Skip("the server ignores DATA DIRECTORY (symbolic links off): nothing to copy")
	}
	if err := m.PrepareTemplate(ctx, u, gold.Name); err != nil {
		t.Fatal(err)
	}
	sa, _, _, _ := pair(t, u, "dd")
	m.Teardown(ctx, sa)
	if err := m.Clone(ctx, gold.Name, sa); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Teardown(context.Background(), sa) })
	waitSpare(ctx, u, DBName(gold.Name)) // made from the template too
	after, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(after) != len(before) {
		t.Errorf("the clone made files in the template's DATA DIRECTORY: %v, before %v", after, before)
	}
	var name, create string
	if err := admin(t, u).QueryRow("SHOW CREATE TABLE "+ident(DBName(sa.Name))+".`placed`").Scan(&name, &create); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(create, "DIRECTORY") {
		t.Errorf("the clone's table: %s", create)
	}
}
