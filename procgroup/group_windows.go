//go:build windows

package procgroup

import (
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// A group on Windows is a job object named for its leader's pid: a service
// is created suspended, put in the job, then resumed, so every process it
// ever starts is in the job (a job is inherited) and one call stops them
// all. The job has no kill-on-close limit, so services outlive the daemon
// as they do on unix, and the next daemon finds the job again by its name.

// Job access rights (winnt.h), which x/sys/windows does not name.
const (
	jobAssignProcess = 0x0001
	jobQuery         = 0x0004
	jobTerminate     = 0x0008
)

var (
	modkernel32          = windows.NewLazySystemDLL("kernel32.dll")
	modntdll             = windows.NewLazySystemDLL("ntdll.dll")
	procOpenJobObjectW   = modkernel32.NewProc("OpenJobObjectW")
	procGetConsoleWindow = modkernel32.NewProc("GetConsoleWindow")
	procNtSuspendProcess = modntdll.NewProc("NtSuspendProcess")
	procNtResumeProcess  = modntdll.NewProc("NtResumeProcess")
)

// jobName names the job of the group led by pid, in this login session.
func jobName(pid int) string { return `Local\binky-group-` + strconv.Itoa(pid) }

func openJob(pid int, access uint32) (windows.Handle, error) {
	name, err := windows.UTF16PtrFromString(jobName(pid))
	if err != nil {
		return 0, err
	}
	r, _, e := procOpenJobObjectW.Call(uintptr(access), 0, uintptr(unsafe.Pointer(name)))
	if r == 0 {
		return 0, e
	}
	return windows.Handle(r), nil
}

// Set makes cmd the root of a new console process group (the target
// of CTRL_BREAK_EVENT). A daemon without a console gives its children none
// either, rather than a console window each.
func Set(cmd *exec.Cmd) {
	flags := uint32(windows.CREATE_NEW_PROCESS_GROUP)
	if w, _, _ := procGetConsoleWindow.Call(); w == 0 {
		flags |= windows.CREATE_NO_WINDOW
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: flags}
}

// Start starts cmd suspended, puts it in its own job object, and only
// then lets it run, so that nothing it starts escapes the job.
func Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		Set(cmd)
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_SUSPENDED
	if err := cmd.Start(); err != nil {
		return err
	}
	pid := cmd.Process.Pid
	err := joinJob(pid)
	if err == nil {
		err = resume(uint32(pid))
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("put process %d in a job object: %w", pid, err)
	}
	return nil
}

func joinJob(pid int) error {
	name, err := windows.UTF16PtrFromString(jobName(pid))
	if err != nil {
		return err
	}
	job, err := windows.CreateJobObject(nil, name)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(job)
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	return windows.AssignProcessToJobObject(job, h)
}

// kill kills cmd's whole group (exec.Cmd.Cancel).
func kill(cmd *exec.Cmd) error { return Signal(cmd.Process.Pid, syscall.SIGKILL) }

// Signal does to the group led by pgid what sig does on unix: SIGKILL
// terminates every process of its job (TerminateJobObject); SigStop and
// SigCont suspend and resume each of them; any other signal is a
// CTRL_BREAK_EVENT to the console process group, which reaches it only when
// it shares the daemon's console: where it cannot be delivered, the group is
// terminated at once, since nothing gentler would reach it.
func Signal(pgid int, sig syscall.Signal) error {
	if pgid <= 4 {
		return fmt.Errorf("refusing to signal process group %d", pgid)
	}
	switch sig {
	case syscall.SIGKILL:
		return terminate(pgid)
	case SigStop:
		return eachInGroup(pgid, procNtSuspendProcess)
	case SigCont:
		return eachInGroup(pgid, procNtResumeProcess)
	}
	if err := windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, uint32(pgid)); err != nil {
		return terminate(pgid)
	}
	return nil
}

func terminate(pgid int) error {
	if job, err := openJob(pgid, jobTerminate); err == nil {
		defer windows.CloseHandle(job)
		return windows.TerminateJobObject(job, 1)
	}
	var errs []error
	for _, pid := range processTree(pgid) {
		h, err := windows.OpenProcess(windows.PROCESS_TERMINATE, false, pid)
		if err != nil {
			continue // gone already
		}
		if err := windows.TerminateProcess(h, 1); err != nil && !errors.Is(err, windows.ERROR_ACCESS_DENIED) {
			errs = append(errs, fmt.Errorf("terminate process %d: %w", pid, err))
		}
		windows.CloseHandle(h)
	}
	return errors.Join(errs...)
}

// eachInGroup calls an ntdll process call (suspend, resume) on every
// process of the group.
func eachInGroup(pgid int, call *windows.LazyProc) error {
	var errs []error
	for _, pid := range groupPIDs(pgid) {
		h, err := windows.OpenProcess(windows.PROCESS_SUSPEND_RESUME, false, pid)
		if err != nil {
			continue
		}
		if st, _, _ := call.Call(uintptr(h)); st != 0 {
			errs = append(errs, fmt.Errorf("%s process %d: NTSTATUS %#x", call.Name, pid, st))
		}
		windows.CloseHandle(h)
	}
	return errors.Join(errs...)
}

func resume(pid uint32) error {
	h, err := windows.OpenProcess(windows.PROCESS_SUSPEND_RESUME, false, pid)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	if st, _, _ := procNtResumeProcess.Call(uintptr(h)); st != 0 {
		return fmt.Errorf("NtResumeProcess: NTSTATUS %#x", st)
	}
	return nil
}

// jobPIDList is JOBOBJECT_BASIC_PROCESS_ID_LIST (winnt.h) with room for
// more processes than a world's service runs.
type jobPIDList struct {
	Assigned, Listed uint32
	PIDs             [1024]uintptr
}

// groupPIDs lists the group's processes: its job's, else the leader's tree.
func groupPIDs(pgid int) []uint32 {
	job, err := openJob(pgid, jobQuery)
	if err != nil {
		return processTree(pgid)
	}
	defer windows.CloseHandle(job)
	var list jobPIDList
	if err := windows.QueryInformationJobObject(job, windows.JobObjectBasicProcessIdList,
		uintptr(unsafe.Pointer(&list)), uint32(unsafe.Sizeof(list)), nil); err != nil && !errors.Is(err, windows.ERROR_MORE_DATA) {
		return processTree(pgid)
	}
	n := min(int(list.Listed), len(list.PIDs))
	pids := make([]uint32, 0, n)
	for _, id := range list.PIDs[:n] {
		pids = append(pids, uint32(id))
	}
	return pids
}

// processTree lists root and its live descendants, by parent pid. Windows
// never reparents, so a parent pid may name a process that died and whose
// pid was reused: a child counts only when it was created after its parent.
func processTree(root int) []uint32 {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil
	}
	defer windows.CloseHandle(snap)
	children := map[uint32][]uint32{}
	var e windows.ProcessEntry32
	e.Size = uint32(unsafe.Sizeof(e))
	found := false
	for err := windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		if e.ProcessID == uint32(root) {
			found = true
		}
		if e.ProcessID != e.ParentProcessID {
			children[e.ParentProcessID] = append(children[e.ParentProcessID], e.ProcessID)
		}
	}
	if !found {
		return nil
	}
	tree := []uint32{uint32(root)}
	for i := 0; i < len(tree); i++ {
		parent, err := ReadProc(int(tree[i]))
		if err != nil {
			continue
		}
		for _, c := range children[tree[i]] {
			if child, err := ReadProc(int(c)); err == nil && child.StartTick >= parent.StartTick {
				tree = append(tree, c)
			}
		}
	}
	return tree
}
