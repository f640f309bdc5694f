//go:build linux

package procgroup

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// signalMarked sends sig to every process whose environment holds
// MarkVar=mark and reports how many it signalled. Only processes whose
// environment we may read (our own user's) are seen, and never this one.
// A child inherits its parent's environment whatever process group or
// session it moves to, so this finds what a setsid took out of its group.
func signalMarked(mark string, sig syscall.Signal) int {
	if mark == "" {
		return 0
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	want := []byte("\x00" + MarkVar + "=" + mark + "\x00")
	self := os.Getpid()
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || len(env) == 0 {
			continue
		}
		// Framed by NULs, so that neither a longer mark nor another
		// variable's value ending in this one matches.
		if !bytes.Contains(append(append([]byte{0}, env...), 0), want) {
			continue
		}
		if info, err := ReadProc(pid); err != nil || info.State == 'Z' || info.State == 'X' {
			continue
		}
		if syscall.Kill(pid, sig) == nil {
			n++
		}
	}
	return n
}
