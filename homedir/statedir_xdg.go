//go:build !darwin && !windows

package homedir

import (
	"os"
	"path/filepath"
)

// stateDir is where per-user state lives when XDG_STATE_HOME is unset, on
// Linux and the other Unixes: the XDG base directory default.
func stateDir() (string, error) {
	h, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, ".local", "state"), nil
}
