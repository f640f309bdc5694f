package world

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func idOf(t *testing.T, dir string) string {
	t.Helper()
	id, err := Home{Dir: dir}.ID()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func copyHome(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	verifiedIDs.Delete(to)
}

// A copy's gc dropped the original's live databases, its marks being the
// copy's own: a copy takes a new id; the original keeps its.
func TestACopiedHomeTakesANewIDAndTheOriginalKeepsIt(t *testing.T) {
	root := t.TempDir()
	orig := filepath.Join(root, "home")
	id := idOf(t, orig)
	if again := idOf(t, orig); again != id {
		t.Fatalf("id changed on its own: %s → %s", id, again)
	}
	copyHome(t, orig, filepath.Join(root, "copy"))
	copied := idOf(t, filepath.Join(root, "copy"))
	if copied == id {
		t.Fatal("the copy kept the original's id")
	}
	if note := (Home{Dir: filepath.Join(root, "copy")}).CopiedNote(); !strings.Contains(note, id) || !strings.Contains(note, orig) {
		t.Errorf("the copy does not say what it was copied from: %q", note)
	}
	if again := idOf(t, filepath.Join(root, "copy")); again != copied {
		t.Errorf("the copy's new id changed again: %s → %s", copied, again)
	}
	verifiedIDs.Delete(orig)
	if now := idOf(t, orig); now != id {
		t.Errorf("the original's id changed: %s → %s", id, now)
	}
}

func TestAMovedHomeKeepsItsID(t *testing.T) {
	root := t.TempDir()
	orig := filepath.Join(root, "home")
	id := idOf(t, orig)
	moved := filepath.Join(root, "moved")
	if err := os.Rename(orig, moved); err != nil {
		t.Fatal(err)
	}
	if got := idOf(t, moved); got != id {
		t.Errorf("a moved home took a new id: %s → %s", id, got)
	}
	if note := (Home{Dir: moved}).CopiedNote(); note != "" {
		t.Errorf("a moved home says it was copied: %q", note)
	}
}

func TestAHomeFromAnotherMachineTakesANewID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home")
	id := idOf(t, dir)
	path, _, _ := strings.Cut(Home{Dir: dir}.location(), "\n")
	// Made at this very path, on another machine (a backup restored).
	if err := os.WriteFile(filepath.Join(dir, homeAtFile), []byte(path+"\nanother-machine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	verifiedIDs.Delete(dir)
	if got := idOf(t, dir); got == id {
		t.Error("a home made on another machine kept its id")
	}
}

func TestAHomeFromBeforeHomeAtKeepsItsID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home")
	id := idOf(t, dir)
	os.Remove(filepath.Join(dir, homeAtFile))
	verifiedIDs.Delete(dir)
	if got := idOf(t, dir); got != id {
		t.Errorf("an upgraded home took a new id: %s → %s", id, got)
	}
	if _, err := os.Stat(filepath.Join(dir, homeAtFile)); err != nil {
		t.Errorf("home-at not written: %v", err)
	}
}

// Many processes' first ID() of a copy (the CLI and a daemon it starts):
// one that read home-id before the copy was settled and home-at after
// must not return the original's id (a review found one did).
func TestACopysFirstIDsAtOnceNeverGiveTheOriginals(t *testing.T) {
	root := t.TempDir()
	orig := filepath.Join(root, "home")
	id := idOf(t, orig)
	at, _ := os.ReadFile(filepath.Join(orig, homeAtFile))
	for i := 0; i < 100; i++ {
		cp := filepath.Join(root, "copy")
		os.RemoveAll(cp)
		os.MkdirAll(cp, 0o700)
		os.WriteFile(filepath.Join(cp, homeIDFile), []byte(id), 0o600)
		os.WriteFile(filepath.Join(cp, homeAtFile), at, 0o600)
		verifiedIDs.Delete(cp)
		var wg sync.WaitGroup
		got := make([]string, 8)
		for g := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[g], _ = Home{Dir: cp}.ID()
			}()
		}
		wg.Wait()
		for _, g := range got {
			if g == id {
				t.Fatalf("iteration %d: a copy's ID() returned the original's id %s: %v", i, id, got)
			}
		}
	}
}

// home-at is newline-separated, and a path may hold a newline.
func TestACopyOfAHomeOnAPathWithANewlineTakesANewID(t *testing.T) {
	root := t.TempDir()
	orig := filepath.Join(root, "x\nsame")
	id := idOf(t, orig)
	cp := filepath.Join(root, "y\nsame")
	copyHome(t, orig, cp)
	if got := idOf(t, cp); got == id {
		t.Errorf("a copy (original still there) kept the original's id %s", id)
	}
}

func TestAMovedHomeOnAPathWithANewlineKeepsItsID(t *testing.T) {
	root := t.TempDir()
	orig := filepath.Join(root, "a\nb")
	id := idOf(t, orig)
	moved := filepath.Join(root, "moved")
	os.Rename(orig, moved)
	if got := idOf(t, moved); got != id {
		t.Errorf("a moved home took a new id: %s → %s", id, got)
	}
}
