package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/adapterstest"
)

// making reports the steps of making a spare, which a clone's context
// reaches in the background.
func making(step string) bool { return strings.HasPrefix(step, "mysql.spare.") }

// stepsOf runs fn with a recording hook and returns the steps for which
// keep is true that were passed by the time fn returned.
func stepsOf(t *testing.T, keep func(string) bool, fn func(ctx context.Context) error) []string {
	t.Helper()
	var mu sync.Mutex
	var steps []string
	ctx := adapters.WithSteps(context.Background(), func(s string) error {
		mu.Lock()
		defer mu.Unlock()
		if keep(s) {
			steps = append(steps, s)
		}
		return nil
	})
	if err := fn(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return append([]string(nil), steps...)
}

// testSlice is a slice of this run, torn down when the test ends.
func testSlice(t *testing.T, u, tag string) adapters.Slice {
	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	name := "cut_" + tag + "_" + run
	s := adapters.Slice{Name: name, World: "w" + tag + run, Home: "h" + run, AdminURL: u,
		Password: adapters.Password([]byte("cut-secret"), "mysql", name)}
	t.Cleanup(func() { New().Teardown(context.Background(), s) })
	return s
}

// goldenTemplate provisions a template holding the golden schema (one of
// everything a clone carries), marked as the golden world's of its home,
// and drops it when the test ends.
func goldenTemplate(t *testing.T, u string) adapters.Slice {
	t.Helper()
	ctx := context.Background()
	m := New()
	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	gold := adapters.Slice{Name: "binky_golden_t_" + run, World: "golden", Home: "h" + run, AdminURL: u,
		Password: adapters.Password([]byte("gold-secret"), "mysql", run)}
	if err := m.Provision(ctx, gold); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		waitSpare(context.Background(), u, DBName(gold.Name))
		m.Teardown(context.Background(), gold)
	})
	ga, _ := m.Resolve(ctx, gold)
	g := open(t, ga["dsn"])
	for _, stmt := range golden {
		if _, err := g.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	return gold
}

// objects says which of the slice's database and user exist, and which
// of them List finds marked as the slice's (what gc would drop).
func objects(t *testing.T, db *sql.DB, s adapters.Slice) (exist, listed map[string]bool) {
	t.Helper()
	ctx := context.Background()
	exist = map[string]bool{}
	var n int
	db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", DBName(s.Name)).Scan(&n)
	exist["database"] = n > 0
	db.QueryRowContext(ctx, "SELECT COUNT(*) FROM mysql.user WHERE User = ?", UserName(s.Name)).Scan(&n)
	exist["user"] = n > 0
	found, err := New().List(ctx, s.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	listed = map[string]bool{}
	for _, o := range found {
		if o.Slice == s.Name && o.Owner.Is(s.Owner()) {
			listed[o.Kind] = true
		}
	}
	return exist, listed
}

// complete checks, as the world's user, that its database is a whole
// clone of the golden template: its three tables with their rows, its
// views, routines and trigger.
func complete(t *testing.T, s adapters.Slice) {
	t.Helper()
	a, _ := New().Resolve(context.Background(), s)
	w := open(t, a["dsn"])
	var tables, views, routines, triggers, customers int
	err := w.QueryRow("SELECT (SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE'), "+
		"(SELECT COUNT(*) FROM information_schema.VIEWS WHERE TABLE_SCHEMA = DATABASE()), "+
		"(SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE()), "+
		"(SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()), "+
		"(SELECT COUNT(*) FROM customers)").Scan(&tables, &views, &routines, &triggers, &customers)
	if err != nil || tables != 3 || views != 2 || routines != 2 || triggers != 1 || customers < 3 {
		t.Fatalf("the clone has %d tables, %d views, %d routines, %d triggers, %d customers (%v): want 3, 2, 2, 1, 3 or more",
			tables, views, routines, triggers, customers, err)
	}
}

// gone checks that nothing of the slice is left: no database, no user,
// no mark.
func gone(t *testing.T, db *sql.DB, s adapters.Slice) {
	t.Helper()
	exist, listed := objects(t, db, s)
	if exist["database"] || exist["user"] || len(listed) > 0 {
		t.Errorf("left behind: %v, marks %v", exist, listed)
	}
}

func TestCloneAndTeardownCutOffAtAnyStepAreFinishedOrDropped(t *testing.T) {
	u := adminURL(t)
	m := New()
	db := admin(t, u)
	gold := goldenTemplate(t, u)
	makers := []struct {
		how  string
		make func(ctx context.Context, s adapters.Slice) error
	}{
		{"clone from the spare", func(ctx context.Context, s adapters.Slice) error {
			withSpare(t, gold)
			return m.Clone(ctx, gold.Name, s)
		}},
		{"clone without a spare", func(ctx context.Context, s adapters.Slice) error {
			withoutSpare(t, gold)
			return m.Clone(ctx, gold.Name, s)
		}},
	}
	for _, mk := range makers {
		how, make := mk.how, mk.make
		probe := testSlice(t, u, "probe")
		clone := func(step string) bool { return !making(step) }
		steps := stepsOf(t, clone, func(ctx context.Context) error { return make(ctx, probe) })
		down := stepsOf(t, clone, func(ctx context.Context) error { return m.Teardown(ctx, probe) })
		if len(steps) < 4 || len(down) < 2 {
			t.Fatalf("%s passed steps %v, teardown %v", how, steps, down)
		}
		for _, step := range steps {
			t.Run(how+" cut at "+step, func(t *testing.T) {
				ctx := context.Background()
				s := testSlice(t, u, "cut")
				if err := make(adapters.WithSteps(ctx, adapterstest.FailAt(step)), s); err == nil {
					t.Fatal("the cut did not stop it")
				}
				exist, listed := objects(t, db, s)
				for _, kind := range []string{"database", "user"} {
					if exist[kind] && !listed[kind] {
						t.Errorf("the cut left a %s that gc would not find", kind)
					}
				}
				// What is left of a spare the cut was taking is its
				// template's, which drops it, and is never taken again.
				if exists, marks := spareMarks(t, db, gold.Name); exists && !marks["database"].Is(gold.Owner()) {
					t.Errorf("the cut left a spare marked %v, want its template's", marks)
				}
				// A second attempt finishes it, and it is the world's.
				if err := make(ctx, s); err != nil {
					t.Fatalf("%s again: %v", how, err)
				}
				complete(t, s)
				if err := m.Teardown(ctx, s); err != nil {
					t.Fatal(err)
				}
				gone(t, db, s)
			})
			t.Run(how+" cut at "+step+", then torn down", func(t *testing.T) {
				ctx := context.Background()
				s := testSlice(t, u, "cutdown")
				_ = make(adapters.WithSteps(ctx, adapterstest.FailAt(step)), s)
				if err := m.Teardown(ctx, s); err != nil {
					t.Fatal(err)
				}
				gone(t, db, s)
			})
		}
		for _, step := range down {
			t.Run("teardown cut at "+step, func(t *testing.T) {
				ctx := context.Background()
				s := testSlice(t, u, "down")
				if err := make(ctx, s); err != nil {
					t.Fatal(err)
				}
				if err := m.Teardown(adapters.WithSteps(ctx, adapterstest.FailAt(step)), s); err == nil {
					t.Fatal("the cut did not stop it")
				}
				if err := m.Teardown(ctx, s); err != nil {
					t.Fatalf("teardown again: %v", err)
				}
				gone(t, db, s)
			})
		}
	}
}

// A world cannot take every connection of the server: its user may hold a
// third of max_connections at once (or what options.connection_limit
// says), so a world that leaks connections, or opens all it can, runs out
// of its own and no one else's.
func TestAWorldCannotTakeEveryConnection(t *testing.T) {
	u := adminURL(t)
	ctx := context.Background()
	m, db := New(), admin(t, u)
	var mc int
	if err := db.QueryRow("SELECT @@max_connections").Scan(&mc); err != nil {
		t.Fatal(err)
	}
	limitOf := func(s adapters.Slice) int {
		t.Helper()
		var n int
		if err := db.QueryRow("SELECT max_user_connections FROM mysql.user WHERE user = ?", UserName(s.Name)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	s := testSlice(t, u, "conns")
	if err := m.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got, want := limitOf(s), max(10, mc/3); got != want {
		t.Errorf("a world's user may hold %d connections, want %d (a third of max_connections %d)", got, want, mc)
	}
	s.Config = map[string]any{"connection_limit": int64(2)}
	if err := m.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	addr, _ := m.Resolve(ctx, s)
	var held []*sql.Conn
	defer func() {
		for _, h := range held {
			h.Close()
		}
	}()
	w, err := sql.Open("mysql", addr["dsn"])
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := 0; i < 2; i++ {
		h, err := w.Conn(ctx)
		if err == nil {
			err = h.PingContext(ctx)
		}
		if err != nil {
			t.Fatalf("connection %d of 2: %v", i+1, err)
		}
		held = append(held, h)
	}
	h, err := w.Conn(ctx)
	if err == nil {
		err = h.PingContext(ctx)
		h.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "max_user_connections") {
		t.Errorf("a third connection with connection_limit = 2: %v, want max_user_connections refused", err)
	}
	other := testSlice(t, u, "other")
	if err := m.Provision(ctx, other); err != nil {
		t.Fatal(err)
	}
	oa, _ := m.Resolve(ctx, other)
	if err := open(t, oa["dsn"]).Ping(); err != nil {
		t.Errorf("another world, while this one is at its cap: %v", err)
	}
	s.Config = map[string]any{"connection_limit": "0"}
	if err := m.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got := limitOf(s); got != 0 {
		t.Errorf("connection_limit = 0: max_user_connections %d, want 0 (none of its own)", got)
	}
	s.Config = map[string]any{"connection_limit": -4}
	if err := m.Provision(ctx, s); err == nil || !strings.Contains(err.Error(), "connection_limit") {
		t.Errorf("connection_limit = -4: %v, want an error naming the option", err)
	}
}
