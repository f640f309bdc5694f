package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// slowService takes a few seconds to become healthy: longer than the
// client timeouts the tests below set.
const slowService = `[project]
name = "slow"
[services.api]
cmd = "testsvc -slow 5s"
url = "api"
health = { http = "/healthz", start_period = "60s" }
`

func TestMCPSDKClientSurvivesAnUpLongerThanItsTimeout(t *testing.T) {
	sdk := os.Getenv("BINKY_TEST_MCP_SDK")
	if sdk == "" {
		t.Skip("BINKY_TEST_MCP_SDK is unset: make test installs the MCP TypeScript SDK with npm when node is there")
	}
	f := newFixture(t, slowService)
	script, _ := filepath.Abs("testdata/mcp-sdk/up.mjs")
	// The script is run from the SDK's folder so that node finds its
	// node_modules; a 2 s request timeout, reset by each progress note.
	copyTo := filepath.Join(sdk, "up.mjs")
	b, _ := os.ReadFile(script)
	if err := os.WriteFile(copyTo, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", copyTo, filepath.Join(binDir, "git-binky"), f.repo, "agent-slow", "2000")
	cmd.Env = append(os.Environ(), append(f.env(), "BINKY_MCP_HEARTBEAT=500ms")...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var res struct {
		OK       bool    `json:"ok"`
		Progress int     `json:"progress"`
		Seconds  float64 `json:"seconds"`
		Error    string  `json:"error"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !res.OK || res.Seconds < 4 || res.Progress < 3 {
		log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log"))
		t.Fatalf("SDK client: %+v; want a healthy world after ~5 s with progress notes keeping the 2 s timeout from firing\ndaemon log:\n%s", res, log)
	}
	t.Logf("up took %.1fs with %d progress notifications and a 2s client timeout", res.Seconds, res.Progress)
}

// rawMCP drives `git binky mcp` with JSON-RPC lines, as any client does.
type rawMCP struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan map[string]any
	cmd   *exec.Cmd
}

func startRawMCP(t *testing.T, f *fixture, extraEnv ...string) *rawMCP {
	cmd := exec.Command(filepath.Join(binDir, "git-binky"), "mcp")
	cmd.Dir = f.repo
	cmd.Env = append(os.Environ(), append(f.env(), extraEnv...)...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &rawMCP{t: t, in: in, cmd: cmd, lines: make(chan map[string]any, 1000)}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<22)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("stdout carried a line that is not JSON-RPC: %q", sc.Text())
				continue
			}
			r.lines <- m
		}
		close(r.lines)
	}()
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.wait(0, time.Now().Add(10*time.Second), nil)
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (r *rawMCP) send(line string) {
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// wait returns the response to id, or nil at the deadline; notifications
// go to onNote.
func (r *rawMCP) wait(id int, deadline time.Time, onNote func(map[string]any)) map[string]any {
	for {
		select {
		case m, ok := <-r.lines:
			if !ok {
				return nil
			}
			if _, note := m["method"]; note {
				if onNote != nil {
					onNote(m)
				}
				continue
			}
			if fmt.Sprint(m["id"]) == fmt.Sprint(id) {
				return m
			}
			r.t.Errorf("unexpected response %v", m)
		case <-time.After(time.Until(deadline)):
			return nil
		}
	}
}

func TestMCPUpSendsProgressAndACancelledUpGetsNoResponse(t *testing.T) {
	f := newFixture(t, slowService)
	r := startRawMCP(t, f, "BINKY_MCP_HEARTBEAT=500ms")
	var notes []string
	collect := func(m map[string]any) {
		if m["method"] == "notifications/progress" {
			p, _ := m["params"].(map[string]any)
			if p["progressToken"] != "tok-1" && p["progressToken"] != "tok-2" {
				t.Errorf("progress for an unknown token: %v", p)
			}
			notes = append(notes, fmt.Sprint(p["message"]))
		}
	}
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up","arguments":{"dir":%q,"name":"first"},"_meta":{"progressToken":"tok-1"}}}`, f.repo))
	res := r.wait(1, time.Now().Add(60*time.Second), collect)
	if res == nil || res["result"].(map[string]any)["isError"] == true {
		t.Fatalf("up: %v", res)
	}
	// mcp-go queues notifications apart from responses, so the last ones
	// may trail the result by a moment.
	r.wait(-1, time.Now().Add(time.Second), collect)
	joined := strings.Join(notes, "\n")
	if !strings.Contains(joined, "api starting") || !strings.Contains(joined, "api healthy") || !strings.Contains(joined, "so far") {
		t.Errorf("progress notes lack the service's start, health or heartbeat:\n%s", joined)
	}

	// A second world, cancelled while its service starts: no response to
	// that request may follow, and the server keeps answering.
	notes = nil
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"up","arguments":{"dir":%q,"name":"second"},"_meta":{"progressToken":"tok-2"}}}`, f.repo))
	deadline := time.Now().Add(30 * time.Second)
	for len(notes) == 0 && time.Now().Before(deadline) {
		if m := r.wait(2, time.Now().Add(200*time.Millisecond), collect); m != nil {
			t.Fatalf("up of second answered before it was cancelled: %v", m)
		}
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"the user gave up"}}`)
	if m := r.wait(2, time.Now().Add(8*time.Second), nil); m != nil {
		t.Errorf("a cancelled request got a response: %v", m)
	}
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"status","arguments":{"dir":%q,"name":"first"}}}`, f.repo))
	st := r.wait(3, time.Now().Add(10*time.Second), nil)
	if st == nil || !strings.Contains(fmt.Sprint(st), "first") {
		t.Errorf("status after the cancel: %v", st)
	}
}
