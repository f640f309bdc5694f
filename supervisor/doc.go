// Package supervisor runs a set of services as process groups: it starts
// them in depends_on order once their dependencies are ready, probes their
// health, restarts them by policy with capped exponential backoff, writes
// their output to size-capped log files and stops whole process groups, so
// no grandchild survives. It knows nothing of git or worlds; the daemon turns
// a world's services into Specs.
//
// Services write straight to their log files rather than through a pipe
// held by this process, so they keep running (and logging) when the
// supervising process exits; a new supervisor adopts them by pid and start
// time with Adopt.
package supervisor
