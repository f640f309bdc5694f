package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/gitx/gittest"
	"github.com/git-binky/git-binky/world"
)

// With clone_migrate = "changed" a clone's migrate is skipped only where
// it could apply nothing: this worktree holds, now, exactly the files the
// template's clean builder held. Without it, it always runs.
func TestACloneSkipsItsMigrateOnlyWhenAskedAndItsFilesAreTheTemplatesBuilders(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "app", map[string]string{"migrations/001.sql": "CREATE TABLE IF NOT EXISTS a (id int);\n"})
	cfg := func(mode string) *world.Config {
		return &world.Config{Services: map[string]*world.Service{"db": {Adapter: "postgres", Migrate: "migrate", CloneFrom: "golden", CloneMigrate: mode}}}
	}
	at := func(dir, mode string) *world.World {
		t.Helper()
		_, wt, err := gitx.Discover(dir)
		if err != nil {
			t.Fatal(err)
		}
		return &world.World{Worktree: wt, Config: cfg(mode)}
	}
	head := at(repo, "").Worktree.Head
	if head == "" {
		t.Fatal("no HEAD in the test repository")
	}
	built := templateOrigin{Name: "binky_golden_app_1", Commit: head}
	changed := world.CloneMigrateChanged

	if skip, why := migrateNeedless(ctx, at(repo, changed), "db", built); !skip || !strings.Contains(why, head[:12]) {
		t.Errorf("a clean worktree at the builder's commit: %v %q, want the migrate skipped", skip, why)
	}
	for _, mode := range []string{"", world.CloneMigrateAlways} {
		if skip, why := migrateNeedless(ctx, at(repo, mode), "db", built); skip || why != "" {
			t.Errorf("clone_migrate = %q: %v %q, want the migrate run on every clone, nothing said", mode, skip, why)
		}
	}
	// The builder's commit is kept only when it was clean: none means
	// changes, or an older binky; up says what would build it again.
	if skip, why := migrateNeedless(ctx, at(repo, changed), "db", templateOrigin{Name: "t"}); skip || !strings.Contains(why, "golden drop t") {
		t.Errorf("a template whose builder is unknown: %v %q, want the migrate run and the way to rebuild it", skip, why)
	}

	// An untracked migration, an edited one: each may be what the migrate
	// applies.
	for _, change := range []struct {
		what string
		do   func()
		undo func()
	}{
		{"an untracked migration", func() { write(t, repo, "migrations/002.sql", "CREATE TABLE IF NOT EXISTS b (id int);\n") },
			func() { os.Remove(filepath.Join(repo, "migrations/002.sql")) }},
		{"an edited migration", func() { write(t, repo, "migrations/001.sql", "CREATE TABLE IF NOT EXISTS c (id int);\n") },
			func() { gittest.Git(t, repo, "checkout", "--", "migrations/001.sql") }},
	} {
		change.do()
		if skip, why := migrateNeedless(ctx, at(repo, changed), "db", built); skip {
			t.Errorf("%s in the worktree: %q, want the migrate run", change.what, why)
		}
		change.undo()
	}

	// Another commit, even one the world was opened before: the branch
	// may add migrations, and HEAD is read when the clone is made.
	opened := at(repo, changed)
	write(t, repo, "migrations/003.sql", "CREATE TABLE IF NOT EXISTS d (id int);\n")
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-qm", "003")
	if skip, why := migrateNeedless(ctx, opened, "db", built); skip || !strings.Contains(why, "the template was built at") {
		t.Errorf("a worktree that moved to another commit after its world was opened: %v %q, want the migrate run", skip, why)
	}
}

// The builder is read before its migrate and after its seed: a checkout
// to another branch and back in between leaves commit and files as they
// were, but writes the index anew, and the two readings differ.
func TestABuildersCheckoutAndBackBetweenItsReadingsIsSeen(t *testing.T) {
	ctx := context.Background()
	repo := gittest.NewRepo(t, t.TempDir(), "app", map[string]string{"a.sql": "a\n"})
	gittest.Git(t, repo, "branch", "other")
	_, wt, err := gitx.Discover(repo)
	if err != nil {
		t.Fatal(err)
	}
	before := snapshot(ctx, wt)
	if !before.clean || before.head == "" {
		t.Fatalf("a clean worktree read as %+v", before)
	}
	if again := snapshot(ctx, wt); again != before {
		t.Fatalf("two readings of an unchanged worktree differ: %+v, %+v", before, again)
	}
	time.Sleep(10 * time.Millisecond)
	gittest.Git(t, repo, "checkout", "-q", "other")
	gittest.Git(t, repo, "checkout", "-q", "main")
	if after := snapshot(ctx, wt); after == before {
		t.Error("a checkout and back between the readings went unseen")
	}
}
func write(t *testing.T, dir, rel, body string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
