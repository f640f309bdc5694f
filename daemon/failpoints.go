package daemon

import (
	"os"
)

// Failure points let the end-to-end tests kill the daemon at a named step
// of an up, exactly as a kill -9 there would, without sleeps: a daemon
// started with BINKY_TEST_CRASH_AT=<step> sends itself SIGKILL when it
// reaches <step>. Every step of an up is listed here (the slices' own steps
// are named where slices are made).
const (
	// exitAtUpStarting: the record says "starting"; nothing is provisioned.
	exitAtUpStarting = "up.starting"
	// exitAtUpSlices: the slices are provisioned; no service has started.
	exitAtUpSlices = "up.slices"
	// exitAtUpServices: every service is started and healthy; the record
	// does not say "running" yet.
	exitAtUpServices = "up.services"
)

// failPoint dies at step when the tests asked for it.
func failPoint(step string) {
	if os.Getenv("BINKY_TEST_CRASH_AT") == step {
		killSelf()
		select {} // the signal is on its way
	}
}
