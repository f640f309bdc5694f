//go:build unix

package smallfile

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadRefusesDevicesAndPipesWithoutBlocking(t *testing.T) {
	// /dev/zero never ends: reading it would run the reader out of memory.
	if _, err := Read("/dev/zero", 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Errorf("/dev/zero: err = %v, want ErrNotRegular", err)
	}
	// A named pipe with no writer: opening it for reading would wait.
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Read(fifo, 1<<20); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "p---") {
			t.Errorf("a named pipe: err = %v, want ErrNotRegular saying it is a pipe", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read blocked on a named pipe with no writer")
	}
}
