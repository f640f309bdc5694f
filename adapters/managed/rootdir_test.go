package managed

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/world"
)

// A user who resets binky by deleting its home (rm -rf ~/.local/state/git-binky)
// gets a new home at the same path. As root the server's files live outside
// the home, under /var/lib/git-binky: the new home must start a cluster of
// its own, not the old one, whose admin password died with the old home.
func TestAHomeMadeAgainAtItsPathGetsAServerOfItsOwn(t *testing.T) {
	if adapters.FindServerBinary("initdb") == "" || adapters.FindServerBinary("postgres") == "" {
		t.Skip("PostgreSQL server binaries are not installed (Debian: apt-get install postgresql)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "home")
	var dirs []string
	up := func() {
		t.Helper()
		if err := os.MkdirAll(path, 0o700); err != nil {
			t.Fatal(err)
		}
		home := world.Home{Dir: path}
		admin, err := New(home).AdminURL(ctx, "postgres")
		if err != nil {
			t.Fatal(err)
		}
		data := filepath.Join(home.ServersDir(), "postgres", "data")
		if target, err := os.Readlink(data); err == nil {
			dirs = append(dirs, filepath.Dir(filepath.Dir(target)))
		}
		t.Cleanup(func() { New(home).Stop(context.Background(), "postgres") })
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Fatalf("the home's own admin URL: %v", err)
		}
		c.Close(ctx)
		if err := New(home).Stop(ctx, "postgres"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			if strings.HasPrefix(d, rootDataDir+"/") {
				os.RemoveAll(d)
			}
		}
	})
	up()
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	up()
	if len(dirs) == 2 && dirs[0] == dirs[1] {
		t.Errorf("both homes keep their server in %s", dirs[0])
	}
	// What doctor then says: the deleted home's folder is an orphan (its
	// server stopped), the new home's is not.
	if len(dirs) == 2 {
		orphans, err := world.RootOrphans(rootDataDir)
		if err != nil {
			t.Fatal(err)
		}
		var found bool
		for _, o := range orphans {
			if o.Folder == dirs[1] {
				t.Errorf("the live home's folder %s is listed as an orphan", o.Folder)
			}
			if o.Folder == dirs[0] {
				found = true
				if o.Home != path || len(o.Kinds) != 1 || o.Kinds[0] != "postgres" || len(o.Running) != 0 {
					t.Errorf("the deleted home's folder reads as %+v, want home %s, kinds [postgres], nothing running", o, path)
				}
			}
		}
		if !found {
			t.Errorf("the deleted home's folder %s is not listed as an orphan: %+v", dirs[0], orphans)
		}
	}
}
