package world

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// The registry of repositories: which repositories the daemon's watcher
// follows, and which of their worktrees it has already accounted for.

// Repo is a repository the daemon watches, registered by `git binky
// install` and by `up`.
type Repo struct {
	CommonDir  string    `json:"common_dir"`
	Registered time.Time `json:"registered"`
	// Seen are the worktree admin names the daemon has already accounted
	// for: a name not in it is a worktree born since, to provision.
	Seen []string `json:"seen"`
}

func (h Home) reposDir() string { return filepath.Join(h.Dir, "repos") }

func (h Home) repoPath(common string) string {
	sum := sha256.Sum256([]byte(common))
	return filepath.Join(h.reposDir(), hex.EncodeToString(sum[:8])+".json")
}

// RegisterRepo records a repository for the watcher. seen are the worktrees
// that exist now, which are not "new" when the watcher first looks. An
// already registered repository keeps its state.
func (h Home) RegisterRepo(common string, seen []string) (bool, error) {
	if _, err := os.Stat(h.repoPath(common)); err == nil {
		return false, nil
	}
	if err := os.MkdirAll(h.reposDir(), 0o700); err != nil {
		return false, err
	}
	return true, h.SaveRepo(Repo{CommonDir: common, Registered: time.Now().UTC(), Seen: seen})
}

// SaveRepo writes a registered repository.
func (h Home) SaveRepo(r Repo) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(h.repoPath(r.CommonDir), b, 0o600)
}

// UnregisterRepo stops watching a repository.
func (h Home) UnregisterRepo(common string) error {
	err := os.Remove(h.repoPath(common))
	if isNotExist(err) {
		return nil
	}
	return err
}

// Repos lists the registered repositories.
func (h Home) Repos() ([]Repo, error) {
	files, err := filepath.Glob(filepath.Join(h.reposDir(), "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Repo
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var r Repo
		if json.Unmarshal(b, &r) == nil && r.CommonDir != "" {
			out = append(out, r)
		}
	}
	return out, nil
}
