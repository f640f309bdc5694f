package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/world"
)

// Resources: every world on the machine, and one world's environment
// (passwords hidden: the env tool with reveal gives them).
const (
	worldsURI   = "binky://worlds"
	envTemplate = "binky://worlds/{name}/env"
)

func (s *Server) addResources(m *server.MCPServer) {
	m.AddResource(mcp.NewResource(worldsURI, "worlds",
		mcp.WithResourceDescription("Every world on this machine with its services' state, as the status tool returns it."),
		mcp.WithMIMEType("application/json")), s.worldsResource)
	m.AddResourceTemplate(mcp.NewResourceTemplate(envTemplate, "world env",
		mcp.WithTemplateDescription("A world's coordinates and environment (passwords hidden), by worktree name."),
		mcp.WithTemplateMIMEType("application/json")), s.envResource)
}

func jsonContents(uri string, v any) ([]mcp.ResourceContents, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "application/json", Text: string(b)}}, nil
}

func (s *Server) worldsResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	st, err := s.Client.Status(ctx, s.Dir, false)
	if err != nil {
		return nil, err
	}
	return jsonContents(req.Params.URI, st)
}

func (s *Server) envResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	name, ok := strings.CutPrefix(req.Params.URI, "binky://worlds/")
	name, ok2 := strings.CutSuffix(name, "/env")
	if !ok || !ok2 || name == "" || strings.Contains(name, "/") {
		return nil, notFound(ctx, req, fmt.Errorf("resource %q: want %s", req.Params.URI, envTemplate))
	}
	// A URI escapes what a worktree name may hold (spaces, accents).
	if n, err := url.PathUnescape(name); err == nil {
		name = n
	}
	c, err := world.OpenCoordinates(ctx, s.Home, s.Dir, name)
	if errors.Is(err, gitx.ErrNoSuchWorktree) {
		return nil, notFound(ctx, req, err)
	}
	if err != nil {
		return nil, err
	}
	c = c.Redacted()
	if err := c.CheckUTF8(); err != nil {
		return nil, err
	}
	return jsonContents(req.Params.URI, c.Doc())
}

// notFound answers req with err as "resource not found" (-32002; invalid
// params, -32602, for clients of protocol 2026-07-28 and later, as mcp-go
// answers a URI no resource matches), not as the internal error mcp-go
// makes of every handler error.
func notFound(ctx context.Context, req mcp.ReadResourceRequest, err error) error {
	f, _ := ctx.Value(filterKey{}).(*cancelFilter)
	if f == nil || req.Params.Meta == nil {
		return err
	}
	key, ok := req.Params.Meta.AdditionalFields[requestIDField].(string)
	if !ok {
		return err
	}
	code := mcp.RESOURCE_NOT_FOUND
	if mcp.IsModernProtocol(server.RequestProtocolVersion(ctx)) {
		code = mcp.INVALID_PARAMS
	}
	f.setCode(key, code)
	return err
}
