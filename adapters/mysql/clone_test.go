package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/git-binky/git-binky/adapters"
)

// golden is a template with one of everything a clone must carry: tables
// with primary, unique, secondary and foreign keys, an auto-increment
// counter, a generated column, rows, a view on a view, a trigger, a
// procedure and a function.
var golden = []string{
	"CREATE TABLE customers (id INT AUTO_INCREMENT PRIMARY KEY, email VARCHAR(100) NOT NULL, name VARCHAR(100), UNIQUE KEY by_email (email), KEY by_name (name))",
	"CREATE TABLE orders (id INT AUTO_INCREMENT PRIMARY KEY, customer_id INT NOT NULL, qty INT NOT NULL, price DECIMAL(10,2) NOT NULL, " +
		"total DECIMAL(12,2) AS (qty * price) STORED, CONSTRAINT orders_customer FOREIGN KEY (customer_id) REFERENCES customers (id))",
	"CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, what VARCHAR(200))",
	"INSERT INTO customers (email, name) VALUES ('a@x', 'Ann'), ('b@x', 'Bob'), ('c@x', 'Cy')",
	"INSERT INTO orders (customer_id, qty, price) VALUES (1, 2, 3.50), (2, 1, 10.00), (1, 5, 1.00)",
	"CREATE VIEW big_orders AS SELECT id, customer_id, total FROM orders WHERE total > 5",
	"CREATE VIEW big_customers AS SELECT DISTINCT c.name FROM customers c JOIN big_orders b ON b.customer_id = c.id",
	"CREATE TRIGGER orders_audit AFTER INSERT ON orders FOR EACH ROW INSERT INTO audit (what) VALUES (CONCAT('order ', NEW.id))",
	"CREATE PROCEDURE add_customer(IN e VARCHAR(100)) INSERT INTO customers (email) VALUES (e)",
	"CREATE FUNCTION order_count() RETURNS INT READS SQL DATA RETURN (SELECT COUNT(*) FROM orders)",
}

// shape describes a schema as information_schema has it, to compare two.
func shape(t *testing.T, db *sql.DB, schema string) map[string][]string {
	t.Helper()
	queries := map[string]string{
		"tables":   "SELECT CONCAT(TABLE_NAME, ':', TABLE_TYPE, ':', COALESCE(AUTO_INCREMENT, '')) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?",
		"columns":  "SELECT CONCAT(TABLE_NAME, '.', COLUMN_NAME, ':', COLUMN_TYPE, ':', IS_NULLABLE, ':', COALESCE(GENERATION_EXPRESSION, '')) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ?",
		"indexes":  "SELECT CONCAT(TABLE_NAME, '.', INDEX_NAME, ':', NON_UNIQUE, ':', SEQ_IN_INDEX, ':', COLUMN_NAME) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ?",
		"fks":      "SELECT CONCAT(TABLE_NAME, '.', CONSTRAINT_NAME, '->', REFERENCED_TABLE_NAME) FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ?",
		"views":    "SELECT TABLE_NAME FROM information_schema.VIEWS WHERE TABLE_SCHEMA = ?",
		"triggers": "SELECT CONCAT(TRIGGER_NAME, ':', EVENT_MANIPULATION, ':', EVENT_OBJECT_TABLE, ':', ACTION_TIMING) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?",
		"routines": "SELECT CONCAT(ROUTINE_NAME, ':', ROUTINE_TYPE) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ?",
	}
	out := map[string][]string{}
	for what, q := range queries {
		rows, err := db.Query(q+" ORDER BY 1", schema)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for rows.Next() {
			var v string
			rows.Scan(&v)
			out[what] = append(out[what], v)
		}
		rows.Close()
	}
	for _, table := range []string{"customers", "orders", "audit"} {
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM " + ident(schema) + "." + ident(table)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out["rows"] = append(out["rows"], fmt.Sprintf("%s:%d", table, n))
	}
	return out
}

func TestCloneCopiesTablesRowsIndexesViewsTriggersAndRoutines(t *testing.T) {
	u := adminURL(t)
	gold := goldenTemplate(t, u)
	world := testSlice(t, u, "copy")
	start := time.Now()
	if err := New().Clone(context.Background(), gold.Name, world); err != nil {
		t.Fatal(err)
	}
	t.Logf("cloned in %s", time.Since(start))
	db := admin(t, u)
	clonedWell(t, db, gold, world, shape(t, db, DBName(gold.Name)))
}

// clonedWell checks that world's database has the shape want (the
// template's, as shape describes it) and works as the world's own,
// through the world's user: the procedure, the trigger (fired by the
// world's insert, not by the copy), the function reading the copy, the
// auto-increment counter, the views on views, the foreign key; that the
// template is untouched; and that every view, trigger and routine runs as
// the world's user.
func clonedWell(t *testing.T, db *sql.DB, gold, world adapters.Slice, want map[string][]string) {
	t.Helper()
	ctx := context.Background()
	m := New()
	got := shape(t, db, DBName(world.Name))
	for what := range want {
		if strings.Join(want[what], "\n") != strings.Join(got[what], "\n") {
			t.Errorf("%s differ:\nwant:  %v\nclone: %v", what, want[what], got[what])
		}
	}
	if len(got["triggers"]) != 1 || len(got["routines"]) != 2 || len(got["views"]) != 2 || len(got["fks"]) != 1 {
		t.Errorf("the template's objects are not all there: %v", got)
	}

	// The copy works as the world's own, through the world's user.
	wa, _ := m.Resolve(ctx, world)
	w := open(t, wa["dsn"])
	if _, err := w.Exec("CALL add_customer('d@x')"); err != nil {
		t.Errorf("the cloned procedure does not run as the world: %v", err)
	}
	if _, err := w.Exec("INSERT INTO orders (customer_id, qty, price) VALUES (4, 1, 1.00)"); err != nil {
		t.Errorf("insert into the cloned table: %v", err)
	}
	var audit, count, newID int
	w.QueryRow("SELECT COUNT(*) FROM audit").Scan(&audit)
	if audit != 1 {
		t.Errorf("the cloned trigger fired %d times for one insert (the copy itself must not fire it)", audit)
	}
	if err := w.QueryRow("SELECT order_count()").Scan(&count); err != nil || count != 4 {
		t.Errorf("the cloned function counts %d orders (%v), want 4: it must read the copy, not the template", count, err)
	}
	w.QueryRow("SELECT MAX(id) FROM orders").Scan(&newID)
	if newID != 4 {
		t.Errorf("the auto-increment counter did not carry over: new id %d", newID)
	}
	var names string
	if err := w.QueryRow("SELECT GROUP_CONCAT(name ORDER BY name) FROM big_customers").Scan(&names); err != nil || names != "Ann,Bob" {
		t.Errorf("the cloned view reads %q (%v)", names, err)
	}
	if _, err := w.Exec("INSERT INTO orders (customer_id, qty, price) VALUES (999, 1, 1.00)"); err == nil {
		t.Error("the cloned foreign key does not hold")
	}
	// The template is untouched by what the world did.
	var n int
	db.QueryRow("SELECT COUNT(*) FROM " + ident(DBName(gold.Name)) + ".orders").Scan(&n)
	if n != 3 {
		t.Errorf("the template has %d orders after the world wrote to its copy", n)
	}
	// The copy's views, trigger and routines run as the world's user: the
	// template's user has no rights on the copy and the world none on the
	// template.
	rows, _ := db.Query("SELECT DEFINER FROM information_schema.VIEWS WHERE TABLE_SCHEMA = ? UNION ALL "+
		"SELECT DEFINER FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? UNION ALL "+
		"SELECT DEFINER FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ?", wa["name"], wa["name"], wa["name"])
	for rows.Next() {
		var d string
		rows.Scan(&d)
		if d != wa["user"]+"@%" {
			t.Errorf("a cloned object's definer is %s, want %s@%%", d, wa["user"])
		}
	}
	rows.Close()
}

func TestCloneRefusesWhatItCannotCopyFaithfully(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	m := New()
	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	gold := adapters.Slice{Name: "binky_golden_seq_" + run, World: "golden", Home: "h" + run, AdminURL: u, Password: "0a0a0a0a"}
	world := adapters.Slice{Name: "seq_copy_" + run, World: "w" + run, Home: "h" + run, AdminURL: u, Password: "0b0b0b0b"}
	if err := m.Provision(ctx, gold); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Teardown(context.Background(), world); m.Teardown(context.Background(), gold) })
	db := admin(t, u)
	if _, err := db.Exec("CREATE SEQUENCE " + ident(DBName(gold.Name)) + ".ids"); err != nil {
		t.Skipf("this server has no sequences: %v", err)
	}
	if err := m.Clone(ctx, gold.Name, world); err == nil || !strings.Contains(err.Error(), "sequences") {
		t.Errorf("clone of a template with a sequence: %v, want an error (the daemon falls back)", err)
	}
	if err := m.Clone(ctx, "binky_golden_absent_"+run, world); err == nil {
		t.Error("clone of a template that does not exist succeeded")
	}
}

// What a copy would get wrong, or compute with the admin's rights, is
// refused before anything is made (the daemon then provisions, migrates
// and seeds): a system-versioned table (no BASE TABLE: it was silently
// left out), a MERGE table (its rows are another table's: copied twice),
// and DES_DECRYPT in a stored generated column or a CHECK (with the
// server's key file it answers the admin, not the template's user; an
// attack read decrypted values out of a clone).
func TestCloneRefusesTablesItWouldCopyWrongOrAsTheAdmin(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	m := New()
	db := admin(t, u)
	for i, tc := range []struct{ ddl, want string }{
		{"CREATE TABLE {db}.v (id INT) WITH SYSTEM VERSIONING", "system-versioned"},
		{"CREATE TABLE {db}.a (id INT) ENGINE=MyISAM; CREATE TABLE {db}.m (id INT) ENGINE=MRG_MyISAM UNION=({db}.a) INSERT_METHOD=LAST", "MRG_MyISAM"},
		{"CREATE TABLE {db}.s (a VARBINARY(200), b VARBINARY(200) AS (DES_DECRYPT(a)) STORED)", "DES_DECRYPT"},
		{"CREATE TABLE {db}.c (a VARBINARY(200), CONSTRAINT k CHECK (DES_DECRYPT(a) IS NULL OR a IS NOT NULL))", "DES_DECRYPT"},
	} {
		run := fmt.Sprintf("%x%d", time.Now().UnixNano(), i)[8:]
		gold := adapters.Slice{Name: "binky_golden_odd_" + run, World: "golden", Home: "h" + run, AdminURL: u, Password: "0a0a0a0a"}
		world := adapters.Slice{Name: "odd_copy_" + run, World: "w" + run, Home: "h" + run, AdminURL: u, Password: "0b0b0b0b"}
		if err := m.Provision(ctx, gold); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Teardown(context.Background(), world); m.Teardown(context.Background(), gold) })
		for _, stmt := range strings.Split(strings.ReplaceAll(tc.ddl, "{db}", ident(DBName(gold.Name))), "; ") {
			if _, err := db.Exec(stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		err := m.Clone(ctx, gold.Name, world)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("clone of a template with %q: %v, want a refusal naming %s", tc.ddl, err, tc.want)
		}
		c, err := connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if there, _ := c.exists(ctx, "database", DBName(world.Name)); there {
			t.Errorf("the refused clone (%s) left a database", tc.ddl)
		}
		c.Close()
	}
}
