package envsnap

import (
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

func selfExe() (string, error) { return os.Executable() }

func fileKey(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return " " + strconv.FormatInt(int64(st.Dev), 10) + " " + strconv.FormatUint(uint64(st.Ino), 10) +
		" " + strconv.FormatInt(int64(st.Ctimespec.Sec), 10) + "." + strconv.FormatInt(int64(st.Ctimespec.Nsec), 10)
}
