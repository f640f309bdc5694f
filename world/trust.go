package world

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/smallfile"
)

// TrustHash identifies a binky.toml by its content: approving a config
// approves exactly these bytes, in the repositories it was approved in.
func TrustHash(src []byte) string {
	sum := sha256.Sum256(src)
	return hex.EncodeToString(sum[:])
}

// Trusted reports whether the user approved a config with this hash on this
// machine. A binky.toml runs commands, so only an approved one is started
// automatically (by the hook or the watcher).
func (h Home) Trusted(hash string) bool {
	_, err := os.Stat(filepath.Join(h.TrustDir(), hash))
	return err == nil
}

// Trust approves the config src, found at path, for automatic starts,
// with the env files it names as they are now beside it.
func (h Home) Trust(src []byte, path string) error {
	if err := os.MkdirAll(h.TrustDir(), 0o700); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	// The content is kept so that a later daemon restarts exactly what
	// was approved, whatever the worktree holds by then.
	key := repoKey(path, false)
	if !strings.Contains(key, "#") {
		// The repository's first approval since binky keeps ids: it gets
		// one, and the approvals made by its folder alone name it by the
		// id from now on (a repository cloned into the folder later, with
		// no id, must not match them).
		if key = repoKey(path, true); strings.Contains(key, "#") {
			h.nameByID(repoFolder(key), key)
		}
	}
	e := trustEntry{Path: path, Approved: time.Now().UTC(), Source: string(src)}
	file := filepath.Join(h.TrustDir(), TrustHash(src))
	old, err := readTrustEntry(file)
	held := err == nil && old.Source == e.Source
	if held {
		e.EnvFiles, e.Repos = old.EnvFiles, old.Repos
		if len(e.Repos) == 0 && old.Path != "" {
			// Approved by a binky that kept no list: in the repository it
			// was found in.
			e.Repos = []string{repoKey(old.Path, true)}
		}
	}
	if key != repoFolder(key) {
		e.Repos = slices.DeleteFunc(e.Repos, func(r string) bool { return r == repoFolder(key) })
	}
	if !slices.Contains(e.Repos, key) {
		e.Repos = append(e.Repos, key)
		if len(e.Repos) > maxTrustRepos {
			e.Repos = e.Repos[len(e.Repos)-maxTrustRepos:]
		}
	}
	cfg, _ := ParseConfig(path, src)
	if files := envFileDigests(cfg); len(files) > 0 && !e.holds(files) {
		// The same binky.toml on several branches may name env files
		// that differ: each approved set is kept (the newest few).
		e.EnvFiles = append(e.EnvFiles, files)
		if len(e.EnvFiles) > maxEnvFileSets {
			e.EnvFiles = e.EnvFiles[len(e.EnvFiles)-maxEnvFileSets:]
		}
	}
	// Every up approves what it runs: one whose approval holds already
	// (same repositories, same env files) writes nothing, rather than wait
	// for the disk to keep a new time and path nobody reads.
	if held && slices.Equal(old.Repos, e.Repos) && slices.EqualFunc(old.EnvFiles, e.EnvFiles, maps.Equal) {
		return nil
	}
	b, _ := json.Marshal(e)
	return WriteFileAtomic(file, b, 0o600)
}

// maxEnvFileSets bounds the env-file sets one approved config keeps.
const maxEnvFileSets = 32

// maxTrustRepos bounds the repositories one approved config keeps.
const maxTrustRepos = 256

// repoKey names the repository a config at path is in, for approvals: its
// common folder and an id binky keeps in it (repoIDFile), made when
// create is set. An approval counts there only. The same bytes in another
// repository are another project's commands (its ./dev.sh is not this
// one's): approving a binky.toml in one repository started, on `git
// worktree add`, a stranger's repository holding a copy of it; and the id
// tells a repository cloned where an approved one was from that one.
// Outside any repository, it is the folder of path, with no id.
func repoKey(path string, create bool) string {
	dir := filepath.Dir(path)
	r, _, err := gitx.Discover(dir)
	if err != nil {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		return dir
	}
	return commonKey(r.CommonDir, create)
}

// commonKey is repoKey for the repository whose common folder is common.
func commonKey(common string, create bool) string {
	if id := repoID(common, create); id != "" {
		return common + "#" + id
	}
	// No id, nor one to be made (a folder we may not write): its folder
	// alone, which an approval of it made the same way names.
	return common
}

// repoIDFile holds a repository's id, in its common folder.
const repoIDFile = "binky-repo-id"

// repoID is the id kept in the repository whose common folder is common,
// made (random) when create is set and there is none; "" when there is
// none.
func repoID(common string, create bool) string {
	file := filepath.Join(common, repoIDFile)
	// Read as other files of the repository are (smallfile): a pipe or
	// /dev/zero put there makes no check wait or fill memory.
	if b, err := smallfile.Read(file, 64); err == nil && validRepoID(b) {
		return string(b)
	} else if err == nil || !errors.Is(err, os.ErrNotExist) {
		return "" // something else is there: named by the folder alone
	}
	if !create {
		return ""
	}
	raw := make([]byte, 8)
	if _, err := rand.Read(raw); err != nil {
		return ""
	}
	id := hex.EncodeToString(raw)
	tmp, err := os.CreateTemp(common, ".binky-repo-id*")
	if err != nil {
		return ""
	}
	_, werr := tmp.WriteString(id)
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return ""
	}
	// Two approvals at once: the first link wins, and both read it.
	if err := os.Link(tmp.Name(), file); err != nil {
		os.Remove(tmp.Name())
		if b, err := smallfile.Read(file, 64); err == nil && validRepoID(b) {
			return string(b)
		}
		return ""
	}
	os.Remove(tmp.Name())
	return id
}

// validRepoID is an id binky wrote: 16 hex digits.
func validRepoID(b []byte) bool {
	if len(b) != 16 {
		return false
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// approvedIn reports whether the approval of the config with this hash
// counts for a config at path.
func (h Home) approvedIn(hash, key string) bool {
	e, err := readTrustEntry(filepath.Join(h.TrustDir(), hash))
	if err != nil {
		return false
	}
	if len(e.Repos) == 0 {
		// Approved by a binky that kept no list: in the repository it
		// was found in, as far as its folder tells.
		return e.Path != "" && repoFolder(repoKey(e.Path, false)) == repoFolder(key)
	}
	// By its folder alone: approvals where no id could be written, which
	// the folder alone names (an approval that writes the id renames the
	// others: nameByID).
	return slices.Contains(e.Repos, key)
}

// nameByID renames folder to key (folder#id) in every approval that names
// the repository by its folder alone: the first approval that writes the
// id must not undo the others, nor leave them to a repository cloned into
// the folder later.
func (h Home) nameByID(folder, key string) {
	entries, err := os.ReadDir(h.TrustDir())
	if err != nil {
		return
	}
	for _, de := range entries {
		file := filepath.Join(h.TrustDir(), de.Name())
		e, err := readTrustEntry(file)
		if err != nil || !slices.Contains(e.Repos, folder) {
			continue
		}
		e.Repos = slices.DeleteFunc(e.Repos, func(r string) bool { return r == folder || r == key })
		e.Repos = append(e.Repos, key)
		if b, err := json.Marshal(e); err == nil {
			_ = WriteFileAtomic(file, b, 0o600)
		}
	}
}

// repoFolder is the folder part of a repoKey.
func repoFolder(key string) string {
	folder, _, _ := strings.Cut(key, "#")
	return folder
}

// TrustedHere reports whether the config src, found at path, may start
// automatically: it is approved (Trusted), and so are the env files it
// names, as they are now. An env file's values reach every process's
// environment (PATH, LD_PRELOAD, NODE_OPTIONS...) and ${env.X} in shell
// commands, and a branch can change them as freely as binky.toml: a
// checkout of someone else's branch must not run what it put there.
func (h Home) TrustedHere(src []byte, path string) bool {
	if !h.Trusted(TrustHash(src)) {
		return false
	}
	cfg, _ := ParseConfig(path, src)
	return h.TrustedConfig(cfg)
}

// Untrusted says why the binky.toml src at path is not TrustedHere, for a
// user to act on: the file itself, or which env file it names differs
// from (or, absent here, was present in) every set approved with it. A
// new worktree lacks an uncommitted .env its approval saw: saying that
// binky.toml changed, when it had not, sent users to read the wrong file.
func (h Home) Untrusted(src []byte, path string) string {
	hash := TrustHash(src)
	cfg, _ := ParseConfig(path, src)
	if cfg == nil || !h.Trusted(hash) || !h.approvedIn(hash, repoKey(path, false)) {
		return "its binky.toml differs from every one approved on this machine"
	}
	files := envFileDigests(cfg)
	e, err := readTrustEntry(filepath.Join(h.TrustDir(), hash))
	if err != nil || len(e.EnvFiles) == 0 {
		return "its binky.toml differs from every one approved on this machine"
	}
	var absent, changed []string
	for _, n := range slices.Sorted(maps.Keys(files)) {
		seen := false
		for _, set := range e.EnvFiles {
			if set[n] == files[n] {
				seen = true
				break
			}
		}
		switch {
		case seen:
		case files[n] == "absent":
			absent = append(absent, n)
		default:
			changed = append(changed, n)
		}
	}
	var why []string
	if len(absent) > 0 {
		why = append(why, fmt.Sprintf("the env file %s its binky.toml names is not there (it was when the file was approved: copy it in)", strings.Join(absent, ", ")))
	}
	if len(changed) > 0 {
		why = append(why, fmt.Sprintf("the env file %s its binky.toml names differs from every one approved with it", strings.Join(changed, ", ")))
	}
	if len(why) == 0 {
		return "its binky.toml's env files differ, together, from every set approved with it"
	}
	return strings.Join(why, "; ")
}

// TrustedConfig is TrustedHere for a config already parsed (cfg.Source,
// found at cfg.Path); nil is never trusted.
func (h Home) TrustedConfig(cfg *Config) bool {
	if cfg == nil {
		return false
	}
	hash := TrustHash(cfg.Source)
	if !h.Trusted(hash) || !h.approvedIn(hash, repoKey(cfg.Path, false)) {
		return false
	}
	return h.envFilesApproved(hash, envFileDigests(cfg))
}

// TrustedWorld is TrustedConfig for the env files w pinned (PinEnvFiles):
// the bytes its processes will get are the ones judged.
func (h Home) TrustedWorld(w *World) bool {
	if w.Config == nil {
		return false
	}
	hash := TrustHash(w.Config.Source)
	// The world's repository as git found it: the config's path may be
	// where the worktree was (a config rebuilt from the record after a
	// move).
	key := repoKey(w.Config.Path, false)
	if w.Repo != nil {
		key = commonKey(w.Repo.CommonDir, false)
	}
	if !h.Trusted(hash) || !h.approvedIn(hash, key) {
		return false
	}
	if w.pinned == nil {
		return h.envFilesApproved(hash, envFileDigests(w.Config))
	}
	files := map[string]string{}
	for n, pf := range w.pinned {
		files[n] = pf.digest
	}
	return h.envFilesApproved(hash, files)
}

// envFilesApproved reports whether the approval of the config with this
// hash holds the env-file set files (none to approve is approved).
func (h Home) envFilesApproved(hash string, files map[string]string) bool {
	if len(files) == 0 {
		return true
	}
	e, err := readTrustEntry(filepath.Join(h.TrustDir(), hash))
	return err == nil && e.holds(files)
}

// holds reports whether files is one of the entry's approved sets.
func (e trustEntry) holds(files map[string]string) bool {
	return slices.ContainsFunc(e.EnvFiles, func(f map[string]string) bool { return maps.Equal(f, files) })
}

// envFileDigests names each env file the config reads, as written, with
// the SHA-256 of its content beside the config ("absent" when there is
// none): what approving the config approves of them.
func envFileDigests(cfg *Config) map[string]string {
	if cfg == nil {
		return nil
	}
	files := map[string]string{}
	for _, n := range envFileNames(cfg) {
		b, err := readRegular(filepath.Join(filepath.Dir(cfg.Path), n), MaxEnvFileSize)
		if err != nil {
			files[n] = unreadableDigest(err)
			continue
		}
		files[n] = contentDigest(b)
	}
	return files
}

// contentDigest is an env file's digest in an approval: its SHA-256.
func contentDigest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// unreadableDigest is the digest of an env file that could not be read:
// "absent", or "unreadable" for a link to /dev/zero or a pipe, a folder, a
// huge file (never read, never what an approval saw: it fails every start).
func unreadableDigest(err error) string {
	if errors.Is(err, os.ErrNotExist) {
		return "absent"
	}
	return "unreadable"
}

func readTrustEntry(file string) (trustEntry, error) {
	var e trustEntry
	b, err := os.ReadFile(file)
	if err != nil {
		return e, err
	}
	return e, json.Unmarshal(b, &e)
}

// Standing is what a world record says about who may act on the world and
// why it is in its state: the home that owns it, its URL label, the config
// it was last started with, and the reason for its state.
type Standing struct {
	// Home is the id of the BINKY_HOME that owns the world (Home.ID) and
	// HomeDir where that home is; the copy of the record in the worktree's
	// admin folder carries them, so a second home on the same worktree can
	// say whose world it is instead of overwriting it.
	Home    string `json:"home,omitempty"`
	HomeDir string `json:"home_dir,omitempty"`
	// Label is the world's DNS label in its URLs: the worktree name folded,
	// with a short hash when another world of the project folds alike.
	// Kept once chosen, so URLs survive restarts.
	Label string `json:"label,omitempty"`
	// Approved is the TrustHash of the binky.toml the world's services were
	// started with. Restarts and adoption by a later daemon run that config,
	// never the worktree's current file unless it is approved too.
	Approved string `json:"approved,omitempty"`
	// Reason says why the world is in State (failed, untrusted, stopped by
	// a cut-off up...), for status.
	Reason string `json:"reason,omitempty"`
}

// trustEntry is a file in TrustDir: where the approved config was found,
// when, and its content, so a later daemon can rebuild exactly the
// services that were approved.
type trustEntry struct {
	Path     string    `json:"path"`
	Approved time.Time `json:"approved"`
	Source   string    `json:"source,omitempty"`
	// EnvFiles are the sets of env files (name as the config writes it →
	// SHA-256 of the content, or "absent") approved with this config.
	EnvFiles []map[string]string `json:"env_files,omitempty"`
	// Repos are the repositories it was approved in (repoKey); an entry
	// without them counts in Path's only.
	Repos []string `json:"repos,omitempty"`
}

// ApprovedSource returns the content of the approved config with this hash,
// or an error when it was never approved (or approved by a binky that did
// not keep the content).
func (h Home) ApprovedSource(hash string) ([]byte, error) {
	if hash == "" {
		return nil, errors.New("no approved config is recorded")
	}
	b, err := os.ReadFile(filepath.Join(h.TrustDir(), hash))
	if err != nil {
		return nil, fmt.Errorf("approved config %s: %w", hash[:min(12, len(hash))], err)
	}
	var e trustEntry
	if err := json.Unmarshal(b, &e); err != nil || e.Source == "" || TrustHash([]byte(e.Source)) != hash {
		return nil, fmt.Errorf("approved config %s: its content was not kept", hash[:min(12, len(hash))])
	}
	return []byte(e.Source), nil
}

// ErrReplaced is returned for a worktree whose name this home's record
// holds for a worktree git removed (AdminFolderReplaced).
var ErrReplaced = errors.New("the world of this worktree's name is a removed worktree's")

// ErrOtherHome is returned for a worktree whose world belongs to another
// BINKY_HOME on this machine.
var ErrOtherHome = errors.New("the world of this worktree belongs to another git-binky home")

// adminCopy reads the copy of a world record in the worktree's admin folder.
func adminCopy(adminDir string) (*Record, error) {
	b, err := os.ReadFile(filepath.Join(StateDir(adminDir), "world.json"))
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// otherOwner returns the record of the admin copy when it belongs to a home
// other than h that still holds the world. A copy of no home (written by an
// older binky), of this home, or of a home that forgot the world (its
// folder or its record is gone) is nobody else's.
func (h Home) otherOwner(adminDir, id string) *Record {
	r, err := adminCopy(adminDir)
	if err != nil || r.Home == "" || r.ID != id {
		return nil
	}
	mine, err := h.ID()
	if err != nil || r.Home == mine {
		return nil
	}
	if r.HomeDir != "" {
		if _, err := os.Stat(filepath.Join(r.HomeDir, "worlds", id+".json")); err != nil {
			return nil
		}
	}
	return r
}

// ownsAdminCopy reports whether this home may write (or delete) the admin
// folder's copy of r: not when another home that still holds the world
// wrote it.
func (h Home) ownsAdminCopy(r *Record) bool {
	return h.otherOwner(r.AdminDir, r.ID) == nil
}

// CheckOwner fails with ErrOtherHome, naming the owning home, when w is
// another home's world and this home has no record of it. It changes
// nothing.
func (h Home) CheckOwner(w *World) error {
	return h.CheckWorktreeOwner(w.Repo.CommonDir, w.Worktree.AdminDir, w.Name)
}

// CheckWorktreeOwner is CheckOwner for a worktree known by its repository's
// common dir, its admin dir and its name, whose config need not load.
func (h Home) CheckWorktreeOwner(commonDir, adminDir, name string) error {
	id := WorldID(commonDir, adminDir)
	if h.HasRecord(id) {
		return nil
	}
	return h.checkOwner(adminDir, id, name)
}

func (h Home) checkOwner(adminDir, id, worktree string) error {
	o := h.otherOwner(adminDir, id)
	if o == nil {
		return nil
	}
	if o.HomeDir == "" {
		return fmt.Errorf("%w: worktree %s is run by the home with id %s; use that home, or 'git binky remove' it there first",
			ErrOtherHome, worktree, o.Home)
	}
	return fmt.Errorf("%w: worktree %s is run by BINKY_HOME=%s; use that home ('BINKY_HOME=%s git binky ...'), or 'git binky remove' it there first",
		ErrOtherHome, worktree, o.HomeDir, o.HomeDir)
}

// ApprovedConfig parses the approved config with this hash; path is where
// it was found, for its diagnostics.
func (h Home) ApprovedConfig(hash, path string) (*Config, error) {
	src, err := h.ApprovedSource(hash)
	if err != nil {
		return nil, err
	}
	cfg, diags := ParseConfig(path+" (as approved)", src)
	if cfg == nil || hasErrors(diags) {
		return nil, &ConfigError{Diagnostics: diags}
	}
	return cfg, nil
}

// AdminFolderReplaced reports whether the admin folder the world id's
// record names is no longer the one the world was made in: git removed
// that worktree and a new one took its name (git reuses a removed
// worktree's name). Two signs, both needed: the folder holds no copy of
// the record (every save writes one while the folder exists), and git
// made the folder after the world was made (adminReplaced). A copy that
// could not be written, or that someone deleted, is not enough to cost a
// live world its data. The new worktree must get a world of its own, not
// this one's.
// It looks under the world's lock, so a first save between its two
// writes is not taken for a replacement.
func (h Home) AdminFolderReplaced(ctx context.Context, id string) (bool, error) {
	unlock, err := h.LockWorld(ctx, id)
	if err != nil {
		return false, err
	}
	defer unlock()
	rec, err := h.LoadRecord(id)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	return adminReplaced(rec), nil
}

// adminReplaced reports whether rec's admin folder is now another
// worktree's: its copy of a record is another world's (another home's, or
// one made since), or git made the folder after the world was created and
// it holds no copy of the world's record, which every world's first save
// writes there. When git made it is told by its commondir file, which `git
// worktree add` writes and move and repair leave alone (they rewrite
// gitdir): a moved world whose copy was deleted is not taken for a new
// worktree. (The inode cannot tell: ext4 gives a folder made again at
// once the inode of the one just removed.)
func adminReplaced(rec *Record) bool {
	if rec.Main || rec.AdminDir == "" || rec.Created.IsZero() {
		return false
	}
	if fi, err := os.Stat(rec.AdminDir); err != nil || !fi.IsDir() {
		return false
	}
	if cp, err := adminCopy(rec.AdminDir); err == nil {
		// A copy that is another world's (another home claimed the new
		// worktree while this home's daemon was down) says so too.
		return cp.ID != rec.ID || cp.Home != "" && rec.Home != "" && cp.Home != rec.Home ||
			!cp.Created.IsZero() && !rec.Created.IsZero() && !cp.Created.Equal(rec.Created)
	} else if !errors.Is(err, os.ErrNotExist) {
		return false
	}
	made, err := os.Stat(filepath.Join(rec.AdminDir, "commondir"))
	return err == nil && made.ModTime().After(rec.Created)
}
