// Package homedir is where binky's state folder ($BINKY_HOME) is and what
// its files are called. It links only the standard library's basics (os,
// path/filepath, strconv, crypto/sha256 for a world's id), so that the
// git-binky launcher can find a world's files without linking the model
// (see envsnap); world.Home builds on it.
package homedir

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
)

// Default returns $BINKY_HOME (made absolute), else $XDG_STATE_HOME/binky,
// else binky in the platform's state folder (statedir_<os>.go):
// ~/.local/state/binky on Linux.
func Default() (string, error) {
	if d := os.Getenv("BINKY_HOME"); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			return "", &wrapped{"BINKY_HOME=" + d, err}
		}
		return abs, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "binky"), nil
	}
	d, err := stateDir()
	if err != nil {
		return "", &wrapped{"find home folder (set BINKY_HOME)", err}
	}
	return filepath.Join(d, "binky"), nil
}

// The home's id and secret, each in a file of the home made once.
const (
	IDFile     = "home-id"
	SecretFile = "secret"
)

// Paths inside the home at dir.
func Ports(dir string) string     { return filepath.Join(dir, "ports") }
func Worlds(dir string) string    { return filepath.Join(dir, "worlds") }
func Settings(dir string) string  { return filepath.Join(dir, "settings.toml") }
func ProxyDown(dir string) string { return filepath.Join(dir, "proxy.down") }

// Port is the lease file of a port.
func Port(dir string, port int) string { return filepath.Join(Ports(dir), strconv.Itoa(port)) }

// Record is the file of the world id's record.
func Record(dir, id string) string { return filepath.Join(Worlds(dir), id+".json") }

// EnvSnapshot is the file of what env last printed for the world id
// (envsnap); it goes with the record.
func EnvSnapshot(dir, id string) string { return filepath.Join(Worlds(dir), id+".env") }

// CallerEnv is the file of the environment the world id's last up was
// given (its caller's); it goes with the record.
func CallerEnv(dir, id string) string { return filepath.Join(Worlds(dir), id+".caller") }

// WorldID is the stable identity of the world of a worktree, which names
// its files: a digest of its repository's common dir and its admin dir,
// which `git worktree move` keeps.
func WorldID(commonDir, adminDir string) string {
	sum := sha256.Sum256([]byte(commonDir + "\x00" + adminDir))
	return hex.EncodeToString(sum[:8])
}

// wrapped is fmt.Errorf("%s: %w") without fmt, which this package keeps
// out of the launcher.
type wrapped struct {
	what string
	err  error
}

func (e *wrapped) Error() string { return e.what + ": " + e.err.Error() }
func (e *wrapped) Unwrap() error { return e.err }
