//go:build unix

package hooks

import (
	"os"
	"syscall"
)

// executable reports whether git would run the hook file: on unix, only
// when its owner may execute it.
func executable(fi os.FileInfo) bool { return fi.Mode().Perm()&0o100 != 0 }

// ownedByMe reports whether this process's user owns the file: a shared
// temporary folder holds other users' files too.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
