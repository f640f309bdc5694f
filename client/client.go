// Package client talks to the git-binky daemon for the CLI and the MCP
// server, starting the daemon when none runs and replacing one of another
// version. Both front ends go through it, so they cannot drift apart.
package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/procgroup"
	"github.com/git-binky/git-binky/world"
)

// DaemonBinary is the name of the daemon executable.
const DaemonBinary = "binkyd"

// ErrNoDaemon is returned by calls that must not start a daemon when none runs.
var ErrNoDaemon = errors.New("the git-binky daemon is not running")

// Client is a connection factory for one BINKY_HOME.
type Client struct {
	Home    world.Home
	Version string
	// Env is sent with requests that start processes: the caller's
	// environment, which services inherit.
	Env []string
	// NoStart makes calls fail with ErrNoDaemon instead of starting one.
	NoStart bool
	// Notice, when set, is told once what a call waits for when that is
	// a stopping daemon finishing an up: the wait may be long, and the
	// user can end it.
	Notice func(string)
}

// New returns a client for home speaking as version.
func New(home world.Home, version string) *Client {
	return &Client{Home: home, Version: version, Env: world.WithoutGitExecPath(os.Environ())}
}

// Call sends req and returns the result, passing progress events to onEvent
// (which may be nil). Cancelling ctx hangs up, which cancels the request in
// the daemon.
func (c *Client) Call(ctx context.Context, req api.Request, onEvent func(api.Event), result any) error {
	// Requests travel as JSON, which carries only UTF-8: a folder named in
	// another encoding reached the daemon as another path ("not inside a
	// git repository").
	if !utf8.ValidString(req.Dir) {
		return fmt.Errorf("the folder %q is not named in UTF-8, which binky needs for the paths it sends its daemon: rename it (or the worktree) to a UTF-8 name", req.Dir)
	}
	req.Version = c.Version
	// A wait for a stopping daemon is said as the call's own progress
	// where it has some (an MCP agent's up sees it there), else to the user.
	notify := c.Notice
	if onEvent != nil {
		notify = func(msg string) { onEvent(api.Event{State: api.EventNotice, Message: msg}) }
	}
	replaced, waited := false, false
	for attempt := 0; ; attempt++ {
		conn, err := c.dial(ctx, notify)
		if err != nil {
			return err
		}
		err = c.roundTrip(ctx, conn, req, onEvent, result)
		var ae *api.Error
		switch {
		case errors.As(err, &ae) && ae.Code == api.CodeStopping && !waited:
			// A daemon asked to stop, finishing an up: the next one takes
			// this request once it has gone.
			waited = true
			if err := c.awaitExit(ctx, 0, notify); err != nil {
				return err
			}
			continue
		case errors.As(err, &ae) && ae.Code == api.CodeVersion && !replaced:
			// A daemon of another version: ask it to go (its services
			// keep running) and start ours, which adopts them.
			replaced = true
			if err := c.Shutdown(ctx); err != nil {
				return fmt.Errorf("replace daemon of another version: %w", err)
			}
			continue
		case errors.Is(err, errHungUp) && !resendable(req):
			// It may have been read and acted on before the daemon died: a
			// restart sent again runs a migration a second time.
			return fmt.Errorf("%w; it may have done part or all of %s before it stopped, so it was not sent again: 'git binky status' shows what runs", err, describeOp(req))
		case errors.Is(err, errHungUp) && attempt < 2 && ctx.Err() == nil:
			// The daemon died with our request unread (a crash, or a kill
			// while its last thread was exiting): a new one takes it.
			if err := sleep(ctx, 100*time.Millisecond); err != nil {
				return err
			}
			continue
		}
		return err
	}
}

// resendable reports whether req may be sent again to a new daemon when
// the last one hung up without answering: whether doing it twice is doing
// it once. A reload, or a service start or restart, runs its services (a
// oneshot's migration) again; a reset would drop the data the first one
// made; a golden drop would drop a template built since.
func resendable(req api.Request) bool {
	switch req.Op {
	case api.OpReload, api.OpReset:
		return false
	case api.OpService:
		// A start runs a done oneshot again; a stop is a stop.
		return req.Action == api.ServiceStop
	case api.OpGolden:
		return req.Action == ""
	}
	return true
}

// describeOp names a request as its command does.
func describeOp(req api.Request) string {
	parts := []string{req.Op}
	if req.Action != "" {
		parts = append(parts, req.Action)
	}
	if req.Service != "" {
		parts = append(parts, req.Service)
	}
	return "'" + strings.Join(parts, " ") + "'"
}

// errHungUp marks a connection the daemon closed before it answered anything.
var errHungUp = errors.New("the daemon hung up before answering")

func (c *Client) roundTrip(ctx context.Context, conn net.Conn, req api.Request, onEvent func(api.Event), result any) error {
	got := false
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := conn.Write(append(b, '\n')); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w (see %s): %v", errHungUp, c.Home.LogPath(), err)
	}
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var m api.Message
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return fmt.Errorf("daemon sent a bad message: %w", err)
		}
		got = true
		switch {
		case m.Event != nil:
			if onEvent != nil {
				onEvent(*m.Event)
			}
		case m.Error != nil:
			return m.Error
		default:
			if result == nil || len(m.Result) == 0 {
				return nil
			}
			return json.Unmarshal(m.Result, result)
		}
	}
	err = c.connErr(ctx, sc.Err())
	if !got && ctx.Err() == nil {
		return fmt.Errorf("%w (see %s): %v", errHungUp, c.Home.LogPath(), err)
	}
	return err
}

func (c *Client) connErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err == nil {
		err = errors.New("connection closed")
	}
	return fmt.Errorf("the daemon hung up (see %s): %w", c.Home.LogPath(), err)
}

// dial connects to the daemon, starting one if none answers. A daemon
// that runs but refuses is stopping: it is waited for (notify is told so
// once), then the next one is started.
func (c *Client) dial(ctx context.Context, notify func(string)) (net.Conn, error) {
	var d net.Dialer
	told := false
	for began := time.Now(); ; {
		conn, err := d.DialContext(ctx, "unix", c.Home.SocketPath())
		if err == nil {
			return conn, nil
		}
		if c.NoStart {
			return nil, ErrNoDaemon
		}
		if ctx.Err() != nil {
			// A call given up on never starts a daemon: one started for it
			// would outlive the daemon it raced and run on unasked.
			return nil, ctx.Err()
		}
		pid := c.daemonProcess()
		if pid == 0 {
			break
		}
		// Until it exits it holds the lock, and a daemon started now
		// would give way to it: this call waited 10 s for nothing, then
		// said "the daemon did not start".
		if !told && time.Since(began) > time.Second && notify != nil {
			notify(fmt.Sprintf("waiting for the daemon (pid %d) to stop: %s", pid, finishingLate))
			told = true
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return nil, err
		}
	}
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	return d.DialContext(ctx, "unix", c.Home.SocketPath())
}

// finishingLate is what a stopping daemon whose socket is closed still
// does: it closes it once the requests it took before the stop are done,
// and exits once those it answered during the stop (a down stopping a
// world's services) are.
const finishingLate = "its socket is closed, and it exits once the downs and removes it took while stopping are done"

// daemonProcess returns the pid of the daemon daemon.json names, if that
// process still runs (checked by its start time: a daemon killed -9
// leaves the file, and its pid may be another process's since), else 0.
func (c *Client) daemonProcess() int {
	b, err := os.ReadFile(c.Home.InfoPath())
	if err != nil {
		return 0
	}
	var info api.DaemonInfo
	if json.Unmarshal(b, &info) != nil || info.StartTick == 0 || !procgroup.Alive(info.PID, info.StartTick) {
		return 0
	}
	return info.PID
}

// Running reports whether a daemon answers on the socket.
func (c *Client) Running(ctx context.Context) bool {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Home.SocketPath())
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// Start makes sure a daemon of our version runs, and returns its hello.
func (c *Client) Start(ctx context.Context) (api.Hello, error) {
	var h api.Hello
	if err := c.Call(ctx, api.Request{Op: api.OpHello}, nil, &h); err != nil {
		return h, err
	}
	if h.Version != c.Version {
		if err := c.Shutdown(ctx); err != nil {
			return h, err
		}
		err := c.Call(ctx, api.Request{Op: api.OpHello}, nil, &h)
		return h, err
	}
	return h, nil
}

// Shutdown asks the daemon to exit, leaving services running, and waits
// until it has. No daemon is not an error.
func (c *Client) Shutdown(ctx context.Context) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Home.SocketPath())
	if err != nil {
		return nil
	}
	var h api.Hello
	if err := c.roundTrip(ctx, conn, api.Request{Op: api.OpShutdown, Version: c.Version}, nil, &h); err != nil {
		return err
	}
	return c.awaitExit(ctx, h.PID, c.Notice)
}

// awaitExit waits for the daemon (pid, or the one that answers) to exit
// after it was asked to stop. It waits as long as the daemon says what it
// is finishing, or runs with its socket closed (finishingLate), telling
// notify so once, after a second; and 15 seconds past the last such sign
// otherwise.
func (c *Client) awaitExit(ctx context.Context, pid int, notify func(string)) error {
	start := time.Now()
	deadline := start.Add(15 * time.Second)
	told := false
	for next := start; ; {
		if time.Now().After(next) {
			// Asked again each half second: a daemon that answers says
			// what it still finishes.
			next = time.Now().Add(500 * time.Millisecond)
			h, err := c.hello(ctx)
			if err == nil && pid == 0 {
				pid = h.PID
			}
			stopping := ""
			switch {
			case err == nil && h.PID == pid:
				stopping = h.Stopping
			case err != nil && pid != 0 && c.daemonProcess() == pid:
				stopping = finishingLate
			}
			if stopping != "" {
				deadline = time.Now().Add(15 * time.Second)
				if !told && time.Since(start) > time.Second && notify != nil {
					notify(fmt.Sprintf("waiting for the daemon (pid %d) to stop: %s", pid, stopping))
					told = true
				}
			}
		}
		if !processAlive(pid) && (pid != 0 || !c.Running(ctx)) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("daemon pid %d did not exit", pid)
		}
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
}

// hello asks the daemon that answers, starting none.
func (c *Client) hello(ctx context.Context) (api.Hello, error) {
	var h api.Hello
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Home.SocketPath())
	if err != nil {
		return h, err
	}
	err = c.roundTrip(ctx, conn, api.Request{Op: api.OpHello, Version: c.Version}, nil, &h)
	return h, err
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// DaemonPath finds the daemon executable: $BINKY_DAEMON, then beside the
// running binary (where make install and go install put both), then PATH.
func DaemonPath() (string, error) {
	dir := ""
	if exe, err := os.Executable(); err == nil {
		dir = filepath.Dir(exe)
	}
	return DaemonPathFrom(dir)
}

// DaemonPathFrom is DaemonPath for a binky in dir ("" for none): what that
// binky would run.
func DaemonPathFrom(dir string) (string, error) {
	if p := os.Getenv("BINKY_DAEMON"); p != "" {
		return p, nil
	}
	if dir != "" {
		p := filepath.Join(dir, DaemonBinary+exeSuffix)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath(DaemonBinary); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("cannot find %s beside binky or on PATH: install them with 'make install' (or 'go install ./cmd/...')", DaemonBinary)
}

// start launches a daemon in its own session, detached from the terminal,
// and waits for its socket. Two clients racing here both launch one; the
// daemon's lock lets only the first serve, and both clients connect to it.
func (c *Client) start(ctx context.Context) error {
	bin, err := DaemonPath()
	if err != nil {
		return err
	}
	if err := c.Home.Ensure(); err != nil {
		return err
	}
	logf, err := os.OpenFile(c.Home.LogPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open daemon log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "run")
	// Not the mark of a world's service we may be run from: stopping that
	// service would stop the daemon with it.
	cmd.Env = append(procgroup.WithMark(world.WithoutGitExecPath(os.Environ()), ""), "BINKY_HOME="+c.Home.Dir)
	procgroup.SealInheritedMarks()
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start daemon %s: %w", bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for !c.Running(ctx) {
		if time.Now().After(deadline) {
			return fmt.Errorf("the daemon did not start within 10s: see %s", c.Home.LogPath())
		}
		select {
		case <-exited:
			// Lost the race to another daemon, or failed: keep waiting for
			// a socket a little, then say where to look.
			if cmd.ProcessState != nil && !cmd.ProcessState.Success() {
				return fmt.Errorf("the daemon exited at start (%s): see %s", cmd.ProcessState, c.Home.LogPath())
			}
			exited = nil
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// Status returns every world the daemon knows (or those of the repository
// around dir, when project is set).
func (c *Client) Status(ctx context.Context, dir string, project bool) (api.Status, error) {
	var s api.Status
	err := c.Call(ctx, api.Request{Op: api.OpStatus, Dir: dir, Project: project}, nil, &s)
	return s, err
}

// Up brings the world named name (or the one around dir) up.
func (c *Client) Up(ctx context.Context, dir, name, group string, onEvent func(api.Event)) (api.World, error) {
	var w api.World
	err := c.Call(ctx, api.Request{Op: api.OpUp, Dir: dir, Name: name, Group: group, Env: c.Env}, onEvent, &w)
	return w, err
}

// Reload stops and starts a world on the same ports and data.
func (c *Client) Reload(ctx context.Context, dir, name, group string, onEvent func(api.Event)) (api.World, error) {
	var w api.World
	err := c.Call(ctx, api.Request{Op: api.OpReload, Dir: dir, Name: name, Group: group, Env: c.Env}, onEvent, &w)
	return w, err
}

// Reset makes a world's data again: the slice of service (every slice
// when ""), dropped and made as a new world's, then the world started.
func (c *Client) Reset(ctx context.Context, dir, name, service string, onEvent func(api.Event)) (api.World, error) {
	var w api.World
	err := c.Call(ctx, api.Request{Op: api.OpReset, Dir: dir, Name: name, Service: service, Env: c.Env}, onEvent, &w)
	return w, err
}

// Down stops a world's processes, keeping its ports and data.
func (c *Client) Down(ctx context.Context, dir, name string) (api.World, error) {
	var w api.World
	err := c.Call(ctx, api.Request{Op: api.OpDown, Dir: dir, Name: name}, nil, &w)
	return w, err
}

// Remove destroys a world and its worktree.
func (c *Client) Remove(ctx context.Context, dir, name string, force bool) (api.World, error) {
	var w api.World
	err := c.Call(ctx, api.Request{Op: api.OpRemove, Dir: dir, Name: name, Force: force}, nil, &w)
	return w, err
}

// Servers lists binky's own shared servers, or stops or starts them
// (action "stop" or "start", kind "" for all). Listing or stopping them
// starts no daemon when none runs: binkyd does it without one, from the
// servers' pid files, as the daemon would (a daemon killed -9 leaves them
// running).
func (c *Client) Servers(ctx context.Context, dir, action, kind string) ([]api.Server, error) {
	var res []api.Server
	req := api.Request{Op: api.OpServers, Dir: dir, Action: action, Name: kind}
	nc := *c
	nc.NoStart = nc.NoStart || action != "start"
	err := nc.Call(ctx, req, nil, &res)
	if !errors.Is(err, ErrNoDaemon) || c.NoStart {
		return res, err
	}
	bin, err := DaemonPath()
	if err != nil {
		return nil, err
	}
	args := []string{"servers"}
	if action != "" || kind != "" {
		args = append(args, action)
	}
	if kind != "" {
		args = append(args, kind)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "BINKY_HOME="+c.Home.Dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	var m api.Message
	if err := json.Unmarshal(out, &m); err != nil {
		return nil, fmt.Errorf("%s servers: %v: %s", bin, runErr, strings.TrimSpace(stderr.String()))
	}
	if m.Error != nil {
		return nil, m.Error
	}
	return res, json.Unmarshal(m.Result, &res)
}

// ExecDaemonBinary replaces this process with `binkyd <sub> <args...>`,
// for the commands that live in the daemon's binary (mcp, curl). Stdio is
// inherited as it is, which an MCP stdio server needs.
func ExecDaemonBinary(sub string, args ...string) error {
	bin, err := DaemonPath()
	if err != nil {
		return err
	}
	argv := append([]string{bin, sub}, args...)
	if err := execBinary(bin, argv); err != nil {
		return fmt.Errorf("run %s %s: %w", bin, sub, err)
	}
	return nil
}

// Service stops, starts or restarts one service of a running world.
func (c *Client) Service(ctx context.Context, dir, name, service, action string) (api.World, error) {
	var w api.World
	err := c.Call(ctx, api.Request{Op: api.OpService, Dir: dir, Name: name, Service: service, Action: action}, nil, &w)
	return w, err
}

// Trusted is what Trust approved.
type Trusted struct {
	File string `json:"file"`
	Hash string `json:"sha256"`
	// Auto is what the file's [project] auto has the daemon do now, in
	// the background: "up", "provision" or "off".
	Auto string `json:"auto"`
}

// Trust approves the binky.toml at path (or the one of the worktree around
// dir) for automatic starts on this machine, and tells the daemon, which
// then does what [project] auto says for that worktree. A daemon that
// cannot be reached is not an error: the approval is on disk.
func (c *Client) Trust(ctx context.Context, dir, path string) (Trusted, error) {
	file, err := world.FindConfig(dir, path)
	if err != nil {
		return Trusted{}, err
	}
	src, err := world.ReadConfigFile(file)
	if err != nil {
		return Trusted{}, fmt.Errorf("trust: %w", err)
	}
	// An approval of a file binky cannot use starts nothing: trust said
	// the world was starting, and only the daemon's log said why not.
	cfg, diags := world.ParseConfig(file, src)
	if world.HasErrors(diags) {
		return Trusted{}, fmt.Errorf("not trusted: %w; fix it, then trust it", &world.ConfigError{Diagnostics: diags})
	}
	if err := c.Home.Trust(src, file); err != nil {
		return Trusted{}, err
	}
	_ = c.Call(ctx, api.Request{Op: api.OpHook, Event: api.EventTrusted, Dir: filepath.Dir(file), Env: world.WithoutGitExecPath(os.Environ())}, nil, nil)
	t := Trusted{File: file, Hash: world.TrustHash(src), Auto: "up"}
	if cfg.Project.Auto != "" {
		t.Auto = cfg.Project.Auto
	}
	return t, nil
}
