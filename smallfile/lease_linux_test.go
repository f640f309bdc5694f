package smallfile

import (
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
)

// A file under another process's write lease (what Samba's oplocks and
// nfsd's delegations take on files they export) is read once the lease is
// given up, as os.ReadFile reads it: a non-blocking open alone is refused
// while the lease is broken. (Found by a review of this package.)
func TestReadWaitsForALeaseToBeGivenUp(t *testing.T) {
	p, broken := leased(t, "ref: refs/heads/main\n")
	if b, err := Read(p, 1<<20); err != nil || string(b) != "ref: refs/heads/main\n" {
		t.Fatalf("got %q, %v; want the file once the lease was given up", b, err)
	}
	if !<-broken {
		t.Fatal("the read did not break the lease")
	}
}

func TestOpenWaitsForALeaseToBeGivenUp(t *testing.T) {
	p, broken := leased(t, "CREATE TABLE t (id int);\n")
	f, _, err := Open(p)
	if err != nil {
		t.Fatalf("open: %v; want the file once the lease was given up", err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || string(b) != "CREATE TABLE t (id int);\n" {
		t.Fatalf("read %q, %v", b, err)
	}
	if !<-broken {
		t.Fatal("the open did not break the lease")
	}
}

// leased writes content to a file and holds a write lease on it, given up
// when the kernel says another open breaks it (SIGIO), as Samba does.
// broken receives once it was given up.
func leased(t *testing.T, content string) (path string, broken <-chan bool) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "leased")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGIO)
	t.Cleanup(func() { signal.Stop(sig) })
	holder, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close() })
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, holder.Fd(), syscall.F_SETLEASE, syscall.F_WRLCK); e != 0 {
		t.Skip("this filesystem or user takes no leases:", e)
	}
	fd, done := holder.Fd(), make(chan bool, 1)
	go func() {
		<-sig
		syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETLEASE, syscall.F_UNLCK)
		done <- true
	}()
	return p, done
}
