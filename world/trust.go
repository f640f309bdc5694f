package world

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// TrustHash identifies a binky.toml by its content: approving a config
// approves exactly these bytes, wherever they appear.
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

// Trust approves the config src, found at path, for automatic starts.
func (h Home) Trust(src []byte, path string) error {
	if err := os.MkdirAll(h.TrustDir(), 0o700); err != nil {
		return fmt.Errorf("trust: %w", err)
	}
	b, _ := json.Marshal(map[string]any{"path": path, "approved": time.Now().UTC()})
	return WriteFileAtomic(filepath.Join(h.TrustDir(), TrustHash(src)), b, 0o600)
}
