package daemon

import (
	"context"
	"os"
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
)

// homeCheckEvery is how often a daemon looks for its home.
const homeCheckEvery = 2 * time.Second

// homeWatch is a daemon's hold on its home: the folder, open, and the lock
// file it took, as they were when it started.
type homeWatch struct {
	dir      *os.File
	dirInfo  os.FileInfo
	lockPath string
	lockInfo os.FileInfo

	mu      sync.Mutex
	servers []managed.Proc // the shared servers seen running while the home was here
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
// One with no links left was deleted (rm -rf, or deleted and made again at
// the same path). Anything else — moved, or its lock file deleted or
// replaced — is elsewhere.
func (h *homeWatch) fate() homeFate {
	if deleted(h.dir) {
		return homeDeleted
	}
	if now, err := os.Stat(h.dir.Name()); err == nil && os.SameFile(now, h.dirInfo) {
		if li, err := os.Stat(h.lockPath); err == nil && os.SameFile(li, h.lockInfo) {
			return homeHere
		}
	}
	return homeElsewhere
}

// watchHome ends the daemon once its home is no longer where it started:
// a daemon nobody can reach (its socket went with the folder), writing
// records nobody reads, would otherwise run for good. While the home is
// here it notes the shared servers running, so that a deleted home's can
// still be stopped after their pid files went with it. A move must be
// seen twice in a row: a folder renamed and back is not gone.
func (d *Daemon) watchHome(ctx context.Context, h *homeWatch, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	elsewhere := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		switch h.fate() {
		case homeHere:
			elsewhere = 0
			running := d.servers.Running()
			h.mu.Lock()
			h.servers = running
			h.mu.Unlock()
			continue
		case homeElsewhere:
			if elsewhere++; elsewhere < 2 {
				continue
			}
			d.log.Warn("the daemon's home is no longer at its path (moved, or its daemon.lock replaced): stopping; services are left for the daemon of the home where it is now", "home", d.home.Dir)
			d.gone.Store(int32(homeElsewhere))
		case homeDeleted:
			d.log.Warn("the daemon's home was deleted: stopping its worlds' services and its shared servers, then the daemon", "home", d.home.Dir)
			d.gone.Store(int32(homeDeleted))
		}
		d.stop()
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
