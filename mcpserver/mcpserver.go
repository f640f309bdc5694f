// Package mcpserver is git-binky's MCP server: agents call up, down,
// status, env, verify, logs and the rest as tools over stdio. Every tool
// goes through the same client API (and the same world functions) as the
// CLI, so an agent and a person see one behaviour and the same error
// messages. Nothing but protocol frames is ever written to stdout.
//
// Every call is validated against the tool's input schema (a wrong type, an
// unknown key, a value out of range or arguments that are not an object are
// tool errors that say, in words, what the argument must be), a request
// before initialize is refused, long calls (up, reload, verify) report
// progress to a client that sent a progressToken (as does a call that
// waits for a stopping daemon), and a request the client cancelled gets no
// response, as the protocol says.
package mcpserver

import (
	"context"
	"io"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/git-binky/git-binky/client"
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
	// Heartbeat is how often long calls report progress when nothing else
	// happens (DefaultHeartbeat when zero).
	Heartbeat time.Duration
}

// Instructions is what the server tells a client at initialize: what a
// world is and which tool to call first.
const Instructions = `git-binky gives each git worktree of a repository its own isolated local world: its own ports, environment, database slices, URLs and supervised services, from the repository's binky.toml. Agents working on different branches never collide.

Start with "up" (name = the worktree or branch you work on; a name with no worktree creates one), then read ports and URLs from its result or from "env". Work in the worktree folder the result names; start nothing by hand on a fixed port. Reach services through their URL (API_URL) or API_DIRECT_URL. Run "verify" before reporting success, "logs" when something fails, "restart" for one service, "down" to pause (ports and data are kept) and "remove" to destroy a world and its worktree. "status" lists every world and says which BINKY_HOME answered. "env" hides passwords unless called with reveal = true.`

// workers is how many tool calls run at once: enough that a status or an
// env is never queued behind an agent's long ups and verifies (mcp-go's
// default is 5).
const workers = 32

// Serve runs the MCP protocol on in/out until ctx is done or in closes.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	f := newCancelFilter(out)
	return stdio(s.mcp(f), f).Listen(ctx, f.watch(in), f)
}

// stdio is the stdio transport of m, writing through f.
func stdio(m *server.MCPServer, f *cancelFilter) *server.StdioServer {
	srv := server.NewStdioServer(m)
	server.WithWorkerPoolSize(workers)(srv)
	srv.SetContextFunc(func(ctx context.Context) context.Context { return context.WithValue(ctx, filterKey{}, f) })
	return srv
}

// MCP builds the mcp-go server with binky's tools and resources.
func (s *Server) MCP() *server.MCPServer { return s.mcp(newCancelFilter(io.Discard)) }

func (s *Server) mcp(f *cancelFilter) *server.MCPServer {
	hooks := &server.Hooks{}
	hooks.AddBeforeCallTool(noteRequestID)
	hooks.AddBeforeReadResource(noteReadID)
	var v *validator // reads m's tools, so it is made after m
	validate := func(next server.ToolHandlerFunc) server.ToolHandlerFunc { return v.middleware(next) }
	m := server.NewMCPServer("git-binky", s.Version,
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(false, false),
		server.WithInstructions(Instructions),
		server.WithStrictInputSchemaDefault(),
		server.WithHooks(hooks),
		server.WithToolHandlerMiddleware(objectArguments),
		server.WithToolHandlerMiddleware(validate),
		server.WithToolHandlerMiddleware(s.ownDirGone),
		server.WithToolHandlerMiddleware(f.skipCancelled),
		server.WithRecovery())
	v = newValidator(m)
	for _, t := range s.tools() {
		m.AddTool(t.Tool, t.Handler)
	}
	s.addResources(m)
	return m
}
