package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
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

// lateDown is a world whose up waits for its migrate while hang exists,
// and whose slow service ignores SIGTERM (noting it in term-<worktree>):
// a down stopping it takes its stop_timeout.
const lateDown = `[project]
name = "acme"
[services.migrate]
cmd = "while [ -e ${env.GC_DIR}/hang ]; do sleep 0.1; done"
oneshot = true
[services.slow]
cmd = "trap 'touch ${env.GC_DIR}/term-$BINKY_WORKTREE' TERM; while :; do sleep 0.1; done"
stop_timeout = "8s"
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["migrate"]
`

// A stopping daemon closes its socket once the up it finishes is done, and
// exits only once the down it took meanwhile has stopped its world. A
// status asked in between waited ten silent seconds for a daemon that
// could not start (the old one held the lock), then failed with "the
// daemon did not start within 10s". It now waits for the old daemon,
// saying so (as progress over MCP, a note from the CLI), and the next
// daemon answers it.
func TestAStatusWhileTheDaemonFinishesALateDownWaitsAndSaysSo(t *testing.T) {
	f := newFixture(t, lateDown)
	f.mustGit(f.repo, "worktree", "add", "-q", "../feat", "-b", "feat")
	f.mustBinky(f.repo, "up", "feat")
	r := startRawMCP(t, f)
	os.WriteFile(filepath.Join(f.gcDir, "hang"), nil, 0o644)
	up := f.startBinky(f.repo, "up")
	f.waitOneshotStarting("acme")
	old := f.daemonPID()
	stop := f.startBinky(f.repo, "daemon", "stop")
	f.eventually("the daemon stopping", func() bool {
		out, _, _ := f.binky(f.repo, "daemon", "status")
		return strings.Contains(out, "stopping: ")
	})
	down := f.startBinky(f.repo, "down", "feat") // taken during the stop
	f.eventually("the down of feat stopping its slow service", func() bool {
		_, err := os.Stat(filepath.Join(f.gcDir, "term-feat"))
		return err == nil
	})
	os.Remove(filepath.Join(f.gcDir, "hang")) // acme's up ends: the socket closes
	f.eventually("the stopping daemon's socket closed", func() bool {
		c, err := net.Dial("unix", filepath.Join(f.home, "daemon.sock"))
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	if !pidAlive(old) {
		t.Fatal("the daemon exited before the down it took ended: nothing to wait for")
	}

	cli := f.startBinky(f.repo, "status")
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"status","arguments":{"dir":%q},"_meta":{"progressToken":"st"}}}`, f.repo))
	var notes []string
	res := r.wait(1, time.Now().Add(40*time.Second), func(m map[string]any) {
		if p, _ := m["params"].(map[string]any); m["method"] == "notifications/progress" {
			notes = append(notes, fmt.Sprint(p["message"]))
		}
	})
	if res == nil || res["result"].(map[string]any)["isError"] == true {
		t.Errorf("MCP status while the daemon stopped: %v", res)
	}
	if want := fmt.Sprintf("waiting for the daemon (pid %d) to stop", old); !strings.Contains(strings.Join(notes, "\n"), want) {
		t.Errorf("MCP status's progress does not say %q: %q", want, notes)
	}
	if stderr, err := cli(); err != nil || !strings.Contains(stderr, "note: waiting for the daemon") {
		t.Errorf("CLI status while the daemon stopped: %v\n%s", err, stderr)
	}
	if stderr, err := down(); err != nil {
		t.Errorf("down feat during the stop: %v\n%s", err, stderr)
	}
	if stderr, err := up(); err != nil {
		t.Errorf("up of acme, finished by the stopping daemon: %v\n%s", err, stderr)
	}
	if stderr, err := stop(); err != nil {
		t.Errorf("daemon stop: %v\n%s", err, stderr)
	}
	if f.daemonPID() == old {
		t.Error("the status was answered by the daemon that was stopping")
	}
	f.mustBinky(f.repo, "down")
}
