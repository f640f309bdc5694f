package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	built := templateOrigin{Name: "binky_golden_app_1", Commit: head, Clean: true}
	changed := world.CloneMigrateChanged

	if why := migrateNeedless(ctx, at(repo, changed), "db", built); !strings.Contains(why, head[:12]) {
		t.Errorf("a clean worktree at the builder's commit: %q, want the migrate skipped", why)
	}
	for _, mode := range []string{"", world.CloneMigrateAlways} {
		if why := migrateNeedless(ctx, at(repo, mode), "db", built); why != "" {
			t.Errorf("clone_migrate = %q: %q, want the migrate run on every clone", mode, why)
		}
	}
	if why := migrateNeedless(ctx, at(repo, changed), "db", templateOrigin{Name: "t", Commit: head}); why != "" {
		t.Errorf("the template's builder had changes (%q): the migrate must run", why)
	}
	if why := migrateNeedless(ctx, at(repo, changed), "db", templateOrigin{Name: "t"}); why != "" {
		t.Errorf("an older binky's template, builder unknown (%q): the migrate must run", why)
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
		if why := migrateNeedless(ctx, at(repo, changed), "db", built); why != "" {
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
	if why := migrateNeedless(ctx, opened, "db", built); why != "" {
		t.Errorf("a worktree that moved to another commit after its world was opened: %q, want the migrate run", why)
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
