package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/clickhouse"
)

// clickhouseConfig uses the managed ClickHouse (no admin_url): a golden
// template migrated and seeded once, then copied table by table per world.
const clickhouseConfig = `[project]
name = "olap"
[services.olap]
adapter = "clickhouse"
migrate = "curl -sSf \"$OLAP_URL\" --data-binary 'CREATE TABLE IF NOT EXISTS events (id UInt32) ENGINE = MergeTree ORDER BY id'"
seed = "curl -sSf \"$OLAP_URL\" --data-binary 'INSERT INTO events SELECT toUInt32(number) FROM system.numbers LIMIT 100' && echo seeded >> $GC_DIR/seeded"
clone_from = "golden"
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["olap"]
env = { CLICKHOUSE_URL = "${olap.url}" }
`

// chQuery runs one statement through a world's url, as an app would.
func chQuery(t *testing.T, worldURL, q string) (string, error) {
	t.Helper()
	resp, err := http.Post(worldURL, "text/plain", strings.NewReader(q))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", &chError{strings.TrimSpace(string(b))}
	}
	return strings.TrimSpace(string(b)), nil
}

type chError struct{ msg string }

func (e *chError) Error() string { return e.msg }

func TestClickHouseWorldsOnTheManagedServer(t *testing.T) {
	if adapters.FindServerBinary("clickhouse-server") == "" {
		t.Skip("clickhouse-server is not installed (make test installs it; Debian: apt-get install clickhouse-server)")
	}
	f := newFixture(t, clickhouseConfig)
	out, _, _ := f.binky(f.repo, "check")
	if !strings.Contains(out, "isolation is not enforced") {
		t.Errorf("check does not warn that isolation depends on the server:\n%s", out)
	}
	for _, n := range []string{"a", "b"} {
		f.mustBinky(f.repo, "up", n)
		t.Cleanup(func() { f.binky(f.repo, "remove", n, "--force") })
	}
	if n := seeded(f); n != 1 {
		t.Errorf("migrate+seed ran %d times for 2 worlds, want once (the golden template)", n)
	}
	a, b := f.envOf("a"), f.envOf("b")
	if a["OLAP_NAME"] == b["OLAP_NAME"] || a["OLAP_NAME"] == "" {
		t.Fatalf("worlds share database %q", a["OLAP_NAME"])
	}
	for n, env := range map[string]map[string]string{"a": a, "b": b} {
		if got, err := chQuery(t, env["OLAP_URL"], "SELECT count() FROM events"); err != nil || got != "100" {
			t.Errorf("world %s's cloned events: %q, %v; want 100", n, got, err)
		}
	}
	// Each world writes to its own database.
	if _, err := chQuery(t, a["OLAP_URL"], "INSERT INTO events VALUES (1000)"); err != nil {
		t.Fatal(err)
	}
	if got, _ := chQuery(t, b["OLAP_URL"], "SELECT count() FROM events"); got != "100" {
		t.Errorf("a's insert shows in b: %s rows", got)
	}
	// The managed server is Debian's 18.16, which has no SQL users: the
	// world has the admin's credentials, and binky says so.
	users, _ := chQuery(t, a["OLAP_URL"], "SELECT count() FROM system.tables WHERE database = 'system' AND name = 'users'")
	if users == "0" {
		if a["OLAP_ISOLATION"] != adapters.IsolationNone {
			t.Errorf("isolation %q on a server without users", a["OLAP_ISOLATION"])
		}
		if out := f.mustBinky(f.repo, "status"); !strings.Contains(out, "isolation not enforced") {
			t.Errorf("status does not say isolation is not enforced:\n%s", out)
		}
	}
	pw, err := os.ReadFile(filepath.Join(f.home, "servers", "clickhouse", "admin.password"))
	if fi, _ := os.Stat(filepath.Join(f.home, "servers", "clickhouse", "admin.password")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("admin password file: %v %v", fi, err)
	}
	if out := f.mustBinky(f.repo, "status"); strings.Contains(out, strings.TrimSpace(string(pw))) {
		t.Error("status prints the admin password")
	}
	// remove drops a's database and nothing of b's.
	f.mustBinky(f.repo, "remove", "a")
	if _, err := chQuery(t, a["OLAP_URL"], "SELECT count() FROM events"); err == nil || !strings.Contains(err.Error(), "doesn't exist") {
		t.Errorf("a's database after remove: %v", err)
	}
	if got, err := chQuery(t, b["OLAP_URL"], "SELECT count() FROM events"); err != nil || got != "100" {
		t.Errorf("b's events after a's remove: %q, %v", got, err)
	}

	// A crash between provision and record: a marked database of this home
	// with no world. gc drops it, and nothing of b's.
	home, _ := os.ReadFile(filepath.Join(f.home, "home-id"))
	port, _ := os.ReadFile(filepath.Join(f.home, "servers", "clickhouse", "port"))
	admin := "clickhouse://default:" + strings.TrimSpace(string(pw)) + "@127.0.0.1:" + strings.TrimSpace(string(port))
	orphan := adapters.Slice{Name: "olap_crashed", World: "00deadbeef00", Home: strings.TrimSpace(string(home)), AdminURL: admin}
	if err := clickhouse.New().Provision(context.Background(), orphan); err != nil {
		t.Fatal(err)
	}
	if out := f.mustBinky(f.repo, "gc"); !strings.Contains(out, "dropped clickhouse olap_crashed") || strings.Contains(out, b["OLAP_NAME"]) {
		t.Errorf("gc:\n%s", out)
	}
	if there, _ := clickhouse.New().Exists(context.Background(), admin, "olap_crashed"); there {
		t.Error("gc left the orphaned database")
	}
	if got, err := chQuery(t, b["OLAP_URL"], "SELECT count() FROM events"); err != nil || got != "100" {
		t.Errorf("b's events after gc: %q, %v", got, err)
	}
}
