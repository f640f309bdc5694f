// Package gittest makes real git repositories for tests, with git isolated
// from the user's and the system's configuration.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Isolate points git at an empty global config and no system config, and
// fixes the author, for the rest of the test.
func Isolate(t testing.TB) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "gitconfig")
	if err := os.WriteFile(cfg, []byte("[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", cfg)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_AUTHOR_NAME", "Test")
	t.Setenv("GIT_AUTHOR_EMAIL", "test@example.invalid")
	t.Setenv("GIT_COMMITTER_NAME", "Test")
	t.Setenv("GIT_COMMITTER_EMAIL", "test@example.invalid")
}

// Git runs git in dir and returns its trimmed output, failing the test on error.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// NewRepo makes a repository at dir/name with files committed on main and
// returns its path (symlinks resolved, as git reports paths).
func NewRepo(t testing.TB, dir, name string, files map[string]string) string {
	t.Helper()
	Isolate(t)
	root := filepath.Join(dir, name)
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	Git(t, root, "init", "-q", "-b", "main")
	WriteFiles(t, root, files)
	Git(t, root, "add", "-A")
	Git(t, root, "commit", "-q", "--allow-empty", "-m", "initial")
	return root
}

// WriteFiles writes files (path → content) under root.
func WriteFiles(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// AddWorktree adds a linked worktree at path on a new branch and returns
// its path with symlinks resolved.
func AddWorktree(t testing.TB, repo, path, branch string) string {
	t.Helper()
	Git(t, repo, "worktree", "add", "-q", "-b", branch, path)
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return path
}
