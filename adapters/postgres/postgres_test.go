package postgres

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/adapterstest"
)

func adminURL(t *testing.T) string {
	u := os.Getenv("BINKY_TEST_PG")
	if u == "" {
		t.Skip("BINKY_TEST_PG is not set (make test starts a throwaway Postgres and sets it)")
	}
	return u
}

// TestConformance runs the suite, with a database and role an admin made
// by hand under a slice's name as the foreign object binky must not touch.
func TestConformance(t *testing.T) {
	admin := adminURL(t)
	adapterstest.RunServer(t, New(), adapterstest.Server{AdminURL: admin,
		Foreign: func(ctx context.Context, slice string) error {
			c, err := pgx.Connect(ctx, admin)
			if err != nil {
				return err
			}
			defer c.Close(ctx)
			t.Cleanup(func() {
				c, err := pgx.Connect(context.Background(), admin)
				if err == nil {
					c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+ident(slice))
					c.Exec(context.Background(), "DROP ROLE IF EXISTS "+ident(slice))
					c.Close(context.Background())
				}
			})
			for _, stmt := range []string{"CREATE ROLE " + ident(slice) + " LOGIN PASSWORD 'theirs'", "CREATE DATABASE " + ident(slice) + " OWNER " + ident(slice)} {
				if _, err := c.Exec(ctx, stmt); err != nil {
					return err
				}
			}
			return nil
		},
		Intact: func(ctx context.Context, slice string) (bool, error) {
			u, err := url.Parse(admin)
			if err != nil {
				return false, err
			}
			u.User, u.Path = url.UserPassword(slice, "theirs"), "/"+slice
			c, err := pgx.Connect(ctx, u.String())
			if err != nil {
				return false, err
			}
			defer c.Close(ctx)
			var owner string
			err = c.QueryRow(ctx, "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()").Scan(&owner)
			return owner == slice, err
		}})
}

func TestAWorldsRoleCannotOpenAnotherWorldsDatabase(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p := New()
	sa := adapters.Slice{Name: "iso_a", World: "w-iso-a", AdminURL: admin, Password: "aaaa1111"}
	sb := adapters.Slice{Name: "iso_b", World: "w-iso-b", AdminURL: admin, Password: "bbbb2222"}
	for _, s := range []adapters.Slice{sa, sb} {
		if err := p.Provision(ctx, s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Teardown(context.Background(), s) })
	}
	ra, _ := p.Resolve(ctx, sa)
	rb, _ := p.Resolve(ctx, sb)
	if strings.Contains(ra["url"], "binky:") {
		t.Errorf("world url carries the admin role: %s", adapters.Redact(ra["url"]))
	}
	// A's own database: yes.
	c, err := pgx.Connect(ctx, ra["url"])
	if err != nil {
		t.Fatalf("A cannot open its own database: %v", err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE mine (x int)"); err != nil {
		t.Errorf("A cannot create a table in its own database: %v", err)
	}
	c.Close(ctx)
	// B's database with A's role: no.
	cross := strings.Replace(ra["url"], "/iso_a", "/iso_b", 1)
	if c, err := pgx.Connect(ctx, cross); err == nil {
		c.Close(ctx)
		t.Fatal("A's role opened B's database")
	} else if !strings.Contains(err.Error(), "permission denied") {
		t.Logf("refused as expected: %v", err)
	}
	_ = rb
}

func TestTeardownLeavesAnUnmarkedDatabaseAlone(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	c.Exec(ctx, `DROP DATABASE IF EXISTS acme_login_fix_theirs`)
	if _, err := c.Exec(ctx, `CREATE DATABASE acme_login_fix_theirs`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Exec(context.Background(), `DROP DATABASE IF EXISTS acme_login_fix_theirs`) })
	p := New()
	err = p.Teardown(ctx, adapters.Slice{Name: "acme_login_fix_theirs", World: "w-anyone", AdminURL: admin})
	if err == nil || !strings.Contains(err.Error(), "not marked") {
		t.Errorf("teardown of an unmarked database: %v", err)
	}
	var n int
	c.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = 'acme_login_fix_theirs'`).Scan(&n)
	if n != 1 {
		t.Fatal("an unmarked database was dropped")
	}
	if err := p.Provision(ctx, adapters.Slice{Name: "acme_login_fix_theirs", World: "w-anyone", AdminURL: admin, Password: "cccc3333"}); err == nil {
		t.Error("provision took over an unmarked database")
	}
	c.Exec(ctx, `DROP ROLE IF EXISTS acme_login_fix_theirs`)
}

func TestCloneCopiesTheTemplateAndHandsItsObjectsToTheWorld(t *testing.T) {
	admin := adminURL(t)
	ctx := context.Background()
	p := New()
	gold := adapters.Slice{Name: "golden_test_tmpl", World: "golden", AdminURL: admin, Password: "dddd4444"}
	world := adapters.Slice{Name: "golden_test_copy", World: "w-copy", AdminURL: admin, Password: "eeee5555"}
	p.Teardown(ctx, world)
	p.Teardown(ctx, gold)
	if err := p.Provision(ctx, gold); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Teardown(context.Background(), world); p.Teardown(context.Background(), gold) })
	ga, _ := p.Resolve(ctx, gold)
	gc, err := pgx.Connect(ctx, ga["url"])
	if err != nil {
		t.Fatal(err)
	}
	gc.Exec(ctx, "CREATE TABLE items (id int); INSERT INTO items VALUES (1), (2), (3)")
	gc.Close(ctx)
	if err := p.PrepareTemplate(ctx, admin, gold.Name); err != nil {
		t.Fatal(err)
	}
	if err := p.Clone(ctx, gold.Name, world); err != nil {
		t.Fatal(err)
	}
	wa, _ := p.Resolve(ctx, world)
	wc, err := pgx.Connect(ctx, wa["url"])
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Close(ctx)
	var n int
	if err := wc.QueryRow(ctx, "SELECT count(*) FROM items").Scan(&n); err != nil || n != 3 {
		t.Fatalf("clone has %d rows (%v)", n, err)
	}
	if _, err := wc.Exec(ctx, "INSERT INTO items VALUES (4); ALTER TABLE items ADD COLUMN name text"); err != nil {
		t.Errorf("the world's role does not own the cloned table: %v", err)
	}
}
