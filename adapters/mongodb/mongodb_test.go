package mongodb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/adapterstest"
)

func adminURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("BINKY_TEST_MONGO")
	if u == "" {
		t.Skip("BINKY_TEST_MONGO is unset: set it to a MongoDB admin URL (mongod with --auth, or FerretDB with ?authMechanism=PLAIN&postgres=host:port/db); make test starts a FerretDB")
	}
	return u
}

func adminClient(t *testing.T, admin string) *mongo.Client {
	t.Helper()
	du, _, _, err := adminParts(admin)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dial(context.Background(), du)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Disconnect(context.Background()) })
	return c
}

func isFerret(t *testing.T, admin string) bool {
	_, pg, _, err := adminParts(admin)
	if err != nil {
		t.Fatal(err)
	}
	return pg != ""
}

func TestConformance(t *testing.T) {
	admin := adminURL(t)
	c := adminClient(t, admin)
	ferret := isFerret(t, admin)
	adapterstest.RunServer(t, New(), adapterstest.Server{
		AdminURL: admin,
		// An admin's own database (and, on mongod, a user in it) under the
		// slice's name.
		Foreign: func(ctx context.Context, slice string) error {
			if _, err := c.Database(slice).Collection("things").InsertOne(ctx, bson.D{{Key: "foreign", Value: true}}); err != nil {
				return err
			}
			if ferret {
				return nil
			}
			return c.Database(slice).RunCommand(ctx, bson.D{{Key: "createUser", Value: slice}, {Key: "pwd", Value: "foreign-pw"},
				{Key: "roles", Value: bson.A{}}}).Err()
		},
		Intact: func(ctx context.Context, slice string) (bool, error) {
			n, err := c.Database(slice).Collection("things").CountDocuments(ctx, bson.D{{Key: "foreign", Value: true}})
			if err != nil || n != 1 {
				return false, err
			}
			if !ferret {
				there, err := (&server{c: c}).exists(ctx, "user", slice)
				if err != nil || !there {
					return false, err
				}
				c.Database(slice).RunCommand(ctx, bson.D{{Key: "dropUser", Value: slice}})
			}
			return true, c.Database(slice).Drop(ctx)
		},
	})
}

// world provisions a slice for the attack tests and connects as its user.
func world(t *testing.T, ctx context.Context, admin, name string) (adapters.Slice, *mongo.Client) {
	t.Helper()
	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	s := adapters.Slice{Name: adapters.SliceName("attack"+run, name, "w-"+name+run, 0), World: "w-" + name + run, Home: "home" + run,
		AdminURL: admin, Password: adapters.Password([]byte("attack-secret"), "mongodb", name+run)}
	a := New()
	if err := a.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Teardown(context.Background(), s); err != nil {
			t.Errorf("teardown %s: %v", s.Name, err)
		}
	})
	addr, err := a.Resolve(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	c, err := dial(ctx, addr["url"])
	if err != nil {
		t.Fatalf("connect as the world's user: %v", err)
	}
	t.Cleanup(func() { c.Disconnect(context.Background()) })
	return s, c
}

func TestOneWorldCannotReachAnother(t *testing.T) {
	admin := adminURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sa, a := world(t, ctx, admin, "a")
	sb, b := world(t, ctx, admin, "b")
	ferret := isFerret(t, admin)

	// Each world works in its own database.
	if _, err := b.Database(sb.Name).Collection("secrets").InsertOne(ctx, bson.D{{Key: "secret", Value: "b's"}}); err != nil {
		t.Fatalf("b cannot write its own database: %v", err)
	}
	if _, err := a.Database(sa.Name).Collection("mine").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatalf("a cannot write its own database: %v", err)
	}
	bSecrets := func() int64 {
		n, err := b.Database(sb.Name).Collection("secrets").CountDocuments(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	refused := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: allowed, want refused", what)
		} else {
			t.Logf("%s: refused: %.160s", what, err)
		}
	}
	var doc bson.M
	refused("a reads b's documents", a.Database(sb.Name).Collection("secrets").FindOne(ctx, bson.D{}).Decode(&doc))
	_, err := a.Database(sb.Name).Collection("secrets").InsertOne(ctx, bson.D{{Key: "planted", Value: true}})
	refused("a writes into b's database", err)
	_, err = a.Database(sb.Name).Collection("secrets").DeleteMany(ctx, bson.D{})
	refused("a deletes b's documents", err)
	refused("a drops b's collection", a.Database(sb.Name).RunCommand(ctx, bson.D{{Key: "drop", Value: "secrets"}}).Err())
	refused("a drops b's database", a.Database(sb.Name).RunCommand(ctx, bson.D{{Key: "dropDatabase", Value: 1}}).Err())
	if n := bSecrets(); n != 1 {
		t.Errorf("b's collection holds %d documents after a's attempts, want 1", n)
	}
	refused("a lists b's users", a.Database(sb.Name).RunCommand(ctx, bson.D{{Key: "usersInfo", Value: 1}}).Err())
	refused("a lists every user", a.Database("admin").RunCommand(ctx, bson.D{{Key: "usersInfo", Value: bson.D{{Key: "forAllDBs", Value: true}}}}).Err())
	refused("a creates a user", a.Database(sa.Name).RunCommand(ctx, bson.D{{Key: "createUser", Value: "evil"}, {Key: "pwd", Value: "evil-pw"}, {Key: "roles", Value: bson.A{}}}).Err())
	refused("a creates a user in admin", a.Database("admin").RunCommand(ctx, bson.D{{Key: "createUser", Value: "evil"}, {Key: "pwd", Value: "evil-pw"},
		{Key: "roles", Value: bson.A{"root"}}}).Err())
	refused("a creates a role", a.Database(sa.Name).RunCommand(ctx, bson.D{{Key: "createRole", Value: "evil"}, {Key: "privileges", Value: bson.A{}}, {Key: "roles", Value: bson.A{}}}).Err())
	refused("a grants itself a role", a.Database(sa.Name).RunCommand(ctx, bson.D{{Key: "grantRolesToUser", Value: sa.Name}, {Key: "roles", Value: bson.A{"root"}}}).Err())
	refused("a reads binky's marks", a.Database(markDB).Collection(markColl).FindOne(ctx, bson.D{}).Decode(&doc))
	_, err = a.Database(markDB).Collection(markColl).InsertOne(ctx, bson.D{{Key: "_id", Value: "database:forged"}, {Key: "world", Value: sa.World}})
	refused("a forges a mark", err)
	_, err = a.Database(sa.Name+"_more").Collection("x").InsertOne(ctx, bson.D{{Key: "x", Value: 1}})
	refused("a creates another database", err)

	// listDatabases names only what the caller can read: never b's, never
	// binky's.
	names, err := a.ListDatabaseNames(ctx, bson.D{})
	if err != nil {
		t.Logf("listDatabases as a: refused (%v)", err)
	}
	for _, n := range names {
		if n == sb.Name || n == markDB {
			t.Errorf("listDatabases as a shows %q (all: %v)", n, names)
		}
	}

	// Collection names: mongod refuses; FerretDB 1.x answers listCollections
	// from its own catalog, shared by every client, so a learns the names
	// of b's collections (never their documents). Pinned, and said in
	// docs/adapters/mongodb.md.
	colls, err := a.Database(sb.Name).ListCollectionNames(ctx, bson.D{})
	switch {
	case ferret && (err != nil || !slices.Contains(colls, "secrets")):
		t.Errorf("FerretDB no longer shows b's collection names to a (%v, %v): isolation improved; update this test and the docs", colls, err)
	case !ferret && err == nil && len(colls) > 0:
		t.Errorf("mongod shows b's collection names to a: %v", colls)
	}
}

func TestResolveCarriesTheWorldsUserNeverTheAdmin(t *testing.T) {
	s := adapters.Slice{Name: "acme_feat", Password: "0123abcd"}
	for _, tc := range []struct{ admin, want string }{
		{"mongodb://root:adminpw@127.0.0.1:27017/?authSource=admin",
			"mongodb://acme_feat:0123abcd@127.0.0.1:27017/acme_feat?authSource=acme_feat"},
		{"mongodb://binky:adminpw@127.0.0.1:27018/?authMechanism=PLAIN&postgres=127.0.0.1:5432/ferretdb",
			"mongodb://mongo_acme_feat:0123abcd@127.0.0.1:27018/acme_feat?authMechanism=PLAIN&authSource=acme_feat"},
	} {
		s.AdminURL = tc.admin
		addr, err := New().Resolve(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if addr["url"] != tc.want {
			t.Errorf("url = %s, want %s", addr["url"], tc.want)
		}
		if strings.Contains(addr["url"], "adminpw") || strings.Contains(addr["url"], "postgres=") {
			t.Errorf("the world's url carries the admin's: %s", addr["url"])
		}
		if addr["name"] != "acme_feat" || addr["port"] == "" || addr["host"] != "127.0.0.1" || addr["password"] != s.Password {
			t.Errorf("address %v", addr)
		}
	}
}

func TestAdminURLParameters(t *testing.T) {
	for _, tc := range []struct{ in, driver, pg string }{
		{"mongodb://root:pw@127.0.0.1:27017/?authSource=admin", "mongodb://root:pw@127.0.0.1:27017/?authSource=admin", ""},
		{"mongodb://binky:pw@127.0.0.1:27018/?authMechanism=PLAIN&postgres=127.0.0.1:5432/ferretdb",
			"mongodb://binky:pw@127.0.0.1:27018/?authMechanism=PLAIN", "postgres://binky:pw@127.0.0.1:5432/ferretdb?sslmode=disable"},
		{"mongodb://binky:pw@127.0.0.1:27018/?authMechanism=PLAIN&postgres=" + "postgres%3A%2F%2Fpg%3Apgpw%40db%3A5433%2Ff%3Fsslmode%3Drequire",
			"mongodb://binky:pw@127.0.0.1:27018/?authMechanism=PLAIN", "postgres://pg:pgpw@db:5433/f?sslmode=require"},
	} {
		d, pg, _, err := adminParts(tc.in)
		if err != nil {
			t.Fatal(err)
		}
		if d != tc.driver || pg != tc.pg {
			t.Errorf("adminParts(%s) = %s, %s; want %s, %s", tc.in, d, pg, tc.driver, tc.pg)
		}
	}
	for _, bad := range []string{"postgres://x@y/z", "mongodb://a:b@h/?postgres=%zz", "::"} {
		if _, _, _, err := adminParts(bad); err == nil {
			t.Errorf("adminParts(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "b@") {
			t.Errorf("error shows a password: %v", err)
		}
	}
}

func TestCloneCopiesDocumentsAndIndexes(t *testing.T) {
	admin := adminURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	golden, g := world(t, ctx, admin, "golden")
	docs := make([]any, 50)
	for i := range docs {
		docs[i] = bson.D{{Key: "n", Value: i}, {Key: "email", Value: fmt.Sprintf("u%d@example.com", i)}}
	}
	if _, err := g.Database(golden.Name).Collection("users").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Database(golden.Name).Collection("users").Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "email", Value: 1}},
		Options: options.Index().SetUnique(true).SetName("email_unique")}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Database(golden.Name).Collection("empty").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}

	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	s := adapters.Slice{Name: adapters.SliceName("clone"+run, "copy", "w-copy"+run, 0), World: "w-copy" + run, Home: golden.Home,
		AdminURL: admin, Password: adapters.Password([]byte("attack-secret"), "mongodb", "copy"+run)}
	a := New()
	t.Cleanup(func() { a.Teardown(context.Background(), s) })
	if err := a.Clone(ctx, golden.Name, s); err != nil {
		t.Fatalf("clone: %v", err)
	}
	addr, err := a.Resolve(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	w, err := dial(ctx, addr["url"])
	if err != nil {
		t.Fatal(err)
	}
	defer w.Disconnect(context.Background())
	users := w.Database(s.Name).Collection("users")
	if n, err := users.CountDocuments(ctx, bson.D{}); err != nil || n != 50 {
		t.Errorf("the copy's users: %d documents (err %v), want 50", n, err)
	}
	// The unique index came along: the world's user hits it.
	if _, err := users.InsertOne(ctx, bson.D{{Key: "email", Value: "u7@example.com"}}); !mongo.IsDuplicateKeyError(err) {
		t.Errorf("insert of a duplicate email into the copy: %v, want a duplicate key error", err)
	}
	// The world owns its copy: it can write, and the golden is untouched.
	if _, err := users.InsertOne(ctx, bson.D{{Key: "email", Value: "new@example.com"}}); err != nil {
		t.Errorf("the world cannot write its copy: %v", err)
	}
	if n, _ := g.Database(golden.Name).Collection("users").CountDocuments(ctx, bson.D{}); n != 50 {
		t.Errorf("the golden has %d users after the copy was written, want 50", n)
	}
	if n, err := w.Database(s.Name).Collection("empty").CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Errorf("the copy's second collection: %d documents (err %v), want 1", n, err)
	}
}

// A FerretDB whose --postgresql-url can log in lends that role to every
// client that sends no credentials: binky refuses to carve worlds from it.
func TestRefusesAFerretDBThatLendsItsCredentials(t *testing.T) {
	admin := adminURL(t)
	_, pg, _, _ := adminParts(admin)
	bin := adapters.FindServerBinary("ferretdb")
	if pg == "" || bin == "" {
		t.Skip("needs BINKY_TEST_MONGO to be a FerretDB and its binary (make ferretdb)")
	}
	addr := startFerretDB(t, bin, pg)
	u, _ := url.Parse(admin)
	u.Host = addr
	s := adapters.Slice{Name: "lent_" + fmt.Sprintf("%x", time.Now().UnixNano())[8:], World: "w-lent", Home: "h", AdminURL: u.String(), Password: "0123456789abcdef"}
	err := New().Provision(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "send no credentials") {
		t.Errorf("provision on a FerretDB that lends its credentials: %v, want a refusal", err)
	}
	if err := New().Teardown(context.Background(), s); err != nil {
		t.Errorf("teardown after the refusal: %v", err)
	}
}

// startFerretDB starts a FerretDB of our own on the test's PostgreSQL with
// pgURL as its --postgresql-url, and returns its address.
func startFerretDB(t *testing.T, bin, pgURL string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "--postgresql-url="+pgURL, "--listen-addr="+addr, "--debug-addr=-", "--telemetry=disable",
		"--state-dir="+t.TempDir(), "--log-level=error")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatal("the FerretDB of the test did not listen")
		}
	}
}

// FerretDB 1.x loads its catalog from the first client that connects after
// it starts. When that is a world, the catalog holds the world's database
// only: binky notices, instead of taking every other database (its marks
// among them) for absent.
func TestNoticesAFerretDBCatalogLoadedByAWorld(t *testing.T) {
	admin := adminURL(t)
	_, pg, _, _ := adminParts(admin)
	bin := adapters.FindServerBinary("ferretdb")
	if pg == "" || bin == "" {
		t.Skip("needs BINKY_TEST_MONGO to be a FerretDB and its binary (make ferretdb)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, _ := world(t, ctx, admin, "first")
	pu, _ := url.Parse(pg)
	pu.User = url.User("binky_nobody")
	addr := startFerretDB(t, bin, pu.String())
	wa, err := New().Resolve(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	wu, _ := url.Parse(wa["url"])
	wu.Host = addr
	w, err := dial(ctx, wu.String())
	if err != nil {
		t.Fatal(err)
	}
	defer w.Disconnect(context.Background())
	if _, err := w.ListDatabaseNames(ctx, bson.D{}); err != nil {
		t.Fatalf("the world's first call: %v", err)
	}
	au, _ := url.Parse(admin)
	au.Host = addr
	other := s
	other.Name, other.World, other.AdminURL = s.Name+"_x", s.World+"x", au.String()
	if err := New().Provision(ctx, other); !errors.Is(err, ErrStaleCatalog) {
		t.Errorf("provision on a FerretDB whose catalog a world loaded: %v, want ErrStaleCatalog", err)
	}
}

// FerretDB has no users of its own: without the PostgreSQL behind it binky
// cannot give a world one, and says what to add instead of carving a slice
// that every world could reach.
func TestRefusesAFerretDBWithoutItsPostgres(t *testing.T) {
	admin := adminURL(t)
	if !isFerret(t, admin) {
		t.Skip("BINKY_TEST_MONGO is not a FerretDB")
	}
	u, _ := url.Parse(admin)
	q := u.Query()
	q.Del("postgres")
	u.RawQuery = q.Encode()
	s := adapters.Slice{Name: "nopg_" + fmt.Sprintf("%x", time.Now().UnixNano())[8:], World: "w", Home: "h", AdminURL: u.String(), Password: "0123456789abcdef"}
	err := New().Provision(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "postgres=") {
		t.Errorf("provision on FerretDB without postgres=: %v, want a refusal saying what to add", err)
	}
	if err != nil && strings.Contains(err.Error(), u.User.String()) {
		t.Errorf("the error shows the admin's credentials: %v", err)
	}
}

// worldPG connects to the PostgreSQL behind a FerretDB directly, as the
// world's role: its MongoDB password is that role's, so a world's code can.
func worldPG(t *testing.T, admin string, s adapters.Slice) *pgx.Conn {
	t.Helper()
	_, pg, _, _ := adminParts(admin)
	u, _ := url.Parse(pg)
	u.User = url.UserPassword(userName(s.Name, true), s.Password)
	c, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatalf("connect to PostgreSQL as the world's role: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// An attack made a world superuser: its role owns its schema, so it put a
// view calling its own function in place of FerretDB's metadata table, and
// the next FerretDB to start read it as its first client, binky's admin
// (binky restarts FerretDB itself when a world's client came first). The
// world can make only what FerretDB makes now, and a FerretDB started
// afterwards loads its catalog without running anything of the world's.
func TestAWorldCannotPlantCodeForFerretDBsAdminToRun(t *testing.T) {
	admin := adminURL(t)
	_, pg, _, _ := adminParts(admin)
	if pg == "" {
		t.Skip("BINKY_TEST_MONGO is a mongod: FerretDB's PostgreSQL is what this attacks")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, c := world(t, ctx, admin, "planter")
	if _, err := c.Database(s.Name).Collection("things").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	p := worldPG(t, admin, s)
	sch := pgx.Identifier{s.Name}.Sanitize()
	role := pgx.Identifier{userName(s.Name, true)}.Sanitize()
	lit := "'" + userName(s.Name, true) + "'"
	for _, q := range []string{
		"CREATE FUNCTION " + sch + ".f() RETURNS jsonb LANGUAGE plpgsql AS $$BEGIN IF current_user <> " + lit + " THEN EXECUTE 'ALTER ROLE " + role + " SUPERUSER'; END IF; RETURN NULL; END$$",
		"ALTER TABLE " + sch + "._ferretdb_database_metadata RENAME TO m2",
		"CREATE VIEW " + sch + "._ferretdb_database_metadata AS SELECT _jsonb FROM " + sch + ".m2 WHERE " + sch + ".f() IS NULL",
	} {
		if _, err := p.Exec(ctx, q); err == nil {
			t.Errorf("the world's role: %s: allowed, want refused", q)
		}
	}
	// FerretDB's own work still goes through for the world.
	if _, err := c.Database(s.Name).Collection("more").InsertOne(ctx, bson.D{{Key: "y", Value: 2}}); err != nil {
		t.Errorf("the world creates a collection through FerretDB: %v", err)
	}
	if err := c.Database(s.Name).Collection("more").Drop(ctx); err != nil {
		t.Errorf("the world drops a collection through FerretDB: %v", err)
	}

	bin := adapters.FindServerBinary("ferretdb")
	if bin == "" {
		t.Skip("no ferretdb binary to start a second FerretDB with (make ferretdb)")
	}
	nobody, _ := url.Parse(pg)
	nobody.User = url.User("binky_nobody")
	u, _ := url.Parse(admin)
	u.Host = startFerretDB(t, bin, nobody.String())
	fresh := adminClient(t, u.String())
	names, err := fresh.ListDatabaseNames(ctx, bson.D{})
	if err != nil || !slices.Contains(names, s.Name) {
		t.Errorf("a FerretDB started afterwards, its catalog loaded by the admin: %v (err %v), want %s among them", names, err, s.Name)
	}
	var super bool
	if err := p.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super); err != nil || super {
		t.Errorf("the world's role is superuser: %v (err %v)", super, err)
	}
}

// A built golden template's user can no longer log in or keep a session:
// its password was given to the migrate and seed that built it (a
// branch's code), which could otherwise change what every later world
// starts from. Clones still copy it; a rebuild's provision gives the
// login back.
func TestABuiltTemplatesUserCannotChangeItAnyMore(t *testing.T) {
	admin := adminURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := New()
	gold, kept := world(t, ctx, admin, "golden")
	if _, err := kept.Database(gold.Name).Collection("users").InsertOne(ctx, bson.D{{Key: "n", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PrepareTemplate(ctx, admin, gold.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := kept.Database(gold.Name).Collection("users").InsertOne(ctx, bson.D{{Key: "poison", Value: true}}); err == nil {
		t.Error("a client the template's user kept open still writes into it")
	}
	addr, err := a.Resolve(ctx, gold)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := dial(ctx, addr["url"]); err == nil {
		_, err := c.Database(gold.Name).Collection("users").InsertOne(ctx, bson.D{{Key: "poison", Value: true}})
		c.Disconnect(context.Background())
		if err == nil {
			t.Error("a new client of the template's user still writes into it")
		}
	}
	if err := a.PrepareTemplate(ctx, admin, gold.Name); err != nil {
		t.Fatalf("prepared again (every up that copies it does): %v", err)
	}
	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	s := adapters.Slice{Name: adapters.SliceName("tmpl"+run, "copy", "w-copy"+run, 0), World: "w-copy" + run, Home: gold.Home,
		AdminURL: admin, Password: adapters.Password([]byte("attack-secret"), "mongodb", "copy"+run)}
	t.Cleanup(func() { a.Teardown(context.Background(), s) })
	if err := a.Clone(ctx, gold.Name, s); err != nil {
		t.Fatalf("clone the prepared template: %v", err)
	}
	if err := a.Provision(ctx, gold); err != nil {
		t.Fatal(err)
	}
	again, err := dial(ctx, addr["url"])
	if err != nil {
		t.Fatalf("after provisioning again, the template's user: %v", err)
	}
	defer again.Disconnect(context.Background())
	if n, err := again.Database(gold.Name).Collection("users").CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Errorf("after provisioning again, the template's user reads %d documents (err %v), want 1", n, err)
	}
}

// A clone's database stays the admin's until its documents are copied:
// the admin's writes (collections created, documents copied) must never
// land in a table the world's role owns, where a CHECK or DEFAULT of its
// making would run as the admin. (An attack logged in as the role during
// a clone, with the password its earlier life knew, and planted one.)
func TestACloneIsTheAdminsUntilItIsCopied(t *testing.T) {
	admin := adminURL(t)
	_, pg, _, _ := adminParts(admin)
	if pg == "" {
		t.Skip("BINKY_TEST_MONGO is a mongod: this is FerretDB's PostgreSQL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gold, g := world(t, ctx, admin, "golden")
	if _, err := g.Database(gold.Name).Collection("users").InsertOne(ctx, bson.D{{Key: "n", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	a := New()
	if err := a.PrepareTemplate(ctx, admin, gold.Name); err != nil {
		t.Fatal(err)
	}
	pc, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close(context.Background())
	// The owners of the slice's schema and of every table in it.
	owners := func(schema string) []string {
		rows, err := pc.Query(ctx, `SELECT DISTINCT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = $1
			UNION SELECT DISTINCT tableowner::text FROM pg_tables WHERE schemaname = $1`, schema)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	var me string
	if err := pc.QueryRow(ctx, "SELECT current_user").Scan(&me); err != nil {
		t.Fatal(err)
	}
	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	s := adapters.Slice{Name: adapters.SliceName("own"+run, "copy", "w-own"+run, 0), World: "w-own" + run, Home: gold.Home,
		AdminURL: admin, Password: adapters.Password([]byte("attack-secret"), "mongodb", "own"+run)}
	t.Cleanup(func() { a.Teardown(context.Background(), s) })
	var during []string
	steps := adapters.WithSteps(ctx, func(step string) error {
		if step == "mongodb.collections_created" {
			during = owners(s.Name)
		}
		return nil
	})
	if err := a.Clone(steps, gold.Name, s); err != nil {
		t.Fatal(err)
	}
	if len(during) != 1 || during[0] != me {
		t.Errorf("while the documents were copied, the clone's schema and tables belonged to %v, want the admin (%s) alone", during, me)
	}
	if after := owners(s.Name); len(after) != 1 || after[0] != userName(s.Name, true) {
		t.Errorf("after the clone, its schema and tables belong to %v, want the world's role alone", after)
	}
}

// A world's open transaction does not hold its teardown (nor, through
// FerretDB's catalog lock, every other world's calls): the role loses its
// login and its sessions before its database is dropped. (An attack kept
// one open and hung every world's provision.)
func TestATransactionAWorldKeepsOpenDoesNotHoldItsTeardown(t *testing.T) {
	admin := adminURL(t)
	_, pg, _, _ := adminParts(admin)
	if pg == "" {
		t.Skip("BINKY_TEST_MONGO is a mongod: this is FerretDB's PostgreSQL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, c := world(t, ctx, admin, "holder")
	if _, err := c.Database(s.Name).Collection("things").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	p := worldPG(t, admin, s)
	if _, err := p.Exec(ctx, "BEGIN; SELECT count(*) FROM "+pgx.Identifier{s.Name, "_ferretdb_database_metadata"}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- New().Teardown(ctx, s) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("teardown: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("teardown still waits for the world's open transaction after 15 s")
	}
	if there, err := postgresSchema(ctx, pg, s.Name); err != nil || there {
		t.Errorf("the world's schema is still there after teardown: %v (err %v)", there, err)
	}
}

// A world can write a row into its FerretDB metadata that FerretDB cannot
// load: a FerretDB started afterwards then misses databases in its
// catalog, even for the admin. That world can still be removed (teardown
// does not need the whole catalog, and drops in PostgreSQL what FerretDB
// could not load), and binky says what happened instead of taking the
// databases for absent.
func TestAWorldWhoseMetadataFerretDBCannotLoadIsStillRemovable(t *testing.T) {
	admin := adminURL(t)
	_, pg, _, _ := adminParts(admin)
	bin := adapters.FindServerBinary("ferretdb")
	if pg == "" || bin == "" {
		t.Skip("needs BINKY_TEST_MONGO to be a FerretDB and its binary (make ferretdb)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Not world(): the shared FerretDB keeps listing the database this
	// test drops behind its back, so a teardown through it would refuse.
	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	s := adapters.Slice{Name: "breaker_" + run, World: "w-breaker" + run, Home: "home" + run, AdminURL: admin, Password: "0123456789abcdef"}
	if err := New().Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	addr, _ := New().Resolve(ctx, s)
	c, err := dial(ctx, addr["url"])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(context.Background())
	if _, err := c.Database(s.Name).Collection("things").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	p := worldPG(t, admin, s)
	if _, err := p.Exec(ctx, "INSERT INTO "+pgx.Identifier{s.Name, "_ferretdb_database_metadata"}.Sanitize()+` VALUES ('{"x": 1}')`); err != nil {
		t.Fatal(err)
	}
	nobody, _ := url.Parse(pg)
	nobody.User = url.User("binky_nobody")
	u, _ := url.Parse(admin)
	u.Host = startFerretDB(t, bin, nobody.String())
	fresh := s
	fresh.AdminURL = u.String()
	// The first client (binky's Ready, on its managed one) gets FerretDB's
	// load error; later ones a catalog without the databases it missed.
	if err := Ready(ctx, u.String()); err == nil {
		t.Error("Ready on a FerretDB that could not load a world's metadata: no error")
	}
	other := adapters.Slice{Name: "after_breaker_" + fmt.Sprintf("%x", time.Now().UnixNano())[8:], World: "w-after", Home: s.Home, AdminURL: u.String(), Password: "0123456789abcdef"}
	if err := New().Provision(ctx, other); err == nil {
		New().Teardown(context.Background(), other)
		t.Error("provisioned on a FerretDB whose catalog misses a database")
	} else if !errors.Is(err, ErrStaleCatalog) || !strings.Contains(err.Error(), "metadata") {
		t.Errorf("provision on a FerretDB that could not load a world's metadata: %v, want ErrStaleCatalog saying why", err)
	}
	if err := New().Teardown(ctx, fresh); err != nil {
		t.Fatalf("teardown of the world whose metadata FerretDB could not load: %v", err)
	}
	there, err := postgresSchema(ctx, pg, s.Name)
	if err != nil || there {
		New().Teardown(context.Background(), s)
		t.Errorf("the world's schema is still there after teardown: %v (err %v)", there, err)
	}
}

func postgresSchema(ctx context.Context, pg, name string) (bool, error) {
	pc, err := pgx.Connect(ctx, pg)
	if err != nil {
		return false, err
	}
	defer pc.Close(context.Background())
	var there bool
	err = pc.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)", name).Scan(&there)
	return there, err
}
