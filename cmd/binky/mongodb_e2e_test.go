package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/git-binky/git-binky/adapters"
)

func mongoClient(t *testing.T, uri string) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		t.Fatalf("connect %s: %v", adapters.Redact(uri), err)
	}
	t.Cleanup(func() { c.Disconnect(context.Background()) })
	return c
}

// TestManagedMongoDBIsolatesWorldsAndRemoveDropsItsOwn runs two worlds on
// binky's managed MongoDB (a FerretDB on the managed postgres, no
// admin_url): each gets a database and a user of its own, neither can read
// the other's, and remove drops the database and the user it made.
func TestManagedMongoDBIsolatesWorldsAndRemoveDropsItsOwn(t *testing.T) {
	if adapters.FindServerBinary("ferretdb") == "" {
		t.Skip("ferretdb not found: build it with 'make ferretdb' (make test builds it into BINKY_SERVER_BIN)")
	}
	if adapters.FindServerBinary("initdb") == "" {
		t.Skip("no PostgreSQL server binaries (make test installs them)")
	}
	f := newFixture(t, `[project]
name = "docs"
[services.docs]
adapter = "mongodb"
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["docs"]
env = { MONGO_URL = "${docs.url}" }
`)
	f.mustBinky(f.repo, "up")
	f.mustBinky(f.repo, "up", "feat")
	t.Cleanup(func() { f.binky(f.repo, "remove", "feat", "--force") })
	main, feat := f.envOf("acme"), f.envOf("feat")
	if main["DOCS_URL"] == "" || main["DOCS_URL"] == feat["DOCS_URL"] {
		t.Fatalf("worlds' urls: %q and %q", adapters.Redact(main["DOCS_URL"]), adapters.Redact(feat["DOCS_URL"]))
	}
	pw, err := os.ReadFile(filepath.Join(f.home, "servers", "postgres", "admin.password"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(main["DOCS_URL"], strings.TrimSpace(string(pw))) {
		t.Fatal("the world's url carries the admin's password")
	}
	ctx := context.Background()
	a, b := mongoClient(t, main["DOCS_URL"]), mongoClient(t, feat["DOCS_URL"])
	if _, err := a.Database(main["DOCS_NAME"]).Collection("pages").InsertOne(ctx, bson.D{{Key: "title", Value: "main's"}}); err != nil {
		t.Fatalf("the main world cannot write its database: %v", err)
	}
	if _, err := b.Database(feat["DOCS_NAME"]).Collection("pages").InsertOne(ctx, bson.D{{Key: "title", Value: "feat's"}}); err != nil {
		t.Fatalf("feat cannot write its database: %v", err)
	}
	var doc bson.M
	if err := b.Database(main["DOCS_NAME"]).Collection("pages").FindOne(ctx, bson.D{}).Decode(&doc); err == nil {
		t.Errorf("feat read the main world's document: %v", doc)
	}

	// The admin sees both; after remove, feat's database and user are gone
	// and main's are untouched.
	port, err := os.ReadFile(filepath.Join(f.home, "servers", "mongodb", "port"))
	if err != nil {
		t.Fatal(err)
	}
	adminAt := "mongodb://binky:" + strings.TrimSpace(string(pw)) + "@127.0.0.1:" + strings.TrimSpace(string(port)) + "/?authMechanism=PLAIN"
	admin := mongoClient(t, adminAt)
	names, err := admin.ListDatabaseNames(ctx, bson.D{})
	if err != nil || !slices.Contains(names, main["DOCS_NAME"]) || !slices.Contains(names, feat["DOCS_NAME"]) {
		t.Fatalf("the admin lists %v (%v), want both worlds' databases", names, err)
	}
	// After a restart a world's client may reach FerretDB first, and its
	// catalog then holds that world's database only: binky's next call
	// notices and starts FerretDB again. The restart is staged here by hand
	// with binky's own command line.
	pidfile := filepath.Join(f.home, "servers", "mongodb", "ferretdb.pid")
	pidb, _ := os.ReadFile(pidfile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(pidb)))
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || pid <= 1 {
		t.Fatalf("the managed ferretdb's pid %q: %v", pidb, err)
	}
	// SIGKILL, as a crash: on SIGTERM FerretDB keeps serving its open
	// connections.
	signalPID(pid, syscall.SIGKILL)
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strings.TrimSpace(string(port))); err != nil {
			break
		} else {
			c.Close()
		}
		if time.Now().After(deadline) {
			t.Fatal("the managed ferretdb did not stop")
		}
	}
	staged := exec.Command(args[0], args[1:]...)
	if err := staged.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { staged.Process.Kill(); staged.Wait() })
	os.WriteFile(pidfile, []byte(strconv.Itoa(staged.Process.Pid)+"\n"), 0o600)
	first := mongoClient(t, main["DOCS_URL"])
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := first.ListDatabaseNames(ctx, bson.D{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the main world cannot reach the restarted ferretdb: %v", err)
		}
	}
	f.mustBinky(f.repo, "down", "feat")
	f.mustBinky(f.repo, "up", "feat")
	if now, _ := os.ReadFile(pidfile); strings.TrimSpace(string(now)) == strconv.Itoa(staged.Process.Pid) {
		t.Error("binky kept the ferretdb whose catalog a world had loaded")
	}
	admin = mongoClient(t, adminAt)
	b = mongoClient(t, feat["DOCS_URL"])
	if n, err := b.Database(feat["DOCS_NAME"]).Collection("pages").CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Errorf("feat's database after the staged restart: %d documents, %v", n, err)
	}

	f.mustBinky(f.repo, "remove", "feat", "--force")
	names, _ = admin.ListDatabaseNames(ctx, bson.D{})
	if slices.Contains(names, feat["DOCS_NAME"]) || !slices.Contains(names, main["DOCS_NAME"]) {
		log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
		t.Errorf("after remove feat the server has %v; daemon log:\n%s", names, log[max(0, len(log)-3000):])
	}
	gone := mongoClient(t, feat["DOCS_URL"])
	// A write, not a listing: FerretDB answers listings from its catalog
	// with a pool it keeps per credential, without asking PostgreSQL.
	if _, err := gone.Database(feat["DOCS_NAME"]).Collection("pages").InsertOne(ctx, bson.D{{Key: "after", Value: "remove"}}); err == nil {
		t.Error("feat's user still writes after remove")
	}
	if n, err := a.Database(main["DOCS_NAME"]).Collection("pages").CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Errorf("the main world's database after feat's remove: %d documents, %v", n, err)
	}
}

// TestManagedMongoDBClonesTheGoldenTemplate: clone_from = "golden" on the
// managed FerretDB seeds once and copies documents and indexes into each
// world server-side, with no fallback.
func TestManagedMongoDBClonesTheGoldenTemplate(t *testing.T) {
	if adapters.FindServerBinary("ferretdb") == "" {
		t.Skip("ferretdb not found: build it with 'make ferretdb' (make test builds it into BINKY_SERVER_BIN)")
	}
	if adapters.FindServerBinary("initdb") == "" {
		t.Skip("no PostgreSQL server binaries (make test installs them)")
	}
	seeder := filepath.Join(t.TempDir(), "mongoseed")
	if out, err := exec.Command("go", "build", "-o", seeder, "./testdata/mongoseed").CombinedOutput(); err != nil {
		t.Fatalf("build the seeder: %v\n%s", err, out)
	}
	f := newFixture(t, fmt.Sprintf(`[project]
name = "docs"
[services.docs]
adapter = "mongodb"
seed = "%s \"$DOCS_URL\" 500"
clone_from = "golden"
`, seeder))
	f.mustBinky(f.repo, "up", "one")
	f.mustBinky(f.repo, "up", "two")
	t.Cleanup(func() {
		f.binky(f.repo, "remove", "one", "--force")
		f.binky(f.repo, "remove", "two", "--force")
	})
	if n := seeded(f); n != 1 {
		t.Errorf("seed ran %d times for 2 worlds, want once (the golden template)", n)
	}
	ctx := context.Background()
	for _, w := range []string{"one", "two"} {
		env := f.envOf(w)
		pages := mongoClient(t, env["DOCS_URL"]).Database(env["DOCS_NAME"]).Collection("pages")
		if n, err := pages.CountDocuments(ctx, bson.D{}); err != nil || n != 500 {
			t.Errorf("%s has %d pages (%v), want 500", w, n, err)
		}
		if _, err := pages.InsertOne(ctx, bson.D{{Key: "slug", Value: "page-7"}}); !mongo.IsDuplicateKeyError(err) {
			t.Errorf("%s: a duplicate slug: %v, want the golden's unique index to refuse it", w, err)
		}
	}
	log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
	if c := strings.Count(string(log), `"msg":"slice cloned"`); c != 2 || strings.Contains(string(log), "clone_fallback") {
		t.Errorf("%d clones logged, want 2 and no clone_fallback:\n%s", c, log)
	}
}
