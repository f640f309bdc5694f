//go:build linux

package procgroup

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// findMarked lists every process carrying one of marks: in its
// environment (MarkVar=mark), or, for one whose environment holds no mark
// at all (it was cleared, or a title was written over it), as the memfd on
// MarkFD. Only processes whose environment we may read (our own user's)
// are seen, and never this one; nor, by the descriptor, its children: a
// child forked for something else holds every descriptor of ours until its
// exec, the mark's a service is being started with included (children
// this process marked lead groups of their own, which their caller stops;
// a daemon that is PID 1 or a subreaper, which orphans come to, would miss
// their leftovers by the descriptor). A child inherits both marks whatever
// process group or session it moves to, so this finds what a setsid took
// out of its group.
func findMarked(marks ...string) []marked {
	byEnv, byLink := map[string]bool{}, map[string]bool{}
	for _, m := range marks {
		if m != "" {
			byEnv[m] = true
			byLink["/memfd:"+memfdName(m)+" (deleted)"] = true
		}
	}
	if len(byEnv) == 0 {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	prefix := []byte(MarkVar + "=")
	fd := "/fd/" + strconv.Itoa(MarkFD)
	self := os.Getpid()
	var found []marked
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		mark, hasMark := envMark(env, prefix)
		byFD := false
		switch {
		case hasMark && byEnv[mark]:
		case hasMark && !strings.ContainsAny(mark, " \t"):
			// A process marked as another's is that one's: the daemon
			// starts every service and step itself, never from another.
			// (A title written over the environment can leave a line
			// starting with the variable: marks hold no spaces.)
			continue
		default:
			if l, err := os.Readlink("/proc/" + e.Name() + fd); err != nil || !byLink[l] {
				continue
			}
			byFD = true
		}
		info, err := ReadProc(pid)
		if err != nil || info.State == 'Z' || info.State == 'X' || byFD && info.PPID == self {
			continue
		}
		found = append(found, marked{pid: pid, tick: info.StartTick})
	}
	return found
}

// envMark is the value of the MarkVar=... entry (prefix) of env, a
// process's NUL-separated environment, and whether it has one.
func envMark(env, prefix []byte) (string, bool) {
	for len(env) > 0 {
		entry := env
		if i := bytes.IndexByte(env, 0); i >= 0 {
			entry, env = env[:i], env[i+1:]
		} else {
			env = nil
		}
		if v, ok := bytes.CutPrefix(entry, prefix); ok {
			return string(v), true
		}
	}
	return "", false
}

// signalAll sends sig to each of procs still alive as itself, and reports
// how many it reached.
func signalAll(procs []marked, sig syscall.Signal) int {
	n := 0
	for _, p := range procs {
		if Alive(p.pid, p.tick) && syscall.Kill(p.pid, sig) == nil {
			n++
		}
	}
	return n
}

// carryMark hands cmd the mark's descriptor as MarkFD (3 to MarkFD-1
// closed, as every descriptor but 0-2 would be). Where the kernel makes
// no memfd (before Linux 3.17, or a sandbox refusing it) cmd goes with
// its environment's mark alone.
func carryMark(cmd *exec.Cmd, mark string) func() {
	if len(cmd.ExtraFiles) != 0 {
		return func() {} // the caller hands descriptors of its own
	}
	fd, err := unix.MemfdCreate(memfdName(mark), unix.MFD_CLOEXEC)
	if err != nil {
		return func() {}
	}
	f := os.NewFile(uintptr(fd), "mark")
	cmd.ExtraFiles = make([]*os.File, MarkFD-2)
	cmd.ExtraFiles[MarkFD-3] = f
	var once sync.Once
	return func() { once.Do(func() { f.Close() }) }
}

// DropInheritedMarks closes every mark's descriptor this process was
// started with. The daemon calls it first: one started from inside a
// world's service (a `git binky up` run by an agent there) would
// otherwise hand that service's mark to every service it starts, and
// stopping that service would stop them all.
func DropInheritedMarks() { inheritedMarks(func(fd int) { unix.Close(fd) }) }

// SealInheritedMarks has every mark's descriptor this process was started
// with closed in the programs it runs from now on (close-on-exec), this
// process keeping its own: the client calls it before it starts a daemon.
func SealInheritedMarks() { inheritedMarks(func(fd int) { unix.CloseOnExec(fd) }) }

// inheritedMarks calls do with each of this process's descriptors that is
// a mark's.
func inheritedMarks(do func(fd int)) {
	dir := "/proc/self/fd/"
	f, err := os.Open(dir)
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd <= 2 {
			continue
		}
		if l, err := os.Readlink(dir + n); err == nil && strings.HasPrefix(l, "/memfd:"+memfdPrefix) {
			do(fd)
		}
	}
}
