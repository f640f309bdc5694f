//go:build linux

package procgroup

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// KillMarked sends SIGKILL to every process whose environment holds
// marker (NAME=value, given to the command whose descendants these are)
// and reports how many it signalled. Only processes whose environment we
// may read (our own user's) are seen. A child inherits its parent's
// environment whatever process group or session it moves to, so this
// finds what a killed command started even after a setsid.
func KillMarked(marker string) int {
	if marker == "" {
		return 0
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	want := append([]byte(marker), 0)
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if bytes.HasPrefix(env, want) || bytes.Contains(env, append([]byte{0}, want...)) {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				n++
			}
		}
	}
	return n
}
