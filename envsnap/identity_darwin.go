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
	return " " + strconv.FormatInt(int64(st.Dev), 10) + " " + strconv.FormatUint(st.Ino, 10) +
		" " + strconv.FormatInt(st.Ctimespec.Sec, 10) + "." + strconv.FormatInt(st.Ctimespec.Nsec, 10)
}
