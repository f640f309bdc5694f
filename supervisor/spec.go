package supervisor

import (
	"time"
)

// Spec describes one service to supervise.
type Spec struct {
	Name string
	// Cmd is run with /bin/sh -c, in Dir, with exactly Env.
	Cmd string
	// Shown is Cmd as logs and messages show it (as written, before
	// interpolation put secrets in it); Cmd when empty.
	Shown     string
	Dir       string
	Env       []string
	DependsOn []string
	Health    Health
	Restart   Policy
	// StopTimeout is the grace between SIGTERM and SIGKILL (default 5s).
	StopTimeout time.Duration
	// LogPath receives stdout and stderr; rotated past MaxLogBytes.
	LogPath     string
	MaxLogBytes int64
	// Mark, when set, is carried by every process of the service in its
	// environment (procgroup.MarkVar): stopping the service stops what
	// left its process group too (a setsid, a double-forked daemon). It
	// must stay the same for the service across daemons, which adopt it.
	Mark string
	// PortsFree, when set, is asked before every start: an error (a port of
	// the service held by another program) fails that start. Otherwise a
	// TCP probe answered by that program called a service healthy that
	// had exited with EADDRINUSE, and its restarts never ended.
	PortsFree func() error
	// Oneshot runs the service to completion (a migration): it is ready
	// when it exits 0, so its dependents start only then, and any other
	// end fails the Start waiting for it. It is never restarted, has no
	// health probe and no start period: it takes what it takes.
	Oneshot bool
	// Settle is how long a service with no probe must run before it
	// counts as ready (0: at once): one that dies in that time fails its
	// Start, as a probed one that dies before it is healthy does, rather
	// than crash-loop behind a Start that succeeded.
	Settle time.Duration
	// Hide, when set, hides the service's credentials in what binky
	// quotes of it (its last output, a probe's result and command): a
	// crash message is kept in the world's record and shown by status,
	// MCP and the daemon's log.
	Hide func(string) string
}

// hide is s with the spec's credentials hidden.
func (sp *Spec) hide(s string) string {
	if sp.Hide == nil {
		return s
	}
	return sp.Hide(s)
}

// Health is a readiness and liveness probe. A zero Health means "ready once
// started" (or once it has run Spec.Settle).
type Health struct {
	HTTP string // URL to GET; 2xx and 3xx are healthy
	TCP  string // host:port to dial
	Cmd  string // run with sh -c; exit 0 is healthy
	// Interval between probes once healthy (default 2s); while starting,
	// probes run every few milliseconds so that a fast service is seen at once.
	Interval time.Duration
	Timeout  time.Duration // per probe (default 2s)
	// StartPeriod is how long a service may take to first become healthy
	// (default 60s); failing probes in it do not count.
	StartPeriod time.Duration
	// Retries is how many failed probes in a row make a healthy service
	// unhealthy (default 3).
	Retries int
}

func (h Health) none() bool { return h.HTTP == "" && h.TCP == "" && h.Cmd == "" }

// Policy says when a service that exits is started again.
type Policy string

// Restart policies.
const (
	RestartNo        Policy = "no"
	RestartOnFailure Policy = "on-failure"
	RestartAlways    Policy = "always"
)

// State is where a service is in its life.
type State string

// Service states.
const (
	Starting State = "starting"
	Healthy  State = "healthy"
	// Running is a service with nothing to probe (no port and no health):
	// started, and so ready for its dependents, but never seen healthy.
	Running   State = "running"
	Unhealthy State = "unhealthy"
	Crashed   State = "crashed"
	Stopped   State = "stopped"
	Suspended State = "suspended"
	// Done is a oneshot that exited 0.
	Done State = "done"
)

// Status is a snapshot of one service.
type Status struct {
	Name      string    `json:"name"`
	PID       int       `json:"pid,omitempty"`
	PGID      int       `json:"pgid,omitempty"`
	StartTick uint64    `json:"start_tick,omitempty"`
	State     State     `json:"state"`
	Restarts  int       `json:"restarts"`
	ExitCode  *int      `json:"exit_code,omitempty"`
	Started   time.Time `json:"started,omitempty"`
	// Message explains the state: the last failed probe, the backoff before
	// the next restart, a crash loop.
	Message string `json:"message,omitempty"`
}

// Event is published on every state change.
type Event struct {
	Status Status
}

func (s Spec) withDefaults() Spec {
	if s.StopTimeout <= 0 {
		s.StopTimeout = 5 * time.Second
	}
	if s.Restart == "" {
		s.Restart = RestartOnFailure
	}
	if s.Oneshot {
		s.Restart, s.Health = RestartNo, Health{}
	}
	if s.MaxLogBytes <= 0 {
		s.MaxLogBytes = 10 << 20
	}
	h := &s.Health
	if h.Interval <= 0 {
		h.Interval = 2 * time.Second
	}
	if h.Timeout <= 0 {
		h.Timeout = 2 * time.Second
	}
	if h.StartPeriod <= 0 {
		h.StartPeriod = 60 * time.Second
	}
	if h.Retries <= 0 {
		h.Retries = 3
	}
	return s
}
