package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/git-binky/git-binky/supervisor"
	"github.com/git-binky/git-binky/world"
)

// status, suspend/resume and shutdown read a world's group without waiting
// for the up or down that holds the world's lock for seconds; an up that
// sets the group meanwhile must not race them (CI's -race caught status
// reading it as an up wrote it).
func TestAWorldsGroupIsReadWhileAnUpReplacesIt(t *testing.T) {
	home := world.Home{Dir: filepath.Join(t.TempDir(), "home")}
	d := New(home, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	r := d.run("w1")
	rec := &world.Record{ID: "w1", Path: t.TempDir()}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // an up, then a down, again and again, under the world's lock
		defer wg.Done()
		for i := 0; i < 200; i++ {
			g, err := supervisor.NewGroup(nil, nil)
			if err != nil {
				t.Error(err)
				return
			}
			r.mu.Lock()
			r.setGroup(g, nil)
			r.mu.Unlock()
			r.mu.Lock()
			r.group.Close()
			r.setGroup(nil, nil)
			r.mu.Unlock()
		}
	}()
	go func() { // status and a resume, never taking the world's lock
		defer wg.Done()
		for i := 0; i < 200; i++ {
			_ = d.describeRecord(rec, r)
			_ = d.signalWorld("w1", 0, false)
		}
	}()
	wg.Wait()
}

// An up that waits for a world's lock while a remove holds it must not go
// on with the run the remove retired: the services it started there would
// belong to no run, and a down could not stop them. It takes the world's
// new run. (An attack saw a service survive down after remove and up
// raced.)
func TestARequestThatWaitedForARemovedWorldTakesItsNewRun(t *testing.T) {
	home := world.Home{Dir: filepath.Join(t.TempDir(), "home")}
	d := New(home, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	old, err := d.lockRunOf(context.Background(), "w1") // the remove
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *worldRun)
	go func() { // the up, waiting
		r, err := d.lockRunOf(context.Background(), "w1")
		if err != nil {
			t.Error(err)
		}
		got <- r
		r.mu.Unlock()
	}()
	time.Sleep(50 * time.Millisecond)
	d.retire(old)
	old.mu.Unlock()
	r := <-got
	if r == old || r.gone {
		t.Fatal("the waiting request took the removed world's retired run")
	}
	if d.run("w1") != r {
		t.Error("the run the request took is not the world's current one")
	}
}

// A world torn down (its worktree removed) while an up of it waits for its
// turn in the admission queue, holding the world's lock: the teardown ends
// that wait rather than wait behind it for as long as the queue lasts.
// (An attack saw a teardown, and the repository's other worktrees behind
// it, wait on such an up.)
func TestATeardownEndsTheWaitOfAQueuedUp(t *testing.T) {
	home := world.Home{Dir: filepath.Join(t.TempDir(), "home")}
	d := New(home, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	r, err := d.lockRunOf(context.Background(), "w1") // the queued up
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		// The up says how to end it only a moment after it took the lock.
		time.Sleep(100 * time.Millisecond)
		qctx, endUp := context.WithCancelCause(context.Background())
		r.ending.Store(&endUp)
		<-qctx.Done() // admission.Acquire, until its turn or its end
		r.ending.Store(nil)
		r.mu.Unlock()
		close(ended)
	}()
	done := make(chan struct{})
	go func() {
		d.teardown(context.Background(), &world.Record{ID: "w1", Worktree: "w1"}, "its worktree was removed")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the teardown waited behind the queued up")
	}
	<-ended
}

// An up whose record could not be saved names what to fix: the disk only
// when it is full, the worlds folder otherwise (every failure said "free
// the disk", a read-only folder too).
func TestAnUnsavedRecordNamesWhatToFix(t *testing.T) {
	full := unsavedRecord("up", "w", "/home/worlds", &os.PathError{Op: "write", Path: "/home/worlds/x.json", Err: syscall.ENOSPC})
	if !strings.Contains(full.Error(), "free some disk space") || !errors.Is(full, syscall.ENOSPC) {
		t.Errorf("a full disk: %v", full)
	}
	denied := unsavedRecord("up", "w", "/home/worlds", &os.PathError{Op: "open", Path: "/home/worlds/x.json", Err: syscall.EACCES})
	if strings.Contains(denied.Error(), "disk") || !strings.Contains(denied.Error(), "fix /home/worlds") {
		t.Errorf("a folder not writable: %v", denied)
	}
}

// An up waiting for its repository's lock (behind another up's worktree
// add) gives up when its client goes away; it waited on for as long as
// the add took.
func TestAWaitForTheRepositorysLockEndsWithItsRequest(t *testing.T) {
	home := world.Home{Dir: filepath.Join(t.TempDir(), "home")}
	d := New(home, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	unlock := d.repoLock("/repo/.git")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := d.repoLockCtx(ctx, "/repo/.git"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a wait whose request ended: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the wait took %s after its request ended", took)
	}
	other, err := d.repoLockCtx(context.Background(), "/other/.git")
	if err != nil {
		t.Fatalf("another repository's lock: %v", err)
	}
	other()
	unlock()
	again, err := d.repoLockCtx(context.Background(), "/repo/.git")
	if err != nil {
		t.Fatalf("the lock once let go: %v", err)
	}
	again()
}

// up of a path (../feat) is refused as one, not made a branch "../feat"
// git refused, in a folder "..-feat".
func TestUpTellsAPathFromABranchName(t *testing.T) {
	for name, path := range map[string]bool{"../feat": true, "/tmp/feat": true, "./feat": true, "~/feat": true, "a/../b": true,
		"feat": false, "feature/login": false, "v1.2": false, "fix..typo": false} {
		if got := looksLikePath(name); got != path {
			t.Errorf("looksLikePath(%q) = %v, want %v", name, got, path)
		}
	}
}
