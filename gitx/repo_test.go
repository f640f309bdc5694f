package gitx_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/gitx/gittest"
)

func TestDiscoverMainAndLinkedWorktrees(t *testing.T) {
	tmp := t.TempDir()
	main := gittest.NewRepo(t, tmp, "acme", map[string]string{"src/app/main.go": "package main\n"})
	feat := gittest.AddWorktree(t, main, filepath.Join(tmp, "login-fix"), "login-fix")

	tests := []struct {
		name, dir                      string
		wantName, wantPath, wantBranch string
		wantMain                       bool
		wantAdmin                      string
	}{
		{"main root", main, "acme", main, "main", true, filepath.Join(main, ".git")},
		{"main subfolder", filepath.Join(main, "src", "app"), "acme", main, "main", true, filepath.Join(main, ".git")},
		{"linked root", feat, "login-fix", feat, "login-fix", false, filepath.Join(main, ".git", "worktrees", "login-fix")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo, wt, err := gitx.Discover(tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			if repo.CommonDir != filepath.Join(main, ".git") {
				t.Errorf("CommonDir = %s", repo.CommonDir)
			}
			if wt.Name != tt.wantName || wt.Path != tt.wantPath || wt.Branch != tt.wantBranch || wt.Main != tt.wantMain || wt.AdminDir != tt.wantAdmin {
				t.Errorf("got %+v", wt)
			}
			if len(wt.Head) != 40 {
				t.Errorf("Head = %q, want a commit hash", wt.Head)
			}
		})
	}

	repo, _, _ := gitx.Discover(main)
	wts, err := repo.Worktrees()
	if err != nil {
		t.Fatal(err)
	}
	if len(wts) != 2 || !wts[0].Main || wts[1].Name != "login-fix" {
		t.Fatalf("Worktrees = %+v", wts)
	}
	for _, name := range []string{"login-fix"} {
		if wt, err := repo.Find(name); err != nil || wt.Path != feat {
			t.Errorf("Find(%q) = %+v, %v", name, wt, err)
		}
	}
	if _, err := repo.Find("nope"); !errors.Is(err, gitx.ErrNoSuchWorktree) {
		t.Errorf("Find(nope) err = %v, want ErrNoSuchWorktree", err)
	}
}

func TestDiscoverBareRepositoryWithWorktrees(t *testing.T) {
	tmp := t.TempDir()
	src := gittest.NewRepo(t, tmp, "src", map[string]string{"a.txt": "a"})
	bare := filepath.Join(tmp, "acme.git")
	gittest.Git(t, tmp, "clone", "-q", "--bare", src, bare)
	wtPath := filepath.Join(tmp, "wt-one")
	gittest.Git(t, bare, "worktree", "add", "-q", "-b", "one", wtPath)

	repo, wt, err := gitx.Discover(wtPath)
	if err != nil {
		t.Fatal(err)
	}
	if !repo.Bare || repo.MainPath != "" {
		t.Errorf("repo = %+v, want bare with no main path", repo)
	}
	if wt.Name != "wt-one" || wt.Branch != "one" || wt.Main {
		t.Errorf("wt = %+v", wt)
	}
	wts, _ := repo.Worktrees()
	if len(wts) != 1 {
		t.Errorf("Worktrees of a bare repository = %+v, want only the linked one", wts)
	}
	if _, _, err := gitx.Discover(bare); !errors.Is(err, gitx.ErrNotWorktree) {
		t.Errorf("Discover(bare) err = %v, want ErrNotWorktree", err)
	}
}

func TestDiscoverOutsideRepository(t *testing.T) {
	_, _, err := gitx.Discover(t.TempDir())
	if !errors.Is(err, gitx.ErrNotRepository) {
		t.Fatalf("err = %v, want ErrNotRepository", err)
	}
}

func TestWorktreeLockedAndMissing(t *testing.T) {
	tmp := t.TempDir()
	main := gittest.NewRepo(t, tmp, "acme", nil)
	feat := gittest.AddWorktree(t, main, filepath.Join(tmp, "feat"), "feat")
	gittest.Git(t, main, "worktree", "lock", feat)
	if err := os.RemoveAll(feat); err != nil {
		t.Fatal(err)
	}
	repo, _, _ := gitx.Discover(main)
	wt, err := repo.Find("feat")
	if err != nil {
		t.Fatal(err)
	}
	if !wt.Locked || !wt.Missing {
		t.Errorf("wt = %+v, want locked and missing", wt)
	}
}

func TestHooksDirHonoursCoreHooksPath(t *testing.T) {
	tmp := t.TempDir()
	main := gittest.NewRepo(t, tmp, "acme", nil)
	feat := gittest.AddWorktree(t, main, filepath.Join(tmp, "feat"), "feat")
	ctx := context.Background()
	got, err := gitx.HooksDir(ctx, feat)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(main, ".git", "hooks"); got != want {
		t.Errorf("HooksDir = %s, want %s (hooks are shared by all worktrees)", got, want)
	}
	gittest.Git(t, main, "config", "core.hooksPath", ".githooks")
	got, _ = gitx.HooksDir(ctx, main)
	if want := filepath.Join(main, ".githooks"); got != want {
		t.Errorf("with core.hooksPath: HooksDir = %s, want %s", got, want)
	}
}

func TestDirtyAndAddRemove(t *testing.T) {
	tmp := t.TempDir()
	main := gittest.NewRepo(t, tmp, "acme", map[string]string{"a.txt": "a"})
	repo, _, _ := gitx.Discover(main)
	ctx := context.Background()

	wt, err := repo.AddWorktree(ctx, filepath.Join(tmp, "new-branch"), "new-branch", "")
	if err != nil {
		t.Fatal(err)
	}
	if wt.Branch != "new-branch" {
		t.Errorf("new worktree on %q", wt.Branch)
	}
	gittest.Git(t, main, "branch", "existing")
	wt2, err := repo.AddWorktree(ctx, filepath.Join(tmp, "existing"), "existing", "")
	if err != nil || wt2.Branch != "existing" {
		t.Fatalf("AddWorktree on an existing branch: %+v, %v", wt2, err)
	}

	if dirty, err := gitx.Dirty(ctx, wt.Path); err != nil || dirty {
		t.Fatalf("fresh worktree dirty=%v err=%v", dirty, err)
	}
	gittest.WriteFiles(t, wt.Path, map[string]string{"untracked.txt": "x"})
	if dirty, _ := gitx.Dirty(ctx, wt.Path); !dirty {
		t.Fatal("worktree with an untracked file is not dirty")
	}
	if err := repo.RemoveWorktree(ctx, wt, false); err == nil {
		t.Fatal("git worktree remove of a dirty worktree succeeded without force")
	}
	if err := repo.RemoveWorktree(ctx, wt, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wt.Path); !os.IsNotExist(err) {
		t.Errorf("worktree folder still there: %v", err)
	}
}

// A new branch starts where the worktree asking for it stands, as 'git
// worktree add -b' typed there does, not at the repository's HEAD.
func TestANewWorktreesBranchStartsAtTheHeadOfTheWorktreeItIsAddedFrom(t *testing.T) {
	tmp := t.TempDir()
	main := gittest.NewRepo(t, tmp, "acme", map[string]string{"a.txt": "a"})
	repo, _, _ := gitx.Discover(main)
	ctx := context.Background()
	feat, err := repo.AddWorktree(ctx, filepath.Join(tmp, "feat"), "feat", "")
	if err != nil {
		t.Fatal(err)
	}
	gittest.WriteFiles(t, feat.Path, map[string]string{"b.txt": "b"})
	gittest.Git(t, feat.Path, "add", "-A")
	gittest.Git(t, feat.Path, "commit", "-qm", "feat's own")
	ahead := strings.TrimSpace(gittest.Git(t, feat.Path, "rev-parse", "HEAD"))

	next, err := repo.AddWorktree(ctx, filepath.Join(tmp, "next"), "next", filepath.Join(feat.Path))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(gittest.Git(t, next.Path, "rev-parse", "HEAD")); got != ahead {
		t.Errorf("next starts at %s, want feat's HEAD %s", got, ahead)
	}
	other, err := repo.AddWorktree(ctx, filepath.Join(tmp, "other"), "other", main)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(gittest.Git(t, other.Path, "rev-parse", "HEAD")); got == ahead {
		t.Error("a branch added from the main worktree starts at feat's commit")
	}
}

func TestHeadAndBranchesResolveFromPackedRefs(t *testing.T) {
	tmp := t.TempDir()
	main := gittest.NewRepo(t, tmp, "acme", map[string]string{"a.txt": "a\n"})
	feat := gittest.AddWorktree(t, main, filepath.Join(tmp, "feat"), "feat")
	want, err := gitx.Git(context.Background(), feat, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	// After gc, branches live only in packed-refs.
	if _, err := gitx.Git(context.Background(), main, "pack-refs", "--all", "--prune"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(main, ".git", "refs", "heads", "feat")); !os.IsNotExist(err) {
		t.Fatalf("refs/heads/feat still loose: %v", err)
	}
	repo, wt, err := gitx.Discover(feat)
	if err != nil {
		t.Fatal(err)
	}
	if wt.Branch != "feat" || wt.Head != want {
		t.Errorf("packed: branch %q head %q, want feat %s", wt.Branch, wt.Head, want)
	}
	if !repo.BranchExists("feat") || repo.BranchExists("nope") || repo.BranchExists("../../HEAD") {
		t.Errorf("BranchExists: feat %v, nope %v, ../../HEAD %v", repo.BranchExists("feat"), repo.BranchExists("nope"), repo.BranchExists("../../HEAD"))
	}
}

// A worktree another user owns is refused as git refuses it (dubious
// ownership), unless safe.directory lets it in: binky would otherwise run a
// stranger's binky.toml and write into their repository. (An agent's MCP
// up ran such a config as root: found by an attack session.)
func TestAWorktreeAnotherUserOwnsIsRefusedAsGitRefusesIt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a repository to another user (not root: euid != 0)")
	}
	repo := gittest.NewRepo(t, t.TempDir(), "theirs", nil)
	if err := filepath.Walk(repo, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 12345, 12345)
	}); err != nil {
		t.Fatal(err)
	}
	_, _, err := gitx.Discover(repo)
	if !errors.Is(err, gitx.ErrDubiousOwnership) || !strings.Contains(err.Error(), "safe.directory "+repo) {
		t.Fatalf("Discover of another user's repository: %v", err)
	}
	global := filepath.Join(t.TempDir(), "gitconfig")
	os.WriteFile(global, []byte("[safe]\n\tdirectory = "+repo+"\n"), 0o644)
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	if _, wt, err := gitx.Discover(repo); err != nil || wt == nil {
		t.Errorf("Discover of a repository safe.directory lets in: %v", err)
	}
}

// Snapshot reads HEAD and cleanliness in one status, without the index
// lock a refreshing status takes: a user's git command at the same moment
// failed on it.
func TestSnapshotReadsHeadAndCleanlinessWithoutTakingTheIndexLock(t *testing.T) {
	tmp := t.TempDir()
	ctx := context.Background()
	empty := filepath.Join(tmp, "empty")
	gittest.Git(t, tmp, "init", "-q", empty)
	if head, clean, err := gitx.Snapshot(ctx, empty); err != nil || head != "" || !clean {
		t.Errorf("empty repository: head %q clean %v err %v", head, clean, err)
	}
	repo := gittest.NewRepo(t, tmp, "app", map[string]string{"a.txt": "a\n", ".gitignore": "ignored/\n"})
	_, wt, err := gitx.Discover(repo)
	if err != nil {
		t.Fatal(err)
	}
	if head, clean, err := gitx.Snapshot(ctx, repo); err != nil || head != wt.Head || !clean {
		t.Errorf("clean worktree: head %q (want %q) clean %v err %v", head, wt.Head, clean, err)
	}
	gittest.WriteFiles(t, repo, map[string]string{"ignored/x": "x"})
	if _, clean, _ := gitx.Snapshot(ctx, repo); !clean {
		t.Error("an ignored file made the worktree unclean")
	}
	// A file whose stat no longer matches the index (same content): a
	// plain status would rewrite the index under index.lock.
	past := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(repo, "a.txt"), past, past)
	index := filepath.Join(repo, ".git", "index")
	before, _ := os.Stat(index)
	if _, clean, _ := gitx.Snapshot(ctx, repo); !clean {
		t.Error("a touched, unchanged file made the worktree unclean")
	}
	if after, _ := os.Stat(index); !after.ModTime().Equal(before.ModTime()) {
		t.Error("Snapshot rewrote the index (it takes index.lock to do so)")
	}
	gittest.WriteFiles(t, repo, map[string]string{"a.txt": "b\n"})
	gittest.Git(t, repo, "add", "a.txt")
	if _, clean, _ := gitx.Snapshot(ctx, repo); clean {
		t.Error("a staged change left the worktree clean")
	}
}
