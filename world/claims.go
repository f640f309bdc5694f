package world

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Two homes on one machine (two BINKY_HOMEs of one user, a test run beside
// a real one) lease ports in folders that cannot see each other, and a port
// one home has leased but whose service has not bound it yet passes the
// other's bind check. A claim makes a lease visible machine-wide: a symlink
// <claims>/<port> to the lease file of the home that holds the port. The
// lease stays the truth: a claim is valid while the file it points at
// exists, and stale (anyone's to take) once it does not, so a home deleted
// wholesale, or a crash at any point, leaves nothing that blocks a port.
//
// Claims are per user (the folder is the user's own, mode 0700): other
// users' servers are seen, as before, only by the bind check.

// claim makes the lease this allocator holds on port visible to other homes.
// It reports false when another home holds a valid claim on the port (the
// caller gives its lease back and moves on). Without a claims folder every
// claim succeeds.
func (a *Allocator) claim(port int) bool {
	if a.Claims == "" {
		return true
	}
	path := filepath.Join(a.Claims, strconv.Itoa(port))
	mine := a.claimTarget(port)
	for attempt := 0; attempt < 2; attempt++ {
		err := os.Symlink(mine, path)
		if err == nil {
			return true
		}
		if !errors.Is(err, os.ErrExist) {
			return true // no registry to write to: the bind check alone, as before
		}
		target, err := os.Readlink(path)
		if err != nil {
			// Not a symlink (someone else's file): never ours to replace.
			return false
		}
		if target == mine {
			// Ours, but stale a moment ago (our lease was made just now):
			// another home's replaceStaleClaim may be between its check
			// and its rename. Settled under the lock.
			return a.replaceStaleClaim(path, mine)
		}
		if claimValid(target) {
			return false
		}
		if a.replaceStaleClaim(path, mine) {
			return true
		}
	}
	return false
}

// claimValid: the lease a claim points at is still there.
func claimValid(target string) bool {
	_, err := os.Lstat(target)
	return err == nil || !os.IsNotExist(err)
}

// replaceStaleClaim points a stale claim at mine. The check and the swap
// happen under one lock, so that of two homes finding the same stale claim
// only the first takes it: the second then sees the first's valid claim.
func (a *Allocator) replaceStaleClaim(path, mine string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	unlock, err := Lock(ctx, filepath.Join(a.Claims, ".lock"))
	if err != nil {
		return false
	}
	defer unlock()
	target, err := os.Readlink(path)
	if err == nil && claimValid(target) {
		return target == mine
	}
	if err != nil && !os.IsNotExist(err) {
		return false
	}
	tmp := path + ".new"
	os.Remove(tmp)
	if err := os.Symlink(mine, tmp); err != nil {
		return false
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return false
	}
	return true
}

// unclaim removes this home's claim on port once its lease is given back:
// a stale claim blocks nobody, but every released port left one behind.
// Under the claims lock, so that a claim another home has just put in its
// place (replaceStaleClaim) is never the one removed.
func (a *Allocator) unclaim(port int) {
	if a.Claims == "" {
		return
	}
	path := filepath.Join(a.Claims, strconv.Itoa(port))
	if target, err := os.Readlink(path); err != nil || target != a.claimTarget(port) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	unlock, err := Lock(ctx, filepath.Join(a.Claims, ".lock"))
	if err != nil {
		return
	}
	defer unlock()
	if target, err := os.Readlink(path); err == nil && target == a.claimTarget(port) && !claimValid(target) {
		os.Remove(path)
	}
}

// ensureClaimed claims a port the world already holds when no claim names
// it (a lease made before claims existed, or a claim file removed). It
// reports false when another home holds a valid claim on the port.
func (a *Allocator) ensureClaimed(port int) bool {
	if a.Claims == "" {
		return true
	}
	if target, err := os.Readlink(filepath.Join(a.Claims, strconv.Itoa(port))); err == nil && target == a.claimTarget(port) {
		return true
	}
	return a.claim(port)
}

// claimTarget is the lease file a claim of ours points at, absolute and
// through the home's real path: the claim is read from other processes'
// working folders, and one home reached by two paths (a symlink, a
// relative BINKY_HOME) must know its own claim.
// The real path is resolved once per allocator: an Ensure looks at every
// port a world holds.
func (a *Allocator) claimTarget(port int) string {
	a.realOnce.Do(func() {
		dir := a.Home.PortsDir()
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
		a.realPorts = dir
	})
	return filepath.Join(a.realPorts, strconv.Itoa(port))
}
