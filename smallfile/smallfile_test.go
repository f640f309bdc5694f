package smallfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadReturnsTheWholeFile(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{0, 1, 4095, 4096, 70000} {
		want := bytes.Repeat([]byte("x"), size)
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, want, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Read(p, int64(size))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("size %d: got %d bytes, %v", size, len(got), err)
		}
	}
}

func TestReadFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "target"), []byte("hello"), 0o600)
	if err := os.Symlink("target", filepath.Join(dir, "link")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	if got, err := Read(filepath.Join(dir, "link"), 10); err != nil || string(got) != "hello" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestReadOfAMissingFileIsNotExist(t *testing.T) {
	_, err := Read(filepath.Join(t.TempDir(), "absent"), 10)
	if !errors.Is(err, fs.ErrNotExist) || !os.IsNotExist(err) {
		t.Fatalf("err = %v, want one that says the file does not exist", err)
	}
}

func TestReadRefusesAFileOverTheBound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big")
	os.WriteFile(p, []byte("12345"), 0o600)
	_, err := Read(p, 4)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), p) {
		t.Fatalf("err = %v, want ErrTooLarge naming the file", err)
	}
}

func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	if _, err := Read(t.TempDir(), 1<<20); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "d---") {
		t.Errorf("a folder: err = %v, want ErrNotRegular saying it is a folder", err)
	}
}

// Files the kernel makes up (/proc) say they are empty and are not.
func TestReadReadsPastASizeOfZero(t *testing.T) {
	const p = "/proc/self/status"
	if _, err := os.Stat(p); err != nil {
		t.Skip("no /proc here")
	}
	got, err := Read(p, 1<<20)
	if err != nil || !bytes.Contains(got, []byte("Pid:")) {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := Read(p, 10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("over the bound: err = %v, want ErrTooLarge", err)
	}
}
