package world

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// The admin folder's copy mirrors every save of the record, and says
// whether it already names the world, its home and its birth: a copy that
// does is the claim other homes read, and is not waited for again.
func TestTheAdminCopyMirrorsEverySaveAndKnowsItsClaim(t *testing.T) {
	h := Home{Dir: t.TempDir()}
	admin := filepath.Join(t.TempDir(), "worktrees", "feature")
	if err := os.MkdirAll(admin, 0o700); err != nil {
		t.Fatal(err)
	}
	rec := &Record{ID: "feature0123456789", Path: t.TempDir(), AdminDir: admin, State: StateNew}
	id, err := h.ID()
	if err != nil {
		t.Fatal(err)
	}
	rec.Home, rec.HomeDir = id, h.Dir
	if sameClaim(rec) {
		t.Fatal("a claim before any copy was written")
	}
	if err := h.SaveRecord(rec); err != nil {
		t.Fatal(err)
	}
	if !sameClaim(rec) {
		t.Fatal("the first save's copy does not name its world")
	}
	rec.State = StateRunning
	if err := h.SaveRecord(rec); err != nil {
		t.Fatal(err)
	}
	if cp, err := adminCopy(admin); err != nil || cp.State != StateRunning {
		t.Fatalf("the copy after a second save: %+v, %v; want it running", cp, err)
	}
	for name, change := range map[string]func(r *Record){
		"another home":  func(r *Record) { r.Home += "0" },
		"another place": func(r *Record) { r.HomeDir = "/elsewhere" },
		"another birth": func(r *Record) { r.Created = r.Created.Add(time.Second) },
		"another world": func(r *Record) { r.ID = "other0123456789a" },
	} {
		other := *rec
		change(&other)
		if sameClaim(&other) {
			t.Errorf("a record of %s takes the copy for its claim", name)
		}
	}
}
