//go:build linux

package procgroup

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startMarked runs line under mark, as the daemon starts a service, and
// returns the pid the line writes to its pid file (a process that left
// the group in a session of its own) once that process runs comm.
func startMarked(t *testing.T, mark, line, comm string) int {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := Command(context.Background(), strings.ReplaceAll(line, "PIDFILE", pidFile))
	started := Mark(cmd, os.Environ(), mark)
	err := cmd.Start()
	started()
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	var pid int
	for deadline := time.Now().Add(5 * time.Second); pid == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never wrote its pid", line)
		}
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	// Until then it is setsid or env, whose environment still holds the
	// mark (or, during an exec, is briefly empty).
	if !waitUntil(func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		return strings.TrimSpace(string(b)) == comm
	}, 5*time.Second) {
		t.Fatalf("%s: pid %d never ran %s", line, pid, comm)
	}
	return pid
}

// environHas reports whether pid's environment, as the kernel shows it,
// holds mark.
func environHas(t *testing.T, pid int, mark string) bool {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte(MarkVar+"="+mark))
}

func waitGone(t *testing.T, pid int, what string) {
	t.Helper()
	if !waitUntil(func() bool { return !Alive(pid, 0) }, 5*time.Second) {
		t.Fatalf("%s (pid %d) is still running", what, pid)
	}
}

// A service's child that cleared its environment (env -i) and left the
// group (setsid) held the world's port past down and remove: nothing
// showed it was the service's. It still holds the mark's descriptor.
func TestAMarkedChildThatClearedItsEnvironmentIsStopped(t *testing.T) {
	mark := fmt.Sprintf("test.%d.envi", os.Getpid())
	pid := startMarked(t, mark, `setsid env -i sleep 300 </dev/null >/dev/null 2>&1 & echo $! > PIDFILE`, "sleep")
	if environHas(t, pid, mark) {
		t.Fatal("env -i kept the mark in the environment: the test shows nothing")
	}
	if !StopMarked(mark, 5*time.Second) {
		t.Fatal("StopMarked: processes are left")
	}
	waitGone(t, pid, "the child that cleared its environment")
}

// A program that writes its title (perl's $0 here; redis-server, nginx
// and postgres do the same) writes over the memory the kernel shows as its
// environment: the mark there is gone, its descriptor is not.
func TestAMarkedChildThatRewroteItsTitleIsKilled(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("perl is not installed (PATH has none)")
	}
	mark := fmt.Sprintf("test.%d.title", os.Getpid())
	pid := startMarked(t, mark, `setsid perl -e '$0 = "worker"; sleep 300' </dev/null >/dev/null 2>&1 & echo $! > PIDFILE`, "worker")
	if environHas(t, pid, mark) {
		t.Fatal("perl's $0 left the mark in the environment: the test shows nothing")
	}
	if n := KillMarked(mark); n != 1 {
		t.Fatalf("KillMarked = %d, want the one child", n)
	}
	waitGone(t, pid, "the child that rewrote its title")
}

// Another service's process, and one that holds no mark, are left alone,
// and a mark is not found in a longer one's descriptor.
func TestStoppingAMarkLeavesOtherMarksAlone(t *testing.T) {
	mark := fmt.Sprintf("test.%d.mine", os.Getpid())
	other := startMarked(t, mark+"x", `setsid env -i sleep 300 </dev/null >/dev/null 2>&1 & echo $! > PIDFILE`, "sleep")
	plain := exec.Command("sleep", "300")
	if err := plain.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Process.Kill(); plain.Wait() })
	if n := KillMarked(mark); n != 0 {
		t.Fatalf("KillMarked(%s) = %d, want 0", mark, n)
	}
	if !Alive(other, 0) || !Alive(plain.Process.Pid, 0) {
		t.Fatal("a process not carrying the mark was killed")
	}
}

// A child this process forks for something else holds every descriptor
// of ours until its exec, the mark's too while a service is being started
// with it: a stop then killed another world's service in the making. A
// child of ours is never taken by its descriptor (one we marked leads a
// group of its own, which its caller stops).
func TestAChildOfTheStopperIsNotTakenForTheMarks(t *testing.T) {
	mark := fmt.Sprintf("test.%d.child", os.Getpid())
	cmd := exec.Command("env", "-i", "sleep", "300")
	started := Mark(cmd, os.Environ(), mark)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if !waitUntil(func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid))
		return strings.TrimSpace(string(b)) == "sleep"
	}, 5*time.Second) {
		t.Fatal("env -i sleep never ran")
	}
	if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", cmd.Process.Pid, MarkFD)); err != nil || !strings.Contains(l, memfdName(mark)) {
		t.Fatalf("the child's descriptor %d is %q (%v), want the mark's memfd", MarkFD, l, err)
	}
	if n := KillMarked(mark); n != 0 {
		t.Fatalf("KillMarked = %d: it took this process's own child", n)
	}
}

// A daemon started from inside a world's service inherits the service's
// descriptor; the services it starts must not, or stopping that one
// service would stop all of them. The client seals the descriptor before
// it starts a daemon, and a daemon drops what it inherited.
func TestADaemonStartedFromAServiceDoesNotPassItsMarkOn(t *testing.T) {
	if os.Getenv("PROCGROUP_HELPER") != "" {
		sealOrDrop(os.Getenv("PROCGROUP_HELPER"))
		return
	}
	for _, how := range []string{"seal", "drop"} {
		mark := fmt.Sprintf("test.%d.%s", os.Getpid(), how)
		pidFile := filepath.Join(t.TempDir(), "pid")
		cmd := exec.Command(os.Args[0], "-test.run=^TestADaemonStartedFromAServiceDoesNotPassItsMarkOn$")
		started := Mark(cmd, append(os.Environ(), "PROCGROUP_HELPER="+how, "PROCGROUP_PIDFILE="+pidFile), mark)
		out, err := cmd.CombinedOutput()
		started()
		if err != nil {
			t.Fatalf("%s: %v\n%s", how, err, out)
		}
		b, _ := os.ReadFile(pidFile)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if pid == 0 {
			t.Fatalf("%s: the helper started nothing:\n%s", how, out)
		}
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
		if n := KillMarked(mark); n != 0 {
			t.Errorf("%s: KillMarked = %d: what the helper started after it (%d) carries the mark", how, n, pid)
		}
	}
}

// sealOrDrop is the helper's side: it does as the client (seal) or the
// daemon (drop) does, then starts a process that outlives it, with no
// mark in its environment, and writes that process's pid.
func sealOrDrop(how string) {
	if how == "seal" {
		SealInheritedMarks()
	} else {
		DropInheritedMarks()
	}
	cmd := exec.Command("setsid", "sleep", "300")
	cmd.Env = WithMark(os.Environ(), "")
	if err := cmd.Start(); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	os.WriteFile(os.Getenv("PROCGROUP_PIDFILE"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
}
