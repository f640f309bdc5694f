//go:build unix

package daemon

import (
	"os"
	"syscall"
)

// deleted reports whether the open folder f has been deleted: no name
// links to it any more.
func deleted(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Nlink == 0
}
