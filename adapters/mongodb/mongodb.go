// Package mongodb is the MongoDB adapter: a database and a user of its own
// per world, carved from one shared server. It is the only importer of
// go.mongodb.org/mongo-driver/v2.
//
// It drives two kinds of server, and does the strongest thing each allows:
//
//   - mongod (with --auth): a user per world created in the world's
//     database with readWrite on that database only.
//   - FerretDB 1.x on PostgreSQL: FerretDB keeps each database as a
//     PostgreSQL schema and passes every client's credentials (SASL PLAIN)
//     through to PostgreSQL; it has no users or roles of its own. A world's
//     user is therefore a PostgreSQL role that owns the world's schema and
//     nothing else, made through the PostgreSQL behind FerretDB (named by
//     the admin URL's "postgres" parameter). PostgreSQL enforces it.
//
// Ownership marks live in the "binky" database's "marks" collection, which
// world users cannot read or write (no role on it on mongod; no privilege
// on its schema on FerretDB).
package mongodb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/postgres"
)

// MongoDB implements adapters.Adapter, Cloner and Lister.
type MongoDB struct{}

// New returns the adapter.
func New() *MongoDB { return &MongoDB{} }

const (
	markDB   = "binky"
	markColl = "marks"
	// initColl is created and dropped at once to make a database exist on
	// FerretDB, whose world roles cannot create schemas themselves.
	initColl = "_binky_init"
)

// server is one admin connection and what binky knows of the server.
type server struct {
	c *mongo.Client
	// pg is the PostgreSQL behind a FerretDB (admin credentials), "" for
	// mongod.
	pg string
	// driverURL is the admin URL without binky's own parameters.
	driverURL string
}

// adminParts splits binky's "postgres" parameter off an admin URL: the
// driver must not see it. Its value is host:port/database, or a whole
// postgres:// URL; with no credentials of its own it gets the admin URL's,
// which FerretDB passes through to PostgreSQL anyway.
func adminParts(adminURL string) (driverURL, pg string, u *url.URL, err error) {
	u, err = url.Parse(adminURL)
	if err != nil || (u.Scheme != "mongodb" && u.Scheme != "mongodb+srv") {
		return "", "", nil, fmt.Errorf("mongodb admin_url %s: want mongodb://user:password@host:port/", adapters.Redact(adminURL))
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return "", "", nil, fmt.Errorf("mongodb admin_url %s: its query: %w", adapters.Redact(adminURL), err)
	}
	raw := q.Get("postgres")
	q.Del("postgres")
	du := *u
	du.RawQuery = q.Encode()
	if raw == "" {
		return du.String(), "", u, nil
	}
	if !strings.Contains(raw, "://") {
		raw = "postgres://" + raw
	}
	pu, err := url.Parse(raw)
	if err != nil || pu.Host == "" {
		return "", "", nil, fmt.Errorf("mongodb admin_url %s: its postgres parameter wants host:port/database", adapters.Redact(adminURL))
	}
	if pu.User == nil {
		pu.User = u.User
	}
	pq := pu.Query()
	if !pq.Has("sslmode") {
		pq.Set("sslmode", "disable")
	}
	pu.RawQuery = pq.Encode()
	return du.String(), pu.String(), u, nil
}

func connect(ctx context.Context, adminURL string) (*server, error) {
	return dialServer(ctx, adminURL, true)
}

// dialServer connects as the admin. With strict, a FerretDB whose catalog
// misses a database its PostgreSQL holds is an error (ErrStaleCatalog);
// without, it is served anyway, for Teardown: a world whose metadata
// FerretDB cannot load (a world can write rows there that break it) must
// still be removable, and what teardown cannot see (a mark it cannot
// read) it does not drop.
func dialServer(ctx context.Context, adminURL string, strict bool) (*server, error) {
	driverURL, pg, _, err := adminParts(adminURL)
	if err != nil {
		return nil, err
	}
	c, err := dial(ctx, driverURL)
	if err != nil {
		return nil, fmt.Errorf("connect to mongodb at %s: %w", adapters.Redact(driverURL), err)
	}
	srv := &server{c: c, pg: pg, driverURL: driverURL}
	var info bson.M
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
		c.Disconnect(context.Background())
		return nil, fmt.Errorf("mongodb at %s: %w", adapters.Redact(driverURL), err)
	}
	_, ferret := info["ferretdbVersion"]
	switch {
	case ferret && pg == "":
		c.Disconnect(context.Background())
		return nil, fmt.Errorf("mongodb at %s is FerretDB %v, which has no users of its own (it passes credentials through to PostgreSQL): "+
			"add ?authMechanism=PLAIN&postgres=<host:port/database of its --postgresql-url> to admin_url so that binky can give each world a PostgreSQL role of its own",
			adapters.Redact(driverURL), info["ferretdbVersion"])
	case !ferret && pg != "":
		c.Disconnect(context.Background())
		return nil, fmt.Errorf("mongodb admin_url %s has a postgres parameter, but the server is not FerretDB: remove it", adapters.Redact(driverURL))
	case ferret:
		if err := srv.catalogCurrent(ctx); err != nil && (strict || !errors.Is(err, ErrStaleCatalog)) {
			c.Disconnect(context.Background())
			return nil, err
		}
	}
	return srv, nil
}

// ErrStaleCatalog is a FerretDB whose catalog misses databases that are in
// its PostgreSQL.
var ErrStaleCatalog = errors.New("FerretDB's catalog misses databases that are in its PostgreSQL")

// catalogCurrent checks that FerretDB lists every database its PostgreSQL
// holds. FerretDB 1.x loads its catalog once, by the first client to
// connect after it starts, and sees only what that client may see: if a
// world connected first, the catalog holds that world's database only,
// and binky would take the others (its marks among them) for absent.
func (srv *server) catalogCurrent(ctx context.Context) error {
	before, err := postgres.FerretSchemas(ctx, srv.pg)
	if err != nil {
		return fmt.Errorf("the PostgreSQL behind FerretDB: %w", err)
	}
	listed, err := srv.c.ListDatabaseNames(ctx, bson.D{})
	if err != nil {
		return err
	}
	// Read PostgreSQL again: a schema in both reads and not listed was not
	// being created or dropped meanwhile (FerretDB holds its catalog lock
	// across both).
	after, err := postgres.FerretSchemas(ctx, srv.pg)
	if err != nil {
		return err
	}
	var missing []string
	for _, s := range before {
		if slices.Contains(after, s) && !slices.Contains(listed, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w (%s): a world's client connected to it first after it started (restart FerretDB: binky restarts its managed one itself), "+
			"or FerretDB could not read their metadata (its log says why: a world's role can write rows there that FerretDB cannot load; remove the world that owns it, which works regardless)",
			ErrStaleCatalog, strings.Join(missing, ", "))
	}
	return nil
}

func dial(ctx context.Context, uri string) (*mongo.Client, error) {
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(10 * time.Second).SetAppName("git-binky"))
	if err != nil {
		return nil, err
	}
	if err := c.Ping(ctx, nil); err != nil {
		c.Disconnect(context.Background())
		return nil, err
	}
	return c, nil
}

func (srv *server) close() { srv.c.Disconnect(context.Background()) }

func (srv *server) ferret() bool { return srv.pg != "" }

// userName is the world's user: the slice name on mongod; on FerretDB a
// PostgreSQL role, prefixed so that it never meets the role a postgres
// slice of the same world has on the same server.
func userName(slice string, ferret bool) string {
	if ferret {
		return adapters.FoldName("mongo_"+slice, slice, 0, 63)
	}
	return slice
}

// userKind is what the world's user is, in marks and gc listings.
func (srv *server) userKind() string {
	if srv.ferret() {
		return "role"
	}
	return "user"
}

// mark is one ownership mark in binky.marks.
type mark struct {
	ID      string    `bson:"_id"`
	Slice   string    `bson:"slice"`
	Kind    string    `bson:"kind"`
	Name    string    `bson:"name"`
	World   string    `bson:"world"`
	Home    string    `bson:"home"`
	Mark    string    `bson:"mark"`
	Created time.Time `bson:"created"`
}

func markID(kind, name string) string { return kind + ":" + name }

func (srv *server) marks() *mongo.Collection { return srv.c.Database(markDB).Collection(markColl) }

// owner returns the mark on an object, whether there is one.
func (srv *server) owner(ctx context.Context, kind, name string) (adapters.Owner, bool, error) {
	var m mark
	err := srv.marks().FindOne(ctx, bson.D{{Key: "_id", Value: markID(kind, name)}}).Decode(&m)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return adapters.Owner{}, false, nil
	}
	if err != nil {
		return adapters.Owner{}, false, fmt.Errorf("read binky's marks: %w", err)
	}
	return adapters.Owner{World: m.World, Home: m.Home}, true, nil
}

// exists reports whether an object of that kind and name is on the server,
// marked or not.
func (srv *server) exists(ctx context.Context, kind, name string) (bool, error) {
	switch kind {
	case "database":
		names, err := srv.c.ListDatabaseNames(ctx, bson.D{{Key: "name", Value: name}})
		if err != nil {
			return false, err
		}
		if len(names) > 0 {
			return true, nil
		}
		if srv.ferret() {
			// FerretDB's catalog is loaded once, by the first client: the
			// schema may be there even when FerretDB does not list it.
			there, err := postgres.SchemaExists(ctx, srv.pg, name)
			if err != nil {
				return false, err
			}
			if there {
				return false, fmt.Errorf("database %s is a schema in PostgreSQL but FerretDB does not list it: its catalog was loaded by a connection that could not see it; restart FerretDB", name)
			}
		}
		return false, nil
	case "role":
		return postgres.RoleExists(ctx, srv.pg, name)
	default:
		var res struct {
			Users []bson.M `bson:"users"`
		}
		err := srv.c.Database(name).RunCommand(ctx, bson.D{{Key: "usersInfo", Value: bson.D{{Key: "user", Value: name}, {Key: "db", Value: name}}}}).Decode(&res)
		return len(res.Users) > 0, err
	}
}

// objects are the (kind, name) pairs a slice is made of.
func (srv *server) objects(s adapters.Slice) [][2]string {
	return [][2]string{{"database", s.Name}, {srv.userKind(), userName(s.Name, srv.ferret())}}
}

// claim checks that every object of the slice is free or already the
// world's, and records the marks before anything is created: a crash from
// here on leaves marks that teardown and gc act on.
func (srv *server) claim(ctx context.Context, s adapters.Slice) error {
	for _, o := range srv.objects(s) {
		kind, name := o[0], o[1]
		w, marked, err := srv.owner(ctx, kind, name)
		if err != nil {
			return err
		}
		if marked {
			if !w.Is(s.Owner()) {
				return fmt.Errorf("mongodb %s %s: %w", kind, name, adapters.ErrTaken)
			}
			continue
		}
		there, err := srv.exists(ctx, kind, name)
		if err != nil {
			return fmt.Errorf("mongodb %s %s: %w", kind, name, err)
		}
		if there {
			return fmt.Errorf("mongodb %s %s: %w", kind, name, adapters.ErrTaken)
		}
		m := mark{ID: markID(kind, name), Slice: s.Name, Kind: kind, Name: name, World: s.World, Home: s.Home,
			Mark: adapters.Mark(s.Owner()), Created: time.Now().UTC()}
		if _, err := srv.marks().InsertOne(ctx, m); err != nil {
			if mongo.IsDuplicateKeyError(err) {
				// Another world claimed it between our read and write.
				if w, _, err := srv.owner(ctx, kind, name); err == nil && w.Is(s.Owner()) {
					continue
				}
				return fmt.Errorf("mongodb %s %s: %w", kind, name, adapters.ErrTaken)
			}
			return fmt.Errorf("record binky's mark on %s %s: %w", kind, name, err)
		}
	}
	return nil
}

// notReserved refuses a slice named like a database the server or binky
// keeps for itself: a worktree name can fold to "config" or "admin", and
// on a standalone mongod "config" may not exist yet to be seen as taken.
func notReserved(name string) error {
	switch name {
	case "admin", "local", "config", markDB:
		return fmt.Errorf("mongodb database %s is the server's (or binky's) own: %w", name, adapters.ErrTaken)
	}
	return nil
}

// Provision creates (or brings back) the world's database and user, each
// marked as the world's first.
func (m *MongoDB) Provision(ctx context.Context, s adapters.Slice) error {
	if err := notReserved(s.Name); err != nil {
		return err
	}
	srv, err := connect(ctx, s.AdminURL)
	if err != nil {
		return err
	}
	defer srv.close()
	return srv.provision(ctx, s)
}

func (srv *server) provision(ctx context.Context, s adapters.Slice) error {
	if err := srv.begin(ctx, s); err != nil {
		return err
	}
	if srv.ferret() {
		if err := srv.createDatabase(ctx, s.Name); err != nil {
			return err
		}
		return srv.handOver(ctx, s)
	}
	return srv.mongodUser(ctx, s)
}

// begin checks the server and claims the slice's objects: what every
// provision and clone does first.
func (srv *server) begin(ctx context.Context, s adapters.Slice) error {
	if err := srv.authEnforced(ctx); err != nil {
		return err
	}
	if srv.ferret() {
		// Before a world's role owns anything: it must not be able to
		// plant code that the admin's reads would run.
		if err := postgres.GuardFerretDatabase(ctx, srv.pg); err != nil {
			return err
		}
	}
	return srv.claim(ctx, s)
}

// createDatabase makes a FerretDB database, if absent, through FerretDB
// (which then knows of it): the admin's, until handOver. The world's role
// could not: it may not create a schema.
func (srv *server) createDatabase(ctx context.Context, name string) error {
	names, err := srv.c.ListDatabaseNames(ctx, bson.D{{Key: "name", Value: name}})
	if err != nil || len(names) > 0 {
		return err
	}
	db := srv.c.Database(name)
	if err := db.CreateCollection(ctx, initColl); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	if err := db.Collection(initColl).Drop(ctx); err != nil {
		return fmt.Errorf("create database %s: %w", name, err)
	}
	return nil
}

// handOver gives a FerretDB database, and every table in it, to the
// world's role, which it makes (or gives back its login). After it the
// admin writes nothing there: the role could have planted a CHECK or
// DEFAULT in one of its tables, which the admin's write would run.
func (srv *server) handOver(ctx context.Context, s adapters.Slice) error {
	user := userName(s.Name, true)
	if err := postgres.GrantSchema(ctx, srv.pg, user, s.Password, s.Name, s.Config); err != nil {
		return fmt.Errorf("give database %s to role %s: %w", s.Name, user, err)
	}
	return nil
}

// mongodUser creates (or updates) the world's user on mongod, with
// readWrite on its database only.
func (srv *server) mongodUser(ctx context.Context, s adapters.Slice) error {
	user := userName(s.Name, false)
	there, err := srv.exists(ctx, "user", user)
	if err != nil {
		return err
	}
	verb := "createUser"
	if there {
		verb = "updateUser"
	}
	cmd := bson.D{{Key: verb, Value: user}, {Key: "pwd", Value: s.Password},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: s.Name}}}}}
	if err := srv.c.Database(s.Name).RunCommand(ctx, cmd).Err(); err != nil {
		return fmt.Errorf("%s %s: %w", verb, user, err)
	}
	return nil
}

// authEnforced refuses a server that serves clients who send no
// credentials: a world's user would then be a formality (mongod without
// --auth; FerretDB whose --postgresql-url carries usable credentials,
// which it lends to every unauthenticated client).
func (srv *server) authEnforced(ctx context.Context) error {
	u, err := adapters.ParseURL(srv.driverURL)
	if err != nil {
		return err
	}
	u.User = nil
	q := u.Query()
	for _, k := range []string{"authMechanism", "authSource", "authMechanismProperties"} {
		q.Del(k)
	}
	u.RawQuery = q.Encode()
	c, err := dial(ctx, u.String())
	if err != nil {
		return nil // refused before a command: enforced
	}
	defer c.Disconnect(context.Background())
	if _, err := c.ListDatabaseNames(ctx, bson.D{}); err == nil {
		if srv.ferret() {
			return fmt.Errorf("FerretDB at %s serves clients that send no credentials with its --postgresql-url's role, so no world's user would hold: start it with a --postgresql-url whose user cannot log in", u.Host)
		}
		return fmt.Errorf("mongodb at %s serves clients that send no credentials, so no world's user would hold: start mongod with --auth", u.Host)
	}
	return nil
}

// Clone creates the world's slice as a copy of template, server-side:
// every collection with its documents and indexes. On mongod the documents
// move with an aggregation $out into the world's database; FerretDB 1.x
// has no $out, so there the collections and indexes are created through
// FerretDB and the documents copied in PostgreSQL (INSERT ... SELECT).
func (m *MongoDB) Clone(ctx context.Context, template string, s adapters.Slice) error {
	if err := notReserved(s.Name); err != nil {
		return err
	}
	srv, err := connect(ctx, s.AdminURL)
	if err != nil {
		return err
	}
	defer srv.close()
	if !srv.ferret() {
		if err := srv.provision(ctx, s); err != nil {
			return err
		}
		return srv.copyFrom(ctx, template, s)
	}
	// On FerretDB the copy is made while the database is still the
	// admin's, and handed over only when it is done: the admin's writes
	// (collections created, documents copied) must never land in a table
	// the world's role owns, where a CHECK or DEFAULT of its making would
	// run as the admin. A database left by a clone cut off (claimed as
	// this slice's, so ours) may have been handed over: it is dropped and
	// made again.
	if err := srv.begin(ctx, s); err != nil {
		return err
	}
	if there, err := srv.exists(ctx, "database", s.Name); err != nil {
		return err
	} else if there {
		if err := srv.c.Database(s.Name).Drop(ctx); err != nil {
			return fmt.Errorf("drop the cut-off clone %s: %w", s.Name, err)
		}
	}
	if err := srv.createDatabase(ctx, s.Name); err != nil {
		return err
	}
	if err := srv.copyFrom(ctx, template, s); err != nil {
		return err
	}
	return srv.handOver(ctx, s)
}

// copyFrom copies every collection of template, with its documents and
// indexes, into the slice's database.
func (srv *server) copyFrom(ctx context.Context, template string, s adapters.Slice) error {
	src, dst := srv.c.Database(template), srv.c.Database(s.Name)
	cur, err := src.ListCollections(ctx, bson.D{{Key: "type", Value: "collection"}})
	if err != nil {
		return fmt.Errorf("list collections of %s: %w", template, err)
	}
	var colls []struct {
		Name    string `bson:"name"`
		Options bson.M `bson:"options"`
	}
	if err := cur.All(ctx, &colls); err != nil {
		return err
	}
	for _, c := range colls {
		if strings.HasPrefix(c.Name, "system.") {
			continue
		}
		if capped, _ := c.Options["capped"].(bool); capped {
			return fmt.Errorf("clone %s: collection %s is capped, which binky does not copy", template, c.Name)
		}
		if srv.ferret() {
			if err := dst.CreateCollection(ctx, c.Name); err != nil {
				return fmt.Errorf("clone %s.%s: %w", template, c.Name, err)
			}
		} else {
			out := bson.D{{Key: "$out", Value: bson.D{{Key: "db", Value: s.Name}, {Key: "coll", Value: c.Name}}}}
			cur, err := src.Collection(c.Name).Aggregate(ctx, mongo.Pipeline{out})
			if err != nil {
				return fmt.Errorf("clone %s.%s with $out: %w", template, c.Name, err)
			}
			cur.Close(ctx)
		}
		if err := copyIndexes(ctx, src.Collection(c.Name), dst.Collection(c.Name)); err != nil {
			return fmt.Errorf("clone the indexes of %s.%s: %w", template, c.Name, err)
		}
	}
	if srv.ferret() {
		if err := adapters.Step(ctx, "mongodb.collections_created"); err != nil {
			return err
		}
		if err := postgres.CopyFerretTables(ctx, srv.pg, template, s.Name); err != nil {
			return fmt.Errorf("clone %s: %w", template, err)
		}
	}
	return nil
}

// PrepareTemplate takes a built golden template's credentials away: they
// were given to the migrate and seed that built it (a branch's code),
// which could otherwise change what every later world starts from. On
// FerretDB its role may no longer log in and its sessions end; on mongod
// its user loses its roles and gets a password nobody knows. A rebuild
// provisions it again, which gives both back. Callers serialise it (the
// golden lock).
func (m *MongoDB) PrepareTemplate(ctx context.Context, adminURL, name string) error {
	srv, err := connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer srv.close()
	user := userName(name, srv.ferret())
	if srv.ferret() {
		if err := postgres.LockRole(ctx, srv.pg, user); err != nil {
			return fmt.Errorf("template %s: %w", name, err)
		}
		return nil
	}
	there, err := srv.exists(ctx, "user", user)
	if err != nil || !there {
		return err
	}
	pw := make([]byte, 24)
	if _, err := rand.Read(pw); err != nil {
		return err
	}
	// Roles are checked on every command, so a kept connection loses
	// them too; the password keeps new ones out.
	cmd := bson.D{{Key: "updateUser", Value: user}, {Key: "pwd", Value: hex.EncodeToString(pw)}, {Key: "roles", Value: bson.A{}}}
	if err := srv.c.Database(name).RunCommand(ctx, cmd).Err(); err != nil {
		return fmt.Errorf("template %s: take its user's roles: %w", name, err)
	}
	return nil
}

// copyIndexes creates on dst every index of src but _id's.
func copyIndexes(ctx context.Context, src, dst *mongo.Collection) error {
	cur, err := src.Indexes().List(ctx)
	if err != nil {
		return err
	}
	var specs []bson.D
	if err := cur.All(ctx, &specs); err != nil {
		return err
	}
	var indexes bson.A
	for _, spec := range specs {
		var keep bson.D
		skip := false
		for _, e := range spec {
			switch e.Key {
			case "name":
				skip = e.Value == "_id_"
			case "v", "ns":
				continue
			}
			keep = append(keep, e)
		}
		if !skip {
			indexes = append(indexes, keep)
		}
	}
	if len(indexes) == 0 {
		return nil
	}
	return dst.Database().RunCommand(ctx, bson.D{{Key: "createIndexes", Value: dst.Name()}, {Key: "indexes", Value: indexes}}).Err()
}

// Resolve returns the world's URL: its own user, authenticating against
// its own database, never the admin.
func (m *MongoDB) Resolve(ctx context.Context, s adapters.Slice) (adapters.Address, error) {
	_, pg, admin, err := adminParts(s.AdminURL)
	if err != nil {
		return nil, err
	}
	hosts := admin.Host
	first := strings.Split(hosts, ",")[0]
	host, port, err := net.SplitHostPort(first)
	if err != nil {
		host, port = first, "27017"
	}
	if host == "" {
		host = "127.0.0.1"
	}
	user := userName(s.Name, pg != "")
	q := url.Values{}
	q.Set("authSource", s.Name)
	if pg != "" {
		// FerretDB 1.x authenticates with PLAIN only (and hands the
		// credentials to PostgreSQL).
		q.Set("authMechanism", "PLAIN")
	}
	for _, k := range []string{"tls", "ssl", "replicaSet", "directConnection"} {
		if v := admin.Query().Get(k); v != "" {
			q.Set(k, v)
		}
	}
	u := url.URL{Scheme: admin.Scheme, User: url.UserPassword(user, s.Password), Host: hosts, Path: "/" + s.Name, RawQuery: q.Encode()}
	return adapters.Address{"url": u.String(), "host": host, "port": port, "name": s.Name, "user": user, "password": s.Password}, nil
}

// Teardown drops the world's database and user, each only if marked as
// the world's, and then their marks.
func (m *MongoDB) Teardown(ctx context.Context, s adapters.Slice) error {
	srv, err := dialServer(ctx, s.AdminURL, false)
	if err != nil {
		return err
	}
	defer srv.close()
	if srv.ferret() {
		// The role first loses its login and its sessions: one of them in
		// an open transaction would hold dropDatabase waiting, and with it
		// FerretDB's catalog lock, so every other world's call.
		role := userName(s.Name, true)
		if w, marked, err := srv.owner(ctx, "role", role); err != nil {
			return err
		} else if marked && w.Is(s.Owner()) {
			if err := postgres.LockRole(ctx, srv.pg, role); err != nil {
				return err
			}
		}
	}
	var errs []error
	for _, o := range srv.objects(s) {
		kind, name := o[0], o[1]
		w, marked, err := srv.owner(ctx, kind, name)
		if err != nil {
			return err
		}
		if !marked {
			there, err := srv.exists(ctx, kind, name)
			if err != nil {
				return err
			}
			if there {
				errs = append(errs, fmt.Errorf("mongodb %s %s: %w", kind, name, adapters.ErrNotOurs))
			}
			continue
		}
		if !w.Is(s.Owner()) {
			errs = append(errs, fmt.Errorf("mongodb %s %s: %w", kind, name, adapters.ErrNotOurs))
			continue
		}
		if err := srv.drop(ctx, kind, name); err != nil {
			return fmt.Errorf("drop mongodb %s %s: %w", kind, name, err)
		}
		if _, err := srv.marks().DeleteOne(ctx, bson.D{{Key: "_id", Value: markID(kind, name)}}); err != nil {
			return fmt.Errorf("remove binky's mark on %s %s: %w", kind, name, err)
		}
	}
	return errors.Join(errs...)
}

func (srv *server) drop(ctx context.Context, kind, name string) error {
	switch kind {
	case "database":
		if err := srv.c.Database(name).Drop(ctx); err != nil || !srv.ferret() {
			return err
		}
		// FerretDB drops only what its catalog holds: a database it could
		// not load is dropped in PostgreSQL.
		return postgres.DropSchema(ctx, srv.pg, name)
	case "role":
		return postgres.DropSchemaRole(ctx, srv.pg, name)
	default:
		there, err := srv.exists(ctx, "user", name)
		if err != nil || !there {
			return err
		}
		return srv.c.Database(name).RunCommand(ctx, bson.D{{Key: "dropUser", Value: name}}).Err()
	}
}

// List returns every database and user (or role) binky marked on the
// server.
func (m *MongoDB) List(ctx context.Context, adminURL string) ([]adapters.Owned, error) {
	srv, err := connect(ctx, adminURL)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	cur, err := srv.marks().Find(ctx, bson.D{})
	if err != nil {
		return nil, fmt.Errorf("read binky's marks: %w", err)
	}
	var marks []mark
	if err := cur.All(ctx, &marks); err != nil {
		return nil, err
	}
	out := make([]adapters.Owned, 0, len(marks))
	for _, mk := range marks {
		out = append(out, adapters.Owned{Slice: mk.Slice, Kind: mk.Kind, Name: mk.Name, Owner: adapters.Owner{World: mk.World, Home: mk.Home}})
	}
	return out, nil
}

// Exists reports whether a slice of that name is marked on the server, for
// golden templates.
func (m *MongoDB) Exists(ctx context.Context, adminURL, name string) (bool, error) {
	srv, err := connect(ctx, adminURL)
	if err != nil {
		return false, err
	}
	defer srv.close()
	_, marked, err := srv.owner(ctx, "database", name)
	return marked, err
}

// Ready connects to the server as the admin and lists its databases. A
// FerretDB 1.x loads its catalog once, on the first client's connection,
// and sees only what that client may see: binky's managed server calls
// Ready as soon as FerretDB listens, so that the first client is the admin
// and the catalog holds every world's database.
func Ready(ctx context.Context, adminURL string) error {
	srv, err := connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer srv.close()
	if _, err := srv.c.ListDatabaseNames(ctx, bson.D{}); err != nil {
		return fmt.Errorf("list databases on %s: %w", adapters.Redact(srv.driverURL), err)
	}
	return nil
}

// Capabilities says MongoDB clones server-side and lists its slices.
func (m *MongoDB) Capabilities() adapters.Capabilities {
	return adapters.Capabilities{Clone: true, List: true}
}

var (
	_ adapters.Adapter = (*MongoDB)(nil)
	_ adapters.Cloner  = (*MongoDB)(nil)
	_ adapters.Lister  = (*MongoDB)(nil)
)
