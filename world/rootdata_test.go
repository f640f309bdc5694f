package world

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
)

// A home's folder under the root data folder is an orphan once its home is
// deleted, or made again at its path with a new ID; a live home's is not,
// nor a folder that does not say whose it is. A process still running from
// an orphan is named.
func TestRootOrphansAreTheFoldersOfHomesThatAreGone(t *testing.T) {
	root, tmp := t.TempDir(), t.TempDir()
	n := 0
	folder := func(h Home) string {
		t.Helper()
		n++
		f := filepath.Join(root, "00000000000"+string(rune('0'+n)))
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
	for _, name := range []string{"00000000000a", "not-binkys-1"} { // an older binky's; not binky's
		if err := os.MkdirAll(filepath.Join(root, name, "postgres"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "not-binkys-1", "home"), []byte(deleted.Dir+"\nx\n"), 0o600)
	// A live home whose ID file ends in a newline (restored by hand) is
	// still itself.
	id, _ := live.ID()
	os.WriteFile(filepath.Join(live.Dir, "home-id"), []byte(id+"\n"), 0o600)
	os.RemoveAll(deleted.Dir)
	os.Remove(filepath.Join(remade.Dir, "home-id")) // made again: a new ID
	if _, err := remade.ID(); err != nil {
		t.Fatal(err)
	}
	// A server left running from the deleted home's folder (sleep stands
	// in: what is looked at is its working folder), and one in a folder
	// whose path merely starts alike.
	var running []Process
	if runtime.GOOS == "linux" {
		if err := os.MkdirAll(gone+"x", 0o700); err != nil {
			t.Fatal(err)
		}
		for _, dir := range []string{filepath.Join(gone, "postgres", "data"), gone + "x"} {
			cmd := exec.Command("sleep", "30")
			cmd.Dir = dir
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			if dir != gone+"x" {
				running = []Process{{PID: cmd.Process.Pid, Name: "sleep"}}
			}
		}
		// A child of that server, in its folder too, goes with it.
		child := exec.Command("sh", "-c", "sleep 30 & wait")
		child.Dir = filepath.Join(gone, "postgres")
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { child.Process.Kill(); child.Wait() })
		running = append(running, Process{PID: child.Process.Pid, Name: "sh"})
		time.Sleep(100 * time.Millisecond) // for sh to start its sleep
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
	if r := got[gone].Running; !slices.Equal(r, running) {
		t.Errorf("running from the deleted home's folder: %v, want %v", r, running)
	}
	if r := got[again].Running; len(r) != 0 {
		t.Errorf("running from the remade home's old folder: %v, want nothing", r)
	}
	if o, err := RootOrphans(filepath.Join(tmp, "none")); err != nil || o != nil {
		t.Errorf("no root folder: %v, %v; want nothing", o, err)
	}
}

// As root, the path of a deleted home may be anyone's now: what sits at
// its home-id is read only if it is a regular file, and only its start.
func TestAHomeIDThatIsNotARegularFileIsNotRead(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "home-id")); err != nil {
		t.Skip(err)
	}
	if _, err := readHomeID(dir); err == nil {
		t.Error("a home-id linked to /dev/zero was read")
	}
}

// A value names a path in a folder when it is the folder, a path under it,
// or an option's value that is; a path that only starts alike does not.
func TestNamesPathIn(t *testing.T) {
	f := "/var/lib/git-binky/0123456789ab"
	for v, want := range map[string]bool{
		f: true, f + "/postgres/data": true, "--datadir=" + f + "/mysql/data": true, "RABBITMQ_MNESIA_BASE=" + f + "/rabbitmq": true,
		f + "cd": false, "/backup" + f + "/postgres": false, "--x=/backup" + f: false, "": false,
	} {
		if got := namesPathIn([][]byte{[]byte(v)}, f); got != want {
			t.Errorf("namesPathIn(%q) = %v, want %v", v, got, want)
		}
	}
}
