//go:build !linux

package supervisor

import (
	"time"

	"github.com/git-binky/git-binky/procgroup"
)

// waitExit blocks until the process pid (started at tick) exits. It need not
// be our child, so there is nothing to wait on: outside Linux (where a pidfd
// wakes us) it polls.
func waitExit(pid int, tick uint64) {
	for procgroup.Alive(pid, tick) {
		time.Sleep(250 * time.Millisecond)
	}
}
