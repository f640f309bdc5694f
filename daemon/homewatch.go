package daemon

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/git-binky/git-binky/adapters/managed"
)

// homeFate is what became of the daemon's home while it ran.
type homeFate int32

const (
	homeHere homeFate = iota
	// homeElsewhere: moved, or its lock file replaced. Its records are
	// intact wherever it is: the next daemon there adopts the services.
	homeElsewhere
	// homeDeleted: the folder itself is gone, records and credentials
	// with it. Nothing of binky's can reach what this daemon ran again.
	homeDeleted
	// homeLockGone: the folder is here, its lock file is not. Undecided:
	// an rm -rf of the home takes the lock file first and the folder last,
	// seconds later when it holds a server's data; a lock file deleted on
	// its own is a lock file replaced (elsewhere) once it has been gone
	// for lockGoneGrace.
	homeLockGone
)

// homeCheckEvery is how often a daemon looks for its home.
const homeCheckEvery = 2 * time.Second

// lockGoneGrace is how long a home may be seen without its lock file
// before the daemon takes it for replaced, rather than being deleted.
const lockGoneGrace = 30 * time.Second

// homeWatch is a daemon's hold on its home: the folder, open, and the lock
// file it took, as they were when it started.
type homeWatch struct {
	dir      *os.File
	dirInfo  os.FileInfo
	lockPath string
	lockInfo os.FileInfo

	mu      sync.Mutex
	servers []managed.Proc // the shared servers seen running while the home was here

	entries []string // what the home held at the last look that found it here
}

// looked notes what the home holds, at a look that found it here.
func (h *homeWatch) looked() {
	if des, err := os.ReadDir(h.dir.Name()); err == nil {
		h.entries = h.entries[:0]
		for _, de := range des {
			h.entries = append(h.entries, de.Name())
		}
	}
}

// emptying reports whether something the home held at the last look that
// found it here is gone: the home is being deleted, not only its lock.
func (h *homeWatch) emptying() bool {
	lock := filepath.Base(h.lockPath)
	for _, name := range h.entries {
		if name == lock {
			continue
		}
		if _, err := os.Lstat(filepath.Join(h.dir.Name(), name)); errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

func openHomeWatch(dir, lockPath string) (*homeWatch, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	di, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	li, err := os.Stat(lockPath)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &homeWatch{dir: f, dirInfo: di, lockPath: lockPath, lockInfo: li}, nil
}

// fate says where the home is now. A folder that is still the one the
// daemon opened, at its path, with the daemon's lock file in it, is here.
// One no longer at its path (gone, or another folder there) is deleted if
// it has no links left, else elsewhere (moved); so is a lock file replaced
// in a home still here (one deleted is homeLockGone). What cannot be read
// (an NFS timeout, EACCES) says nothing: here, until it can be read.
func (h *homeWatch) fate() homeFate {
	now, err := os.Stat(h.dir.Name())
	switch {
	case err == nil && os.SameFile(now, h.dirInfo):
		li, err := os.Stat(h.lockPath)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return homeLockGone
		case err == nil && !os.SameFile(li, h.lockInfo):
			return homeElsewhere
		}
		return homeHere
	case err == nil, errors.Is(err, fs.ErrNotExist):
		if deleted(h.dir) {
			return homeDeleted
		}
		return homeElsewhere
	}
	return homeHere
}

// note adds a running shared server to what a deleted home's daemon stops.
func (h *homeWatch) note(p managed.Proc) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, q := range h.servers {
		if q.PID == p.PID {
			return
		}
	}
	h.servers = append(h.servers, p)
}

// watchHome ends the daemon once its home is no longer where it started:
// a daemon nobody can reach (its socket went with the folder), writing
// records nobody reads, would otherwise run for good. While the home is
// here it notes the shared servers running, so that a deleted home's can
// still be stopped after their pid files went with it. A fate must be seen
// twice in a row: a folder renamed and back is not gone, and a filesystem
// that reports a live folder without links (some FUSE ones) has it back at
// its path on the next look.
func (d *Daemon) watchHome(ctx context.Context, h *homeWatch, every, lockGrace time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := homeHere
	var lockGone time.Time // since when the lock file has been seen gone
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fate := h.fate()
		if fate != homeLockGone {
			lockGone = time.Time{}
		}
		switch {
		case fate == homeHere:
			last = homeHere
			h.looked()
			running := d.servers.Running()
			h.mu.Lock()
			h.servers = running
			h.mu.Unlock()
			continue
		case fate == homeLockGone && (lockGone.IsZero() || h.emptying()):
			// The rest going too is an rm -rf under way, however long
			// it takes: the grace counts from now.
			h.looked()
			lockGone = time.Now()
			continue
		case fate == homeLockGone && time.Since(lockGone) < lockGrace:
			continue
		case fate == homeLockGone:
			fate = homeElsewhere // seen for the whole grace: decided
		case fate != last:
			last = fate
			continue
		}
		if fate == homeDeleted {
			d.log.Warn("the daemon's home was deleted: stopping its worlds' services and its shared servers, then the daemon", "home", d.home.Dir)
		} else {
			d.log.Warn("the daemon's home is no longer at its path (moved, or its daemon.lock replaced): stopping; services are left for the daemon of the home where it is now", "home", d.home.Dir)
		}
		d.gone.Store(int32(fate))
		d.stop()
		if fate == homeDeleted {
			// A stop drains the ups under way; in a deleted home they
			// would only make orphans.
			d.mu.Lock()
			runs := slices.Collect(maps.Values(d.worlds))
			d.mu.Unlock()
			for _, r := range runs {
				r.endStartBecause(errHomeDeleted)
			}
		}
		return
	}
}

// endOrphans stops what a deleted home's daemon ran: every world's
// services (their records are gone, so no daemon would ever adopt them)
// and the shared servers seen running while the home was here.
func (d *Daemon) endOrphans(h *homeWatch) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	d.mu.Lock()
	runs := make([]*worldRun, 0, len(d.worlds))
	for _, r := range d.worlds {
		runs = append(runs, r)
	}
	d.mu.Unlock()
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := lockRun(ctx, r); err != nil {
				// Held past the deadline (an up in a long start period):
				// its services are stopped all the same.
				if g := r.live.Load(); g != nil {
					d.log.Error("stop a deleted home's world without its lock", "world", r.id, "err", err)
					_ = g.Stop(context.Background())
				}
				return
			}
			defer r.mu.Unlock()
			if r.group != nil {
				if err := r.group.Stop(ctx); err != nil {
					d.log.Error("stop a deleted home's world", "world", r.id, "err", err)
				}
				r.group.Close()
				r.setGroup(nil, nil)
			}
		}()
	}
	wg.Wait() // services first: they are the servers' clients
	h.mu.Lock()
	servers := h.servers
	h.mu.Unlock()
	for _, p := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := managed.StopOrphaned(ctx, p, 3*time.Second); err != nil {
				d.log.Error("stop a deleted home's shared server", "kind", p.Kind, "pid", p.PID, "err", err)
			}
		}()
	}
	wg.Wait()
}
