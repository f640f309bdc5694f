package world

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"

	"github.com/git-binky/git-binky/homedir"
	"github.com/git-binky/git-binky/smallfile"
)

// Home is the machine-wide state folder ($BINKY_HOME): port leases, world
// records, settings, the daemon socket and managed servers.
type Home struct {
	Dir string
}

// DefaultHome returns $BINKY_HOME, else $XDG_STATE_HOME/binky, else
// binky in the platform's state folder: ~/.local/state/binky on Linux
// (homedir.Default).
func DefaultHome() (Home, error) {
	d, err := homedir.Default()
	return Home{Dir: d}, err
}

// Paths inside Home.
func (h Home) PortsDir() string     { return homedir.Ports(h.Dir) }
func (h Home) WorldsDir() string    { return homedir.Worlds(h.Dir) }
func (h Home) SettingsPath() string { return homedir.Settings(h.Dir) }
func (h Home) SocketPath() string   { return filepath.Join(h.Dir, "daemon.sock") }
func (h Home) ServersDir() string   { return filepath.Join(h.Dir, "servers") }
func (h Home) GoldenDir() string    { return filepath.Join(h.Dir, "golden") }
func (h Home) TrustDir() string     { return filepath.Join(h.Dir, "trust") }
func (h Home) LogPath() string      { return filepath.Join(h.Dir, "daemon.log") }
func (h Home) InfoPath() string     { return filepath.Join(h.Dir, "daemon.json") }

// Ensure creates Home and its folders, private to the user.
func (h Home) Ensure() error {
	for _, d := range []string{h.Dir, h.PortsDir(), h.WorldsDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create state folder: %w (set BINKY_HOME to a writable folder)", err)
		}
	}
	return nil
}

// Lock takes an exclusive file lock at path, waiting until ctx is done. It
// is how read-modify-write cycles that span processes are serialised.
//
// The lock is on the file at path when Lock returns. A holder may delete
// the file (DeleteRecord forgets a world's lock with its record) while
// others wait on it; the next of them then holds a file no newcomer will
// lock, as a newcomer makes and locks a new one. (flock's polling opens the
// path again for each try, which narrows that to a try whose open came
// before the deletion and its flock after.) So a lock whose file is no
// longer the one at path is let go and taken again.
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	for {
		l := flock.New(path)
		ok, err := l.TryLockContext(ctx, 5*time.Millisecond)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if !ok {
			return nil, fmt.Errorf("lock %s: %w", path, context.Cause(ctx))
		}
		atPath, err := lockedAtPath(l, path)
		if err != nil {
			_ = l.Unlock()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if atPath {
			return func() { _ = l.Unlock() }, nil
		}
		_ = l.Unlock()
	}
}

// lockedAtPath reports whether the file l holds is still the one at path:
// its holder may have deleted it between l's open and its flock, and a
// newcomer made and locked a new one there.
func lockedAtPath(l *flock.Flock, path string) (bool, error) {
	held, err := l.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Stat(path)
	return err == nil && os.SameFile(held, now), nil
}

// WriteFileAtomic writes data to path so that a reader (or a crash) sees
// either the old content or the new, never a part: temp file, fsync, rename.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return replaceFile(path, data, perm, true)
}

// replaceFile is WriteFileAtomic with the fsync optional: a cache that
// checks itself on read need not wait for the disk.
func replaceFile(path string, data []byte, perm os.FileMode, sync bool) error {
	return smallfile.Replace(path, data, perm, sync)
}

// The home's id and secret, each in a file of the home made once.
const (
	homeIDFile = homedir.IDFile
	secretFile = homedir.SecretFile
)

func isNotExist(err error) bool { return errors.Is(err, os.ErrNotExist) }

// ID is the home's stable identity: 16 hex digits, random, made once and
// kept in $BINKY_HOME/home-id. Ownership marks carry it, so that two homes
// sharing one server (two users, a laptop and CI, two BINKY_HOMEs) never
// drop each other's slices. A copy of a home takes a new one the first
// time it runs (homecopy.go).
func (h Home) ID() (string, error) {
	b, err := h.once(homeIDFile, func() ([]byte, error) {
		raw := make([]byte, 8)
		if _, err := rand.Read(raw); err != nil {
			return nil, err
		}
		return []byte(hex.EncodeToString(raw)), nil
	}, func(b []byte) bool { return len(b) == 16 })
	if err != nil {
		return "", err
	}
	return h.checkIdentity(string(b))
}

// Secret is the machine's secret (32 random bytes in $BINKY_HOME/secret,
// 0600, made once) from which slice passwords are derived. It is linked
// into place complete, so a concurrent reader never sees half of it.
func (h Home) Secret() ([]byte, error) {
	return h.once(secretFile, func() ([]byte, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return b, err
	}, func(b []byte) bool { return len(b) == 32 })
}

// SecretDamaged says what is wrong with the home's secret, "" when it is
// sound or not made yet: doctor's look, which, unlike Secret, makes none.
func (h Home) SecretDamaged() string {
	b, err := os.ReadFile(filepath.Join(h.Dir, secretFile))
	if errors.Is(err, os.ErrNotExist) || err == nil && len(b) == 32 {
		return ""
	}
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s is damaged (%d bytes, not what binky wrote): every world's slice passwords come from it", filepath.Join(h.Dir, secretFile), len(b))
}

// once returns the content of the file name in the home, making it with
// create the first time. The file is linked into place complete, so a
// concurrent reader never sees half of it, and the first of two racing
// makers wins.
func (h Home) once(name string, create func() ([]byte, error), valid func([]byte) bool) ([]byte, error) {
	p := filepath.Join(h.Dir, name)
	if b, err := os.ReadFile(p); err == nil && valid(b) {
		return b, nil
	}
	if err := h.Ensure(); err != nil {
		return nil, err
	}
	b, err := create()
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(h.Dir, "."+name+"*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), p); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	got, err := os.ReadFile(p) // ours, or the one another process linked first
	if err != nil {
		return nil, err
	}
	if !valid(got) {
		// There, but not what binky wrote (truncated, edited): a stand-in
		// would give every world other passwords, or make the home look
		// like another's to its own slices' marks.
		return nil, fmt.Errorf("%s is damaged (%d bytes, not what binky wrote): restore it from a backup of %s; binky does not make it again, since a new one would not match what every world of this home was made with (their passwords, their slices' marks)", p, len(got), h.Dir)
	}
	return got, nil
}
