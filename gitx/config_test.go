package gitx

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCoreConfigReadsAsGitDoes checks the reader against git itself on
// the shapes a config file takes.
func TestCoreConfigReadsAsGitDoes(t *testing.T) {
	for _, cfg := range []string{
		"[core]\n\tbare = false\n\tworktree = ../wt\n",
		"[CORE]\n\tBare = TRUE\n",
		"[core]\n\tbare\n",
		"[core] worktree = /a/b ; a comment\n",
		"[core]\n\tworktree = \"/with space/ x \" # quoted\n",
		"[core]\n\tworktree = /a\\\\b\\\"c\n",
		"[core]\n\tworktree = /first\n[remote \"origin\"]\n\tworktree = /not-core\n[core]\n\tworktree = /last\n",
		"[core \"sub\"]\n\tbare = true\n",
		"# nothing\n",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		bare, worktree, err := coreConfig(dir)
		if err != nil {
			t.Fatalf("%q: %v", cfg, err)
		}
		for key, got := range map[string]string{"core.bare": bare, "core.worktree": worktree} {
			out, _ := exec.Command("git", "config", "-f", filepath.Join(dir, "config"), "--get", key).Output()
			want := strings.TrimSuffix(string(out), "\n")
			if key == "core.bare" && want == "" && strings.Contains(cfg, "\tbare\n") && !strings.Contains(cfg, "\"sub\"") {
				want = "true" // git prints a key with no value as empty; it means true
			}
			if got != want {
				t.Errorf("%q: %s = %q, git says %q", cfg, key, got, want)
			}
		}
	}
}
