package smallfile

import (
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
	p := filepath.Join(t.TempDir(), "HEAD")
	if err := os.WriteFile(p, []byte("ref: refs/heads/main\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGIO)
	defer signal.Stop(sig)
	holder, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, holder.Fd(), syscall.F_SETLEASE, syscall.F_WRLCK); e != 0 {
		t.Skip("this filesystem or user takes no leases:", e)
	}
	// The holder gives the lease up when told of a break, as Samba does.
	fd, broken := holder.Fd(), make(chan bool, 1)
	go func() {
		<-sig
		syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETLEASE, syscall.F_UNLCK)
		broken <- true
	}()
	if b, err := Read(p, 1<<20); err != nil || string(b) != "ref: refs/heads/main\n" {
		t.Fatalf("got %q, %v; want the file once the lease was given up", b, err)
	}
	if !<-broken {
		t.Fatal("the read did not break the lease")
	}
}
