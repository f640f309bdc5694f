package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/client"
	"github.com/git-binky/git-binky/gitx/gittest"
	"github.com/git-binky/git-binky/world"
)

// session is a raw JSON-RPC client of a Server over pipes: what any MCP
// client sends, byte for byte, including what a well-behaved SDK never
// would (arguments as an array, a string for a number).
type session struct {
	t     *testing.T
	in    *io.PipeWriter
	out   *bufio.Reader
	id    int
	lines chan string
}

func start(t *testing.T, s *Server) *session {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = s.Serve(ctx, inR, outW); outW.Close() }()
	t.Cleanup(func() { cancel(); inW.Close() })
	return open(t, inW, outR)
}

// open initializes a session with a server reading in and writing out.
func open(t *testing.T, in *io.PipeWriter, out io.Reader) *session {
	c := connect(t, in, out)
	c.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

// connect is a session on in and out that has sent nothing yet.
func connect(t *testing.T, in *io.PipeWriter, out io.Reader) *session {
	c := &session{t: t, in: in, out: bufio.NewReader(out), lines: make(chan string, 100)}
	go func() {
		for {
			line, err := c.out.ReadString('\n')
			if err != nil {
				close(c.lines)
				return
			}
			c.lines <- line
		}
	}()
	return c
}

func (c *session) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// call sends a request with raw params and returns the response's result or
// error object.
func (c *session) call(method, params string) map[string]any {
	c.t.Helper()
	c.id++
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.id, method, params))
	return c.response(c.id, nil)
}

// response waits for the response to id; notifications seen meanwhile go
// to onNote.
func (c *session) response(id int, onNote func(map[string]any)) map[string]any {
	c.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatal("server closed its output")
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				c.t.Fatalf("not JSON on stdout: %q", line)
			}
			if _, isNote := m["method"]; isNote {
				if onNote != nil {
					onNote(m)
				}
				continue
			}
			if fmt.Sprint(m["id"]) != fmt.Sprint(id) {
				c.t.Fatalf("response to %v while waiting for %d: %s", m["id"], id, line)
			}
			if e, ok := m["error"]; ok {
				return map[string]any{"protocolError": e}
			}
			return m["result"].(map[string]any)
		case <-deadline:
			c.t.Fatalf("no response to %d", id)
		}
	}
}

func (c *session) tool(name, args string) map[string]any {
	c.t.Helper()
	return c.call("tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args))
}

func text(r map[string]any) string {
	var b strings.Builder
	content, _ := r["content"].([]any)
	for _, x := range content {
		if m, ok := x.(map[string]any); ok {
			b.WriteString(fmt.Sprint(m["text"]))
		}
	}
	return b.String()
}

func isError(r map[string]any) bool { v, _ := r["isError"].(bool); return v }

// repo makes a repository with a binky.toml and returns a server acting in
// it, with a home of its own and no daemon (the tools tested here need none).
func repo(t *testing.T, config string) (*Server, string) {
	t.Helper()
	gittest.Isolate(t)
	dir := gittest.NewRepo(t, t.TempDir(), "acme", map[string]string{world.ConfigFile: config})
	home := world.Home{Dir: filepath.Join(t.TempDir(), "home")}
	os.MkdirAll(home.Dir, 0o700)
	os.WriteFile(home.SettingsPath(), []byte("port_min = 41000\nport_max = 41999\n"), 0o600)
	return &Server{Client: client.New(home, "test"), Home: home, Dir: dir, Version: "test"}, dir
}

const dbConfig = `[project]
name = "acme"
[services.api]
cmd = "echo hi >&2; sleep 60"
url = "api"
env = { API_TOKEN = "literal-token-value" }
`

func TestMalformedCallsAreToolErrorsNamingTheArgument(t *testing.T) {
	s, _ := repo(t, dbConfig)
	c := start(t, s)
	// Each error says, in words, which argument is wrong and what it must
	// be: an agent reads it and corrects its call.
	for _, tc := range []struct {
		tool, args, want string
	}{
		{"env", `{"name":123}`, `argument "name" must be a string, got the number 123`},
		{"env", `{"name":["repo"]}`, `argument "name" must be a string, got an array`},
		{"env", `{"dir":5}`, `argument "dir" must be a string`},
		{"up", `{"name":123}`, `argument "name" must be a string`},
		{"status", `{"project":"yes"}`, `argument "project" must be a boolean, got the string "yes"`},
		{"env", `{"nmae":"x"}`, `unknown argument "nmae" (it takes dir, name, reveal)`},
		{"logs", `{"lines":-5}`, `argument "lines" must be at least 1, got -5`},
		{"logs", `{"lines":0}`, `argument "lines" must be at least 1, got 0`},
		{"logs", `{"lines":2.5}`, `argument "lines" must be an integer, got the number 2.5`},
		{"logs", `{"lines":99999}`, `argument "lines" must be at most`},
		// 1e20 overflowed to a negative offset, which read the tail
		// instead; a log rotates at 10 MB, so no offset is near 2^31.
		{"logs", `{"offset":1e20}`, `argument "offset" must be at most`},
		{"restart", `{}`, `missing argument "service"`},
		{"curl", `{"service":"api","method":"BREW"}`, `argument "method" must be one of GET, HEAD`},
		{"env", `{"name":null}`, `argument "name" must be a string, got null (leave out an argument you do not set)`},
		{"env", `{"zz":1,"aa":2,"mm":3}`, `unknown arguments "aa", "mm", "zz" (it takes dir, name, reveal)`},
		{"env", `{"name":"` + strings.Repeat("x", 500) + `","reveal":"` + strings.Repeat("y", 500) + `"}`, `argument "reveal" must be a boolean, got the string "yyyyyyyy`},
		{"restart", `{"service":""}`, `argument "service" must not be empty`},
		// An empty name acted on the server's own worktree: a model that
		// fills every argument stopped (or removed) the wrong world.
		{"down", `{"name":""}`, `argument "name" must not be empty: leave it out`},
		{"down", `{"dir":""}`, `argument "dir" must not be empty: leave it out`},
		{"remove", `{"name":""}`, `argument "name" must not be empty`},
		// A 15 MB name came back quoted twice in a 31 MB error.
		{"env", `{"name":"` + strings.Repeat("n", 5000) + `"}`, `argument "name" must be at most 1024 characters long`},
		{"curl", `{"service":"api","headers":["a: b",7]}`, `argument "headers[1]" must be a string, got the number 7`},
		// A relative dir was joined to the server's folder, and acted on
		// the server's own worktree.
		{"up", `{"dir":"relative/path"}`, `dir = "relative/path" is not an absolute path`},
		{"env", `{"dir":"/no/such/folder"}`, `dir = "/no/such/folder" is not a folder on this machine`},
		{"env", `["repo"]`, "JSON object"},
		{"env", `"repo"`, "JSON object"},
	} {
		r := c.tool(tc.tool, tc.args)
		if pe, ok := r["protocolError"]; ok {
			t.Errorf("%s %s: protocol error %v, want a tool error the model sees", tc.tool, tc.args, pe)
			continue
		}
		if !isError(r) || !strings.Contains(text(r), tc.want) {
			t.Errorf("%s %s: want a tool error saying %q, got isError=%v %q", tc.tool, tc.args, tc.want, isError(r), text(r))
		}
		if strings.Contains(text(r), "&{") || len(text(r)) > 300 {
			t.Errorf("%s %s: error prints a Go struct or a whole value: %q", tc.tool, tc.args, text(r))
		}
	}
	// Every tool's schema compiles, and says what the tool takes.
	for _, name := range []string{"up", "down", "status", "env", "verify", "logs", "restart", "curl", "doctor", "remove", "reload", "reset"} {
		if r := c.tool(name, `{"no_such_argument":1}`); !strings.Contains(text(r), `unknown argument "no_such_argument"`) {
			t.Errorf("%s with an unknown argument: %q", name, text(r))
		}
	}
}

// A tool added after the server was built is validated too.
func TestALateToolIsValidated(t *testing.T) {
	c := startWith(t, func(_ *Server, m *server.MCPServer) {
		m.AddTool(mcp.NewTool("late", mcp.WithNumber("n", mcp.Required())), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ran"), nil
		})
	})
	if r := c.tool("late", `{"n":"x"}`); !isError(r) || !strings.Contains(text(r), `argument "n" must be a number`) {
		t.Errorf("a late tool with a wrong argument: %q", text(r))
	}
	if r := c.tool("late", `{"n":2}`); text(r) != "ran" {
		t.Errorf("a late tool with a right argument: %q", text(r))
	}
}

func TestToolsAreAnnotatedForWhatTheyDo(t *testing.T) {
	s, _ := repo(t, dbConfig)
	c := start(t, s)
	r := c.call("tools/list", `{}`)
	tools, _ := r["tools"].([]any)
	seen := map[string]map[string]any{}
	for _, x := range tools {
		m := x.(map[string]any)
		seen[m["name"].(string)] = m
	}
	for _, name := range []string{"up", "reload", "reset", "down", "remove", "status", "env", "verify", "logs", "restart", "stop", "start", "curl", "trust", "doctor"} {
		m, ok := seen[name]
		if !ok {
			t.Errorf("no tool %s", name)
			continue
		}
		a, _ := m["annotations"].(map[string]any)
		if a["title"] == nil || a["title"] == "" || m["title"] == nil {
			t.Errorf("%s has no title: %v", name, m)
		}
		if a["openWorldHint"] != false {
			t.Errorf("%s: openWorldHint %v, want false (everything is local)", name, a["openWorldHint"])
		}
		schema, _ := m["inputSchema"].(map[string]any)
		if schema["additionalProperties"] != false {
			t.Errorf("%s: input schema allows unknown keys", name)
		}
	}
	for _, name := range []string{"status", "env", "logs", "doctor"} {
		a := seen[name]["annotations"].(map[string]any)
		if a["readOnlyHint"] != true || a["destructiveHint"] != false {
			t.Errorf("%s: readOnly %v destructive %v", name, a["readOnlyHint"], a["destructiveHint"])
		}
	}
	for _, name := range []string{"up", "down"} {
		if a := seen[name]["annotations"].(map[string]any); a["idempotentHint"] != true || a["destructiveHint"] != false {
			t.Errorf("%s: idempotent %v destructive %v", name, a["idempotentHint"], a["destructiveHint"])
		}
	}
	for _, name := range []string{"remove", "reset"} {
		if a := seen[name]["annotations"].(map[string]any); a["destructiveHint"] != true {
			t.Errorf("%s is not marked destructive", name)
		}
	}
	lines := seen["logs"]["inputSchema"].(map[string]any)["properties"].(map[string]any)["lines"].(map[string]any)
	if lines["type"] != "integer" {
		t.Errorf("logs.lines is %v, want integer", lines["type"])
	}
	init := c.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	if ins, _ := init["instructions"].(string); !strings.Contains(ins, "up") || !strings.Contains(ins, "world") {
		t.Errorf("initialize gives no instructions: %v", init["instructions"])
	}
}

func TestEnvHidesCredentialsUnlessRevealed(t *testing.T) {
	s, dir := repo(t, dbConfig+`[services.db]
adapter = "postgres"
`)
	w, err := world.Open(s.Home, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	recordSlice(t, w)
	c := start(t, s)
	r := c.tool("env", fmt.Sprintf(`{"dir":%q}`, dir))
	if isError(r) {
		t.Fatal(text(r))
	}
	if strings.Contains(text(r), "literal-token-value") || strings.Contains(fmt.Sprint(r["structuredContent"]), "literal-token-value") {
		t.Errorf("env shows a credential without reveal:\n%s", text(r))
	}
	if !strings.Contains(text(r), "API_PORT") || !strings.Contains(text(r), "postgres://acme_acme:xxxxx@127.0.0.1:5432/acme_acme") {
		t.Errorf("env lost the rest:\n%s", text(r))
	}
	// The document `env --json` prints, with its schema version.
	if sc, ok := r["structuredContent"].(map[string]any); !ok || sc["schema"] != float64(world.EnvSchema) || sc["env"] == nil {
		t.Errorf("env's structured result is not env --json's document: %v", r["structuredContent"])
	}
	r = c.tool("env", fmt.Sprintf(`{"dir":%q,"reveal":true}`, dir))
	if !strings.Contains(text(r), "literal-token-value") {
		t.Errorf("env with reveal hides the credential:\n%s", text(r))
	}
}

func TestTextIsReadableJSON(t *testing.T) {
	s, dir := repo(t, dbConfig)
	c := start(t, s)
	r := c.tool("env", fmt.Sprintf(`{"dir":%q}`, dir))
	if strings.Contains(text(r), `\u003e`) || strings.Contains(text(r), `\u0026`) {
		t.Errorf("text escapes HTML characters: %s", text(r))
	}
}

func TestNotFoundHintsAreQuotedForTheShell(t *testing.T) {
	s, dir := repo(t, dbConfig)
	c := start(t, s)
	r := c.tool("env", fmt.Sprintf(`{"dir":%q,"name":"$(touch x)"}`, dir))
	if !isError(r) || !strings.Contains(text(r), `git binky up '$(touch x)'`) {
		t.Errorf("hint not quoted: %s", text(r))
	}
}

func TestLogsPagesWithAnOffsetAndTailsLongLines(t *testing.T) {
	s, dir := repo(t, dbConfig)
	w, err := world.Open(s.Home, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := w.LogPaths("api")
	os.MkdirAll(filepath.Dir(p["api"]), 0o700)
	long := strings.Repeat("y", 70_000)
	os.WriteFile(p["api"], []byte("one\n"+long+"\ntwo\nthree\n"), 0o600)
	c := start(t, s)
	var logs struct {
		Services map[string]world.ServiceLog `json:"services"`
	}
	decode := func(r map[string]any) {
		t.Helper()
		if isError(r) {
			t.Fatal(text(r))
		}
		b, _ := json.Marshal(r["structuredContent"])
		if err := json.Unmarshal(b, &logs); err != nil {
			t.Fatal(err)
		}
	}
	decode(c.tool("logs", fmt.Sprintf(`{"dir":%q,"lines":3}`, dir)))
	// The long line comes back cut, saying how long it was.
	if got := logs.Services["api"].Lines; len(got) != 3 || !strings.HasSuffix(got[0], "[line cut: 70000 bytes]") || len(got[0]) > 20_000 {
		t.Errorf("lines:3 after a 70,000-character line gave %d lines", len(got))
	}
	decode(c.tool("logs", fmt.Sprintf(`{"dir":%q,"lines":2,"offset":0}`, dir)))
	first := logs.Services["api"]
	if len(first.Lines) != 2 || first.Lines[0] != "one" {
		t.Fatalf("first page %v", first.Lines)
	}
	decode(c.tool("logs", fmt.Sprintf(`{"dir":%q,"lines":10,"offset":%d}`, dir, first.Next)))
	if got := logs.Services["api"].Lines; len(got) != 2 || got[0] != "two" {
		t.Errorf("next page %v", got)
	}
}

func TestCancelledRequestsGetNoResponse(t *testing.T) {
	var out strings.Builder
	f := newCancelFilter(&out)
	r := f.watch(strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}` + "\n"))
	io.Copy(io.Discard, r)
	io.WriteString(f, `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`+"\n")
	io.WriteString(f, `{"jsonrpc":"2.0","id":8,"result":{}}`+"\n"+`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7}}`+"\n")
	io.WriteString(f, `{"jsonrpc":"2.0","id":7,`)
	io.WriteString(f, `"result":{}}`+"\n")
	got := out.String()
	if strings.Count(got, `"id":7`) != 1 || !strings.Contains(got, `"id":8`) || !strings.Contains(got, "notifications/progress") {
		t.Errorf("after cancelling 7, the output is:\n%s\nwant the first response to 7 dropped and everything else kept", got)
	}
}

// probeServer is a server with a tool that notes each run, and a session
// on it that has sent nothing yet.
func probeServer(t *testing.T) (*session, chan bool) {
	ran := make(chan bool, 10)
	_, in, out := serveRaw(t, func(_ *Server, m *server.MCPServer) {
		m.AddTool(mcp.NewTool("probe"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran <- true
			return mcp.NewToolResultText("ran"), nil
		})
	})
	return connect(t, in, out), ran
}

func refusedEarly(r map[string]any) bool {
	pe, _ := r["protocolError"].(map[string]any)
	return pe != nil && pe["code"] == float64(mcp.INVALID_REQUEST) && strings.Contains(fmt.Sprint(pe["message"]), "initialize")
}

// A client that writes its first messages at once (initialize, the
// initialized notification, a tool call) has them answered in turn: what
// follows an initialize request waits for its answer, and is not refused.
func TestRequestsWrittenWithInitializeWaitForItsAnswer(t *testing.T) {
	c, ran := probeServer(t)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"probe","arguments":{}}}`)
	if r := c.response(1, nil); r["protocolVersion"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	if r := c.response(2, nil); refusedEarly(r) || text(r) != "ran" {
		t.Errorf("a tool call written with initialize: %v, want it run", r)
	}
	select {
	case <-ran:
	default:
		t.Error("the probe did not run")
	}
}

// A session starts with initialize: a tool call before its answer is
// refused and does not run (it could be an up or a remove), whether no
// initialize came, one came as a notification or one failed; a ping is
// answered; after a good initialize the same call runs.
func TestCallsBeforeInitializeAreRefused(t *testing.T) {
	c, ran := probeServer(t)
	if r := c.tool("probe", `{}`); !refusedEarly(r) {
		t.Errorf("tools/call before initialize: %v, want an invalid-request error saying to initialize", r)
	}
	if _, ok := c.call("ping", `{}`)["protocolError"]; ok {
		t.Error("a ping before initialize is refused")
	}
	c.send(`{"jsonrpc":"2.0","method":"initialize","params":{}}`)
	if r := c.tool("probe", `{}`); !refusedEarly(r) {
		t.Errorf("tools/call after an initialize notification: %v, want it refused", r)
	}
	if r := c.call("initialize", `{"protocolVersion":5}`); r["protocolError"] == nil {
		t.Fatalf("a malformed initialize was accepted: %v", r)
	}
	if r := c.tool("probe", `{}`); !refusedEarly(r) {
		t.Errorf("tools/call after a failed initialize: %v, want it refused", r)
	}
	c.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if r := c.tool("probe", `{}`); text(r) != "ran" {
		t.Errorf("the call after initialize: %v", r)
	}
	if n := len(ran); n != 1 {
		t.Errorf("the probe ran %d times, want once (after initialize)", n)
	}
}

// A client of protocol 2026-07-28 has no initialize: it may ask
// server/discover, and names its version in every request's _meta.
func TestAClientWithoutInitializeByProtocolIsServed(t *testing.T) {
	c, ran := probeServer(t)
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"modern","version":"1"}}`
	if r := c.call("server/discover", `{`+meta+`}`); r["protocolError"] != nil {
		t.Errorf("server/discover: %v", r)
	}
	if r := c.call("tools/call", `{"name":"probe","arguments":{},`+meta+`}`); text(r) != "ran" || len(ran) != 1 {
		t.Errorf("a 2026-07-28 tools/call: %v, want it run", r)
	}
}

// A call the client cancels before it starts (queued behind others, or
// overtaken by its cancel) must not run: mcp-go only cancels a call that
// has started, and an agent's cancelled down or remove would still happen.
// An id written 9.0 by the client is the id 9. (Both found by an attack.)
func TestACallCancelledBeforeItStartsDoesNotRun(t *testing.T) {
	ran := make(chan string, 4)
	c := startWith(t, func(_ *Server, m *server.MCPServer) {
		m.AddTool(mcp.NewTool("probe", mcp.WithString("tag")), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ran <- req.GetString("tag", "")
			return mcp.NewToolResultText("ran"), nil
		})
	})
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9.0}}`)
	c.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"probe","arguments":{"tag":"cancelled"}}}`)
	c.id = 9
	if r := c.tool("probe", `{"tag":"next"}`); text(r) != "ran" {
		t.Fatalf("the call after the cancelled one: %v", r)
	}
	// The two calls ran side by side: give the first time to show up.
	time.Sleep(300 * time.Millisecond)
	for {
		select {
		case tag := <-ran:
			if tag == "cancelled" {
				t.Error("the call cancelled before it started ran")
			}
		default:
			return
		}
	}
}

// Progress a call reports comes before its response, every time: mcp-go
// queues notifications and writes them on another goroutine, which could
// overtake the response. (An attack saw 9 of 50 come after it.)
func TestProgressComesBeforeTheResponse(t *testing.T) {
	c := startWith(t, func(s *Server, m *server.MCPServer) {
		m.AddTool(mcp.NewTool("busy"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			p := s.newProgress(ctx, req)
			defer p.done()
			for i := 0; i < 3; i++ {
				p.event(api.Event{World: "w", Message: fmt.Sprint("step ", i)})
			}
			return mcp.NewToolResultText("done"), nil
		})
	})
	for i := 0; i < 30; i++ {
		c.id++
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"busy","arguments":{},"_meta":{"progressToken":"t%d"}}}`, c.id, c.id))
		notes := 0
		r := c.response(c.id, func(n map[string]any) {
			if params, _ := n["params"].(map[string]any); fmt.Sprint(params["progressToken"]) == fmt.Sprintf("t%d", c.id) {
				notes++
			}
		})
		if text(r) != "done" || notes != 3 {
			t.Fatalf("call %d: %d of 3 progress notifications before its response %v", i, notes, r)
		}
	}
}

// A world's env resource is named by its worktree in the URI, escaped as a
// URI escapes spaces and accents. (An attack found "wé x" not found.)
func TestTheEnvResourceNamesAWorktreeEscaped(t *testing.T) {
	s, dir := repo(t, "[project]\nname = \"acme\"\n[services.api]\ncmd = \"true\"\nurl = \"api\"\n")
	gittest.AddWorktree(t, dir, filepath.Join(filepath.Dir(dir), "wé x"), "feat/wé")
	c := start(t, s)
	r := c.call("resources/read", `{"uri":"binky://worlds/w%C3%A9%20x/env"}`)
	b, _ := json.Marshal(r)
	if _, failed := r["protocolError"]; failed || !strings.Contains(string(b), `BINKY_WORKTREE`) || !strings.Contains(string(b), `w\u00e9 x`) && !strings.Contains(string(b), "wé x") {
		t.Errorf("the env of worktree \"wé x\": %s", b)
	}
}

// startWith is start for a server with tools of the test's own, added by
// add, served over stdio as Serve serves it.
func startWith(t *testing.T, add func(*Server, *server.MCPServer)) *session {
	t.Helper()
	return open(serveRaw(t, add))
}

// serveRaw starts a server with extra tools and returns its pipes, with no
// session opened on them.
func serveRaw(t *testing.T, add func(*Server, *server.MCPServer)) (*testing.T, *io.PipeWriter, io.Reader) {
	t.Helper()
	s, _ := repo(t, "[project]\nname = \"acme\"\n")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	f := newCancelFilter(outW)
	m := s.mcp(f)
	add(s, m)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = stdio(m, f).Listen(ctx, f.watch(inR), f); outW.Close() }()
	t.Cleanup(func() { cancel(); inW.Close() })
	return t, inW, outR
}

// A world that does not exist is "resource not found" (-32002), as mcp-go
// answers a URI no resource matches, not an internal error: mcp-go makes
// -32603 of every handler error, and the client would take binky for
// broken. A URI of the wrong shape is not found either; other reads and
// errors keep their codes.
func TestAMissingWorldsEnvIsResourceNotFound(t *testing.T) {
	s, _ := repo(t, "[project]\nname = \"acme\"\n[services.api]\ncmd = \"true\"\n")
	c := start(t, s)
	for _, uri := range []string{"binky://worlds/no-such-world/env", "binky://worlds/a/b/env"} {
		r := c.call("resources/read", fmt.Sprintf(`{"uri":%q}`, uri))
		pe, _ := r["protocolError"].(map[string]any)
		if pe == nil || pe["code"] != float64(mcp.RESOURCE_NOT_FOUND) {
			t.Errorf("read %s: %v, want error code %d (resource not found)", uri, r, mcp.RESOURCE_NOT_FOUND)
		}
	}
	if pe, _ := c.call("resources/read", `{"uri":"binky://worlds/no-such-world/env"}`)["protocolError"].(map[string]any); pe == nil ||
		!strings.Contains(fmt.Sprint(pe["message"]), "no-such-world") {
		t.Errorf("the not-found error does not name the world: %v", pe)
	}
	// Here no daemon answers: an error of binky's own, which keeps mcp-go's code.
	if pe, _ := c.call("resources/read", `{"uri":"binky://worlds"}`)["protocolError"].(map[string]any); pe != nil && pe["code"] == float64(mcp.RESOURCE_NOT_FOUND) {
		t.Errorf("read binky://worlds: %v, not a missing resource", pe)
	}
	if pe, _ := c.call("tools/call", `{"name":"nosuchtool","arguments":{}}`)["protocolError"].(map[string]any); pe != nil && pe["code"] == float64(mcp.RESOURCE_NOT_FOUND) {
		t.Errorf("an unrelated error took the resource's code: %v", pe)
	}
}

// What a world's processes print can hold its credentials (a service that
// logs its DATABASE_URL, a check that echoes it): logs and verify hide
// them as env does, unless the call reveals them. (An attack read a
// world's password through both while env said xxxxx.)
func TestLogsAndVerifyHideCredentialsUnlessRevealed(t *testing.T) {
	s, dir := repo(t, dbConfig+`[services.db]
adapter = "postgres"
[agents]
verify = ["echo url=$DB_URL", "test -n '${db.password}'"]
`)
	w, err := world.Open(s.Home, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	recordSlice(t, w)
	p, _ := w.LogPaths("api")
	os.MkdirAll(filepath.Dir(p["api"]), 0o700)
	os.WriteFile(p["api"], []byte("connecting to postgres://acme_acme:literal-token-value@127.0.0.1:5432/acme_acme\n"), 0o600)
	c := start(t, s)
	for _, tc := range []struct {
		tool, args string
		shown      bool
	}{
		{"logs", fmt.Sprintf(`{"dir":%q}`, dir), false},
		{"logs", fmt.Sprintf(`{"dir":%q,"offset":0}`, dir), false},
		{"logs", fmt.Sprintf(`{"dir":%q,"reveal":true}`, dir), true},
		{"verify", fmt.Sprintf(`{"dir":%q}`, dir), false},
		{"verify", fmt.Sprintf(`{"dir":%q,"reveal":true}`, dir), true},
	} {
		r := c.tool(tc.tool, tc.args)
		all := text(r) + fmt.Sprint(r["structuredContent"])
		if shown := strings.Contains(all, "literal-token-value"); shown != tc.shown {
			t.Errorf("%s %s: password shown %v, want %v:\n%s", tc.tool, tc.args, shown, tc.shown, text(r))
		}
		if !tc.shown && !strings.Contains(all, "acme_acme:xxxxx@") {
			t.Errorf("%s %s lost the rest of the line:\n%s", tc.tool, tc.args, text(r))
		}
	}
}

// A token only the shell that ran `up` exported reached the world's
// processes, which printed it; MCP's hider read its own environment, which
// lacks it, and showed it. It reads the world's kept caller environment.
func TestLogsHideWhatOnlyTheUpsCallerHad(t *testing.T) {
	s, dir := repo(t, dbConfig)
	w, err := world.Open(s.Home, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Update(context.Background(), func(*world.Record) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Home.SaveCallerEnv(w.ID, []string{"PATH=/usr/bin", "MF_API_TOKEN=only-the-callers-token-1234"}); err != nil {
		t.Fatal(err)
	}
	// This server's own secret holds the caller's: hidden one after the
	// other, the longer one's ends showed.
	s.Env = append(s.Env, "MF_LONG_TOKEN=head-of-it-only-the-callers-token-1234-tail-of-it")
	p, _ := w.LogPaths("api")
	os.MkdirAll(filepath.Dir(p["api"]), 0o700)
	os.WriteFile(p["api"], []byte("using token only-the-callers-token-1234 now\nand head-of-it-only-the-callers-token-1234-tail-of-it too\n"), 0o600)
	c := start(t, s)
	r := c.tool("logs", fmt.Sprintf(`{"dir":%q}`, dir))
	if got := text(r); strings.Contains(got, "only-the-callers-token-1234") || strings.Contains(got, "head-of-it") || strings.Contains(got, "tail-of-it") || !strings.Contains(got, "using token") {
		t.Errorf("logs show a token, part of one, or lost the line:\n%s", got)
	}
}

// recordSlice records what up records for a provisioned postgres slice of
// the world, its password literal-token-value.
func recordSlice(t *testing.T, w *world.World) {
	t.Helper()
	if _, err := w.Update(context.Background(), func(r *world.Record) error {
		r.Slices = append(r.Slices, world.SliceRecord{Service: "db", Adapter: "postgres", Name: "acme_acme", Ready: true,
			Address: map[string]string{"url": "postgres://acme_acme:literal-token-value@127.0.0.1:5432/acme_acme", "password": "literal-token-value", "user": "acme_acme"}})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// Only initialize's own answer opens the session: a ping given the id of
// an initialize that then fails was answered first ({}), taken for the
// initialize's result, and a tool ran (an attack's order).
func TestAPingWithAPendingInitializesIDDoesNotOpenTheSession(t *testing.T) {
	c, ran := probeServer(t)
	pad := strings.Repeat("x", 8<<20) // the initialize parses slowly: the ping is answered first
	c.send(`{"jsonrpc":"2.0","id":700,"method":"initialize","params":{"protocolVersion":5,"pad":"` + pad + `"}}`)
	c.send(`{"jsonrpc":"2.0","id":700,"method":"ping"}`)
	c.response(700, nil)
	c.response(700, nil)
	if r := c.tool("probe", `{}`); !refusedEarly(r) {
		t.Errorf("tools/call after a failed initialize whose id a ping shared: %v, want it refused", r)
	}
	if n := len(ran); n != 0 {
		t.Errorf("the probe ran %d times before any initialize succeeded", n)
	}
}

// A message over MaxMessage is dropped with a parse error, read without
// holding it (a 400 MB line took 2.1 GB), and the session goes on.
func TestAMessageOverTheLimitIsRefusedAndTheSessionGoesOn(t *testing.T) {
	c, _ := probeServer(t)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", MaxMessage+10) + `"}}`)
	select {
	case line := <-c.lines:
		if !strings.Contains(line, `"code":-32700`) || !strings.Contains(line, "MiB") {
			t.Errorf("answer to an oversized message: %.200s", line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no answer to an oversized message")
	}
	c.id = 1
	if r := c.call("ping", `{}`); r["protocolError"] != nil {
		t.Errorf("a ping after the oversized message: %v", r)
	}
}

// A request that also carries a result (or an error) member is an invalid
// request, answered as one: mcp-go took it for a response to a request of
// its own and dropped it, and an initialize sent so wedged the session,
// end of input included, for good.
func TestARequestWithAResultMemberIsRefusedNotLost(t *testing.T) {
	c, ran := probeServer(t)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","result":{},"params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	r := c.response(1, nil)
	if pe, _ := r["protocolError"].(map[string]any); pe == nil || pe["code"] != float64(mcp.INVALID_REQUEST) {
		t.Fatalf("an initialize with a result member: %v, want an invalid-request error", r)
	}
	c.id = 1
	if r := c.call("ping", `{}`); r["protocolError"] != nil {
		t.Errorf("a ping after it: %v", r)
	}
	c.call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.id++
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","error":{"code":1,"message":"x"},"params":{"name":"probe","arguments":{}}}`, c.id))
	if r := c.response(c.id, nil); r["protocolError"] == nil || len(ran) != 0 {
		t.Errorf("a tools/call with an error member: %v (ran %d), want it refused, not run", r, len(ran))
	}
	// Keys as Go's decoder (mcp-go's) reads them: escaped, or in
	// another case.
	for _, member := range []string{`"res\u0075lt":{}`, `"Result":{}`, `"ERROR":{"code":1,"message":"x"}`, `"reſult":{}`} {
		c.id++
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call",%s,"params":{"name":"probe","arguments":{}}}`, c.id, member))
		if r := c.response(c.id, nil); r["protocolError"] == nil || len(ran) != 0 {
			t.Errorf("a tools/call with %s: %v (ran %d), want it refused, not run", member, r, len(ran))
		}
	}
	// A text that merely holds the words is a request like any other.
	if r := c.call("ping", `{"_meta":{"note":"\"result\": and \"error\":"}}`); r["protocolError"] != nil {
		t.Errorf("a ping whose params hold the words: %v", r)
	}
}

// An initialize mcp-go does not answer in time holds what follows for a
// bounded time, not for good: end of input ends the session; and its
// answer, should it come after all, opens the session.
func TestAnUnansweredInitializeHoldsTheSessionOnlySoLong(t *testing.T) {
	f := newCancelFilter(io.Discard)
	f.initializing[`1`] = true
	was := initializeWait
	initializeWait = 50 * time.Millisecond
	t.Cleanup(func() { initializeWait = was })
	done := make(chan struct{})
	go func() { f.awaitInitialize(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("awaitInitialize still waits")
	}
	if len(f.initializing) != 0 {
		t.Error("the unanswered initialize is still pending: every later line would wait again")
	}
	// Its answer, late, still opens the session: it was forgotten, and
	// every request after it was refused as coming before initialize.
	if _, err := f.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if !f.initialized.Load() {
		t.Error("the late answer to the initialize did not open the session")
	}
}

// The server's own worktree removed under it: a call that acts on its
// folder says so and how to go on (it said "not inside a git repository",
// and doctor to install git); one given a dir still works.
func TestAServerWhoseFolderIsGoneSaysSo(t *testing.T) {
	s, dir := repo(t, "[project]\nname = \"acme\"\n[services.api]\ncmd = \"true\"\n")
	other := gittest.NewRepo(t, t.TempDir(), "other", map[string]string{world.ConfigFile: "[project]\nname = \"other\"\n[services.api]\ncmd = \"true\"\n"})
	c := start(t, s)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"env", "doctor", "logs"} {
		r := c.tool(tool, `{}`)
		if !isError(r) || !strings.Contains(text(r), "is gone") || !strings.Contains(text(r), "give dir") {
			t.Errorf("%s from a folder that is gone: %v", tool, r)
		}
	}
	if r := c.tool("env", fmt.Sprintf(`{"dir":%q}`, other)); isError(r) {
		t.Errorf("env with another dir: %v", r)
	}
}
