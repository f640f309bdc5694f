package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/git-binky/git-binky/api"
)

func (f *fixture) viaProxy(host, path string) (int, string, error) {
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d%s", f.proxyPort, path), nil)
	req.Host = host
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func TestProxyRoutesEachWorldAndSays503WhileAServiceRestarts(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up", "a")
	f.mustBinky(f.repo, "up", "b")
	for _, n := range []string{"a", "b"} {
		code, body, err := f.viaProxy("web."+n+".acme.localhost", "/")
		if err != nil || code != 200 || !strings.HasPrefix(body, "web of "+n) {
			t.Fatalf("web of %s through the proxy: %d %q %v", n, code, body, err)
		}
	}
	env := f.mustBinky(f.repo, "env", "a", "--dotenv")
	if want := fmt.Sprintf("WEB_URL=http://web.a.acme.localhost:%d\n", f.proxyPort); !strings.Contains(env, want) {
		t.Errorf("env does not give the proxy URL %q:\n%s", want, env)
	}
	out := f.mustBinky(f.repo, "curl", "b", "api", "/x", "-i")
	if !strings.HasPrefix(out, "HTTP/1.1 200 OK") || !strings.Contains(out, "api of b") {
		t.Errorf("curl -i: %q", out)
	}

	api := service(f.world("a"), "api")
	signalPID(api.PID, syscall.SIGKILL)
	saw503 := false
	f.eventually("api of a back behind the proxy", func() bool {
		code, _, err := f.viaProxy("api.a.acme.localhost", "/")
		if code == 503 {
			saw503 = true
		}
		return err == nil && code == 200
	})
	if !saw503 {
		t.Log("the restart was faster than the first request; no 503 seen")
	}
	f.mustBinky(f.repo, "down", "a")
	code, body, _ := f.viaProxy("api.a.acme.localhost", "/")
	if code != 503 || !strings.Contains(body, "git binky up a") {
		t.Errorf("stopped service: %d %q", code, body)
	}
	_, stderr, err := f.binky(f.repo, "curl", "a", "api", "/", "-f")
	if ee, ok := err.(interface{ ExitCode() int }); !ok || ee.ExitCode() != 22 || !strings.Contains(stderr, "HTTP 503") {
		t.Errorf("curl -f of a stopped service: %v %s", err, stderr)
	}
}

func TestVerifyPassesAndFailsWithExitCodes(t *testing.T) {
	f := newFixture(t, oneService+`[agents]
verify = ["test \"$API_PORT\" -gt 0 && echo port $API_PORT", "echo checking; exit 3", "true"]
`)
	out, _, err := f.binky(f.repo, "verify")
	if ee, ok := err.(interface{ ExitCode() int }); !ok || ee.ExitCode() != 1 {
		t.Fatalf("verify with a failing check: %v\n%s", err, out)
	}
	for _, want := range []string{"port ", "checking", "FAIL  echo checking; exit 3", "exit 3)", "1 of 3 checks failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	os.WriteFile(filepath.Join(f.repo, "binky.toml"), []byte(oneService+"[agents]\nverify = [\"true\"]\n"), 0o644)
	if out, _, err := f.binky(f.repo, "verify"); err != nil || !strings.Contains(out, "1 checks passed") {
		t.Errorf("passing verify: %v\n%s", err, out)
	}
}

func TestMCPServerDrivesARealDaemon(t *testing.T) {
	f := newFixture(t, oneService)
	c, err := mcpclient.NewStdioMCPClient(filepath.Join(binDir, "git-binky"), append(os.Environ(), f.env()...), "mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "binky-test", Version: "1"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ServerInfo.Name != "git-binky" {
		t.Errorf("server %+v", res.ServerInfo)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.InputSchema.Type != "object" {
			t.Errorf("%s: no input schema", tool.Name)
		}
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "up") || !strings.Contains(got, "reset") || len(names) != 15 {
		t.Errorf("tools = %s", got)
	}
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		r, err := c.CallTool(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	structured := func(r *mcp.CallToolResult, v any) {
		t.Helper()
		b, _ := json.Marshal(r.StructuredContent)
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("structured content %s: %v", b, err)
		}
	}
	r := call("up", map[string]any{"dir": f.repo, "name": "agent-1"})
	if r.IsError {
		t.Fatalf("up: %+v", r.Content)
	}
	var w api.World
	structured(r, &w)
	if w.Worktree != "agent-1" || len(w.Services) != 1 || w.Services[0].State != "healthy" {
		t.Fatalf("up result %+v", w)
	}
	var st api.Status
	structured(call("status", map[string]any{"dir": f.repo}), &st)
	if len(st.Worlds) != 1 || st.Worlds[0].Worktree != "agent-1" {
		t.Errorf("status %+v", st.Worlds)
	}
	var coords struct {
		Env map[string]string `json:"env"`
	}
	structured(call("env", map[string]any{"dir": f.repo, "name": "agent-1"}), &coords)
	if coords.Env["API_PORT"] != fmt.Sprint(w.Services[0].Port) {
		t.Errorf("env API_PORT=%q, up said %d", coords.Env["API_PORT"], w.Services[0].Port)
	}
	var logs struct {
		Services map[string]struct {
			Lines []string `json:"lines"`
		} `json:"services"`
	}
	structured(call("logs", map[string]any{"dir": f.repo, "name": "agent-1"}), &logs)
	if len(logs.Services["api"].Lines) == 0 {
		t.Errorf("logs: %+v", logs)
	}
	var again api.World
	structured(call("restart", map[string]any{"dir": f.repo, "name": "agent-1", "service": "api"}), &again)
	if again.Services[0].PID == w.Services[0].PID || again.Services[0].State != "healthy" || again.Services[0].Port != w.Services[0].Port {
		t.Errorf("restart: before %+v, after %+v: want a new healthy process on the same port", w.Services[0], again.Services[0])
	}
	w = again
	var answer struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}
	structured(call("curl", map[string]any{"dir": f.repo, "name": "agent-1", "service": "api", "path": "/"}), &answer)
	if answer.Status != 200 || !strings.HasPrefix(answer.Body, "api of agent-1") {
		t.Errorf("curl through the proxy: %+v", answer)
	}
	var one api.Status
	structured(call("status", map[string]any{"dir": f.repo, "name": "agent-1"}), &one)
	if len(one.Worlds) != 1 || one.Daemon.Home != f.home {
		t.Errorf("status of one world: %d worlds, home %q (want %q)", len(one.Worlds), one.Daemon.Home, f.home)
	}
	if r := call("doctor", map[string]any{"dir": f.repo}); r.StructuredContent == nil {
		t.Errorf("doctor: %+v", r.Content)
	}
	bad := call("down", map[string]any{"dir": f.repo, "name": "no-such"})
	if !bad.IsError || !strings.Contains(fmt.Sprint(bad.Content), "no such worktree") {
		t.Errorf("down of an unknown worktree: %+v", bad.Content)
	}
	r = call("down", map[string]any{"dir": f.repo, "name": "agent-1"})
	if r.IsError {
		t.Fatalf("down: %+v", r.Content)
	}
	if pidAlive(w.Services[0].PID) {
		t.Error("down through MCP left the service running")
	}
}

func TestHTTPSThroughCaddyWithBinkysOwnCA(t *testing.T) {
	if _, err := exec.LookPath("caddy"); err != nil {
		t.Skip("caddy is not installed (make test installs it)")
	}
	f := newFixture(t, oneService)
	httpsPort := freeTCPPort(t)
	settings := fmt.Sprintf("proxy_port = %d\nhttps = true\nhttps_port = %d\n", f.proxyPort, httpsPort) + f.ports
	os.WriteFile(filepath.Join(f.home, "settings.toml"), []byte(settings), 0o600)
	f.mustBinky(f.repo, "up")
	env := f.mustBinky(f.repo, "env")
	if want := fmt.Sprintf("API_URL=https://api.acme.acme.localhost:%d\n", httpsPort); !strings.Contains(env, want) {
		t.Errorf("env lacks %q:\n%s", want, env)
	}
	pem, err := os.ReadFile(filepath.Join(f.home, "caddy", "data", "caddy", "pki", "authorities", "local", "root.crt"))
	var body string
	f.eventually("https answer", func() bool {
		if pem == nil {
			pem, err = os.ReadFile(filepath.Join(f.home, "caddy", "data", "caddy", "pki", "authorities", "local", "root.crt"))
			if err != nil {
				return false
			}
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: pool},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, fmt.Sprintf("127.0.0.1:%d", httpsPort))
			},
		}}
		resp, err := c.Get(fmt.Sprintf("https://api.acme.acme.localhost:%d/", httpsPort))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == 200
	})
	if !strings.HasPrefix(body, "api of acme") {
		t.Errorf("https body %q", body)
	}
}

func TestHTTPSWithoutCaddySaysWhatToDo(t *testing.T) {
	f := newFixture(t, oneService)
	settings := fmt.Sprintf("proxy_port = %d\nhttps = true\nhttps_port = %d\n", f.proxyPort, freeTCPPort(t)) + f.ports
	os.WriteFile(filepath.Join(f.home, "settings.toml"), []byte(settings), 0o600)
	// The daemon starts with a PATH that has no caddy on it.
	c := exec.Command(filepath.Join(binDir, "git-binky"), "daemon", "start")
	c.Dir = f.repo
	c.Env = append(os.Environ(), "BINKY_HOME="+f.home, "PATH="+binDir+":/nonexistent")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("daemon start: %v %s", err, out)
	}
	out := f.mustBinky(f.repo, "daemon", "status")
	if !strings.Contains(out, "caddy is not on PATH: install Caddy") {
		t.Errorf("daemon status does not say what is missing:\n%s", out)
	}
}

// A settings.toml broken by hand leaves binky on the last good copy, as
// the error says and status now says: the daemon started no proxy, so every
// URL was dead while status said it ran, and every up failed.
func TestABrokenSettingsFileLeavesTheProxyOnTheLastGoodPort(t *testing.T) {
	f := newFixture(t, twoServices)
	good, err := os.ReadFile(filepath.Join(f.home, "settings.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.home, "settings.toml.good"), good, 0o600); err != nil {
		t.Fatal(err)
	}
	f.setSettings(string(good) + "bogus = [\n")
	f.mustBinky(f.repo, "up", "a")
	t.Cleanup(func() { f.binky(f.repo, "down", "a") })
	if code, body, err := f.viaProxy("web.a.acme.localhost", "/"); err != nil || code != 200 || !strings.HasPrefix(body, "web of a") {
		t.Errorf("web through the proxy with a broken settings.toml: %d %q %v", code, body, err)
	}
	// Used, and said: status names the broken file.
	if out := f.mustBinky(f.repo, "status"); !strings.Contains(out, "is not valid TOML") || !strings.Contains(out, "last good copy") {
		t.Errorf("status does not say the settings file is broken:\n%s", out)
	}
}

// curl starts the daemon, whose proxy it goes through, as every command
// that needs the daemon does: it said "connection refused (is the daemon
// running?)".
func TestCurlStartsTheDaemonItGoesThrough(t *testing.T) {
	f := newFixture(t, twoServices)
	f.mustBinky(f.repo, "up", "a")
	t.Cleanup(func() { f.binky(f.repo, "down", "a") })
	f.mustBinky(f.repo, "daemon", "stop")
	if out := f.mustBinky(f.repo, "curl", "a", "api", "/x"); !strings.Contains(out, "api of a") {
		t.Errorf("curl after the daemon stopped:\n%s", out)
	}
}
