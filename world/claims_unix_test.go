//go:build unix

package world

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestMachineClaimsRefusesAFolderOthersMayWrite(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "git-binky-"+strconv.Itoa(os.Getuid()))
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o777)
	if got := claimsIn(root); got != "" {
		t.Errorf("claims in a world-writable folder: %q", got)
	}
	os.Remove(dir)
	if err := os.Symlink(t.TempDir(), dir); err != nil {
		t.Fatal(err)
	}
	if got := claimsIn(root); got != "" {
		t.Errorf("claims through a symlink: %q", got)
	}
	os.Remove(dir)
	if got := claimsIn(root); got != filepath.Join(dir, "ports") {
		t.Errorf("claimsIn = %q", got)
	}
}
