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

// A clone's migrate is skipped only where it could apply nothing: the
// template was built by this very up, or this worktree holds exactly the
// files the template's clean builder held.
func TestACloneSkipsItsMigrateOnlyWhenItsFilesAreTheTemplatesBuilders(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "app", map[string]string{"migrations/001.sql": "CREATE TABLE IF NOT EXISTS a (id int);\n"})
	at := func(dir string) *world.World {
		t.Helper()
		_, wt, err := gitx.Discover(dir)
		if err != nil {
			t.Fatal(err)
		}
		return &world.World{Worktree: wt}
	}
	head := at(repo).Worktree.Head
	if head == "" {
		t.Fatal("no HEAD in the test repository")
	}
	built := templateOrigin{Name: "binky_golden_app_1", Commit: head, Clean: true}

	if why := migrateNeedless(ctx, at(repo), templateOrigin{Name: "t", BuiltHere: true}); why == "" {
		t.Error("the migrate ran on a clone of the template this up had just built in this worktree")
	}
	if why := migrateNeedless(ctx, at(repo), built); !strings.Contains(why, head[:12]) {
		t.Errorf("a clean worktree at the builder's commit: %q, want the migrate skipped", why)
	}
	if why := migrateNeedless(ctx, at(repo), templateOrigin{Name: "t", Commit: head}); why != "" {
		t.Errorf("the template's builder had changes (%q): the migrate must run", why)
	}
	if why := migrateNeedless(ctx, at(repo), templateOrigin{Name: "t"}); why != "" {
		t.Errorf("an older binky's template, builder unknown (%q): the migrate must run", why)
	}

	// An untracked migration, a changed one, a staged one: each may be
	// what the migrate applies.
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
		if why := migrateNeedless(ctx, at(repo), built); why != "" {
			t.Errorf("%s in the worktree: %q, want the migrate run", change.what, why)
		}
		change.undo()
	}

	// Another commit: the branch may add migrations.
	write(t, repo, "migrations/003.sql", "CREATE TABLE IF NOT EXISTS d (id int);\n")
	gittest.Git(t, repo, "add", "-A")
	gittest.Git(t, repo, "commit", "-qm", "003")
	if why := migrateNeedless(ctx, at(repo), built); why != "" {
		t.Errorf("a worktree at another commit than the builder's: %q, want the migrate run", why)
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
