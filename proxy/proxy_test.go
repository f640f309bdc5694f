package proxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// backend is a service of a world: it says who it is and how it was called.
func backend(t *testing.T, who string) int {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s host=%s xfh=%s xfp=%s xff=%s", who, r.Host, r.Header.Get("X-Forwarded-Host"),
			r.Header.Get("X-Forwarded-Proto"), r.Header.Get("X-Forwarded-For"))
	})
	mux.Handle("/ws", websocket.Handler(func(c *websocket.Conn) { io.Copy(c, c) }))
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 3; i++ {
			fmt.Fprintf(w, "tick %d\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond)
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return p
}

// serve runs p as the daemon does (Serve: the fast path, and net/http
// for what it hands over) on a loopback port.
func serve(t *testing.T, p *Proxy) *httptest.Server {
	t.Helper()
	ls, err := Listen(freeLocalPort(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Serve(ctx, p, ls); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &httptest.Server{URL: "http://" + ls[0].Addr().String(), Listener: ls[0]}
}

func get(t *testing.T, proxyURL, host, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", proxyURL+path, nil)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestTwoWorldsWithTheSameServiceNamesGoToTheirOwnPorts(t *testing.T) {
	a, b := backend(t, "api of login-fix"), backend(t, "api of checkout-v2")
	p := New()
	p.SetRoutes([]Route{
		{Host: "api.login-fix.acme.localhost", World: "login-fix", Service: "api", Port: a, Up: true},
		{Host: "api.checkout-v2.acme.localhost", World: "checkout-v2", Service: "api", Port: b, Up: true},
	})
	srv := serve(t, p)
	for host, want := range map[string]string{
		"api.login-fix.acme.localhost:1355": "api of login-fix",
		"API.Checkout-V2.acme.localhost":    "api of checkout-v2",
	} {
		code, body := get(t, srv.URL, host, "/")
		if code != 200 || !strings.HasPrefix(body, want+" ") {
			t.Errorf("%s: %d %q, want %q", host, code, body, want)
		}
		if !strings.Contains(body, "xfh="+host) || !strings.Contains(body, "xfp=http") || !strings.Contains(body, "xff=127.0.0.1") {
			t.Errorf("%s: X-Forwarded-* missing: %q", host, body)
		}
		if !strings.Contains(body, "host="+host) {
			t.Errorf("%s: Host not passed through: %q", host, body)
		}
	}
}

func TestUnknownHostListsWorldsAndServesNoneOfThem(t *testing.T) {
	a := backend(t, "SECRET-BODY")
	p := New()
	p.SetRoutes([]Route{{Host: "api.login-fix.acme.localhost", Project: "acme", World: "login-fix", Service: "api", Port: a, Up: true}})
	srv := serve(t, p)
	for _, host := range []string{"api.typo.acme.localhost", "localhost", "127.0.0.1", "evil.localhost"} {
		code, body := get(t, srv.URL, host, "/")
		if code != http.StatusNotFound || strings.Contains(body, "SECRET-BODY") {
			t.Errorf("%s: %d %q", host, code, body)
		}
		if !strings.Contains(body, "api.login-fix.acme.localhost") {
			t.Errorf("%s: the 404 page does not list the known worlds: %q", host, body)
		}
	}
}

func TestStoppedServiceGets503ThenRoutesChangeLive(t *testing.T) {
	a := backend(t, "api")
	p := New()
	route := Route{Host: "api.w.acme.localhost", Project: "acme", World: "w", Service: "api", Port: a, State: "stopped"}
	p.SetRoutes([]Route{route})
	srv := serve(t, p)
	code, body := get(t, srv.URL, route.Host, "/")
	if code != 503 || !strings.Contains(body, "service api of world w (acme) is stopped") || !strings.Contains(body, "git binky up w") {
		t.Fatalf("stopped: %d %q", code, body)
	}
	route.Up, route.State = true, "healthy"
	p.SetRoutes([]Route{route})
	if code, _ := get(t, srv.URL, route.Host, "/"); code != 200 {
		t.Fatalf("after the route came up: %d", code)
	}
	// Up but refusing connections (restarting): 503, not 502.
	route.Port = freeLocalPort(t)
	p.SetRoutes([]Route{route})
	if code, body := get(t, srv.URL, route.Host, "/"); code != 503 || !strings.Contains(body, "not accepting connections") {
		t.Fatalf("restarting: %d %q", code, body)
	}
}

func freeLocalPort(t *testing.T) int {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestWebSocketEchoAndStreamingThroughTheProxy(t *testing.T) {
	a := backend(t, "api")
	p := New()
	p.SetRoutes([]Route{{Host: "web.w.acme.localhost", World: "w", Service: "web", Port: a, Up: true}})
	srv := serve(t, p)
	_, proxyPort, _ := net.SplitHostPort(srv.Listener.Addr().String())

	cfg, err := websocket.NewConfig("ws://web.w.acme.localhost/ws", "http://web.w.acme.localhost/")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", "127.0.0.1:"+proxyPort)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := websocket.NewClient(cfg, conn)
	if err != nil {
		t.Fatalf("websocket handshake through the proxy: %v", err)
	}
	defer ws.Close()
	for _, msg := range []string{"hello", "hot reload"} {
		if err := websocket.Message.Send(ws, msg); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := websocket.Message.Receive(ws, &got); err != nil || got != msg {
			t.Fatalf("echo: %q %v", got, err)
		}
	}

	// Streaming: the first line arrives before the handler has finished.
	req, _ := http.NewRequest("GET", srv.URL+"/stream", nil)
	req.Host = "web.w.acme.localhost"
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "tick 0\n" {
		t.Fatalf("first line %q %v", line, err)
	}
	if waited := time.Since(start); waited > 150*time.Millisecond {
		t.Errorf("first streamed line took %s: the proxy buffered the response", waited)
	}
}

func TestListenIsLoopbackOnly(t *testing.T) {
	ls, err := Listen(freeLocalPort(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range ls {
		defer l.Close()
		ip := l.Addr().(*net.TCPAddr).IP
		if !ip.IsLoopback() {
			t.Errorf("listening on %s", l.Addr())
		}
	}
}
