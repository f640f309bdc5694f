//go:build darwin

package procgroup

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// Process states of macOS's struct proc (sys/proc.h: p_stat).
const (
	darwinSIDL   = 1
	darwinSRUN   = 2
	darwinSSLEEP = 3
	darwinSSTOP  = 4
	darwinSZOMB  = 5
)

// ReadProc asks the kernel (sysctl kern.proc.pid) about pid. The start time
// (p_starttime, in microseconds) is what makes a pid an identity: a pid
// reused by another process has another start time.
func ReadProc(pid int) (ProcInfo, error) {
	k, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return ProcInfo{}, err
	}
	if int(k.Proc.P_pid) != pid {
		return ProcInfo{}, syscall.ESRCH
	}
	t := k.Proc.P_starttime
	return ProcInfo{
		State:     darwinState(k.Proc.P_stat),
		PGID:      int(k.Eproc.Pgid),
		StartTick: uint64(t.Sec)*1_000_000 + uint64(t.Usec),
	}, nil
}

// darwinState maps p_stat to the letters of Linux's /proc/<pid>/stat, which
// the rest of the package speaks.
func darwinState(s int8) byte {
	switch s {
	case darwinSRUN, darwinSIDL:
		return 'R'
	case darwinSSLEEP:
		return 'S'
	case darwinSSTOP:
		return 'T'
	case darwinSZOMB:
		return 'Z'
	}
	return '?'
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
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.pgrp", pgid)
	if err != nil {
		return true
	}
	for _, k := range procs {
		if int(k.Eproc.Pgid) == pgid && k.Proc.P_stat != darwinSZOMB {
			return true
		}
	}
	return false
}
