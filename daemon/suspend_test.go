package daemon

import (
	"testing"

	"github.com/git-binky/git-binky/world"
)

// A world suspended for memory comes back in the state it had: an
// untrusted one came back as running, the reason to trust it lost.
func TestAResumedWorldGetsBackTheStateItWasSuspendedIn(t *testing.T) {
	const why = "binky.toml changed: 'git binky trust' to run it"
	for _, tc := range []struct {
		name       string
		state      world.State
		reason     string
		meanwhile  func(*world.Record)
		approved   bool // the worktree's config approved by the resume
		want       world.State
		wantReason string
	}{
		{name: "running", state: world.StateRunning, want: world.StateRunning},
		{name: "untrusted", state: world.StateUntrusted, reason: why, want: world.StateUntrusted, wantReason: why},
		{name: "untrusted, approved while suspended", state: world.StateUntrusted, reason: why, approved: true, want: world.StateRunning},
		{name: "made untrusted while suspended", state: world.StateRunning,
			meanwhile: func(r *world.Record) { r.State, r.Reason = world.StateUntrusted, why },
			want:      world.StateUntrusted, wantReason: why},
		{name: "stopped while suspended", state: world.StateRunning,
			meanwhile: func(r *world.Record) { r.State, r.Reason = world.StateStopped, "" },
			want:      world.StateStopped},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &world.Record{State: tc.state, Standing: world.Standing{Reason: tc.reason}}
			suspendRecord(rec, true, false)
			if rec.State != world.StateSuspended {
				t.Fatalf("suspended: state %q", rec.State)
			}
			suspendRecord(rec, true, false) // a second suspend keeps the first one's memory
			if tc.meanwhile != nil {
				tc.meanwhile(rec)
			}
			suspendRecord(rec, false, tc.approved)
			if rec.State != tc.want || rec.Reason != tc.wantReason {
				t.Errorf("resumed: %q (%q), want %q (%q)", rec.State, rec.Reason, tc.want, tc.wantReason)
			}
			if rec.SuspendedFrom != "" || rec.SuspendedReason != "" {
				t.Errorf("resumed, the record still holds %q/%q", rec.SuspendedFrom, rec.SuspendedReason)
			}
		})
	}
}

// A suspension that comes after a down or reload stopped the world (the
// two are not ordered) leaves its state alone: no resume would follow.
func TestOnlyARunningOrUntrustedWorldIsMarkedSuspended(t *testing.T) {
	for _, st := range []world.State{world.StateStopped, world.StateStarting, world.StateFailed} {
		rec := &world.Record{State: st}
		suspendRecord(rec, true, false)
		if rec.State != st || rec.SuspendedFrom != "" {
			t.Errorf("a %s world suspended: %q (from %q)", st, rec.State, rec.SuspendedFrom)
		}
	}
}
