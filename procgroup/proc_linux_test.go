//go:build linux

package procgroup

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// A multi-threaded process whose leader thread has ended reads as a
// zombie while its other threads run on, holding its listening socket:
// taken for gone, its port was checked free and found taken ("in use by
// another program") when the world started again. It is alive until its
// last thread ends.
func TestAProcessWhoseMainThreadEndedIsAliveWhileItsThreadsRun(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed (PATH has none): it makes the process here")
	}
	cmd := Command(context.Background(), "exec "+py+` -c '
import ctypes, threading, time
threading.Thread(target=lambda: time.sleep(2)).start()
ctypes.CDLL(None).pthread_exit(None)'`)
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Signal(cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	pid := cmd.Process.Pid
	leaderEnded := func() bool {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		i := bytes.LastIndexByte(b, ')')
		return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
	}
	if !waitUntil(leaderEnded, 5*time.Second) {
		t.Fatal("the leader thread never ended")
	}
	if !Alive(pid, 0) || !GroupAlive(pid) {
		t.Fatalf("Alive = %v, GroupAlive = %v while a thread runs: want both true", Alive(pid, 0), GroupAlive(pid))
	}
	if !waitUntil(func() bool { return !GroupAlive(pid) }, 10*time.Second) {
		t.Fatal("the group is alive after its last thread ended")
	}
}
