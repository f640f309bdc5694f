//go:build unix

package world

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
)

// MachineClaims is the folder of this user's machine-wide port claims, made
// on first use: /tmp/git-binky-<uid>/ports on Linux (a fixed place, since
// TMPDIR differs between shells, test harnesses and the daemon), the per-user
// temp folder elsewhere. "" when it cannot be made safely (someone else's
// folder, a symlink, one others may write): then homes see each other's
// ports only through the bind check.
func MachineClaims() string {
	root := os.TempDir()
	if runtime.GOOS == "linux" {
		root = "/tmp"
	}
	return claimsIn(root)
}

// claimsIn makes (or checks) root/git-binky-<uid>/ports.
func claimsIn(root string) string {
	dir := filepath.Join(root, "git-binky-"+strconv.Itoa(os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return ""
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return ""
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
		return ""
	}
	ports := filepath.Join(dir, "ports")
	if err := os.Mkdir(ports, 0o700); err != nil && !os.IsExist(err) {
		return ""
	}
	if fi, err := os.Lstat(ports); err != nil || !fi.IsDir() {
		return ""
	}
	return ports
}
