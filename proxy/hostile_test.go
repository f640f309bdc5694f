package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// tcpService serves each connection to a loopback port with handle.
func tcpService(t testing.TB, handle func(c net.Conn)) int {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// misbehaving is a service that answers each request by its path: most
// echo the path, and some break HTTP the way hand-written servers do.
func misbehaving(t *testing.T) int {
	return tcpService(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			echo := "echo " + req.URL.Path
			switch req.URL.Path {
			case "/extra": // a second response nobody asked for
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nSTALE")
			case "/head-body": // a body on a HEAD
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
			case "/101": // an upgrade nobody asked for
				fmt.Fprintf(c, "HTTP/1.1 101 Switching Protocols\r\n\r\nRAW-AFTER-101")
			case "/late": // the extra bytes come after a pause
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate")
				time.Sleep(50 * time.Millisecond)
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nSTALE")
			default:
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(echo), echo)
			}
		}
	})
}

// A service that sends more than it framed must not shift its answers onto
// the next requests: on the fast path (a plain GET) and on net/http's (a
// request with a Connection-listed header).
func TestBytesAServiceSendsUnaskedNeverAnswerAnotherRequest(t *testing.T) {
	for _, path := range []string{"fast", "net/http"} {
		for _, bad := range []string{"/extra", "/head-body", "/late", "/101"} {
			t.Run(path+bad, func(t *testing.T) {
				p := New()
				host := "svc.w.acme.localhost"
				p.SetRoutes([]Route{{Host: host, World: "w", Service: "svc", Port: misbehaving(t), Up: true}})
				addr := strings.TrimPrefix(serve(t, p).URL, "http://")
				c := dial(t, addr)
				br := bufio.NewReader(c)
				extra := ""
				if path == "net/http" {
					extra = "Connection: x-hop\r\nX-Hop: 1\r\n"
				}
				method := "GET"
				if bad == "/head-body" {
					method = "HEAD"
				}
				io.WriteString(c, method+" "+bad+" HTTP/1.1\r\nHost: "+host+"\r\n"+extra+"\r\n")
				resp, err := http.ReadResponse(br, &http.Request{Method: method})
				if err != nil {
					t.Fatalf("%s: %v", bad, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if bad == "/101" && resp.StatusCode != http.StatusBadGateway {
					t.Errorf("an upgrade nobody asked for: %d, want 502", resp.StatusCode)
				}
				if resp.Close || bad == "/101" {
					c = dial(t, addr)
					br = bufio.NewReader(c)
				}
				time.Sleep(100 * time.Millisecond) // /late's extra bytes arrive
				for i := 0; i < 3; i++ {
					want := fmt.Sprintf("/next%d", i)
					r := roundTrip(t, c, br, "GET "+want+" HTTP/1.1\r\nHost: "+host+"\r\n"+extra+"\r\n")
					if r.StatusCode != http.StatusOK {
						t.Fatalf("request %s after %s: %d", want, bad, r.StatusCode)
					}
					if got := r.Header.Get("Content-Length"); got != fmt.Sprint(len("echo "+want)) {
						t.Fatalf("request %s after %s got another's answer (length %s)", want, bad, got)
					}
				}
			})
		}
	}
}

// upgrading is a service that accepts any upgrade after delay, says
// "server-done", stops sending (a half-close) and reports through got what
// the client sent after that.
func upgrading(t *testing.T, delay time.Duration, got chan<- string) int {
	return tcpService(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		time.Sleep(delay)
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\nserver-done")
		c.(*net.TCPConn).CloseWrite()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(c)
		got <- string(b)
	})
}

const upgradeRequest = "GET /ws HTTP/1.1\r\nHost: svc.w.acme.localhost\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n"

func TestAnUpgradedConnectionStaysOpenOneWayWhenTheServiceHalfCloses(t *testing.T) {
	got := make(chan string, 1)
	p := New()
	p.SetRoutes([]Route{{Host: "svc.w.acme.localhost", World: "w", Service: "svc", Port: upgrading(t, 0, got), Up: true}})
	c := dial(t, strings.TrimPrefix(serve(t, p).URL, "http://"))
	io.WriteString(c, upgradeRequest)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(br); string(b) != "server-done" || err != nil {
		t.Fatalf("from the service: %q %v", b, err)
	}
	if _, err := io.WriteString(c, "late-data"); err != nil {
		t.Fatalf("the client's side was closed with the service's: %v", err)
	}
	c.(*net.TCPConn).CloseWrite()
	if s := <-got; s != "late-data" {
		t.Errorf("the service got %q after its half-close, want late-data", s)
	}
}

func TestAClientThatLeavesGetsNoAnswerMadeUp(t *testing.T) {
	got := make(chan string, 1)
	p := New()
	p.SetRoutes([]Route{{Host: "svc.w.acme.localhost", World: "w", Service: "svc", Port: upgrading(t, 200*time.Millisecond, got), Up: true}})
	c := dial(t, strings.TrimPrefix(serve(t, p).URL, "http://"))
	io.WriteString(c, upgradeRequest)
	c.(*net.TCPConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(c)
	if strings.HasPrefix(string(b), "HTTP/1.1 200") {
		t.Errorf("a client that left got a 200 the service never sent: %q", b)
	}
}

func TestAMalformedChunkedBodyIsTheClientsFault(t *testing.T) {
	p := New()
	p.SetRoutes([]Route{{Host: "svc.w.acme.localhost", World: "w", Service: "svc", Port: misbehaving(t), Up: true}})
	c := dial(t, strings.TrimPrefix(serve(t, p).URL, "http://"))
	resp := roundTrip(t, c, bufio.NewReader(c), "POST /x HTTP/1.1\r\nHost: svc.w.acme.localhost\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n")
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a malformed chunk: %d, want 400", resp.StatusCode)
	}
}

func TestAHostThatCaseFoldsToARouteIsNotRouted(t *testing.T) {
	p := New()
	p.SetRoutes([]Route{{Host: "api.w.acme.localhost", World: "w", Service: "api", Port: misbehaving(t), Up: true}})
	addr := strings.TrimPrefix(serve(t, p).URL, "http://")
	for _, host := range []string{"ap\u0130.w.acme.localhost", "API.W.ACME.LOCALHOST"} {
		c := dial(t, addr)
		resp := roundTrip(t, c, bufio.NewReader(c), "GET / HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		routed := resp.StatusCode == http.StatusOK
		if want := host == "API.W.ACME.LOCALHOST"; routed != want {
			t.Errorf("Host %q: %d, routed %v, want %v", host, resp.StatusCode, routed, want)
		}
	}
}

func TestAClientThatLeavesAWaitingRequestFreesTheServicesConnection(t *testing.T) {
	closed := make(chan struct{})
	port := tcpService(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		http.ReadRequest(br) // and never answer
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := br.ReadByte(); err == io.EOF {
			close(closed)
		}
	})
	p := New()
	p.SetRoutes([]Route{{Host: "svc.w.acme.localhost", World: "w", Service: "svc", Port: port, Up: true}})
	c := dial(t, strings.TrimPrefix(serve(t, p).URL, "http://"))
	io.WriteString(c, "GET /hang HTTP/1.1\r\nHost: svc.w.acme.localhost\r\n\r\n")
	time.Sleep(100 * time.Millisecond)
	c.Close()
	select {
	case <-closed:
	case <-time.After(3 * checkClientEvery):
		t.Fatal("the service's connection is still held for a client that left")
	}
}

func TestTrailersComeThrough(t *testing.T) {
	port := tcpService(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n3\r\nabc\r\n0\r\nX-Checksum: abc123\r\n\r\n")
		}
	})
	p := New()
	p.SetRoutes([]Route{{Host: "svc.w.acme.localhost", World: "w", Service: "svc", Port: port, Up: true}})
	srv := serve(t, p)
	for _, path := range []string{"fast", "net/http"} {
		req, _ := http.NewRequest("GET", srv.URL+"/", nil)
		req.Host = "svc.w.acme.localhost"
		req.Header.Set("Te", "trailers")
		if path == "net/http" {
			req.Header.Set("Connection", "x-hop")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "abc" || resp.Trailer.Get("X-Checksum") != "abc123" {
			t.Errorf("%s: body %q trailers %v", path, b, resp.Trailer)
		}
	}
}

// A bare LF inside a service's head may hide a header the client obeys
// and the fast path's reading does not: such a head is never relayed as
// it came (the status line's was, a review found).
func TestABareLineFeedInAServicesHeadIsNotRelayed(t *testing.T) {
	for where, head := range map[string]string{
		"header":      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: a\nX-Smuggled: yes\r\n\r\nok",
		"status line": "HTTP/1.1 200 OK\nX-Smuggled: yes\r\nContent-Length: 2\r\n\r\nok",
	} {
		port := tcpService(t, func(c net.Conn) {
			br := bufio.NewReader(c)
			for {
				if _, err := http.ReadRequest(br); err != nil {
					return
				}
				io.WriteString(c, head)
			}
		})
		p := New()
		p.SetRoutes([]Route{{Host: "svc.w.acme.localhost", World: "w", Service: "svc", Port: port, Up: true}})
		c := dial(t, strings.TrimPrefix(serve(t, p).URL, "http://"))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: svc.w.acme.localhost\r\nConnection: close\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		raw, _ := io.ReadAll(c)
		if strings.Contains(string(raw), "\nX-Smuggled") && !strings.Contains(string(raw), "\r\nX-Smuggled") {
			t.Errorf("a bare LF in a service's %s reached the client: %q", where, raw)
		}
	}
}

func TestAnUploadTheServiceRefusesEarlyGetsItsAnswer(t *testing.T) {
	port := tcpService(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		// Answers before reading the body, and closes.
		io.WriteString(c, "HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big\n")
	})
	p := New()
	p.SetRoutes([]Route{{Host: "svc.w.acme.localhost", World: "w", Service: "svc", Port: port, Up: true}})
	c := dial(t, strings.TrimPrefix(serve(t, p).URL, "http://"))
	const size = 20 << 20
	go func() {
		io.WriteString(c, fmt.Sprintf("POST /upload HTTP/1.1\r\nHost: svc.w.acme.localhost\r\nContent-Length: %d\r\n\r\n", size))
		chunk := make([]byte, 64<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	}()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to an upload the service refused: %v", err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status %d, want the service's 413", resp.StatusCode)
	}
}

// A client whose upload ends short (it half-closes before Content-Length
// bytes) is not told the service stopped reading (a review found it was,
// after a second).
func TestAClientsShortUploadIsNotBlamedOnTheService(t *testing.T) {
	port := tcpService(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	p := New()
	p.SetRoutes([]Route{{Host: "svc.w.acme.localhost", World: "w", Service: "svc", Port: port, Up: true}})
	c := dial(t, strings.TrimPrefix(serve(t, p).URL, "http://"))
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: svc.w.acme.localhost\r\nContent-Length: 100\r\n\r\nonly-ten!!")
	c.(*net.TCPConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	raw, _ := io.ReadAll(c)
	if strings.Contains(string(raw), "stopped reading the request body") {
		t.Errorf("after %v, a client's short body is blamed on the service: %q", time.Since(start).Round(time.Millisecond), raw)
	}
}

// A service whose response head never ends (one header of many MiB) gets
// its client a 502 once the head passes maxResponseHead: the proxy read
// all of it, held ~3x its size of the daemon's memory and never gave it
// back. A big head under the bound comes through.
func TestAServicesEndlessResponseHeadIsA502(t *testing.T) {
	for _, c := range []struct {
		size int
		want string
	}{{maxResponseHead + 64<<10, "502 Bad Gateway"}, {maxResponseHead / 2, "200 OK"}} {
		port := tcpService(t, func(conn net.Conn) {
			br := bufio.NewReader(conn)
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nX-Long: ")
			chunk := strings.Repeat("a", 64<<10)
			for sent := 0; sent < c.size; sent += len(chunk) {
				if _, err := io.WriteString(conn, chunk); err != nil {
					return
				}
			}
			io.WriteString(conn, "\r\nContent-Length: 2\r\n\r\nok")
		})
		p := New()
		p.SetRoutes([]Route{{Host: "svc.w.acme.localhost", World: "w", Service: "svc", Port: port, Up: true}})
		base := strings.TrimPrefix(serve(t, p).URL, "http://")
		for _, expect := range []string{"", "Expect: 100-continue\r\nContent-Length: 1\r\n"} { // both paths
			conn := dial(t, base)
			method, body := "GET", ""
			if expect != "" {
				method, body = "POST", "x"
			}
			io.WriteString(conn, method+" / HTTP/1.1\r\nHost: svc.w.acme.localhost\r\n"+expect+"Connection: close\r\n\r\n"+body)
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReaderSize(conn, 4<<20)
			resp, err := http.ReadResponse(br, nil)
			for err == nil && resp.StatusCode == http.StatusContinue {
				resp, err = http.ReadResponse(br, nil)
			}
			if err != nil {
				t.Fatalf("a %d-byte head (%q): %v", c.size, expect, err)
			}
			resp.Body.Close()
			if resp.Status != c.want && !strings.HasSuffix(resp.Status, c.want) {
				t.Errorf("a %d-byte head (%q): %s, want %s", c.size, expect, resp.Status, c.want)
			}
		}
	}
}

// A client's X_Forwarded_For (underscores) reached the service on both
// paths, where CGI-style servers read it as HTTP_X_FORWARDED_FOR, the
// forged address first: like the dashed names, the proxy drops it.
func TestForwardedHeadersWithUnderscoresAreDropped(t *testing.T) {
	port := tcpService(t, func(conn net.Conn) {
		br := bufio.NewReader(conn)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			var seen []string
			for k := range req.Header {
				if strings.Contains(k, "_") {
					seen = append(seen, k)
				}
			}
			body := strings.Join(seen, ",") + "."
			fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		}
	})
	p := New()
	p.SetRoutes([]Route{{Host: "svc.w.acme.localhost", World: "w", Service: "svc", Port: port, Up: true}})
	base := strings.TrimPrefix(serve(t, p).URL, "http://")
	for _, extra := range []string{"", "Expect: 100-continue\r\nContent-Length: 1\r\n"} {
		conn := dial(t, base)
		method, body := "GET", ""
		if extra != "" {
			method, body = "POST", "x"
		}
		io.WriteString(conn, method+" / HTTP/1.1\r\nHost: svc.w.acme.localhost\r\nX_Forwarded_For: 6.6.6.6\r\nx_forwarded_host: evil\r\nX_FORWARDED_PROTO: https\r\nX_Request_Id: kept\r\n"+extra+"Connection: close\r\n\r\n"+body)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		raw, _ := io.ReadAll(conn)
		got := string(raw)
		if strings.Contains(strings.ToLower(got), "forwarded") || !strings.Contains(strings.ToLower(got), "x_request_id") {
			t.Errorf("path %q: the service saw %q, want only X_Request_Id", extra, got[strings.LastIndex(got, "\n")+1:])
		}
	}
}
