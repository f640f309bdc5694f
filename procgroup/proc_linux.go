//go:build linux

package procgroup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// ReadProc reads /proc/<pid>/stat. The start tick is what makes a pid an
// identity: a pid reused by another process has another start tick.
func ReadProc(pid int) (ProcInfo, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcInfo{}, err
	}
	// The command name (field 2) is in parentheses and may contain spaces
	// or parentheses itself: fields are counted after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return ProcInfo{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 20 {
		return ProcInfo{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return ProcInfo{}, err
	}
	pgid, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return ProcInfo{}, err
	}
	tick, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return ProcInfo{}, err
	}
	state := f[0][0]
	if state == 'Z' {
		state = liveThreadState(pid)
	}
	return ProcInfo{State: state, PPID: ppid, PGID: pgid, StartTick: tick}, nil
}

// liveThreadState is the state of a thread of pid that has not ended, or
// 'Z'. The process of a leader thread that ended while others run on (a
// multi-threaded server whose main thread exits: node's, on its way out)
// reads as a zombie, yet its threads still hold what it held, its
// listening socket included: a port checked free then was taken.
func liveThreadState(pid int) byte {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 'Z'
	}
	for _, t := range tasks {
		b, err := os.ReadFile(dir + t.Name() + "/stat")
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X' {
			return b[i+2]
		}
	}
	return 'Z'
}

// GroupAlive reports whether any non-zombie process is left in process group
// pgid. Zombies are ignored: they hold a pgid until reaped but run nothing.
func GroupAlive(pgid int) bool {
	if pgid <= 1 {
		return false
	}
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if info, err := ReadProc(pid); err == nil && info.PGID == pgid && info.State != 'Z' && info.State != 'X' {
			return true
		}
	}
	return false
}
