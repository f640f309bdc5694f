//go:build windows

package procgroup

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// ReadProc asks Windows about pid. Its creation time (GetProcessTimes, in
// 100 ns units since 1601) is what makes a pid an identity: a pid reused by
// another process has another creation time. A process has no group of its
// own on Windows: binky's group is the job object named for the leader's
// pid, so PGID is the pid itself.
func ReadProc(pid int) (ProcInfo, error) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return ProcInfo{}, err
	}
	defer windows.CloseHandle(h)
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return ProcInfo{}, err
	}
	// An exited process stays openable while anyone holds a handle to it
	// (its exit code is kept): it is signalled then.
	state := byte('R')
	if ev, err := windows.WaitForSingleObject(h, 0); err == nil && ev == windows.WAIT_OBJECT_0 {
		state = 'X'
	}
	return ProcInfo{
		State:     state,
		PGID:      pid,
		StartTick: uint64(created.HighDateTime)<<32 | uint64(created.LowDateTime),
	}, nil
}

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION (winnt.h).
type jobAccounting struct {
	TotalUserTime, TotalKernelTime                       int64
	ThisPeriodTotalUserTime, ThisPeriodTotalKernelTime   int64
	TotalPageFaultCount, TotalProcesses, ActiveProcesses uint32
	TotalTerminatedProcesses                             uint32
}

// GroupAlive reports whether any process is left in the group led by pgid:
// in its job object when it has one, else in the leader's process tree.
func GroupAlive(pgid int) bool {
	if pgid <= 4 {
		return false
	}
	if job, err := openJob(pgid, jobQuery); err == nil {
		defer windows.CloseHandle(job)
		var acct jobAccounting
		err := windows.QueryInformationJobObject(job, windows.JobObjectBasicAccountingInformation,
			uintptr(unsafe.Pointer(&acct)), uint32(unsafe.Sizeof(acct)), nil)
		return err != nil || acct.ActiveProcesses > 0
	}
	return len(processTree(pgid)) > 0
}
