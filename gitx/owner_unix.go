//go:build unix

package gitx

import (
	"os"
	"syscall"
)

// ownedByOther reports whether fi is owned by another user than this
// process's: where git's safe.directory check has a say.
func ownedByOther(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) != os.Geteuid()
}
