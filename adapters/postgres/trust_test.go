package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/git-binky/git-binky/adapters"
)

// testSlice is a slice of this run, torn down when the test ends.
func testSlice(t *testing.T, admin, tag string) adapters.Slice {
	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	s := adapters.Slice{Name: "trust_" + tag + "_" + run, World: "w" + run, Home: "h" + run, AdminURL: admin,
		Password: adapters.Password([]byte("trust-secret"), "postgres", tag+run)}
	t.Cleanup(func() { New().Teardown(context.Background(), s) })
	return s
}

func adminConn(t *testing.T, admin string) *pgx.Conn {
	c, err := pgx.Connect(context.Background(), admin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// objects says which of the slice's database and role exist.
func objects(t *testing.T, c *pgx.Conn, name string) (db, role bool) {
	ctx := context.Background()
	if err := c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1), EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", name).Scan(&db, &role); err != nil {
		t.Fatal(err)
	}
	return db, role
}

func TestAWorldsRoleCannotRewriteItsOwnMark(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p := New()
	s := testSlice(t, admin, "mark")
	if err := p.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	addr, _ := p.Resolve(ctx, s)
	c, err := pgx.Connect(ctx, addr["url"])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	forged := adapters.Mark(adapters.Owner{World: "someone-else", Home: s.Home})
	if _, err := c.Exec(ctx, "COMMENT ON DATABASE "+ident(s.Name)+" IS '"+forged+"'"); err == nil {
		t.Error("the world's role rewrote its database's ownership mark")
	}
	if _, err := c.Exec(ctx, "COMMENT ON ROLE "+ident(s.Name)+" IS '"+forged+"'"); err == nil {
		t.Error("the world's role rewrote its role's ownership mark")
	}
	// What an application needs is still there: tables in public, created,
	// altered, dropped; a schema of its own; temporary tables.
	for _, stmt := range []string{"CREATE TABLE t (id int)", "ALTER TABLE t ADD COLUMN name text", "CREATE INDEX ON t (name)",
		"DROP TABLE t", "CREATE SCHEMA app", "CREATE TABLE app.x (id int)", "CREATE TEMP TABLE tmp (x int)"} {
		if _, err := c.Exec(ctx, stmt); err != nil {
			t.Errorf("%s: %v", stmt, err)
		}
	}
}

func TestHardenShutsWorldsOutOfThePostgresDatabase(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p := New()
	s := testSlice(t, admin, "hard")
	if err := p.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := p.Harden(ctx, admin); err != nil {
		t.Fatal(err)
	}
	addr, _ := p.Resolve(ctx, s)
	for _, db := range []string{"postgres", "template1"} {
		u := strings.Replace(addr["url"], "/"+s.Name+"?", "/"+db+"?", 1)
		u = strings.TrimSuffix(u, "/"+s.Name) // no query string
		if !strings.Contains(u, "/"+db) {
			u += "/" + db
		}
		if c, err := pgx.Connect(ctx, u); err == nil {
			c.Close(ctx)
			t.Errorf("a world's role connected to %s", db)
		} else if !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("connect to %s: %v, want permission denied", db, err)
		}
	}
	c, err := pgx.Connect(ctx, addr["url"])
	if err != nil {
		t.Fatalf("the world lost its own database: %v", err)
	}
	c.Close(ctx)
}

func TestALegacyMarkIsUpgradedByItsWorldAndNeverDropped(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p := New()
	s := testSlice(t, admin, "legacy")
	if err := p.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	c := adminConn(t, admin)
	// What binky wrote before marks named the home.
	old := adapters.Mark(adapters.Owner{World: s.World})
	for _, stmt := range []string{"COMMENT ON DATABASE " + ident(s.Name) + " IS '" + old + "'", "COMMENT ON ROLE " + ident(s.Name) + " IS '" + old + "'"} {
		if _, err := c.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	found, err := p.List(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	var legacy int
	for _, o := range found {
		if o.Slice == s.Name && o.Owner.Legacy() {
			legacy++
		}
	}
	if legacy != 2 {
		t.Errorf("List shows %d legacy objects of %s, want 2 (database, role): %v", legacy, s.Name, found)
	}
	if err := p.Teardown(ctx, s); !errors.Is(err, adapters.ErrNotOurs) {
		t.Errorf("teardown of a legacy-marked slice: %v, want ErrNotOurs", err)
	}
	other := s
	other.World = "another-world"
	if err := p.Provision(ctx, other); !errors.Is(err, adapters.ErrTaken) {
		t.Errorf("another world adopted a legacy slice: %v", err)
	}
	if err := p.Provision(ctx, s); err != nil {
		t.Fatalf("the world's re-provision: %v", err)
	}
	for _, q := range []string{"SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1", "SELECT shobj_description(oid, 'pg_authid') FROM pg_roles WHERE rolname = $1"} {
		var mark string
		if err := c.QueryRow(ctx, q, s.Name).Scan(&mark); err != nil {
			t.Fatal(err)
		}
		if o, _ := adapters.ParseMark(mark); !o.Is(s.Owner()) {
			t.Errorf("mark %q after re-provision, want %q", mark, adapters.Mark(s.Owner()))
		}
	}
	if db, role := objects(t, c, s.Name); !db || !role {
		t.Fatal("re-provision lost the slice")
	}
}

// failAt is a step hook that fails at step, as a crash there would leave.
func failAt(step string) adapters.StepFunc {
	return func(s string) error {
		if s == step {
			return fmt.Errorf("cut off at %s", s)
		}
		return nil
	}
}

// stepsOf runs fn with a recording hook and returns the steps it passed.
func stepsOf(t *testing.T, fn func(ctx context.Context) error) []string {
	var steps []string
	ctx := adapters.WithSteps(context.Background(), func(s string) error { steps = append(steps, s); return nil })
	if err := fn(ctx); err != nil {
		t.Fatal(err)
	}
	return steps
}

func TestProvisionCloneAndTeardownCutOffAtAnyStepAreFinishedOrDropped(t *testing.T) {
	admin := adminURL(t)
	p := New()
	c := adminConn(t, admin)
	gold := testSlice(t, admin, "gold")
	gold.World = "golden" // torn down as the golden world's (testSlice's cleanup is the old world's)
	t.Cleanup(func() { p.Teardown(context.Background(), gold) })
	if err := p.Provision(context.Background(), gold); err != nil {
		t.Fatal(err)
	}
	if err := p.PrepareTemplate(context.Background(), admin, gold.Name); err != nil {
		t.Fatal(err)
	}
	// A template whose name leaves no room for a spare's: its clones copy
	// it, as a clone does that finds its template's spare taken by another.
	long := testSlice(t, admin, "goldlong"+strings.Repeat("x", 37))
	long.World, long.Template = "golden", true
	t.Cleanup(func() { p.Teardown(context.Background(), long) })
	if spareOf(long.Name) != "" {
		t.Fatalf("%s has room for a spare's name", long.Name)
	}
	if err := p.Provision(context.Background(), long); err != nil {
		t.Fatal(err)
	}
	if err := p.PrepareTemplate(context.Background(), admin, long.Name); err != nil {
		t.Fatal(err)
	}
	// A clone takes the template's spare, handed over in the background,
	// or, when there is none, copies the template: both are cut.
	withSpare := func() {
		makeSpare(admin, gold.Name)
		waitSpare(context.Background(), admin, gold.Name)
	}
	// A spare an older binky made (or one whose preparing was cut off)
	// still holds what the template's role owns: it is taken the slow way.
	withOlderSpare := func() {
		withSpare()
		spare := spareOf(gold.Name)
		c.Exec(context.Background(), "ALTER DATABASE "+ident(spare)+" ALLOW_CONNECTIONS true")
		inDatabase(t, admin, spare, "ALTER SCHEMA public OWNER TO "+ident(gold.Name))
		c.Exec(context.Background(), "ALTER DATABASE "+ident(spare)+" ALLOW_CONNECTIONS false")
	}
	makers := []struct {
		how      string
		make     func(ctx context.Context, s adapters.Slice) error
		minSteps int
	}{
		{"provision", p.Provision, 3},
		// One transaction: the step after it is the only one.
		{"clone from the spare", func(ctx context.Context, s adapters.Slice) error {
			withSpare()
			return p.Clone(ctx, gold.Name, s)
		}, 1},
		{"clone from a spare not prepared", func(ctx context.Context, s adapters.Slice) error {
			withOlderSpare()
			return p.Clone(ctx, gold.Name, s)
		}, 3},
		{"clone without a spare", func(ctx context.Context, s adapters.Slice) error {
			return p.Clone(ctx, long.Name, s)
		}, 3},
	}
	for _, m := range makers {
		how, make := m.how, m.make
		probe := testSlice(t, admin, "probe")
		steps := stepsOf(t, func(ctx context.Context) error { return make(ctx, probe) })
		down := stepsOf(t, func(ctx context.Context) error { return p.Teardown(ctx, probe) })
		if len(steps) < m.minSteps || len(down) < 1 {
			t.Fatalf("%s passed steps %v, teardown %v", how, steps, down)
		}
		for _, step := range steps {
			t.Run(how+" cut at "+step, func(t *testing.T) {
				ctx := context.Background()
				s := testSlice(t, admin, "cut")
				if err := make(adapters.WithSteps(ctx, failAt(step)), s); err == nil {
					t.Fatal("the cut did not stop it")
				}
				found, err := p.List(ctx, admin)
				if err != nil {
					t.Fatal(err)
				}
				db, role := objects(t, c, s.Name)
				listed := map[string]bool{}
				for _, o := range found {
					if o.Slice == s.Name && o.Owner.Is(s.Owner()) {
						listed[o.Kind] = true
					}
				}
				if db != listed["database"] || role != listed["role"] {
					t.Errorf("left database=%v role=%v, gc would find database=%v role=%v", db, role, listed["database"], listed["role"])
				}
				// A second attempt finishes it, and it is the world's.
				if err := make(ctx, s); err != nil {
					t.Fatalf("%s again: %v", how, err)
				}
				if err := p.Teardown(ctx, s); err != nil {
					t.Fatal(err)
				}
				if db, role := objects(t, c, s.Name); db || role {
					t.Errorf("after teardown: database=%v role=%v", db, role)
				}
			})
			t.Run(how+" cut at "+step+", then torn down", func(t *testing.T) {
				ctx := context.Background()
				s := testSlice(t, admin, "cutdown")
				_ = make(adapters.WithSteps(ctx, failAt(step)), s)
				if err := p.Teardown(ctx, s); err != nil {
					t.Fatal(err)
				}
				if db, role := objects(t, c, s.Name); db || role {
					t.Errorf("after teardown: database=%v role=%v", db, role)
				}
			})
		}
		for _, step := range down {
			t.Run("teardown cut at "+step, func(t *testing.T) {
				ctx := context.Background()
				s := testSlice(t, admin, "down")
				if err := make(ctx, s); err != nil {
					t.Fatal(err)
				}
				if err := p.Teardown(adapters.WithSteps(ctx, failAt(step)), s); err == nil {
					t.Fatal("the cut did not stop it")
				}
				if err := p.Teardown(ctx, s); err != nil {
					t.Fatalf("teardown again: %v", err)
				}
				if db, role := objects(t, c, s.Name); db || role {
					t.Errorf("after teardown: database=%v role=%v", db, role)
				}
			})
		}
	}
}

// A world may grant on its own tables to any role it can name. Another
// world's teardown must still drop that world's role (a grant left by
// someone else made DROP ROLE fail, and the role stayed for good), and
// take nothing of the granting world's with it.
func TestAGrantFromAnotherWorldDoesNotKeepAWorldsRoleAlive(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p := New()
	a, b := testSlice(t, admin, "grantor"), testSlice(t, admin, "grantee")
	for _, s := range []adapters.Slice{a, b} {
		if err := p.Provision(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	addr, _ := p.Resolve(ctx, a)
	c, err := pgx.Connect(ctx, addr["url"])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, stmt := range []string{"CREATE TABLE t (id int)", "INSERT INTO t VALUES (1)",
		"GRANT SELECT ON t TO " + ident(b.Name), "ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO " + ident(b.Name)} {
		if _, err := c.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := p.Teardown(ctx, b); err != nil {
		t.Fatalf("teardown of the world granted to: %v", err)
	}
	if db, role := objects(t, adminConn(t, admin), b.Name); db || role {
		t.Fatalf("after teardown: database %v, role %v left", db, role)
	}
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the granting world's table after the other's teardown: %d rows, %v", n, err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE u (id int)"); err != nil {
		t.Fatalf("the granting world after the other's teardown: %v", err)
	}
}

// What a world's role owns in another database is neither dropped nor
// handed to the admin (who may be a superuser, and the object a function
// anyone may run): the role stays, and teardown says where.
func TestAWorldsRoleThatOwnsSomethingElsewhereIsLeftWithIt(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p := New()
	a, b := testSlice(t, admin, "host"), testSlice(t, admin, "owner")
	for _, s := range []adapters.Slice{a, b} {
		if err := p.Provision(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	inA, err := connect(ctx, admin, a.Name)
	if err != nil {
		t.Fatal(err)
	}
	defer inA.Close(ctx)
	for _, stmt := range []string{"CREATE TABLE public.planted (id int)", "ALTER TABLE public.planted OWNER TO " + ident(b.Name)} {
		if _, err := inA.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	err = p.Teardown(ctx, b)
	if err == nil || !strings.Contains(err.Error(), "owns objects in database "+a.Name) {
		t.Fatalf("teardown: %v, want it to name the database where the role owns something", err)
	}
	var owner string
	if err := inA.QueryRow(ctx, "SELECT tableowner FROM pg_tables WHERE tablename = 'planted'").Scan(&owner); err != nil || owner != b.Name {
		t.Fatalf("the planted table: owner %q, %v; want it left as it was, %s's", owner, err, b.Name)
	}
	if _, err := inA.Exec(ctx, "DROP TABLE public.planted"); err != nil {
		t.Fatal(err)
	}
}

// Every up of a world on the managed server hardens it, many at once and
// from more than one process: none may fail for another's REVOKE ("tuple
// concurrently updated"). (An attack saw one of twelve parallel ups fail.)
func TestHardenFromManyUpsAtOnceNeverFails(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p := New()
	c := adminConn(t, admin)
	for round := 0; round < 5; round++ {
		if _, err := c.Exec(ctx, "GRANT CONNECT, TEMPORARY ON DATABASE postgres, template1 TO PUBLIC"); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() { defer wg.Done(); errs <- p.Harden(ctx, admin) }()
		}
		for i := 0; i < 2; i++ { // another process's REVOKE, racing
			wg.Add(1)
			go func() {
				defer wg.Done()
				if other, err := pgx.Connect(ctx, admin); err == nil {
					other.Exec(ctx, "REVOKE CONNECT, TEMPORARY ON DATABASE postgres, template1 FROM PUBLIC")
					other.Close(ctx)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	var public bool
	c.QueryRow(ctx, `SELECT has_database_privilege('public', 'postgres', 'CONNECT')`).Scan(&public)
	if public {
		t.Error("the postgres database is still open to every role")
	}
}

// The golden template's role owns its database's public schema, and its
// migrate and seed (a branch's code) run as it. What they plant there — a
// function that beats a built-in one by a closer argument type, the trick
// of CVE-2018-1058 — must never run when binky's admin works inside the
// template or a copy of it (preparing it, a spare, a world's clone): it
// would run as a superuser. (Found by an attack: it made a world superuser.)
func TestCodeATemplatePlantsNeverRunsAsTheAdmin(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p, c := New(), adminConn(t, admin)
	gold := goldWithRows(t, admin, `CREATE TABLE public.calls (who text, fn text);
		GRANT INSERT ON public.calls TO PUBLIC;
		CREATE FUNCTION public.shobj_description(oid, text) RETURNS text LANGUAGE plpgsql AS $f$
		BEGIN INSERT INTO public.calls VALUES (current_user, 'shobj_description');
		RETURN pg_catalog.shobj_description($1, $2::name); END $f$;
		CREATE FUNCTION public.aclexplode(text) RETURNS SETOF record LANGUAGE plpgsql AS $f$
		BEGIN INSERT INTO public.calls VALUES (current_user, 'aclexplode'); END $f$;
		CREATE FUNCTION public.pg_terminate_backend(bigint) RETURNS boolean LANGUAGE plpgsql AS $f$
		BEGIN INSERT INTO public.calls VALUES (current_user, 'pg_terminate_backend'); RETURN false; END $f$;`)
	a := testSlice(t, admin, "planted")
	t.Cleanup(func() { p.Teardown(context.Background(), a) })
	if err := p.Clone(ctx, gold.Name, a); err != nil {
		t.Fatal(err)
	}
	waitSpare(ctx, admin, gold.Name)
	b := testSlice(t, admin, "planted2")
	t.Cleanup(func() { p.Teardown(context.Background(), b) })
	if err := p.Clone(ctx, gold.Name, b); err != nil {
		t.Fatal(err)
	}
	waitSpare(ctx, admin, gold.Name)
	var super string
	c.QueryRow(ctx, "SELECT current_user").Scan(&super)
	for _, db := range []string{gold.Name, a.Name, b.Name, spareOf(gold.Name)} {
		var open bool
		if c.QueryRow(ctx, "SELECT datallowconn FROM pg_database WHERE datname = $1", db).Scan(&open); !open {
			continue // a spare between copies
		}
		u, _ := url.Parse(admin)
		u.Path = "/" + db
		dc, err := pgx.Connect(ctx, u.String())
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := dc.Query(ctx, "SELECT who, fn FROM public.calls")
		calls, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Who, Fn string }])
		dc.Close(ctx)
		if err != nil {
			t.Fatalf("%s: %v", db, err)
		}
		for _, call := range calls {
			if call.Who == super {
				t.Errorf("in %s, the admin (%s) ran the template's %s", db, super, call.Fn)
			}
		}
	}
}

func connLimit(t *testing.T, c *pgx.Conn, role string) int {
	t.Helper()
	var n int
	if err := c.QueryRow(context.Background(), "SELECT rolconnlimit FROM pg_roles WHERE rolname = $1", role).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A world cannot take every connection of the server: its role may hold a
// third of max_connections at once (or what options.connection_limit
// says), so a world that leaks connections, or opens all it can, runs out
// of its own and no one else's. Clones from a template's spare get the
// same cap.
func TestAWorldCannotTakeEveryConnection(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p, c := New(), adminConn(t, admin)
	var mc int
	if err := c.QueryRow(ctx, "SELECT current_setting('max_connections')::int").Scan(&mc); err != nil {
		t.Fatal(err)
	}
	s := testSlice(t, admin, "conns")
	if err := p.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got, want := connLimit(t, c, s.Name), max(10, mc/3); got != want {
		t.Errorf("a world's role may hold %d connections, want %d (a third of max_connections %d)", got, want, mc)
	}

	s.Config = map[string]any{"connection_limit": int64(3)}
	if err := p.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	var held []*pgx.Conn
	defer func() {
		for _, h := range held {
			h.Close(context.Background())
		}
	}()
	addr, _ := p.Resolve(ctx, s)
	for i := 0; i < 3; i++ {
		h, err := pgx.Connect(ctx, addr["url"])
		if err != nil {
			t.Fatalf("connection %d of 3: %v", i+1, err)
		}
		held = append(held, h)
	}
	if h, err := pgx.Connect(ctx, addr["url"]); err == nil {
		h.Close(ctx)
		t.Error("a fourth connection with connection_limit = 3 was let in")
	} else if !strings.Contains(err.Error(), "too many connections for role") {
		t.Errorf("a fourth connection: %v, want too many connections for role", err)
	}
	other := testSlice(t, admin, "other")
	if err := p.Provision(ctx, other); err != nil {
		t.Fatal(err)
	}
	oa, _ := p.Resolve(ctx, other)
	if oc, err := pgx.Connect(ctx, oa["url"]); err != nil {
		t.Errorf("another world, while this one is at its cap: %v", err)
	} else {
		oc.Close(ctx)
	}

	s.Config = map[string]any{"connection_limit": "0"}
	if err := p.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got := connLimit(t, c, s.Name); got != -1 {
		t.Errorf("connection_limit = 0: the role's limit is %d, want -1 (none)", got)
	}
	s.Config = map[string]any{"connection_limit": "many"}
	if err := p.Provision(ctx, s); err == nil || !strings.Contains(err.Error(), "connection_limit") {
		t.Errorf("connection_limit = \"many\": %v, want an error naming the option", err)
	}

	gold := goldWithRows(t, admin)
	a := testSlice(t, admin, "fromspare")
	if err := p.Clone(ctx, gold.Name, a); err != nil {
		t.Fatal(err)
	}
	waitSpare(ctx, admin, gold.Name)
	b := testSlice(t, admin, "fromspare2")
	b.Config = map[string]any{"connection_limit": int64(7)}
	if err := p.Clone(ctx, gold.Name, b); err != nil {
		t.Fatal(err)
	}
	if got := connLimit(t, c, b.Name); got != 7 {
		t.Errorf("a world cloned from a spare may hold %d connections, want 7", got)
	}
}

// A new world's database takes no connection until PUBLIC's CONNECT is
// revoked: it is made closed and opened after the grants. (An attack
// polled as another world's role and got a session in that gap, which the
// REVOKE did not end.)
func TestANewDatabaseIsClosedUntilItsGrantsAreSet(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p := New()
	other := testSlice(t, admin, "poller")
	if err := p.Provision(ctx, other); err != nil {
		t.Fatal(err)
	}
	oa, _ := p.Resolve(ctx, other)
	s := testSlice(t, admin, "fresh")
	var gap error
	steps := adapters.WithSteps(ctx, func(step string) error {
		if step != "postgres.database_created" {
			return nil
		}
		u, _ := url.Parse(oa["url"])
		u.Path = "/" + s.Name
		c, err := pgx.Connect(ctx, u.String())
		if err == nil {
			c.Close(ctx)
			gap = errors.New("another world's role connected")
		}
		return nil
	})
	if err := p.Provision(steps, s); err != nil {
		t.Fatal(err)
	}
	if gap != nil {
		t.Errorf("between the new database and its grants: %v", gap)
	}
	sa, _ := p.Resolve(ctx, s)
	c, err := pgx.Connect(ctx, sa["url"])
	if err != nil {
		t.Fatalf("the world's own role, after provision: %v", err)
	}
	c.Close(ctx)
}

// openTo lets role connect to db for the test, as PUBLIC may on a server
// nobody hardened.
func openTo(t *testing.T, admin, db, role string) {
	t.Helper()
	c := adminConn(t, admin)
	if _, err := c.Exec(context.Background(), "GRANT CONNECT ON DATABASE "+ident(db)+" TO "+ident(role)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Exec(context.Background(), "REVOKE CONNECT ON DATABASE "+ident(db)+" FROM "+ident(role)) })
}

// worldConn connects to db as the world of s, with its own role.
func worldConn(t *testing.T, s adapters.Slice, db string) *pgx.Conn {
	t.Helper()
	addr, err := New().Resolve(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(addr["url"])
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	c, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatalf("connect to %s as %s: %v", db, s.Name, err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// On a server of your own, worlds may connect to template1, which every
// database made without a template copies: an attack planted a function
// there (where public was open to all, as before PostgreSQL 15) that the
// next world's database held and ran. On PostgreSQL 15 a world can still
// plant a large object. A new database holding something a world's role
// owns is refused, naming the role, and dropped.
func TestANewDatabaseRefusesWhatAWorldPlantedInTemplate1(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p := New()
	planter := testSlice(t, admin, "planter")
	if err := p.Provision(ctx, planter); err != nil {
		t.Fatal(err)
	}
	// As a server of your own is by default (the managed one is hardened,
	// and so may this test server be by an earlier test).
	openTo(t, admin, "template1", planter.Name)
	var oid uint32
	wc := worldConn(t, planter, "template1")
	if err := wc.QueryRow(ctx, "SELECT lo_from_bytea(0, 'planted')").Scan(&oid); err != nil {
		t.Skipf("this server does not let a world write into template1 (%v): nothing to refuse", err)
	}
	wc.Close(ctx) // template1 is copied only with no one connected
	unlink := func() error {
		c, err := connect(ctx, admin, "template1")
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "SELECT lo_unlink($1) FROM pg_largeobject_metadata WHERE oid = $1", oid)
		return err
	}
	t.Cleanup(func() { unlink() })

	victim := testSlice(t, admin, "victim")
	err := p.Provision(ctx, victim)
	if err == nil || !strings.Contains(err.Error(), "template1") || !strings.Contains(err.Error(), planter.Name) {
		t.Fatalf("provision = %v; want a refusal naming template1 and %s", err, planter.Name)
	}
	if db, err := database(ctx, adminConn(t, admin), victim.Name); err != nil || db.exists {
		t.Errorf("the refused database is still there (%v)", err)
	}
	if err := unlink(); err != nil {
		t.Fatal(err)
	}
	if err := p.Provision(ctx, victim); err != nil {
		t.Errorf("with template1 clean again: %v", err)
	}
}

// A removed world whose role owns something elsewhere (a large object in
// the postgres database) kept its login: its URL still worked after
// remove. The role stays, since what it owns stays, but shut.
func TestARoleLeftForWhatItOwnsCannotLogIn(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p := New()
	s := testSlice(t, admin, "keeper")
	if err := p.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	openTo(t, admin, "postgres", s.Name)
	var oid uint32
	if err := worldConn(t, s, "postgres").QueryRow(ctx, "SELECT lo_from_bytea(0, 'kept')").Scan(&oid); err != nil {
		t.Skipf("this server does not let a world write into the postgres database (%v)", err)
	}
	ac := adminConn(t, admin)
	defer ac.Exec(ctx, "SELECT lo_unlink($1)", oid)
	err := p.Teardown(ctx, s)
	if err == nil || !strings.Contains(err.Error(), "owns objects in database postgres") {
		t.Fatalf("teardown = %v; want it to name the database", err)
	}
	var login bool
	if err := ac.QueryRow(ctx, "SELECT rolcanlogin FROM pg_roles WHERE rolname = $1", s.Name).Scan(&login); err != nil || login {
		t.Errorf("the kept role can log in: %v, %v", login, err)
	}
	addr, _ := p.Resolve(ctx, s)
	if c, err := pgx.Connect(ctx, addr["url"]); err == nil {
		c.Close(ctx)
		t.Error("the removed world's URL still logs in")
	}
	if _, err := ac.Exec(ctx, "SELECT lo_unlink($1)", oid); err != nil {
		t.Fatal(err)
	}
}

// A database an admin made owned by a world's role kept the role's login
// past the world's remove: a shared object's ownership has no database in
// pg_shdepend, so the check that shuts such a role never saw it.
func TestARoleThatOwnsADatabaseIsShutNotLeftLoggingIn(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p := New()
	s := testSlice(t, admin, "dbowner")
	if err := p.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	ac := adminConn(t, admin)
	scratch := s.Name + "_scratch"
	if _, err := ac.Exec(ctx, "CREATE DATABASE "+ident(scratch)+" OWNER "+ident(s.Name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ac.Exec(context.Background(), "DROP DATABASE IF EXISTS "+ident(scratch)) })
	err := p.Teardown(ctx, s)
	if err == nil || !strings.Contains(err.Error(), "owns database "+scratch) {
		t.Fatalf("teardown = %v; want it to name the database the role owns", err)
	}
	var login bool
	if err := ac.QueryRow(ctx, "SELECT rolcanlogin FROM pg_roles WHERE rolname = $1", s.Name).Scan(&login); err != nil || login {
		t.Errorf("the kept role can log in: %v, %v", login, err)
	}
	if db, _ := objects(t, ac, scratch); !db {
		t.Error("the admin's database was dropped")
	}
}

// A world holding a session on template1 made every database made without
// a template fail ("source database is being accessed by other users"):
// worlds' sessions there are ended before the copy.
func TestAWorldsSessionOnTemplate1DoesNotBlockNewDatabases(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p := New()
	holder := testSlice(t, admin, "holder")
	if err := p.Provision(ctx, holder); err != nil {
		t.Fatal(err)
	}
	openTo(t, admin, "template1", holder.Name)
	worldConn(t, holder, "template1")
	other := testSlice(t, admin, "blocked")
	if err := p.Provision(ctx, other); err != nil {
		t.Fatalf("a world's session on template1 blocks a new database: %v", err)
	}
}

// An admin's database of a slice's name, with no role of that name: the
// provision is refused before it makes a role, which nothing would then
// drop (the world takes a salted name): an attack found one left, able to
// log in, for the world's whole life and past its remove.
func TestAForeignDatabaseIsRefusedBeforeARoleIsMade(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	c := adminConn(t, admin)
	s := testSlice(t, admin, "fdb")
	if _, err := c.Exec(ctx, "CREATE DATABASE "+ident(s.Name)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+ident(s.Name)) })
	for _, template := range []string{"", "template1"} {
		var err error
		if template == "" {
			err = New().Provision(ctx, s)
		} else {
			err = New().Clone(ctx, template, s)
		}
		if !errors.Is(err, adapters.ErrTaken) {
			t.Errorf("provision (template %q) over an admin's database: %v, want ErrTaken", template, err)
		}
		if _, role := objects(t, c, s.Name); role {
			t.Fatalf("a role %s was made for a database binky cannot have (template %q)", s.Name, template)
		}
	}
}

// A database marked as the world's whose role lost its mark: the database
// goes and the role stays, and Teardown says so (ErrKept), not that it
// left the slice alone. A reset read "left alone" and kept a record of
// data that was gone.
func TestATeardownWhoseRoleIsNotMarkedDropsTheDatabaseAndSaysTheRoleStayed(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p := New()
	s := testSlice(t, admin, "unmarkedrole")
	if err := p.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	c := adminConn(t, admin)
	if _, err := c.Exec(ctx, "COMMENT ON ROLE "+ident(s.Name)+" IS NULL"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Exec(context.Background(), "DROP ROLE IF EXISTS "+ident(s.Name)) })
	err := p.Teardown(ctx, s)
	if !errors.Is(err, adapters.ErrKept) || errors.Is(err, adapters.ErrNotOurs) || !strings.Contains(err.Error(), "role "+s.Name+" kept") {
		t.Fatalf("teardown: %v, want the database dropped and the role said kept", err)
	}
	if db, role := objects(t, c, s.Name); db || !role {
		t.Errorf("after teardown: database there %v, role there %v; want the database gone and the role left", db, role)
	}
}
