package supervisor

import (
	"context"
	"testing"
	"time"

	"github.com/git-binky/git-binky/procgroup"
)

// stateOf is the process state procgroup reads for pid ('T' stopped).
func stateOf(pid int) byte {
	info, err := procgroup.ReadProc(pid)
	if err != nil {
		return 0
	}
	return info.State
}

// A service a supervisor that is gone had suspended for memory (SIGSTOP)
// is resumed when the next one adopts it: nothing else would ever send it
// SIGCONT. (An attack left a world's processes stopped for good across a
// daemon restart.)
func TestAnAdoptedSuspendedServiceIsResumed(t *testing.T) {
	api, _ := httpSpec(t, "api")
	g1, _ := NewGroup([]Spec{api}, nil)
	if err := g1.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := g1.Signal(procgroup.SigStop); err != nil {
		t.Fatal(err)
	}
	st := g1.Statuses()[0]
	g1.Close()
	deadline := time.Now().Add(5 * time.Second)
	for stateOf(st.PID) != 'T' && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if stateOf(st.PID) != 'T' || st.State != Suspended {
		t.Fatalf("the service was not suspended: state %q, process %q", st.State, stateOf(st.PID))
	}

	g2, _ := NewGroup([]Spec{api}, nil)
	if !g2.Adopt("api", st) {
		t.Fatal("did not adopt the suspended service")
	}
	events, cancel := g2.Subscribe()
	defer cancel()
	waitFor(t, events, g2, func(s Status) bool { return s.State == Healthy })
	if stateOf(st.PID) == 'T' {
		t.Error("the adopted service is still stopped")
	}
	g2.Stop(context.Background())
}
