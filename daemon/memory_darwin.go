//go:build darwin

package daemon

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"golang.org/x/sys/unix"
)

// meminfoPath is empty: macOS has no /proc/meminfo (BINKY_MEMINFO still
// names a file in its format, to rehearse pressure).
const meminfoPath = ""

// systemMemory reads the total from sysctl hw.memsize and what is available
// from vm_stat (see parseVMStat: there is no sysctl for inactive pages).
func systemMemory() (uint64, uint64, error) {
	total, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0, 0, fmt.Errorf("sysctl hw.memsize: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/bin/vm_stat").Output()
	if err != nil {
		return 0, 0, fmt.Errorf("vm_stat: %w", err)
	}
	avail, err := parseVMStat(out)
	if err != nil {
		return 0, 0, err
	}
	return avail, total, nil
}
