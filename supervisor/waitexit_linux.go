//go:build linux

package supervisor

import (
	"syscall"
	"time"

	"github.com/git-binky/git-binky/procgroup"
)

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
		if !procgroup.Alive(pid, tick) {
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
				if err == nil && !procgroup.Alive(pid, tick) {
					return
				}
			}
		}
	}
	for procgroup.Alive(pid, tick) {
		time.Sleep(250 * time.Millisecond)
	}
}
