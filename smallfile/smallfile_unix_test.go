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

func TestReadAndOpenRefuseDevicesAndPipesWithoutBlocking(t *testing.T) {
	open := func(p string) error {
		f, _, err := Open(p)
		if err == nil {
			f.Close()
		}
		return err
	}
	read := func(p string) error { _, err := Read(p, 1<<20); return err }
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	for name, call := range map[string]func(string) error{"Read": read, "Open": open} {
		// /dev/zero never ends: reading it would run the reader out of memory.
		if err := call("/dev/zero"); !errors.Is(err, ErrNotRegular) {
			t.Errorf("%s /dev/zero: err = %v, want ErrNotRegular", name, err)
		}
		// A named pipe with no writer: opening it for reading would wait.
		done := make(chan error, 1)
		go func() { done <- call(fifo) }()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "p---") {
				t.Errorf("%s a named pipe: err = %v, want ErrNotRegular saying it is a pipe", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s blocked on a named pipe with no writer", name)
		}
	}
}
