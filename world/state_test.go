package world

import (
	"encoding/json"
	"testing"
)

func TestStateTransitions(t *testing.T) {
	for _, tc := range []struct {
		from, to State
		ok       bool
	}{
		{"", StateNew, true},
		{StateNew, StateStarting, true},
		{StateStarting, StateRunning, true},
		{StateRunning, StateSuspended, true},
		{StateSuspended, StateRunning, true},
		{StateRunning, StateStopped, true},
		{StateUntrusted, StateRunning, true}, // approved again while its services ran
		{StateRunning, StateRunning, true},
		{StateStopped, StateRunning, false}, // only through starting
		{StateNew, StateSuspended, false},
		{StateRemoved, StateStarting, false}, // a removed world has no record to start
		{StateRunning, StateQueued, false},   // queued is reported, never stored
	} {
		if got := tc.from.CanBecome(tc.to); got != tc.ok {
			t.Errorf("%q → %q: %v, want %v", tc.from, tc.to, got, tc.ok)
		}
	}
}

// Every state the table names is a known one, every stored state can be
// removed, and the JSON is the bare string older records hold.
func TestEveryStateIsKnownAndCanBeRemoved(t *testing.T) {
	for from, tos := range transitions {
		if from != "" && !from.Known() {
			t.Errorf("%q is in the table but not known", from)
		}
		if from != "" && !from.CanBecome(StateRemoved) {
			t.Errorf("a %s world cannot be removed", from)
		}
		for _, to := range tos {
			if !to.Known() {
				t.Errorf("%q → %q: %q is not known", from, to, to)
			}
		}
	}
	var r struct{ State State }
	if err := json.Unmarshal([]byte(`{"State": "suspended"}`), &r); err != nil || r.State != StateSuspended {
		t.Errorf("%+v %v", r, err)
	}
	if b, _ := json.Marshal(struct{ State State }{StateUntrusted}); string(b) != `{"State":"untrusted"}` {
		t.Errorf("%s", b)
	}
}
