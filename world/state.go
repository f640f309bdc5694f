package world

// State is a world's lifecycle state, as its record stores it and the
// daemon's API, the proxy and `git binky status` report it. The JSON values
// are the constants' strings.
type State string

// A world's states. (Its services have states of their own:
// supervisor.State.)
const (
	// StateNew: a record exists and holds its ports (`env` ran, or the
	// watcher saw the worktree); nothing was provisioned or started.
	StateNew State = "new"
	// StateProvisioned: slices were made, no process started
	// ([project] auto = "provision", or a worktree with no checkout).
	StateProvisioned State = "provisioned"
	// StateQueued: waiting for admission. Reported in up's events while
	// the world waits; never stored in a record.
	StateQueued State = "queued"
	// StateStarting: up is under way (ports, slices, processes).
	StateStarting State = "starting"
	// StateRunning: every service asked for is up.
	StateRunning State = "running"
	// StateSuspended: stopped with SIGSTOP by admission under memory
	// pressure; resumed (SIGCONT) when room returns.
	StateSuspended State = "suspended"
	// StateStopped: down, or up stopped before any process ran; ports and
	// data are kept.
	StateStopped State = "stopped"
	// StateFailed: up failed (a slice, a health check, a daemon that
	// died during up); the reason is in the daemon's log and events.
	StateFailed State = "failed"
	// StateUntrusted: the worktree's binky.toml is not approved on this
	// machine, so nothing was started automatically ('git binky trust').
	StateUntrusted State = "untrusted"
	// StateRemoved: the world was torn down; only remove's answer reports
	// it, since its records are deleted.
	StateRemoved State = "removed"
)

// transitions says which states a world may go to from each state: the
// one place that does. Staying in a state is always allowed.
var transitions = map[State][]State{
	"":               {StateNew},
	StateNew:         {StateProvisioned, StateStarting, StateStopped, StateUntrusted, StateRemoved},
	StateProvisioned: {StateStarting, StateStopped, StateUntrusted, StateRemoved},
	StateStarting:    {StateRunning, StateStopped, StateFailed, StateUntrusted, StateRemoved},
	StateRunning:     {StateStarting, StateStopped, StateSuspended, StateFailed, StateUntrusted, StateRemoved},
	StateSuspended:   {StateRunning, StateStarting, StateStopped, StateFailed, StateUntrusted, StateRemoved},
	StateStopped:     {StateStarting, StateProvisioned, StateUntrusted, StateRemoved},
	StateFailed:      {StateStarting, StateStopped, StateUntrusted, StateRemoved},
	StateUntrusted:   {StateProvisioned, StateStarting, StateRunning, StateSuspended, StateStopped, StateFailed, StateRemoved},
}

// CanBecome reports whether a world in state s may go to next.
func (s State) CanBecome(next State) bool {
	if s == next {
		return true
	}
	for _, t := range transitions[s] {
		if t == next {
			return true
		}
	}
	return false
}

// Known reports whether s is one of the states above.
func (s State) Known() bool {
	_, ok := transitions[s]
	return ok && s != "" || s == StateQueued || s == StateRemoved
}
