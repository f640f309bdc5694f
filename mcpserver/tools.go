package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/client"
	"github.com/git-binky/git-binky/doctor"
	"github.com/git-binky/git-binky/proxy"
	"github.com/git-binky/git-binky/verify"
	"github.com/git-binky/git-binky/world"
)

// Argument names shared by the tools.
const (
	argName    = "name"
	argDir     = "dir"
	argService = "service"
)

// hints are a tool's behaviour annotations. Every tool acts on this
// machine only, so none is open-world.
type hints struct {
	title                             string
	readOnly, destructive, idempotent bool
}

func (h hints) options() []mcp.ToolOption {
	return []mcp.ToolOption{
		mcp.WithTitleAnnotation(h.title),
		mcp.WithReadOnlyHintAnnotation(h.readOnly),
		mcp.WithDestructiveHintAnnotation(h.destructive),
		mcp.WithIdempotentHintAnnotation(h.idempotent),
		mcp.WithOpenWorldHintAnnotation(false),
	}
}

var (
	readOnly = hints{readOnly: true, idempotent: true}
	writes   = hints{}
)

func (h hints) titled(t string) hints { h.title = t; return h }
func (h hints) idempotentToo() hints  { h.idempotent = true; return h }
func (h hints) destroys() hints       { h.destructive = true; return h }
func newTool(name, desc string, h hints, opts ...mcp.ToolOption) mcp.Tool {
	all := append([]mcp.ToolOption{mcp.WithDescription(desc), mcp.WithToolTitle(h.title)}, h.options()...)
	return mcp.NewTool(name, append(all, opts...)...)
}

// maxNameArg and maxPathArg bound a name (worktree, branch, service) and a
// path: far above any real one (git's refs and Linux's paths), while a 15
// MB name came back quoted twice in a 31 MB error.
const (
	maxNameArg = 1024
	maxPathArg = 4096
)

func worldArgs() []mcp.ToolOption {
	return []mcp.ToolOption{
		mcp.WithString(argName, mcp.MinLength(1), mcp.MaxLength(maxNameArg), mcp.Description("Worktree name (its folder name, git worktree name or branch). Omit for the worktree containing dir.")),
		mcp.WithString(argDir, mcp.MinLength(1), mcp.MaxLength(maxPathArg), mcp.Description("Absolute path of a folder in the repository (or worktree) to act on. Omit for the server's working directory.")),
	}
}

func with(base []mcp.ToolOption, more ...mcp.ToolOption) []mcp.ToolOption {
	return append(append([]mcp.ToolOption(nil), base...), more...)
}

func serviceArg(what string) mcp.ToolOption {
	return mcp.WithString(argService, mcp.Required(), mcp.MinLength(1), mcp.MaxLength(maxNameArg), mcp.Description(what))
}

// tools is the table of binky's tools.
func (s *Server) tools() []server.ServerTool {
	group := mcp.WithString("group", mcp.Description("Only the services of this [groups] entry (and their dependencies)."))
	return []server.ServerTool{
		{Tool: newTool("up", "Bring a worktree's isolated world up: allocate its ports, provision its database slices, start its services in depends_on order and wait until they are healthy. A name with no worktree creates one on that branch. Idempotent. Sends progress notifications while it works (golden template builds can take a while).",
			writes.idempotentToo().titled("Bring a world up"), with(worldArgs(), group, mcp.WithOutputSchema[api.World]())...), Handler: s.up},
		{Tool: newTool("reload", "Restart a world in place: stop its services, then bring them up again on the same ports and data.",
			writes.titled("Reload a world"), with(worldArgs(), group, mcp.WithOutputSchema[api.World]())...), Handler: s.reload},
		{Tool: newTool("reset", "Make a world's data again, keeping its worktree and ports: stop it, drop its database slices (or only service's), then bring it up, which clones them afresh from this branch's golden template (or migrates and seeds them). What the world wrote to them is lost. For a branch whose migrations changed since its world was made. Sends progress notifications.",
			writes.destroys().titled("Reset a world's data"), with(worldArgs(),
				mcp.WithString(argService, mcp.MinLength(1), mcp.MaxLength(maxNameArg), mcp.Description("Only this data service's slice; omit for every one.")),
				mcp.WithOutputSchema[api.World]())...), Handler: s.reset},
		{Tool: newTool("down", "Stop a world's processes, keeping its ports, files and data; up again is fast.",
			writes.idempotentToo().titled("Stop a world"), with(worldArgs(), mcp.WithOutputSchema[api.World]())...), Handler: s.down},
		{Tool: newTool("remove", "Destroy a world: stop it, drop its database slices, release its ports and remove its worktree. Refuses a worktree with uncommitted changes unless force is true.",
			writes.destroys().titled("Remove a world and its worktree"), with(worldArgs(),
				mcp.WithBoolean("force", mcp.Description("Remove even with uncommitted changes (they are lost).")),
				mcp.WithOutputSchema[api.World]())...), Handler: s.remove},
		{Tool: newTool("status", "Every world on this machine (or only one, or this repository's) with each service's state, pid, port, restarts and exit code, and which BINKY_HOME's daemon answered.",
			readOnly.titled("World status"), with(worldArgs(),
				mcp.WithBoolean("project", mcp.Description("Only worlds of the repository around dir.")),
				mcp.WithOutputSchema[api.Status]())...), Handler: s.status},
		{Tool: newTool("env", "A world's coordinates: every service's port and URL and the environment variables that carry them (API_PORT, API_URL, DB_URL...). Works before up. Passwords are hidden unless reveal is true.",
			readOnly.titled("World environment"), with(worldArgs(),
				mcp.WithBoolean("reveal", mcp.Description("Include passwords and other credentials (they then appear in your transcript). Default false.")),
				mcp.WithOutputSchema[world.EnvDoc]())...), Handler: s.env},
		{Tool: newTool("verify", "Run the project's [agents] verify checks in the worktree with the world's environment; every check runs even after a failure. A failing check makes the result a tool error.",
			writes.titled("Verify a world"), with(worldArgs(), revealArg("Show the world's passwords where a check prints them (they then appear in your transcript). Default false: they read xxxxx."),
				mcp.WithOutputSchema[verify.Result]())...), Handler: s.verify},
		{Tool: newTool("logs", "What a world's services printed: the last lines of each log, or, with offset, the lines written from that byte offset on (pass back next_offset to page or poll).",
			readOnly.titled("Service logs"), with(worldArgs(),
				mcp.WithString(argService, mcp.Description("Only this service.")),
				mcp.WithInteger("lines", mcp.Description("Lines per service (default 50)."), mcp.Min(1), mcp.Max(5000)),
				mcp.WithInteger("offset", mcp.Description("Byte offset to read from (a next_offset from an earlier call); omit for the last lines."), mcp.Min(0), mcp.Max(math.MaxInt32)),
				revealArg("Show the world's passwords where a service printed them (they then appear in your transcript). Default false: they read xxxxx."),
				mcp.WithOutputSchema[Logs]())...), Handler: s.logs},
		{Tool: newTool("restart", "Restart one service of a running world on its port, leaving the others running.",
			writes.titled("Restart a service"), with(worldArgs(), serviceArg("The service to restart."), mcp.WithOutputSchema[api.World]())...), Handler: s.service(api.ServiceRestart)},
		{Tool: newTool("stop", "Stop one service of a running world, leaving the others running.",
			writes.idempotentToo().titled("Stop a service"), with(worldArgs(), serviceArg("The service to stop."), mcp.WithOutputSchema[api.World]())...), Handler: s.service(api.ServiceStop)},
		{Tool: newTool("start", "Start one stopped service of a running world (its dependencies must be up) and wait until it is healthy.",
			writes.idempotentToo().titled("Start a service"), with(worldArgs(), serviceArg("The service to start."), mcp.WithOutputSchema[api.World]())...), Handler: s.service(api.ServiceStart)},
		{Tool: newTool("curl", "Send an HTTP request to a world's service through binky's proxy (the Host header filled in) and return the status, headers and body. Redirects are not followed: a 3xx comes back as is, with its Location header.",
			writes.destroys().titled("HTTP request to a service"), with(worldArgs(), serviceArg("The service (one with a url)."),
				mcp.WithString("path", mcp.Description("Request path, default /.")),
				mcp.WithString("method", mcp.Description("HTTP method, default GET (POST with a body)."), mcp.Enum("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")),
				mcp.WithString("body", mcp.Description("Request body.")),
				mcp.WithArray("headers", mcp.Description(`Extra headers: a list of "Name: value" strings, e.g. ["Content-Type: application/json"] (not an object).`), mcp.WithStringItems()),
				mcp.WithOutputSchema[CurlResult]())...), Handler: s.curl},
		{Tool: newTool("trust", "Approve the binky.toml of a worktree for automatic starts (by the post-checkout hook and the watcher) on this machine. Read it first: it runs commands.",
			writes.idempotentToo().titled("Trust a binky.toml"),
			mcp.WithString(argDir, mcp.Description("A folder in the worktree whose binky.toml to approve.")),
			mcp.WithString("path", mcp.Description("The binky.toml itself, if not the worktree's.")),
			mcp.WithOutputSchema[Trusted]()), Handler: s.trust},
		{Tool: newTool("doctor", "Check the git-binky install, daemon, hooks, proxy and shared servers; each finding says what to do.",
			readOnly.titled("Diagnose git-binky"),
			mcp.WithString(argDir, mcp.Description("A folder in the repository to check from.")),
			mcp.WithOutputSchema[Doctor]()), Handler: s.doctor},
	}
}

// client is the server's client for one tool call: its wait for a
// stopping daemon is said as the call's progress, as the CLI says it on
// stderr, not in silence.
func (s *Server) client(p *progress) *client.Client {
	c := *s.Client
	c.Notice = p.notice
	return &c
}

func (s *Server) dir(req mcp.CallToolRequest) string {
	d := req.GetString(argDir, "")
	if d == "" {
		return s.Dir
	}
	if !filepath.IsAbs(d) {
		d = filepath.Join(s.Dir, d)
	}
	return d
}

// result returns v as structured content with its JSON as the text.
func result(v any, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		// A tool error the agent can read and act on, with the same
		// message the CLI prints; not a protocol error.
		return mcp.NewToolResultError(err.Error()), nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // ">&2" stays readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultStructured(v, strings.TrimSuffix(b.String(), "\n")), nil
}

func (s *Server) up(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := s.newProgress(ctx, req)
	defer p.done()
	return result(s.Client.Up(ctx, s.dir(req), req.GetString(argName, ""), req.GetString("group", ""), p.event))
}

func (s *Server) reload(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := s.newProgress(ctx, req)
	defer p.done()
	return result(s.Client.Reload(ctx, s.dir(req), req.GetString(argName, ""), req.GetString("group", ""), p.event))
}

func (s *Server) reset(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := s.newProgress(ctx, req)
	defer p.done()
	return result(s.Client.Reset(ctx, s.dir(req), req.GetString(argName, ""), req.GetString(argService, ""), p.event))
}

func (s *Server) down(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := s.newProgress(ctx, req)
	defer p.done()
	return result(s.client(p).Down(ctx, s.dir(req), req.GetString(argName, "")))
}

func (s *Server) remove(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := s.newProgress(ctx, req)
	defer p.done()
	return result(s.client(p).Remove(ctx, s.dir(req), req.GetString(argName, ""), req.GetBool("force", false)))
}

func (s *Server) status(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := s.newProgress(ctx, req)
	defer p.done()
	name := req.GetString(argName, "")
	st, err := s.client(p).Status(ctx, s.dir(req), req.GetBool("project", false))
	if err != nil || name == "" {
		return result(st, err)
	}
	// Only the world's id: a binky.toml mid-edit does not hide its status.
	repo, wt, err := world.Locate(s.dir(req), name)
	if err != nil {
		return result(nil, err)
	}
	id := world.WorldID(repo.CommonDir, wt.AdminDir)
	worlds := []api.World{}
	for _, x := range st.Worlds {
		if x.ID == id {
			worlds = append(worlds, x)
		}
	}
	st.Worlds = worlds
	return result(st, nil)
}

func (s *Server) env(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	c, err := world.OpenCoordinates(ctx, s.Home, s.dir(req), req.GetString(argName, ""))
	if err != nil {
		return result(c, err)
	}
	if !req.GetBool("reveal", false) {
		c = c.Redacted()
	}
	return result(c.Doc(), c.CheckUTF8())
}

func (s *Server) verify(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	p := s.newProgress(ctx, req)
	defer p.done()
	if w, err := world.Open(s.Home, s.dir(req), req.GetString(argName, "")); err == nil {
		p.hide = s.hider(w, req)
	}
	res, err := verify.RunWorld(ctx, s.Home, s.dir(req), req.GetString(argName, ""), s.Env, p.lines())
	if err != nil {
		return result(nil, err)
	}
	if p.hide != nil {
		for i := range res.Checks {
			// The command as run: interpolated, it can hold ${db.password}.
			res.Checks[i].Cmd = p.hide(res.Checks[i].Cmd)
			res.Checks[i].Output = p.hide(res.Checks[i].Output)
		}
	}
	out, _ := result(res, nil)
	out.IsError = !res.Passed
	return out, nil
}

// Logs is the result of the logs tool.
type Logs struct {
	World    string                      `json:"world"`
	Services map[string]world.ServiceLog `json:"services"`
	// Warning says the logs are those of the config the world was
	// started with, its binky.toml not loading now.
	Warning string `json:"warning,omitempty"`
}

func (s *Server) logs(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	w, warning, err := world.OpenApproved(s.Home, s.dir(req), req.GetString(argName, ""))
	if err != nil {
		return result(nil, err)
	}
	offset := int64(-1)
	if _, ok := req.GetArguments()["offset"]; ok {
		offset = int64(req.GetInt("offset", 0))
	}
	logs, err := w.Logs(req.GetString(argService, ""), req.GetInt("lines", 50), offset)
	if err != nil {
		return result(nil, err)
	}
	if hide := s.hider(w, req); hide != nil {
		for _, l := range logs {
			for i, line := range l.Lines {
				l.Lines[i] = hide(line)
			}
		}
	}
	return result(Logs{World: w.Name, Services: logs, Warning: warning}, nil)
}

// revealArg is the reveal argument of a tool whose result can carry what
// a world's processes printed.
func revealArg(what string) mcp.ToolOption {
	return mcp.WithBoolean("reveal", mcp.Description(what))
}

// hider hides the world's credentials in what its processes printed (a
// service that logs its DATABASE_URL), unless the call asked to reveal
// them: nil then, and for a world with no record (nothing to hide).
func (s *Server) hider(w *world.World, req mcp.CallToolRequest) func(string) string {
	if req.GetBool("reveal", false) {
		return nil
	}
	rec, err := w.Home.LoadRecord(w.ID)
	if err != nil {
		return nil
	}
	// The world's processes got the environment of the command that
	// started it, not this server's: a token only that shell exported
	// (and a service printed) is hidden too. One hider for both, so the
	// longest secret goes first whichever environment has it.
	if caller, ok := w.Home.CallerEnv(w.ID); ok {
		return w.ProcessHider(rec, s.Env, caller)
	}
	return w.ProcessHider(rec, s.Env)
}

func (s *Server) service(action string) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		p := s.newProgress(ctx, req)
		defer p.done()
		return result(s.client(p).Service(ctx, s.dir(req), req.GetString(argName, ""), req.GetString(argService, ""), action))
	}
}

// CurlResult is an HTTP answer from a world's service.
type CurlResult struct {
	Status  int                 `json:"status"`
	Headers map[string][]string `json:"headers"`
	Body    string              `json:"body"`
	// Truncated says the body was longer than the result keeps.
	Truncated bool `json:"truncated,omitempty"`
}

const maxCurlBody = 256 << 10

func (s *Server) curl(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	w, _, err := world.OpenApproved(s.Home, s.dir(req), req.GetString(argName, ""))
	if err != nil {
		return result(nil, err)
	}
	host, err := w.ServiceHost(req.GetString(argService, ""))
	if err != nil {
		return result(nil, err)
	}
	p := s.newProgress(ctx, req)
	defer p.done()
	if _, err := s.client(p).Start(ctx); err != nil { // the proxy is the daemon's
		return result(nil, err)
	}
	resp, err := proxy.Do(ctx, proxy.CurlRequest{ProxyPort: w.ProxyPort, Host: host, Path: req.GetString("path", "/"),
		Method: req.GetString("method", ""), Data: req.GetString("body", ""), Headers: req.GetStringSlice("headers", nil)})
	if err != nil {
		return result(nil, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCurlBody+1))
	if err != nil {
		return result(nil, fmt.Errorf("read the answer of %s: %w", host, err))
	}
	out := CurlResult{Status: resp.StatusCode, Headers: resp.Header, Body: string(body)}
	if len(body) > maxCurlBody {
		out.Body, out.Truncated = string(body[:maxCurlBody]), true
	}
	return result(out, nil)
}

// Trusted is the result of the trust tool.
type Trusted struct {
	File string `json:"file"`
	Hash string `json:"sha256"`
}

func (s *Server) trust(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	t, err := s.Client.Trust(ctx, s.dir(req), req.GetString("path", ""))
	return result(Trusted{File: t.File, Hash: t.Hash}, err)
}

// Doctor is the result of the doctor tool.
type Doctor struct {
	OK       bool             `json:"ok"`
	Findings []doctor.Finding `json:"findings"`
}

func (s *Server) doctor(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	f := doctor.Run(ctx, s.Client, s.dir(req))
	out := Doctor{OK: true, Findings: f}
	for _, x := range f {
		if x.Level == doctor.Problem {
			out.OK = false
		}
	}
	return result(out, nil)
}
