package managed

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/git-binky/git-binky/world"
)

// rootDataDir is where a root-run binky keeps the files of the servers it
// runs as their own users (postgres, mysql, rabbitmq), whom root's home
// does not let in.
const rootDataDir = world.RootDataDir

// rootDir is the folder under rootDataDir of kind's server for this home,
// made (and the folders above it left traversable, not readable). It is
// named from the home's path and its ID: a home deleted and made again at
// the same path has a new ID, so it never starts the old home's cluster,
// whose password it does not have. A home whose link (to sub of the
// folder, e.g. servers/postgres/data) already names the folder of an older
// binky, from the path alone, keeps it.
func (m *Servers) rootDir(kind, link, sub string) (string, error) {
	legacy := sha256.Sum256([]byte(m.Home.Dir))
	old := filepath.Join(rootDataDir, hex.EncodeToString(legacy[:6]), kind)
	if target, err := os.Readlink(link); err == nil && target == filepath.Join(old, sub) {
		if _, err := os.Stat(target); err == nil {
			m.ownRootDir(filepath.Dir(old))
			return old, nil
		}
	}
	id, err := m.Home.ID()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(m.Home.Dir + "\x00" + id))
	dir := filepath.Join(rootDataDir, hex.EncodeToString(sum[:6]), kind)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create %s for the shared %s: %w", dir, kind, err)
	}
	for _, d := range []string{rootDataDir, filepath.Dir(dir)} {
		_ = os.Chmod(d, 0o711)
	}
	m.ownRootDir(filepath.Dir(dir))
	return dir, nil
}

// ownRootDir records which home a folder under rootDataDir is, so that
// doctor can tell it from a deleted home's. Failing costs only that: the
// server runs all the same.
func (m *Servers) ownRootDir(folder string) {
	_ = m.Home.WriteRootOwner(folder)
}

// linkTo points link at target, unless it already does.
func linkTo(link, target string) error {
	if t, err := os.Readlink(link); err == nil && t == target {
		return nil
	}
	os.Remove(link)
	return os.Symlink(target, link)
}
