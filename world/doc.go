// Package world is binky's model of a world: one git worktree's isolated
// local environment. It knows nothing of processes, sockets or servers;
// the daemon, the CLI, the MCP server and the adapters all read and write
// worlds through it.
//
// The files, by what they hold:
//
//   - config.go, check.go, interp.go: binky.toml, parsed (with file, line
//     and column in errors), checked (`git binky check`), and its ${...}
//     tokens interpolated.
//   - order.go: the depends_on graph: start order, cycles, groups.
//   - world.go: a World (repository + worktree + config) and its
//     coordinates: ports, URLs, slice addresses and the environment every
//     process of the world gets.
//   - record.go: the world's state on disk, one copy in the worktree's
//     admin folder and the machine copy under $BINKY_HOME/worlds/ that
//     teardown reads after git has deleted the admin folder.
//   - ports.go: machine-wide port leases (one O_EXCL file per port).
//   - home.go, settings.go: $BINKY_HOME and its settings.toml.
//   - trust.go: approval of a binky.toml's exact content for automatic
//     starts; registry.go: the repositories the watcher follows.
//   - names.go, route.go, shell.go, redact.go, logs.go, locate.go: names
//     (env, DNS), proxy routes, shell quoting, hiding credentials, service
//     logs, and mapping a path to its world.
//
// State files are replaced atomically (WriteFileAtomic: temp file + rename)
// and leases created with O_EXCL, so a crash at any line leaves state that
// can be read back.
package world
