package world

import (
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
)

// A golden_key file under another process's write lease (Samba's oplocks,
// nfsd's delegations) is read once the lease is given up, as a plain open
// would: the non-blocking open alone is refused while the lease is broken.
func TestOpenRegularWaitsForALeaseToBeGivenUp(t *testing.T) {
	p := filepath.Join(t.TempDir(), "001_init.sql")
	if err := os.WriteFile(p, []byte("CREATE TABLE t (id int);\n"), 0o600); err != nil {
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
	fd, broken := holder.Fd(), make(chan bool, 1)
	go func() {
		<-sig
		syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_SETLEASE, syscall.F_UNLCK)
		broken <- true
	}()
	f, _, err := openRegular(p)
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
