//go:build windows

package daemon

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// meminfoPath is empty: Windows has no /proc/meminfo (BINKY_MEMINFO still
// names a file in its format, to rehearse pressure).
const meminfoPath = ""

// memoryStatusEx is MEMORYSTATUSEX (sysinfoapi.h).
type memoryStatusEx struct {
	Length               uint32
	MemoryLoad           uint32
	TotalPhys            uint64
	AvailPhys            uint64
	TotalPageFile        uint64
	AvailPageFile        uint64
	TotalVirtual         uint64
	AvailVirtual         uint64
	AvailExtendedVirtual uint64
}

var procGlobalMemoryStatusEx = windows.NewLazySystemDLL("kernel32.dll").NewProc("GlobalMemoryStatusEx")

// systemMemory asks GlobalMemoryStatusEx for the physical memory available
// and in all.
func systemMemory() (uint64, uint64, error) {
	var m memoryStatusEx
	m.Length = uint32(unsafe.Sizeof(m))
	if r, _, err := procGlobalMemoryStatusEx.Call(uintptr(unsafe.Pointer(&m))); r == 0 {
		return 0, 0, fmt.Errorf("GlobalMemoryStatusEx: %w", err)
	}
	return m.AvailPhys, m.TotalPhys, nil
}
