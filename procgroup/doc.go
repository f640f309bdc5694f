// Package procgroup runs binky.toml's command lines and acts on what they
// start as one process group: the same sh on every platform, each command
// the leader of a new group (a job object on Windows), signalled, stopped
// and killed as a whole, and processes identified by pid and start time so
// a reused pid is never mistaken for a service.
//
// It is apart from supervisor so that the CLI (verify runs its checks in the
// user's terminal) runs commands exactly as the daemon does without linking
// the supervisor's HTTP health probe: net/http and crypto/tls cost every
// `git binky env` ~0.25 ms of start-up (docs/performance.md).
package procgroup
