//go:build windows

package homedir

import (
	"errors"
	"os"
)

// stateDir is where per-user state lives when XDG_STATE_HOME is unset:
// %LOCALAPPDATA%, which is this machine's and not roamed.
func stateDir() (string, error) {
	if d := os.Getenv("LOCALAPPDATA"); d != "" {
		return d, nil
	}
	return "", errors.New("LOCALAPPDATA is unset")
}
