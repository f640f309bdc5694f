package logfile

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogRotationAndTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.log")
	f, _ := Open(path)
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(f, "line %d\n", i)
	}
	Rotate(path, 100)
	fmt.Fprintln(f, "after rotation")
	f.Close()
	if got := Tail(path, 5); len(got) != 1 || got[0] != "after rotation" {
		t.Errorf("Tail after rotation = %q", got)
	}
	if got := Tail(path+".1", 2); strings.Join(got, ",") != "line 998,line 999" {
		t.Errorf("rotated Tail = %q", got)
	}
}
