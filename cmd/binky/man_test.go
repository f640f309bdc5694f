package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/cmd/binky/manpage"
)

// make install puts these where `man git-binky` (what `git binky --help`
// runs) finds them.
func TestManPagesAreGeneratedFromTheCommandTree(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := manpage.Write(newRootCmd(newApp(nil, &out, &out)), dir); err != nil {
		t.Fatal(err)
	}
	root, err := os.ReadFile(filepath.Join(dir, "git-binky.1"))
	if err != nil {
		t.Fatalf("no git-binky.1: %v", err)
	}
	for _, want := range []string{".TH \"GIT-BINKY\" \"1\"", "git-binky - One isolated local world per git worktree", "git-binky-up(1)"} {
		if !strings.Contains(string(root), want) {
			t.Errorf("git-binky.1 lacks %q:\n%.600s", want, root)
		}
	}
	up, err := os.ReadFile(filepath.Join(dir, "git-binky-up.1"))
	if err != nil || !strings.Contains(string(up), `\fB--group\fP`) {
		t.Errorf("git-binky-up.1 (with its --group flag): %v\n%.400s", err, up)
	}
	if _, err := os.Stat(filepath.Join(dir, "git-binky-servers.1")); err != nil {
		t.Error("no page for servers:", err)
	}
}
