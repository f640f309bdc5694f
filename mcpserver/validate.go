package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// validator checks a call's arguments against its tool's input schema and
// says what is wrong in words an agent can act on ("argument \"lines\" must
// be at least 1, got -5"). mcp-go's own validation prints the validator's
// structs ("/lines: &{Got:-5/1 Want:1/1}"), so binky validates instead.
type validator struct {
	m *server.MCPServer

	mu    sync.Mutex
	tools map[string]toolSchema // compiled on first use
}

type toolSchema struct {
	schema *jsonschema.Schema
	props  []string // the argument names the tool takes, sorted
}

func newValidator(m *server.MCPServer) *validator {
	return &validator{m: m, tools: map[string]toolSchema{}}
}

// schema returns the compiled input schema of the tool called name.
func (v *validator) schema(name string) (toolSchema, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if t, ok := v.tools[name]; ok {
		return t, true, nil
	}
	st := v.m.GetTool(name)
	if st == nil {
		return toolSchema{}, false, nil
	}
	raw := st.Tool.RawInputSchema
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(st.Tool.InputSchema); err != nil {
			return toolSchema{}, false, err
		}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return toolSchema{}, false, err
	}
	url := "mem:///tools/" + name + ".json"
	c := jsonschema.NewCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return toolSchema{}, false, err
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return toolSchema{}, false, err
	}
	var props []string
	if m, ok := doc.(map[string]any); ok {
		if ps, ok := m["properties"].(map[string]any); ok {
			for p := range ps {
				props = append(props, p)
			}
		}
	}
	sort.Strings(props)
	t := toolSchema{schema: compiled, props: props}
	v.tools[name] = t
	return t, true, nil
}

// middleware refuses a call whose arguments break its tool's schema, as a
// tool error (the model sees it and can correct the call).
func (v *validator) middleware(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if msg := v.check(req); msg != "" {
			return mcp.NewToolResultError(msg), nil
		}
		if msg := checkDir(req.GetString(argDir, "")); msg != "" {
			return mcp.NewToolResultError(msg), nil
		}
		return next(ctx, req)
	}
}

// ownDirGone refuses a call that acts on the server's own folder (no dir
// given) once that folder is gone, its worktree removed: every tool said
// "not inside a git repository", and doctor to install git. status, which
// lists every world, still answers.
func (s *Server) ownDirGone(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.GetString(argDir, "") == "" && req.Params.Name != "status" && s.Dir != "" {
			if fi, err := os.Stat(s.Dir); err != nil || !fi.IsDir() {
				return mcp.NewToolResultError(fmt.Sprintf("the folder this MCP server runs in, %s, is gone (its worktree was removed?): "+
					"give dir, the absolute path of a folder in the repository, or start the server again in one", s.Dir)), nil
			}
		}
		return next(ctx, req)
	}
}

// checkDir returns what is wrong with a tool's dir, or "": it must be an
// absolute path to a folder. A relative one was joined to the server's own
// folder, and a call meant for another worktree acted on the server's.
func checkDir(dir string) string {
	if dir == "" {
		return ""
	}
	if !filepath.IsAbs(dir) {
		return fmt.Sprintf("invalid arguments: dir = %q is not an absolute path: give the full path of a folder in the repository (or omit dir for the server's own folder)", dir)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Sprintf("invalid arguments: dir = %q is not a folder on this machine", dir)
	}
	return ""
}

// check returns what is wrong with req's arguments, or "".
func (v *validator) check(req mcp.CallToolRequest) string {
	t, ok, err := v.schema(req.Params.Name)
	if err != nil {
		return fmt.Sprintf("tool %s: its input schema does not compile: %v", req.Params.Name, err)
	}
	if !ok {
		return "" // mcp-go answers an unknown tool itself
	}
	raw := bytes.TrimSpace(req.Params.RawArguments)
	if len(raw) == 0 {
		b, err := json.Marshal(req.Params.Arguments)
		if err != nil {
			return fmt.Sprintf("invalid arguments: %v", err)
		}
		raw = b
	}
	var args any = map[string]any{}
	if !bytes.Equal(raw, []byte("null")) {
		a, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return fmt.Sprintf("invalid arguments: not JSON: %v", err)
		}
		args = a
	}
	err = t.schema.Validate(args)
	if err == nil {
		return ""
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return fmt.Sprintf("invalid arguments: %v", err)
	}
	var msgs []string
	for _, leaf := range leaves(verr) {
		if m := describe(leaf, args, t.props); !slices.Contains(msgs, m) {
			msgs = append(msgs, m)
		}
	}
	sort.Strings(msgs) // the validator's order follows a map's
	return fmt.Sprintf("invalid arguments to %s: %s", req.Params.Name, strings.Join(msgs, "; "))
}

// leaves are the violations themselves, not the nodes that group them.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

var printer = message.NewPrinter(language.English)

// describe says one violation in words, naming the argument.
func describe(e *jsonschema.ValidationError, args any, props []string) string {
	arg := "the arguments"
	if len(e.InstanceLocation) > 0 {
		arg = fmt.Sprintf("argument %q", argPath(e.InstanceLocation))
	}
	takes := "it takes no arguments"
	if len(props) > 0 {
		takes = "it takes " + strings.Join(props, ", ")
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		got := article(k.Got)
		if v, ok := at(args, e.InstanceLocation); ok {
			switch v.(type) {
			case nil:
				return fmt.Sprintf("%s must be %s, got null (leave out an argument you do not set)", arg, article(strings.Join(k.Want, " or ")))
			case map[string]any, []any:
			default:
				got = fmt.Sprintf("the %s %s", k.Got, shown(v))
			}
		}
		return fmt.Sprintf("%s must be %s, got %s", arg, article(strings.Join(k.Want, " or ")), got)
	case *kind.AdditionalProperties:
		unknown := slices.Sorted(slices.Values(k.Properties))
		return fmt.Sprintf("unknown %s %s (%s)", plural("argument", len(unknown)), quoteAll(unknown), takes)
	case *kind.Required:
		return fmt.Sprintf("missing %s %s", plural("argument", len(k.Missing)), quoteAll(slices.Sorted(slices.Values(k.Missing))))
	case *kind.Minimum:
		return fmt.Sprintf("%s must be at least %s, got %s", arg, k.Want.RatString(), k.Got.RatString())
	case *kind.Maximum:
		return fmt.Sprintf("%s must be at most %s, got %s", arg, k.Want.RatString(), k.Got.RatString())
	case *kind.MinLength:
		if k.Want == 1 && (arg == fmt.Sprintf("argument %q", argName) || arg == fmt.Sprintf("argument %q", argDir)) {
			// "" acted as if left out: on the server's own world.
			return fmt.Sprintf("%s must not be empty: leave it out instead", arg)
		}
		if k.Want == 1 {
			return fmt.Sprintf("%s must not be empty", arg)
		}
		return fmt.Sprintf("%s must be at least %d characters long, got %d", arg, k.Want, k.Got)
	case *kind.MaxLength:
		return fmt.Sprintf("%s must be at most %d characters long, got %d", arg, k.Want, k.Got)
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = fmt.Sprint(w)
		}
		return fmt.Sprintf("%s must be one of %s, got %s", arg, strings.Join(want, ", "), shown(k.Got))
	}
	return fmt.Sprintf("%s: %s", arg, e.ErrorKind.LocalizedString(printer))
}

// argPath names a place in the arguments as an agent would write it:
// headers[1], env.KEY.
func argPath(loc []string) string {
	var b strings.Builder
	for i, p := range loc {
		switch {
		case i == 0:
			b.WriteString(p)
		case isIndex(p):
			b.WriteString("[" + p + "]")
		default:
			b.WriteString("." + p)
		}
	}
	return b.String()
}

func isIndex(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// shown is a value as JSON, cut to a length an error message can carry.
func shown(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

// at is the value at path in v, as the validator decoded it.
func at(v any, path []string) (any, bool) {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = x[p]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func article(s string) string {
	switch s {
	case "integer", "object", "array":
		return "an " + s
	case "null":
		return s
	}
	if strings.Contains(s, " or ") {
		return s
	}
	return "a " + s
}

func plural(word string, n int) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
