package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// ProcInfo is what /proc/<pid>/stat tells about a process.
type ProcInfo struct {
	State     byte   // R, S, D, Z, T, ...
	PGID      int    // process group
	StartTick uint64 // start time in clock ticks since boot
}

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
	pgid, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return ProcInfo{}, err
	}
	tick, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return ProcInfo{}, err
	}
	return ProcInfo{State: f[0][0], PGID: pgid, StartTick: tick}, nil
}

// Alive reports whether pid is a live (non-zombie) process started at
// startTick. A zero startTick matches any start time.
func Alive(pid int, startTick uint64) bool {
	if pid <= 0 {
		return false
	}
	info, err := ReadProc(pid)
	if err != nil || info.State == 'Z' || info.State == 'X' {
		return false
	}
	return startTick == 0 || info.StartTick == startTick
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

// SignalGroup sends sig to every process in group pgid.
func SignalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		return fmt.Errorf("refusing to signal process group %d", pgid)
	}
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// StopGroup sends SIGTERM to group pgid, waits up to grace for every process
// in it to go, then sends SIGKILL and waits a little more. It reports whether
// the group is gone.
func StopGroup(pgid int, grace time.Duration) bool {
	if !GroupAlive(pgid) {
		return true
	}
	// A suspended group would never see SIGTERM: wake it first.
	_ = SignalGroup(pgid, syscall.SIGCONT)
	_ = SignalGroup(pgid, syscall.SIGTERM)
	if waitGroupGone(pgid, grace) {
		return true
	}
	_ = SignalGroup(pgid, syscall.SIGKILL)
	return waitGroupGone(pgid, 3*time.Second)
}

func waitGroupGone(pgid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	wait := 5 * time.Millisecond
	for {
		if !GroupAlive(pgid) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
		if wait < 50*time.Millisecond {
			wait *= 2
		}
	}
}

// sysPidfdOpen is pidfd_open(2); its number is the same on every Linux
// architecture (it was added after the tables were unified).
const sysPidfdOpen = 434

// waitExit blocks until the process pid (started at tick) exits. It need
// not be our child: a pidfd becomes readable when any process exits. Where
// pidfds are missing (Linux before 5.3) it polls.
func waitExit(pid int, tick uint64) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno == 0 {
		defer syscall.Close(int(fd))
		// The pidfd pins this process: check it is the one we mean.
		if !Alive(pid, tick) {
			return
		}
		if epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC); err == nil {
			defer syscall.Close(epfd)
			ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
			if syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev) == nil {
				events := make([]syscall.EpollEvent, 1)
				for {
					n, err := syscall.EpollWait(epfd, events, -1)
					if err == syscall.EINTR {
						continue
					}
					if n > 0 || err != nil {
						break
					}
				}
				if err == nil && !Alive(pid, tick) {
					return
				}
			}
		}
	}
	for Alive(pid, tick) {
		time.Sleep(250 * time.Millisecond)
	}
}
