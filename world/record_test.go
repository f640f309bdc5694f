package world

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestARecordedAddressHoldsNoDerivedPasswordAndReadsBackWithIt(t *testing.T) {
	h := Home{Dir: t.TempDir()}
	secret, err := h.Secret()
	if err != nil {
		t.Fatal(err)
	}
	pw := DerivePassword(secret, "postgres", "acme_x")
	addr := map[string]string{"url": "postgres://acme_x:" + pw + "@127.0.0.1:5432/acme_x", "password": pw, "user": "acme_x"}
	sl := SliceRecord{Service: "db", Adapter: "postgres", Name: "acme_x"}
	sl.SetAddress(addr, pw)
	for k, v := range sl.Address {
		if strings.Contains(v, pw) {
			t.Errorf("stored %s holds the password: %s", k, v)
		}
	}
	got := h.SliceAddress(sl)
	for k, v := range addr {
		if got[k] != v {
			t.Errorf("%s reads back as %q, want %q", k, got[k], v)
		}
	}
	// A record an older binky wrote, with the password in it, reads as is.
	old := SliceRecord{Adapter: "postgres", Name: "acme_x", Address: addr}
	if h.SliceAddress(old)["url"] != addr["url"] {
		t.Error("an older record's address changed on read")
	}
}

// A claim on a worktree git has just removed goes on unlocked rather than
// make the worktree's admin folder again: git would keep that folder as a
// stray of the worktree's name.
func TestTheOwnerLockNeverMakesARemovedWorktreesFolder(t *testing.T) {
	admin := filepath.Join(t.TempDir(), "worktrees", "feature")
	if err := os.MkdirAll(admin, 0o700); err != nil {
		t.Fatal(err)
	}
	worktree := t.TempDir()
	unlock, err := lockOwner(context.Background(), admin, worktree)
	if err != nil || unlock == nil {
		t.Fatalf("no lock in an existing admin folder: %v", err)
	}
	unlock()
	if err := os.RemoveAll(admin); err != nil {
		t.Fatal(err)
	}
	if unlock, err := lockOwner(context.Background(), admin, worktree); err != nil || unlock != nil {
		t.Fatalf("lockOwner in a removed admin folder = %v, %v; want no lock and no error", unlock != nil, err)
	}
	if _, err := os.Stat(admin); !os.IsNotExist(err) {
		t.Fatalf("the removed worktree's admin folder is back: %v", err)
	}
	// git deletes a worktree's files before its admin folder: in between,
	// nothing is made in that folder either.
	if err := os.MkdirAll(admin, 0o700); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(worktree)
	if unlock, _ := lockOwner(context.Background(), admin, worktree); unlock != nil {
		t.Fatal("a lock made in the admin folder of a worktree whose files are gone")
	}
	if entries, _ := os.ReadDir(admin); len(entries) != 0 {
		t.Fatalf("the admin folder of a worktree whose files are gone got %v", entries)
	}
}

// The record's copy in the admin folder is not written once git has
// deleted the worktree's files (it deletes the admin folder next).
func TestNoAdminCopyIsWrittenForAWorktreeWhoseFilesAreGone(t *testing.T) {
	h := Home{Dir: t.TempDir()}
	admin := filepath.Join(t.TempDir(), "worktrees", "feature")
	if err := os.MkdirAll(admin, 0o700); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(t.TempDir(), "feature")
	if err := h.SaveRecord(&Record{ID: "feature0123456789", Path: gone, AdminDir: admin, State: StateNew}); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(admin); len(entries) != 0 {
		t.Fatalf("the admin folder of a worktree whose files are gone got %v", entries)
	}
	if !h.HasRecord("feature0123456789") {
		t.Fatal("the machine record was not saved")
	}
}
