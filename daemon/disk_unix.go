//go:build unix

package daemon

import "syscall"

// DiskFree is the space an unprivileged user may still write on the
// file system holding path.
func (osMachine) DiskFree(path string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}
