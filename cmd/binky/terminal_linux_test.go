package main

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// A character device is not a terminal: `git binky env >/dev/null` must not
// be taken for a person reading (passwords hidden, colour on); a
// pseudo-terminal is one.
func TestOnlyATerminalIsATerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(null) {
		t.Errorf("%s was taken for a terminal", os.DevNull)
	}
	pipeR, pipeW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pipeR.Close()
	defer pipeW.Close()
	if isTerminal(pipeW) {
		t.Error("a pipe was taken for a terminal")
	}

	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptmx.Close()
	var n int
	if err := control(ptmx, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
			return err
		}
		n, err = unix.IoctlGetInt(fd, unix.TIOCGPTN)
		return err
	}); err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer pts.Close()
	if !isTerminal(pts) {
		t.Error("a pseudo-terminal was not taken for a terminal")
	}
	if ios := newIOStreams(nil, pts, null, func(string) (string, bool) { return "", false }); !ios.IsStdoutTTY() || ios.IsStderrTTY() {
		t.Errorf("stdout on a terminal, stderr on %s: IsStdoutTTY %v, IsStderrTTY %v", os.DevNull, ios.IsStdoutTTY(), ios.IsStderrTTY())
	}
}

func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
