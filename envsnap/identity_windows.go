package envsnap

import (
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

func selfExe() (string, error) { return os.Executable() }

// fileKey is the file's creation time, which a copy does not keep.
func fileKey(fi fs.FileInfo) string {
	if d, ok := fi.Sys().(*syscall.Win32FileAttributeData); ok {
		return " " + strconv.FormatInt(d.CreationTime.Nanoseconds(), 10)
	}
	return ""
}
