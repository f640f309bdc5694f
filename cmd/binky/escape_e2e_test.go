//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A service's child that left its process group (setsid, a double-forked
// daemon) outlived down and remove, kept the world's port and answered
// the health check of the next instance: stopping a service stops what
// carries its mark.
func TestAServicesChildInASessionOfItsOwnStopsWithIt(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.api]
cmd = "setsid sleep 300 & echo $! >> ${env.GC_DIR}/escaped; exec testsvc"
url = "api"
env = { SERVICE = "api" }
`)
	escaped := func() []int {
		b, _ := os.ReadFile(filepath.Join(f.gcDir, "escaped"))
		var pids []int
		for _, s := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(s); err == nil {
				pids = append(pids, pid)
				t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			}
		}
		return pids
	}
	f.mustBinky(f.repo, "up", "feat")
	first := escaped()
	if len(first) != 1 || !pidAlive(first[0]) {
		t.Fatalf("the service's escaped child: %v", first)
	}
	f.mustBinky(f.repo, "down", "feat")
	f.eventually("the escaped child stopped by down", func() bool { return !pidAlive(first[0]) })

	// A restart stops the old instance's escapee before the new one starts.
	f.mustBinky(f.repo, "up", "feat")
	f.mustBinky(f.repo, "service", "restart", "api", "feat")
	pids := escaped()
	if len(pids) != 3 {
		t.Fatalf("escaped children %v: want one per start (3)", pids)
	}
	f.eventually("the restarted instance's escapee stopped", func() bool { return !pidAlive(pids[1]) })
	if !pidAlive(pids[2]) {
		t.Fatalf("the running instance's child %d is gone", pids[2])
	}
	f.mustBinky(f.repo, "remove", "--force", "feat")
	f.eventually("the escaped child stopped by remove", func() bool { return !pidAlive(pids[2]) })
}
