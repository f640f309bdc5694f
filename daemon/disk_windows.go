//go:build windows

package daemon

import (
	"fmt"

	"golang.org/x/sys/windows"
)

// DiskFree is the space this user may still write on the volume holding
// path (GetDiskFreeSpaceEx honours quotas).
func (osMachine) DiskFree(path string) (uint64, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return 0, err
	}
	var free, total, totalFree uint64
	if err := windows.GetDiskFreeSpaceEx(p, &free, &total, &totalFree); err != nil {
		return 0, fmt.Errorf("free space on %s: %w", path, err)
	}
	return free, nil
}
