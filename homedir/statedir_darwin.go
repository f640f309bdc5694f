//go:build darwin

package homedir

import (
	"os"
	"path/filepath"
)

// stateDir is where per-user state lives when XDG_STATE_HOME is unset:
// ~/Library/Application Support, as macOS applications keep theirs.
func stateDir() (string, error) {
	h, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, "Library", "Application Support"), nil
}
