package world

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// A home's id says which objects on a shared server it made, and gc drops
// those of its id whose world it has no record of. A copy of a home (a
// backup restored, dotfiles synced, an image with a home in it) kept the
// id, and its gc dropped the live databases the original made after the
// copy. So a home records where it was made (home-at: its real path, and
// the machine's id where the system has one), and a home that finds
// itself elsewhere while the original is still there, or on another
// machine, takes a new id: the copy's worlds are then another home's to
// it, never dropped. A home moved on its machine (nothing left where it
// was) keeps its id.

const (
	homeAtFile     = "home-at"
	homeCopiedFile = "home-copied"
)

// verifiedIDs caches each home folder's checked id for the process.
var verifiedIDs sync.Map // dir → id

// location is where the home is now: its real path, then the machine.
func (h Home) location() string {
	dir, err := filepath.Abs(h.Dir)
	if err == nil {
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			dir = real
		}
	}
	return dir + "\n" + machineID() + "\n"
}

// machineID is the system's machine id (systemd's, or D-Bus's), "" where
// there is none: then only the path tells a copy.
func machineID() string {
	for _, p := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		if b, err := os.ReadFile(p); err == nil {
			if id := strings.TrimSpace(string(b)); id != "" && len(id) <= 64 {
				return id
			}
		}
	}
	return ""
}

// checkIdentity returns the home's id after making sure it is this home's:
// see the comment at the top of this file.
func (h Home) checkIdentity(id string) (string, error) {
	if v, ok := verifiedIDs.Load(h.Dir); ok && v.(string) == id {
		return id, nil
	}
	here := h.location()
	at, err := os.ReadFile(filepath.Join(h.Dir, homeAtFile))
	if err == nil && string(at) == here {
		// home-at is written last when a copy takes its new id: the id
		// is read again after it, or one read before a copy settled
		// meanwhile would be the original's.
		if b, err := os.ReadFile(filepath.Join(h.Dir, homeIDFile)); err == nil && len(b) == 16 {
			id = string(b)
		}
		verifiedIDs.Store(h.Dir, id)
		return id, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	unlock, lerr := Lock(ctx, filepath.Join(h.Dir, ".home-id.lock"))
	if lerr != nil {
		return "", lerr
	}
	defer unlock()
	// Again under the lock: another process may have settled it.
	if b, err := os.ReadFile(filepath.Join(h.Dir, homeIDFile)); err == nil && len(b) == 16 {
		id = string(b)
	}
	at, err = os.ReadFile(filepath.Join(h.Dir, homeAtFile))
	switch {
	case err == nil && string(at) == here:
	case os.IsNotExist(err):
		// Made by this binky just now, or by one from before home-at:
		// where it is now is where it is.
		if err := WriteFileAtomic(filepath.Join(h.Dir, homeAtFile), []byte(here), 0o600); err != nil {
			return "", err
		}
	case err != nil:
		return "", fmt.Errorf("read %s: %w", filepath.Join(h.Dir, homeAtFile), err)
	default:
		was, machine := splitAt(string(at))
		_, nowMachine := splitAt(here)
		if machine == nowMachine && !stillThere(was, id, h.Dir) {
			// Moved: nothing of it is left where it was.
			if err := WriteFileAtomic(filepath.Join(h.Dir, homeAtFile), []byte(here), 0o600); err != nil {
				return "", err
			}
			break
		}
		raw := make([]byte, 8)
		if _, err := rand.Read(raw); err != nil {
			return "", err
		}
		newID := hex.EncodeToString(raw)
		note := fmt.Sprintf("%s: this home was copied from %s (machine %q, home id %s), which may still run the worlds whose records came with the copy; it took the new id %s, so neither remove nor gc here drops what that home made (their marks name home %s)\n",
			time.Now().UTC().Format(time.RFC3339), was, machine, id, newID, id)
		if err := WriteFileAtomic(filepath.Join(h.Dir, homeCopiedFile), []byte(note), 0o600); err != nil {
			return "", err
		}
		if err := WriteFileAtomic(filepath.Join(h.Dir, homeIDFile), []byte(newID), 0o600); err != nil {
			return "", err
		}
		if err := WriteFileAtomic(filepath.Join(h.Dir, homeAtFile), []byte(here), 0o600); err != nil {
			return "", err
		}
		id = newID
	}
	verifiedIDs.Store(h.Dir, id)
	return id, nil
}

// splitAt reads home-at: the path, then the machine id on the last line
// (a path may hold a newline; a machine id never does).
func splitAt(at string) (path, machine string) {
	at = strings.TrimSuffix(at, "\n")
	i := strings.LastIndexByte(at, '\n')
	if i < 0 {
		return at, ""
	}
	return at[:i], at[i+1:]
}

// stillThere reports whether the home this one was made as is still at
// path, with the same id: then this one is a copy.
func stillThere(path, id, self string) bool {
	if path == "" {
		return false
	}
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		return false
	}
	if a, err := os.Stat(self); err == nil {
		if b, err := os.Stat(path); err == nil && os.SameFile(a, b) {
			return false // the same folder by another name
		}
	}
	other, err := readHomeID(path)
	return err == nil && other == id
}

// CopiedNote is what the home wrote when it found itself a copy, "" if
// it never did (doctor shows it).
func (h Home) CopiedNote() string {
	b, err := os.ReadFile(filepath.Join(h.Dir, homeCopiedFile))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
