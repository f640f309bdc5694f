package envsnap

import (
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// selfExe is the file this process runs from: /proc/self/exe stats the
// running inode even after a new install has replaced the path.
func selfExe() (string, error) {
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

func fileKey(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	// (Conversions: the fields' widths differ across Linux's architectures.)
	return " " + strconv.FormatUint(uint64(st.Dev), 10) + " " + strconv.FormatUint(uint64(st.Ino), 10) +
		" " + strconv.FormatInt(int64(st.Ctim.Sec), 10) + "." + strconv.FormatInt(int64(st.Ctim.Nsec), 10)
}
