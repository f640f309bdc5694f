package world

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// DeleteRecord deletes a world's lock file while it holds the lock. A
// process that was waiting on that file must not then hold the lock beside
// one that took the new file at the same path. (The window in which the
// waiter has the deleted file open is narrow with flock's polling: this
// pins the behaviour for any way of waiting.)
func TestALockWhoseFileWasDeletedIsTakenAgainOnTheFileAtItsPath(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("skipped: Windows cannot delete an open file, so a held lock's file is never deleted there")
	}
	path := filepath.Join(t.TempDir(), "w.lock")
	ctx := context.Background()
	first, err := Lock(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	waiterHolds := make(chan func())
	go func() {
		unlock, err := Lock(ctx, path)
		if err != nil {
			t.Error(err)
		}
		waiterHolds <- unlock
	}()
	time.Sleep(50 * time.Millisecond) // the waiter has opened the first file and waits on it
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	newcomer, err := Lock(ctx, path) // a new file at the path: free
	if err != nil {
		t.Fatal(err)
	}
	first()
	select {
	case unlock := <-waiterHolds:
		unlock()
		t.Fatal("the waiter took the deleted file's lock while the newcomer holds the path's")
	case <-time.After(200 * time.Millisecond):
	}
	newcomer()
	select {
	case unlock := <-waiterHolds:
		unlock()
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter never took the lock after the newcomer let it go")
	}
}

// A lock taken after a world was forgotten makes its file again; gc
// sweeps such files, but never one whose world has a record or whose lock
// is held.
func TestSweepLocksDeletesOnlyTheFreeLocksOfForgottenWorlds(t *testing.T) {
	home := Home{Dir: t.TempDir()}
	if err := home.Ensure(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, id := range []string{"forgotten", "held", "live"} {
		unlock, err := home.LockWorld(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		unlock()
	}
	if err := home.SaveRecord(&Record{Schema: RecordSchema, ID: "live"}); err != nil {
		t.Fatal(err)
	}
	labels := filepath.Join(home.WorldsDir(), "labels-abc.lock")
	if err := os.WriteFile(labels, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	unlockHeld, err := home.LockWorld(ctx, "held")
	if err != nil {
		t.Fatal(err)
	}
	defer unlockHeld()
	if n := home.SweepLocks(); n != 1 {
		t.Errorf("swept %d lock files, want 1 (the forgotten world's)", n)
	}
	for path, want := range map[string]bool{
		home.lockPath("forgotten"): false, home.lockPath("held"): true, home.lockPath("live"): true, labels: true,
	} {
		if _, err := os.Stat(path); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(path), err == nil, want)
		}
	}
}

// A damaged secret or home id is an error naming the file, not a value:
// an empty secret derived every world's password from nothing, in silence.
func TestADamagedSecretOrHomeIDIsAnError(t *testing.T) {
	h := newTestHome(t)
	if _, err := h.Secret(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.ID(); err != nil {
		t.Fatal(err)
	}
	for name, damage := range map[string][]byte{"secret": nil, "home-id": []byte("zz\n")} {
		if err := os.WriteFile(filepath.Join(h.Dir, name), damage, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := h.Secret(); err == nil || !strings.Contains(err.Error(), "secret is damaged") {
		t.Errorf("Secret() = %x, %v", b, err)
	}
	if id, err := h.ID(); err == nil || !strings.Contains(err.Error(), "home-id is damaged") {
		t.Errorf("ID() = %q, %v", id, err)
	}
}
