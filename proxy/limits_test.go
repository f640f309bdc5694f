package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveWith runs p as Serve does, with limits short enough to test.
func serveWith(t *testing.T, p *Proxy, lim limits) string {
	t.Helper()
	ls, err := Listen(freeLocalPort(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { serveLimited(ctx, p, ls, lim); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ls[0].Addr().String()
}

// dial connects to addr, closed when the test ends.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes req on c and reads one response.
func roundTrip(t *testing.T, c net.Conn, br *bufio.Reader, req string) *http.Response {
	t.Helper()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response to %q: %v", req, err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp
}

// closedWithin reports whether the proxy closes c within d (a read ends
// with EOF or a reset rather than waiting).
func closedWithin(c net.Conn, br *bufio.Reader, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := br.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// A kept connection that sends nothing is closed after the idle limit,
// on the fast path and on net/http's (a 404 is net/http's), while one that
// keeps sending requests more often than that stays open however long.
func TestAnIdleClientConnectionIsClosed(t *testing.T) {
	_, port := echo(t)
	p := New()
	p.SetRoutes([]Route{{Host: "api.w.acme.localhost", World: "w", Service: "api", Port: port, Up: true}})
	addr := serveWith(t, p, limits{idle: 300 * time.Millisecond, body: time.Minute})
	for _, host := range []string{"api.w.acme.localhost", "nope.localhost"} {
		c := dial(t, addr)
		br := bufio.NewReader(c)
		start := time.Now()
		for time.Since(start) < time.Second {
			roundTrip(t, c, br, "GET /x HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
			time.Sleep(100 * time.Millisecond)
		}
		if !closedWithin(c, br, 2*time.Second) {
			t.Errorf("%s: an idle connection is still open 2 s after a 300 ms idle limit", host)
		}
	}
}

// A body that stops coming gets a 408 and the connection closed; one that
// comes slowly but keeps coming is forwarded whole. Both paths: a body of
// known length (the fast path) and a chunked one (net/http's).
func TestAStalledRequestBodyGets408(t *testing.T) {
	_, port := echo(t)
	p := New()
	p.SetRoutes([]Route{{Host: "api.w.acme.localhost", World: "w", Service: "api", Port: port, Up: true}})
	addr := serveWith(t, p, limits{idle: time.Minute, body: 300 * time.Millisecond})
	heads := map[string]string{
		"length":  "POST /up HTTP/1.1\r\nHost: api.w.acme.localhost\r\nContent-Length: 10\r\n\r\n",
		"chunked": "POST /up HTTP/1.1\r\nHost: api.w.acme.localhost\r\nTransfer-Encoding: chunked\r\n\r\n",
	}
	bodies := map[string][]string{
		"length":  {"he", "ll", "ow", "or", "ld"},
		"chunked": {"2\r\nhe\r\n", "2\r\nll\r\n", "2\r\now\r\n", "2\r\nor\r\n", "2\r\nld\r\n0\r\n\r\n"},
	}
	for _, kind := range []string{"length", "chunked"} {
		// Slow but moving: a piece every 150 ms, 750 ms in all.
		c := dial(t, addr)
		io.WriteString(c, heads[kind])
		for _, piece := range bodies[kind] {
			time.Sleep(150 * time.Millisecond)
			io.WriteString(c, piece)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s, slow body: %v", kind, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(b) != "POST /up helloworld" {
			t.Errorf("%s, slow body: %d %q, want it forwarded whole", kind, resp.StatusCode, b)
		}

		// Stalled: two pieces, then nothing.
		c2 := dial(t, addr)
		io.WriteString(c2, heads[kind]+bodies[kind][0])
		start := time.Now()
		br := bufio.NewReader(c2)
		c2.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s, stalled body: no response: %v", kind, err)
		}
		b, _ = io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "sent nothing for 300ms") {
			t.Errorf("%s, stalled body: %d %q after %v, want a 408 saying why", kind, resp.StatusCode, b, time.Since(start))
		}
		if !closedWithin(c2, br, 2*time.Second) {
			t.Errorf("%s, stalled body: the connection stays open", kind)
		}
	}
}

// A request the proxy answers itself (an unknown host, a stopped service)
// is answered at once, whatever its body does (the body is not wanted),
// and its connection is let go within the body limit.
func TestAnAnswerOfTheProxysOwnDoesNotWaitForTheBody(t *testing.T) {
	_, port := echo(t)
	p := New()
	p.SetRoutes([]Route{{Host: "down.w.acme.localhost", World: "w", Service: "down", Port: port, Up: false}})
	addr := serveWith(t, p, limits{idle: time.Minute, body: 500 * time.Millisecond})
	for _, tc := range []struct {
		req  string
		want int
	}{
		{"POST /x HTTP/1.1\r\nHost: nope.localhost\r\nContent-Length: 10\r\n\r\nab", 404},
		{"POST /x HTTP/1.1\r\nHost: nope.localhost\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n", 404},
		{"POST /x HTTP/1.1\r\nHost: down.w.acme.localhost\r\nContent-Length: 10\r\n\r\nab", 503},
	} {
		c := dial(t, addr)
		io.WriteString(c, tc.req)
		br := bufio.NewReader(c)
		c.SetReadDeadline(time.Now().Add(250 * time.Millisecond))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Errorf("%q: no answer in 250 ms: %v", tc.req, err)
			continue
		}
		io.ReadAll(resp.Body)
		if resp.StatusCode != tc.want {
			t.Errorf("%q: %d, want %d", tc.req, resp.StatusCode, tc.want)
		}
		if !closedWithin(c, br, 2*time.Second) {
			t.Errorf("%q: the connection stays open after the answer", tc.req)
		}
	}
}
