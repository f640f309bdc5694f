// Package mcpserver is git-binky's MCP server: agents call up, down, status,
// env, verify and logs as tools over stdio. Every tool goes through the same
// client API (and the same world functions) as the CLI, so an agent and a
// person see one behaviour and the same error messages. Nothing but protocol
// frames is ever written to stdout.
package mcpserver

import (
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/client"
	"github.com/git-binky/git-binky/logfile"
	"github.com/git-binky/git-binky/verify"
	"github.com/git-binky/git-binky/world"
)

// Server holds what the tools need.
type Server struct {
	Client *client.Client
	Home   world.Home
	// Dir is where a tool call without a dir argument acts from: the
	// directory the agent started `git binky mcp` in.
	Dir     string
	Version string
	// Env is the environment verify checks start from.
	Env []string
}

// Serve runs the MCP protocol on in/out until ctx is done or in closes.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	return server.NewStdioServer(s.MCP()).Listen(ctx, in, out)
}

// target is the arguments every world tool takes.
const (
	argName = "name"
	argDir  = "dir"
)

func worldArgs() []mcp.ToolOption {
	return []mcp.ToolOption{
		mcp.WithString(argName, mcp.Description("Worktree name (its folder name, git worktree name or branch). Omit for the worktree containing dir.")),
		mcp.WithString(argDir, mcp.Description("Absolute path of a folder in the repository (or worktree) to act on. Omit for the server's working directory.")),
	}
}

// MCP builds the mcp-go server with binky's tools.
func (s *Server) MCP() *server.MCPServer {
	m := server.NewMCPServer("git-binky", s.Version, server.WithToolCapabilities(false), server.WithRecovery())
	tool := func(name, desc string, opts ...mcp.ToolOption) mcp.Tool {
		return mcp.NewTool(name, append([]mcp.ToolOption{mcp.WithDescription(desc)}, opts...)...)
	}
	m.AddTool(tool("up", "Bring a worktree's isolated world up: allocate its ports, start its services in depends_on order and wait until they are healthy. A name with no worktree creates one on that branch. Idempotent.",
		append(worldArgs(), mcp.WithString("group", mcp.Description("Only the services of this [groups] entry (and their dependencies).")),
			mcp.WithOutputSchema[api.World]())...), s.up)
	m.AddTool(tool("down", "Stop a world's processes, keeping its ports, files and data; up again is fast.",
		append(worldArgs(), mcp.WithOutputSchema[api.World](), mcp.WithDestructiveHintAnnotation(false))...), s.down)
	m.AddTool(tool("status", "List every world on this machine with each service's state, pid, port, restarts and exit code.",
		mcp.WithBoolean("project", mcp.Description("Only worlds of the repository around dir.")),
		mcp.WithString(argDir, mcp.Description("Folder in the repository, for project.")),
		mcp.WithOutputSchema[api.Status](), mcp.WithReadOnlyHintAnnotation(true)), s.status)
	m.AddTool(tool("env", "A world's coordinates: every service's port and URL and the environment variables that carry them (API_PORT, API_URL, ...). Works before up.",
		append(worldArgs(), mcp.WithOutputSchema[world.Coordinates](), mcp.WithReadOnlyHintAnnotation(true))...), s.env)
	m.AddTool(tool("verify", "Run the project's [agents] verify checks in the worktree with the world's environment; reports each check's exit code and output.",
		append(worldArgs(), mcp.WithOutputSchema[verify.Result]())...), s.verify)
	m.AddTool(tool("logs", "The last lines each service of a world printed.",
		append(worldArgs(), mcp.WithString("service", mcp.Description("Only this service.")),
			mcp.WithNumber("lines", mcp.Description("Lines per service (default 50)."), mcp.Min(1), mcp.Max(5000)),
			mcp.WithOutputSchema[Logs](), mcp.WithReadOnlyHintAnnotation(true))...), s.logs)
	return m
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
	b, _ := json.MarshalIndent(v, "", "  ")
	return mcp.NewToolResultStructured(v, string(b)), nil
}

func (s *Server) up(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return result(s.Client.Up(ctx, s.dir(req), req.GetString(argName, ""), req.GetString("group", ""), nil))
}

func (s *Server) down(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return result(s.Client.Down(ctx, s.dir(req), req.GetString(argName, "")))
}

func (s *Server) status(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return result(s.Client.Status(ctx, s.dir(req), req.GetBool("project", false)))
}

func (s *Server) env(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return result(world.OpenCoordinates(ctx, s.Home, s.dir(req), req.GetString(argName, "")))
}

func (s *Server) verify(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	w, err := world.Open(s.Home, s.dir(req), req.GetString(argName, ""))
	if err != nil {
		return result(nil, err)
	}
	rec, err := w.Ensure(ctx)
	if err != nil {
		return result(nil, err)
	}
	res, err := verify.Run(ctx, w, rec, s.Env, nil)
	if err != nil {
		return result(nil, err)
	}
	out, _ := result(res, nil)
	out.IsError = !res.Passed
	return out, nil
}

// Logs is the result of the logs tool: lines per service.
type Logs struct {
	World    string              `json:"world"`
	Services map[string][]string `json:"services"`
}

func (s *Server) logs(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	w, err := world.Open(s.Home, s.dir(req), req.GetString(argName, ""))
	if err != nil {
		return result(nil, err)
	}
	paths, err := w.LogPaths(req.GetString("service", ""))
	if err != nil {
		return result(nil, err)
	}
	n := req.GetInt("lines", 50)
	out := Logs{World: w.Name, Services: map[string][]string{}}
	names := make([]string, 0, len(paths))
	for svc := range paths {
		names = append(names, svc)
	}
	sort.Strings(names)
	for _, svc := range names {
		lines := logfile.Tail(paths[svc], n)
		if lines == nil {
			lines = []string{}
		}
		out.Services[svc] = lines
	}
	return result(out, nil)
}
