package world

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// A home's folder under the root data folder is an orphan once its home is
// deleted, or made again at its path with a new ID; a live home's is not,
// nor a folder that does not say whose it is. A process still running from
// an orphan is named.
func TestRootOrphansAreTheFoldersOfHomesThatAreGone(t *testing.T) {
	root, tmp := t.TempDir(), t.TempDir()
	folder := func(h Home) string {
		t.Helper()
		f := filepath.Join(root, filepath.Base(h.Dir))
		if err := os.MkdirAll(filepath.Join(f, "postgres", "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := h.WriteRootOwner(f); err != nil {
			t.Fatal(err)
		}
		return f
	}
	live := Home{Dir: filepath.Join(tmp, "live")}
	deleted := Home{Dir: filepath.Join(tmp, "deleted")}
	remade := Home{Dir: filepath.Join(tmp, "remade")}
	for _, h := range []Home{live, deleted, remade} {
		if err := os.MkdirAll(h.Dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	folder(live)
	gone := folder(deleted)
	again := folder(remade)
	if err := os.MkdirAll(filepath.Join(root, "older-binky", "postgres"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(deleted.Dir)
	os.Remove(filepath.Join(remade.Dir, "home-id")) // made again: a new ID
	if _, err := remade.ID(); err != nil {
		t.Fatal(err)
	}
	// A server left running from the deleted home's folder (sh stands in:
	// what is looked at is the command line).
	var running []string
	if runtime.GOOS == "linux" {
		cmd := exec.Command("sh", "-c", "sleep 30", filepath.Join(gone, "postgres", "data"))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		running = []string{strconv.Itoa(cmd.Process.Pid) + ": sh"}
	}
	orphans, err := RootOrphans(root)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]RootOrphan{}
	for _, o := range orphans {
		got[o.Folder] = o
	}
	if len(got) != 2 || got[gone].Home != deleted.Dir || got[again].Home != remade.Dir {
		t.Fatalf("orphans %+v, want the deleted home's %s and the remade home's %s", orphans, gone, again)
	}
	if k := got[gone].Kinds; len(k) != 1 || k[0] != "postgres" {
		t.Errorf("the deleted home's folder holds %v, want [postgres]", k)
	}
	if r := got[gone].Running; len(r) != len(running) || len(r) == 1 && r[0] != running[0] {
		t.Errorf("running from the deleted home's folder: %v, want %v", r, running)
	}
	if r := got[again].Running; len(r) != 0 {
		t.Errorf("running from the remade home's old folder: %v, want nothing", r)
	}
	if o, err := RootOrphans(filepath.Join(tmp, "none")); err != nil || o != nil {
		t.Errorf("no root folder: %v, %v; want nothing", o, err)
	}
}
