package world

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/git-binky/git-binky/homedir"
	"github.com/git-binky/git-binky/smallfile"
)

// RecordSchema is the version of the world record layout.
const RecordSchema = 1

// Record is everything binky knows about one world. The machine copy under
// $BINKY_HOME/worlds/ is the source of truth, because git deletes the
// worktree's admin folder (and the copy in it) on `git worktree remove`,
// and teardown still needs the pids, ports and slices.
type Record struct {
	Schema    int    `json:"schema"`
	ID        string `json:"id"`
	Project   string `json:"project"`
	Worktree  string `json:"worktree"`
	Path      string `json:"path"`
	Branch    string `json:"branch,omitempty"`
	CommonDir string `json:"common_dir"`
	AdminDir  string `json:"admin_dir"`
	Main      bool   `json:"main,omitempty"`
	// Ports maps a port key ("api", "api.metrics") to its leased port.
	Ports map[string]int `json:"ports"`
	// Hosts maps each service with a url to the proxy host that reaches it.
	Hosts map[string]string `json:"hosts,omitempty"`
	// Groups maps each service with a url that a plain up does not start
	// to a group that does ("" when none does), for the proxy's hint on
	// how to start it.
	Groups map[string]string `json:"groups,omitempty"`
	// Slices are the adapter slices provisioned for this world.
	Slices []SliceRecord `json:"slices,omitempty"`
	// Services is the supervised processes' last known state.
	Services map[string]*ServiceState `json:"services,omitempty"`
	// Adding names the services an up is starting beside a running
	// world's (up --group of another group): a daemon that dies during
	// that up leaves them to the next daemon, which stops them as a cut-off
	// start's and adopts the rest.
	Adding []string `json:"adding,omitempty"`
	// Orphaned is set on a record made again while the worktree's admin
	// copy says this home ran the world: its record was lost or deleted
	// ("delete it to forget the world"), and processes of its services
	// may run on that no daemon supervises. The next up stops them first.
	Orphaned bool `json:"orphaned,omitempty"`
	// State is the world's lifecycle state (see State: new, running, ...).
	State State `json:"state"`
	// SuspendedFrom and SuspendedReason are the state and reason a world
	// suspended for memory had, given back when it resumes: an untrusted
	// world stays untrusted (its services still run an approved config).
	SuspendedFrom   State  `json:"suspended_from,omitempty"`
	SuspendedReason string `json:"suspended_reason,omitempty"`
	// Ownership, labels, approval and the reason for State: see trust.go.
	Standing
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// SliceRecord is one adapter slice, as teardown needs it after the worktree
// (and its binky.toml) is gone.
type SliceRecord struct {
	Service string `json:"service"`
	Adapter string `json:"adapter"`
	Name    string `json:"name"`
	// Config holds where the server is ("admin": managed:<kind>, an
	// admin_url without a password, or, for one that holds a password, the
	// admin_url as written, e.g. ${env.PG_ADMIN}, read again when needed)
	// and the adapter's options.
	Config map[string]any `json:"config,omitempty"`
	// Address is what the adapter resolved (url, prefix, ...), with the
	// slice's derived password replaced by DerivedPassword wherever it
	// appears: derived passwords are never stored, Home.SliceAddress puts
	// them back from the home's secret.
	Address map[string]string `json:"address,omitempty"`
	// Ready is set once the slice is complete: provisioned, migrated and
	// seeded, or cloned. A slice found not Ready (a crash, a failed
	// migrate) is dropped and made again, never reused.
	Ready bool `json:"ready,omitempty"`
	// Made says how it became complete: MadeCloned (from Template) or
	// MadeProvisioned; TookMS is how long that took, Completed when.
	Made     string `json:"made,omitempty"`
	Template string `json:"template,omitempty"`
	// Ran are the steps that ran on a provisioned slice: "migrate",
	// "seed", neither when the config gives none; on a cloned one,
	// "migrate" when the clone was migrated. RanKnown says Ran is
	// whole (an older binky recorded no steps at all).
	Ran       []string  `json:"ran,omitempty"`
	RanKnown  bool      `json:"ran_known,omitempty"`
	TookMS    int64     `json:"took_ms,omitempty"`
	Completed time.Time `json:"completed,omitzero"`
	// Noted is what up last said this slice's data may lack (the template
	// the branch makes now, or "migrate"): said once, not at every up of
	// a user who ran the migrations by hand.
	Noted string `json:"noted,omitempty"`
}

// How a slice was made.
const (
	MadeCloned      = "cloned"
	MadeProvisioned = "provisioned"
)

// DerivedPassword stands for a slice's derived password in a stored
// address.
const DerivedPassword = "{binky:derived-password}"

// DerivePassword is a slice's password: an HMAC of the adapter kind and
// the slice name under the machine secret, so the same slice always gets
// the same one and nothing else can compute it (adapters.Password).
func DerivePassword(secret []byte, kind, slice string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(kind + "\x00" + slice))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// SetAddress stores addr in the record with every occurrence of password
// (the slice's derived one) replaced by DerivedPassword.
func (sl *SliceRecord) SetAddress(addr map[string]string, password string) {
	sl.Address = make(map[string]string, len(addr))
	for k, v := range addr {
		if password != "" {
			v = strings.ReplaceAll(v, password, DerivedPassword)
		}
		sl.Address[k] = v
	}
}

// SliceAddress is the slice's address as the world uses it: the stored one
// with its derived password put back from the home's secret.
func (h Home) SliceAddress(sl SliceRecord) map[string]string {
	var pw string
	out := make(map[string]string, len(sl.Address))
	for k, v := range sl.Address {
		if strings.Contains(v, DerivedPassword) {
			if pw == "" {
				secret, err := h.Secret()
				if err != nil {
					continue // no secret, no password: the field is left out
				}
				pw = DerivePassword(secret, sl.Adapter, sl.Name)
			}
			v = strings.ReplaceAll(v, DerivedPassword, pw)
		}
		out[k] = v
	}
	return out
}

// ServiceState is a supervised process as the record remembers it. The pid
// comes with the process's start time (clock ticks since boot, from
// /proc/<pid>/stat) so that a reused pid is never mistaken for ours.
type ServiceState struct {
	PID       int       `json:"pid,omitempty"`
	PGID      int       `json:"pgid,omitempty"`
	StartTick uint64    `json:"start_tick,omitempty"`
	State     string    `json:"state"`
	Restarts  int       `json:"restarts,omitempty"`
	ExitCode  *int      `json:"exit_code,omitempty"`
	Started   time.Time `json:"started,omitempty"`
	Message   string    `json:"message,omitempty"`
}

// WorldID is the stable identity of the world of a worktree: a digest of its
// repository's common dir and its admin dir, which `git worktree move` keeps.
func WorldID(commonDir, adminDir string) string { return homedir.WorldID(commonDir, adminDir) }

func (h Home) recordPath(id string) string { return homedir.Record(h.Dir, id) }
func (h Home) lockPath(id string) string   { return filepath.Join(h.WorldsDir(), id+".lock") }

// LockWorld serialises read-modify-write of one world's record across
// processes.
func (h Home) LockWorld(ctx context.Context, id string) (func(), error) {
	if err := h.Ensure(); err != nil {
		return nil, err
	}
	return Lock(ctx, h.lockPath(id))
}

// LoadRecord reads a world record; it returns an error wrapping
// os.ErrNotExist when there is none.
func (h Home) LoadRecord(id string) (*Record, error) {
	b, err := os.ReadFile(h.recordPath(id))
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("world record %s is corrupt: %w (delete it to forget the world)", h.recordPath(id), err)
	}
	if r.Ports == nil {
		r.Ports = map[string]int{}
	}
	return &r, nil
}

// HasRecord reports whether a world record exists for id.
func (h Home) HasRecord(id string) bool {
	_, err := os.Stat(h.recordPath(id))
	return err == nil
}

// SaveRecord writes the machine record, then the copy in the worktree's admin
// folder (<admin>/binky/world.json) when that folder still exists. Both
// writes are atomic. Call it with the world locked.
func (h Home) SaveRecord(r *Record) error {
	if err := h.Ensure(); err != nil {
		return err
	}
	r.Schema = RecordSchema
	r.Updated = time.Now().UTC()
	first := r.Created.IsZero()
	if first {
		r.Created = r.Updated
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := WriteFileAtomic(h.recordPath(r.ID), b, 0o600); err != nil {
		return fmt.Errorf("save world record: %w", err)
	}
	// Not into a folder git gave a new worktree of the same name since:
	// that copy would make the old world the new worktree's (a daemon
	// adopting the old one's processes saves as it checks them).
	// (A world's first save always writes it: with the folder's clock
	// ahead of this one, as on a network file system, the world would
	// otherwise never have a copy, and be taken for replaced.)
	// Nor into one whose worktree's files git has deleted (MakeStateDir).
	if _, err := os.Stat(r.AdminDir); err == nil && h.ownsAdminCopy(r) && (first || !adminReplaced(r)) {
		if dir, err := MakeStateDir(r.AdminDir, r.Path); err == nil {
			// Synced on every save: it is the claim other homes read, and
			// a rename not synced can leave it empty after a crash (XFS,
			// ext4 without auto_da_alloc), which no home would then own
			// (docs/performance.md round 21).
			_ = WriteFileAtomic(filepath.Join(dir, "world.json"), b, 0o600)
		}
	}
	return nil
}

// worktreeThere reports whether a worktree's folder still exists (or no
// folder is recorded).
func worktreeThere(path string) bool {
	if path == "" {
		return true
	}
	_, err := os.Stat(path)
	return err == nil
}

// DeleteRecord forgets a world: the machine record, its lock file, env's
// snapshot and the admin-folder copy.
func (h Home) DeleteRecord(r *Record) error {
	// The files that hold credentials first: one left by a crash after
	// the record went would be named by nothing.
	os.Remove(homedir.CallerEnv(h.Dir, r.ID))
	os.Remove(homedir.EnvSnapshot(h.Dir, r.ID)) // env's snapshot (envsnap)
	if err := os.Remove(h.recordPath(r.ID)); err != nil && !isNotExist(err) {
		return fmt.Errorf("delete world record: %w", err)
	}
	if h.ownsAdminCopy(r) {
		os.Remove(filepath.Join(StateDir(r.AdminDir), "world.json"))
	}
	os.Remove(h.lockPath(r.ID)) // last: a deleted lock file is a free one to the next Lock
	return nil
}

// SaveCallerEnv keeps env, the environment an up of world id started its
// services with (its caller's), for a daemon that adopts them after this
// one: their restarts must run as their first start did, not with the
// environment of whichever command started that daemon. 0600, beside the
// record; it can hold secrets the caller exported.
func (h Home) SaveCallerEnv(id string, env []string) error {
	b, err := json.Marshal(env)
	if err != nil {
		return err
	}
	// Not synced: lost with the machine, the adopting daemon would find
	// no service left to restart anyway.
	return replaceFile(homedir.CallerEnv(h.Dir, id), b, 0o600, false)
}

// CallerEnv is the environment SaveCallerEnv kept for world id.
func (h Home) CallerEnv(id string) ([]string, bool) {
	b, err := smallfile.Read(homedir.CallerEnv(h.Dir, id), 4<<20)
	if err != nil {
		return nil, false
	}
	var env []string
	if json.Unmarshal(b, &env) != nil {
		return nil, false
	}
	return env, true
}

// SweepLocks deletes the lock files of worlds that have no record (a
// lock taken after DeleteRecord makes its file again: a waiting up, a
// teardown that lost the race) and returns how many went. Each is deleted
// under its lock, and only if there is still no record then: Lock takes a
// deleted file's lock again on the one at its path, so a process waiting
// on it is not left holding a lock no newcomer sees. A lock held now is
// left for a later sweep.
func (h Home) SweepLocks() int {
	entries, err := os.ReadDir(h.WorldsDir())
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok || strings.HasPrefix(id, "labels-") || h.HasRecord(id) {
			continue
		}
		path := h.lockPath(id)
		l := flock.New(path)
		if locked, err := l.TryLock(); err != nil || !locked {
			continue
		}
		// A new file at the path is a newcomer's, not ours to delete.
		if atPath, err := lockedAtPath(l, path); err != nil || !atPath || h.HasRecord(id) {
			_ = l.Unlock()
			continue
		}
		if runtime.GOOS == "windows" {
			// An open file cannot be deleted there: let go, then delete,
			// which fails if anyone has it open again.
			_ = l.Unlock()
			if os.Remove(path) == nil {
				n++
			}
			continue
		}
		if os.Remove(path) == nil {
			n++
		}
		_ = l.Unlock()
	}
	return n
}

// UnreadableRecords is Records' error when some records could not be read
// (corrupt): the others are still returned, since one bad file must not
// stop every world's status, adoption or first up.
type UnreadableRecords struct{ Errs []error }

func (u *UnreadableRecords) Error() string { return errors.Join(u.Errs...).Error() }

// Unwrap lets errors.Is see each record's error.
func (u *UnreadableRecords) Unwrap() []error { return u.Errs }

// OnlyUnreadable reports whether err is nil or an UnreadableRecords:
// Records' list is then every record that can be read.
func OnlyUnreadable(err error) bool {
	var u *UnreadableRecords
	return err == nil || errors.As(err, &u)
}

// Records lists every world record, sorted by project then worktree. A
// record that cannot be read is reported, not skipped silently: the error
// is then an *UnreadableRecords, beside the records that could be read.
func (h Home) Records() ([]*Record, error) {
	entries, err := os.ReadDir(h.WorldsDir())
	if isNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list worlds: %w", err)
	}
	var out []*Record
	var bad []error
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") {
			continue
		}
		r, err := h.LoadRecord(strings.TrimSuffix(name, ".json"))
		if isNotExist(err) {
			continue // removed while we listed
		}
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Project != out[j].Project {
			return out[i].Project < out[j].Project
		}
		return out[i].Worktree < out[j].Worktree
	})
	if len(bad) > 0 {
		return out, &UnreadableRecords{Errs: bad}
	}
	return out, nil
}

// StateDir is the per-worktree binky folder inside a worktree's admin dir:
// <common>/worktrees/<name>/binky, or <common>/binky for the main worktree.
func StateDir(adminDir string) string { return filepath.Join(adminDir, "binky") }

// ErrWorktreeGone is MakeStateDir's error for a worktree whose files git
// has deleted.
var ErrWorktreeGone = errors.New("the worktree's folder is gone")

// MakeStateDir makes the worktree's state folder (<admin>/binky) and
// returns it, for a worktree whose folder (worktree) still exists, and
// never the admin folder itself. git deletes a removed worktree's files,
// then its admin folder: anything binky made there in between left git
// unable to delete it ("Directory not empty"), and a folder made after it
// was a stray git kept.
func MakeStateDir(adminDir, worktree string) (string, error) {
	if !worktreeThere(worktree) {
		return "", fmt.Errorf("%s: %w", worktree, ErrWorktreeGone)
	}
	dir := StateDir(adminDir)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	return dir, nil
}

// LogDir is where a world's service logs are written.
func LogDir(adminDir string) string { return filepath.Join(StateDir(adminDir), "logs") }

// UpdateRecord runs fn on the world's record under the world lock and saves
// it. Unlike World.Update it needs no worktree or config, so the daemon can
// keep a record current after git removed the worktree.
func (h Home) UpdateRecord(ctx context.Context, id string, fn func(*Record) error) error {
	unlock, err := h.LockWorld(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	r, err := h.LoadRecord(id)
	if err != nil {
		return err
	}
	if err := fn(r); err != nil {
		return err
	}
	return h.SaveRecord(r)
}
