package supervisor

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// A health command that leaves a child holding its output (setsid sleep
// &) kept the probe waiting for that child: no probe finished until it
// exited. A probe is done a second after its own process is.
func TestAHealthCommandsLeftoverChildDoesNotHoldTheProbe(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sh's background job and setsid are POSIX")
	}
	s := &Spec{Name: "api", Health: Health{Cmd: "(setsid sleep 8 || sleep 8) & exit 0", Timeout: 20 * time.Second}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	ok, msg := probe(ctx, s)
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the probe took %s: it waited for the child it left", took)
	}
	if !ok {
		t.Errorf("probe = false, %s; want the exit 0 of the command", msg)
	}
}
