//go:build linux

package daemon

// meminfoPath is where Linux says how much memory is available.
const meminfoPath = "/proc/meminfo"

// systemMemory is unused on Linux: /proc/meminfo is always read.
func systemMemory() (uint64, uint64, error) { return osMachine{meminfo: meminfoPath}.Memory() }
