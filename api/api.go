// Package api is the wire protocol between git-binky clients (the CLI, the
// MCP server) and the daemon: one request per connection on the unix
// socket, as a JSON line, answered by any number of event lines and then
// exactly one result or error line.
package api

import (
	"encoding/json"
	"time"

	"github.com/git-binky/git-binky/world"
)

// Ops the daemon answers.
const (
	OpHello  = "hello"
	OpUp     = "up"
	OpDown   = "down"
	OpReload = "reload"
	// OpReset makes a world's data again (Service's slice, or all):
	// stopped, its slices dropped, then started as up makes them.
	OpReset    = "reset"
	OpRemove   = "remove"
	OpStatus   = "status"
	OpShutdown = "shutdown"
	// OpHook hands the daemon a git event (Event) in the worktree at Dir;
	// it is answered at once and handled in the background, so that a
	// checkout never waits for a world.
	OpHook = "hook"
	// OpWatch tells the daemon the registered repositories changed.
	OpWatch = "watch"
	// OpMetrics asks for point-in-time figures.
	OpMetrics = "metrics"
	// OpGC sweeps orphaned slices.
	OpGC = "gc"
	// OpService stops, starts or restarts one service (Service) of a
	// running world; Action is one of the Service* actions.
	OpService = "service"
	// OpServers lists the managed shared servers, or stops or starts one
	// (Action "stop" or "start", Name the kind; Name "" is all).
	OpServers = "servers"
	// OpGolden lists the golden templates of this home, or drops one
	// (Action "drop", Name the template).
	OpGolden = "golden"
)

// Actions of OpService.
const (
	ServiceStop    = "stop"
	ServiceStart   = "start"
	ServiceRestart = "restart"
)

// GC is the answer to OpGC.
type GC struct {
	DryRun  bool     `json:"dry_run"`
	Orphans []Orphan `json:"orphans"`
	Errors  []string `json:"errors,omitempty"`
}

// Orphan is a slice marked as binky's whose world is gone.
type Orphan struct {
	Adapter string `json:"adapter"`
	Name    string `json:"name"`
	World   string `json:"world"`
	Server  string `json:"server"` // password redacted
	Dropped bool   `json:"dropped"`
	Error   string `json:"error,omitempty"`
	// Note says why an orphan was left alone (a mark written by an older
	// binky, which names no home: it may be another home's), or, when it
	// was dropped, what was kept beside it (adapters.ErrKept).
	Note string `json:"note,omitempty"`
	// Why says what makes it an orphan when that is not its world being
	// gone (a golden template whose build did not finish).
	Why string `json:"why,omitempty"`
}

// Server is a managed shared server.
type Server struct {
	Kind    string `json:"kind"`
	Port    int    `json:"port,omitempty"`
	Running bool   `json:"running"`
	Dir     string `json:"dir"`
	// Data is where its data lives when that is not under Dir: as root,
	// under /var/lib/git-binky, which the server's own user can enter.
	Data    string `json:"data,omitempty"`
	Message string `json:"message,omitempty"`
	// Worlds are the running worlds with a slice on it (OpServers), which
	// lose their connections while it is stopped.
	Worlds []string `json:"worlds,omitempty"`
}

// Where says where the server's files are, for a person: its folder, and
// its data's when that is elsewhere.
func (s Server) Where() string {
	if s.Data == "" {
		return s.Dir
	}
	return s.Dir + ", data in " + s.Data
}

// Golden is a golden template, as OpGolden lists (or dropped) it.
type Golden struct {
	Name    string    `json:"name"`
	Adapter string    `json:"adapter"`
	Project string    `json:"project,omitempty"`
	Migrate string    `json:"migrate,omitempty"`
	Seed    string    `json:"seed,omitempty"`
	Built   time.Time `json:"built,omitzero"`
	Dropped bool      `json:"dropped,omitempty"`
	// Blank: the copy of template1 that plain PostgreSQL slices on
	// binky's own server are cloned from (no project, migrate or seed).
	Blank bool `json:"blank,omitempty"`
}

// Metrics is the answer to OpMetrics.
type Metrics struct {
	Schema          int            `json:"schema"`
	WorldsByState   map[string]int `json:"worlds_by_state"`
	ServicesByState map[string]int `json:"services_by_state"`
	QueueLength     int            `json:"queue_length"`
	Restarts        int            `json:"restarts"`
	PortsLeased     int            `json:"ports_leased"`
	StaleLeases     int            `json:"stale_leases"`
	SlicesByAdapter map[string]int `json:"slices_by_adapter"`
	Daemon          DaemonMetrics  `json:"daemon"`
}

// DaemonMetrics describes the daemon process itself.
type DaemonMetrics struct {
	PID           int     `json:"pid"`
	Version       string  `json:"version"`
	RSSBytes      uint64  `json:"rss_bytes"`
	Goroutines    int     `json:"goroutines"`
	UptimeSeconds float64 `json:"uptime_seconds"`
	ProxyRoutes   int     `json:"proxy_routes"`
}

// Hook events.
const (
	EventBorn     = "born"     // a worktree was created
	EventCheckout = "checkout" // a branch was checked out in a worktree
	EventTrusted  = "trusted"  // its config was approved
)

// Request is what a client asks.
type Request struct {
	Op      string `json:"op"`
	Version string `json:"version"` // the client's; a daemon of another version says so
	Dir     string `json:"dir,omitempty"`
	Name    string `json:"name,omitempty"`
	Group   string `json:"group,omitempty"`
	Force   bool   `json:"force,omitempty"`
	// Env is the caller's environment: services start from it, as they
	// would from the shell the user typed `git binky up` in.
	Env []string `json:"env,omitempty"`
	// Project limits status to the repository around Dir.
	Project bool `json:"project,omitempty"`
	// Event is the git event of an OpHook.
	Event string `json:"event,omitempty"`
	// DryRun makes OpGC only list.
	DryRun bool `json:"dry_run,omitempty"`
	// Service and Action are OpService's: which service, and what to do.
	Service string `json:"service,omitempty"`
	Action  string `json:"action,omitempty"`
}

// Message is one line from the daemon.
type Message struct {
	Event  *Event          `json:"event,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Event is progress while a request runs.
type Event struct {
	World   string `json:"world,omitempty"`
	Service string `json:"service,omitempty"`
	State   string `json:"state,omitempty"`
	Message string `json:"message,omitempty"`
}

// EventNotice is the State of an event every client shows, to a terminal
// or not: something about the result the user must know (an up that left
// a world running an older config).
const EventNotice = "notice"

// Error is a failed request. Code lets callers branch without parsing text.
type Error struct {
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// Error codes.
const (
	CodeVersion  = "version_mismatch"
	CodeDirty    = "dirty"
	CodeNotFound = "not_found"
	CodeConfig   = "config"
	CodeUsage    = "usage"
	// CodeStopping refuses a request a stopping daemon will not start:
	// the client waits for it to exit, then asks the next daemon.
	CodeStopping = "stopping"
)

// Hello is the daemon's answer to OpHello.
type Hello struct {
	Version string    `json:"version"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Home    string    `json:"home"`
	Worlds  int       `json:"worlds"`
	// Problems are parts of the daemon that could not start (the proxy's
	// port taken, https without Caddy), each with what to do.
	Problems []string `json:"problems,omitempty"`
	// Stopping, set once the daemon is asked to stop, says what it
	// finishes first (an up whose services are starting).
	Stopping string `json:"stopping,omitempty"`
}

// DaemonInfo is what a daemon writes to its home's daemon.json once it
// listens on its socket, and removes as it exits: a daemon whose file is
// there and whose socket refuses has closed it to stop.
type DaemonInfo struct {
	PID     int       `json:"pid"`
	Version string    `json:"version"`
	Started time.Time `json:"started"`
	// StartTick is its process's start time as procgroup reads it: a
	// daemon killed -9 leaves the file, and its pid may be another
	// process's since. 0 in an older daemon's file.
	StartTick uint64 `json:"start_tick,omitempty"`
}

// World is one world as status, up and down report it.
type World struct {
	ID       string         `json:"id"`
	Project  string         `json:"project"`
	Worktree string         `json:"worktree"`
	Path     string         `json:"path"`
	Branch   string         `json:"branch,omitempty"`
	State    world.State    `json:"state"`
	Missing  bool           `json:"missing,omitempty"` // the worktree folder is gone
	Ports    map[string]int `json:"ports"`
	Services []Service      `json:"services"`
	Slices   []Slice        `json:"slices,omitempty"`
	Message  string         `json:"message,omitempty"`
}

// Service is one supervised process of a world.
type Service struct {
	Name     string         `json:"name"`
	State    string         `json:"state"`
	PID      int            `json:"pid,omitempty"`
	Port     int            `json:"port,omitempty"`
	Ports    map[string]int `json:"ports,omitempty"`
	Restarts int            `json:"restarts"`
	ExitCode *int           `json:"exit_code,omitempty"`
	Started  *time.Time     `json:"started,omitempty"`
	// UptimeSeconds is how long the current process has run.
	UptimeSeconds float64 `json:"uptime_seconds,omitempty"`
	Message       string  `json:"message,omitempty"`
}

// Slice is one adapter slice of a world.
type Slice struct {
	Service string `json:"service"`
	Adapter string `json:"adapter"`
	Name    string `json:"name"`
	// Isolation is "none" when the server cannot keep worlds apart and the
	// world reaches its slice with the admin's credentials.
	Isolation string `json:"isolation,omitempty"`
	// Made is how the slice was made: "cloned" (from Template, in TookMS)
	// or "provisioned" (provisioned, migrated, seeded); empty while it is
	// incomplete.
	Made     string `json:"made,omitempty"`
	Template string `json:"template,omitempty"`
	TookMS   int64  `json:"took_ms,omitempty"`
	// Ran are the steps that ran on a provisioned slice ("migrate",
	// "seed"), or on a cloned one ("migrate", for the branch's
	// migrations; in TookMS too); a slice made by an older binky does not
	// say.
	Ran []string `json:"ran,omitempty"`
}

// Status is the answer to OpStatus.
type Status struct {
	Schema  int      `json:"schema"`
	Daemon  Hello    `json:"daemon"`
	Worlds  []World  `json:"worlds"`
	Servers []Server `json:"servers,omitempty"`
	// Notes say what the worlds listed do not: the worktree asked about is
	// run by another BINKY_HOME, for one.
	Notes []string `json:"notes,omitempty"`
}
