package proxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// seenRequest is a request as a service got it: its head as it came on
// the wire (http.ReadRequest would hide a Content-Length beside a
// Transfer-Encoding), and its body.
type seenRequest struct{ head, body string }

// recorder is a service that answers every request "ok" and reports it.
func recorder(t *testing.T) (port int, seen <-chan seenRequest) {
	ch := make(chan seenRequest, 16)
	port = tcpService(t, func(c net.Conn) {
		var raw bytes.Buffer
		br := bufio.NewReader(io.TeeReader(c, &raw))
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			body, _ := io.ReadAll(req.Body)
			// The proxy sends a request only after the answer to the last
			// one: raw holds this request and nothing more.
			head, _, _ := strings.Cut(raw.String(), "\r\n\r\n")
			raw.Reset()
			ch <- seenRequest{head, string(body)}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	return port, ch
}

// A request framed two ways, by Content-Length and Transfer-Encoding, is
// read by its Transfer-Encoding, reaches the service without the length,
// and its connection closes after the answer (RFC 9112 6.1): what follows
// its body, a request smuggled past a front that went by the length, is
// never served. On a fresh connection, and on one net/http already serves.
func TestARequestFramedTwoWaysIsReadAsChunkedAndItsConnectionCloses(t *testing.T) {
	const host = "svc.w.acme.localhost"
	const smuggled = "GET /smuggled HTTP/1.1\r\nHost: " + host + "\r\n\r\n"
	for _, tc := range []struct{ name, before, framing string }{
		{"length first", "", "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n"},
		{"chunked first", "", "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n"},
		{"after a request net/http served", "GET /first HTTP/1.1\r\nHost: " + host + "\r\nConnection: x-hop\r\nX-Hop: 1\r\n\r\n",
			"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port, seen := recorder(t)
			p := New()
			p.SetRoutes([]Route{{Host: host, World: "w", Service: "svc", Port: port, Up: true}})
			c := dial(t, strings.TrimPrefix(serve(t, p).URL, "http://"))
			br := bufio.NewReader(c)
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if tc.before != "" {
				if resp := roundTrip(t, c, br, tc.before); resp.StatusCode != http.StatusOK || resp.Close {
					t.Fatalf("the request before: %d, close %v", resp.StatusCode, resp.Close)
				}
				<-seen
			}
			resp := roundTrip(t, c, br, "POST /upload HTTP/1.1\r\nHost: "+host+"\r\n"+tc.framing+"\r\n3\r\nabc\r\n0\r\n\r\n"+smuggled)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, want the service's 200", resp.StatusCode)
			}
			got := <-seen
			if got.body != "abc" {
				t.Errorf("the service got body %q, want abc (the chunked framing)", got.body)
			}
			if strings.Contains(strings.ToLower(got.head), "content-length") {
				t.Errorf("the conflicting Content-Length reached the service:\n%s", got.head)
			}
			if !resp.Close {
				t.Error("the answer does not say Connection: close")
			}
			if !closedWithin(c, br, 2*time.Second) {
				t.Error("the connection stays open after the answer: what follows the body is read as a request")
			}
			select {
			case s := <-seen:
				t.Errorf("the request after the body was served: %q", s.head)
			default:
			}
		})
	}
}

// A request whose last transfer coding is not chunked has a length nobody
// can know (RFC 9112 6.3): it is refused, its connection closed, and
// nothing reaches the service. RFC 9112 asks a 400 where chunked is not
// last; Go's server, which reads such a request for the proxy, answers 501
// (a coding it does not implement) to any but a lone chunked.
func TestATransferCodingOtherThanAFinalChunkedIsRefused(t *testing.T) {
	const host = "svc.w.acme.localhost"
	for _, te := range []string{"gzip", "chunked, gzip", "gzip, chunked", "chunked\r\nTransfer-Encoding: gzip", "identity"} {
		for _, length := range []string{"", "Content-Length: 3\r\n"} {
			port, seen := recorder(t)
			p := New()
			p.SetRoutes([]Route{{Host: host, World: "w", Service: "svc", Port: port, Up: true}})
			c := dial(t, strings.TrimPrefix(serve(t, p).URL, "http://"))
			br := bufio.NewReader(c)
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp := roundTrip(t, c, br, "POST /upload HTTP/1.1\r\nHost: "+host+"\r\nTransfer-Encoding: "+te+"\r\n"+length+"\r\n3\r\nabc\r\n0\r\n\r\n")
			if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusNotImplemented {
				t.Errorf("Transfer-Encoding %q (%q): %d, want 400 or 501", te, length, resp.StatusCode)
			}
			if !closedWithin(c, br, 2*time.Second) {
				t.Errorf("Transfer-Encoding %q (%q): the connection stays open", te, length)
			}
			select {
			case s := <-seen:
				t.Errorf("Transfer-Encoding %q (%q) reached the service:\n%s", te, length, s.head)
			default:
			}
		}
	}
}

// Go's server ignores a Transfer-Encoding on an HTTP/1.0 request, frames
// its body by the Content-Length instead, and hides the header from the
// handler; RFC 9112 6.1 calls such framing faulty and wants the connection
// closed after it. So an HTTP/1.0 request closes its connection, even one
// that asked to keep it, and what follows its length is never read.
func TestAnHTTP10RequestClosesItsConnection(t *testing.T) {
	const host = "svc.w.acme.localhost"
	port, seen := recorder(t)
	p := New()
	p.SetRoutes([]Route{{Host: host, World: "w", Service: "svc", Port: port, Up: true}})
	c := dial(t, strings.TrimPrefix(serve(t, p).URL, "http://"))
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp := roundTrip(t, c, br, "POST /upload HTTP/1.0\r\nHost: "+host+"\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want the service's 200", resp.StatusCode)
	}
	<-seen
	if !resp.Close {
		t.Error("the answer keeps the connection")
	}
	if !closedWithin(c, br, 2*time.Second) {
		t.Error("the connection stays open after the answer: what follows the length is read as a request")
	}
}

// refuser is a service that answers an upload from its head alone, as one
// with a size limit or an auth check does: a 413, without reading the
// body, and it closes. expects reports each Expect header it got.
func refuser(t *testing.T, expects chan<- string) int {
	return tcpService(t, func(c net.Conn) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		expects <- req.Header.Get("Expect")
		io.WriteString(c, "HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: text/plain\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big\n")
	})
}

// upload writes body pieces to c until it has sent size bytes or c stops
// taking them; chunked sends them as chunks, and the last one.
func upload(c net.Conn, size int, chunked bool) {
	piece := make([]byte, 64<<10)
	for sent := 0; sent < size; sent += len(piece) {
		if chunked {
			fmt.Fprintf(c, "%x\r\n", len(piece))
		}
		if _, err := c.Write(piece); err != nil {
			return
		}
		if chunked {
			io.WriteString(c, "\r\n")
		}
	}
	if chunked {
		io.WriteString(c, "0\r\n\r\n")
	}
}

// An upload the service refuses before reading its body gets the service's
// answer, not a 502, and its connection closes after it: sent as curl sends
// a large one (Expect: 100-continue, then the body only once told to
// continue), chunked, or as HTTP/1.0 (net/http's path, all three). With
// Expect, the client is never told to send a body the service refused.
func TestAnUploadRefusedBeforeItsBodyGetsTheServicesAnswer(t *testing.T) {
	const host = "svc.w.acme.localhost"
	const size = 20 << 20
	for _, tc := range []struct {
		name, head      string
		expect, chunked bool
		size            int
	}{
		{"expect", fmt.Sprintf("POST /upload HTTP/1.1\r\nHost: %s\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", host, size), true, false, size},
		{"expect, small", fmt.Sprintf("POST /upload HTTP/1.1\r\nHost: %s\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", host, 1000), true, false, 1000},
		{"expect, chunked", "POST /upload HTTP/1.1\r\nHost: " + host + "\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n", true, true, size},
		{"chunked", "POST /upload HTTP/1.1\r\nHost: " + host + "\r\nTransfer-Encoding: chunked\r\n\r\n", false, true, size},
		{"http/1.0", fmt.Sprintf("POST /upload HTTP/1.0\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", host, size), false, false, size},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expects := make(chan string, 1)
			p := New()
			p.SetRoutes([]Route{{Host: host, World: "w", Service: "svc", Port: refuser(t, expects), Up: true}})
			c := dial(t, strings.TrimPrefix(serve(t, p).URL, "http://"))
			br := bufio.NewReader(c)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, tc.head)
			if !tc.expect {
				go upload(c, tc.size, tc.chunked)
			}
			resp, err := http.ReadResponse(br, nil)
			told := false
			if err == nil && resp.StatusCode == http.StatusContinue {
				told = true
				go upload(c, tc.size, tc.chunked)
				resp, err = http.ReadResponse(br, nil)
			}
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestEntityTooLarge || string(body) != "too big\n" {
				t.Errorf("%d %q, want the service's 413 \"too big\"", resp.StatusCode, body)
			}
			if tc.expect && told {
				t.Error("the client was told to continue with a body the service had refused")
			}
			if !resp.Close {
				t.Error("the answer does not say Connection: close")
			}
			if !closedWithin(c, br, 3*time.Second) {
				t.Error("the connection stays open after the answer")
			}
		})
	}
}

// With Expect: 100-continue, a service that takes the body (Go's server
// says continue when its handler reads it) has the client told to continue
// at once, not after the proxy's wait for a service that never says.
func TestAnUploadWithExpectContinuesWhenTheServiceSaysSo(t *testing.T) {
	_, port := echo(t)
	p := New()
	p.SetRoutes([]Route{{Host: "api.w.acme.localhost", World: "w", Service: "api", Port: port, Up: true}})
	c := dial(t, strings.TrimPrefix(serve(t, p).URL, "http://"))
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	io.WriteString(c, "POST /up HTTP/1.1\r\nHost: api.w.acme.localhost\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusContinue {
		t.Fatalf("want 100 Continue first: %v %v", resp, err)
	}
	if waited := time.Since(start); waited > continueWait/2 {
		t.Errorf("told to continue after %v: the service's word was not passed on", waited)
	}
	resp = roundTrip(t, c, br, "hello")
	if resp.StatusCode != http.StatusOK || resp.Close {
		t.Errorf("%d, close %v: want the service's 200 on a kept connection", resp.StatusCode, resp.Close)
	}
}

// An upload the service cuts midway (it said continue, read some, then
// answered 401 and closed) leaves a client that stops sending on the
// answer, as curl does, a connection that ends cleanly: closed with its
// bytes unread, it was reset, and curl reported the reset ("Send failure")
// rather than the answer. On the fast path and on net/http's.
func TestAClientCutOffMidUploadSeesItsConnectionEndCleanly(t *testing.T) {
	const host = "svc.w.acme.localhost"
	port := tcpService(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if req.Header.Get("Expect") != "" {
			io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
		}
		io.CopyN(io.Discard, br, 100<<10)
		io.WriteString(c, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 3\r\nConnection: close\r\n\r\nno\n")
	})
	p := New()
	p.SetRoutes([]Route{{Host: host, World: "w", Service: "svc", Port: port, Up: true}})
	addr := strings.TrimPrefix(serve(t, p).URL, "http://")
	for _, tc := range []struct {
		name, head string
		chunked    bool
	}{
		{"length (the fast path)", "POST /up HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: 1000000000\r\n\r\n", false},
		{"chunked", "POST /up HTTP/1.1\r\nHost: " + host + "\r\nTransfer-Encoding: chunked\r\n\r\n", true},
		{"expect", "POST /up HTTP/1.1\r\nHost: " + host + "\r\nExpect: 100-continue\r\nContent-Length: 1000000000\r\n\r\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			br := bufio.NewReader(c)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, tc.head)
			if strings.Contains(tc.head, "Expect") {
				if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusContinue {
					t.Fatalf("want 100 Continue first: %v %v", resp, err)
				}
			}
			stop, sent := make(chan struct{}), make(chan error, 1)
			go func() {
				piece := []byte("4000\r\n" + strings.Repeat("x", 0x4000) + "\r\n")
				if !tc.chunked {
					piece = bytes.Repeat([]byte("x"), 16<<10)
				}
				for {
					select {
					case <-stop:
						sent <- nil
						return
					default:
					}
					if _, err := c.Write(piece); err != nil {
						sent <- err
						return
					}
				}
			}()
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			close(stop) // as curl stops sending on an answer
			if resp.StatusCode != http.StatusUnauthorized || string(body) != "no\n" {
				t.Errorf("%d %q, want the service's 401", resp.StatusCode, body)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("after the answer: %v, want the connection closed (EOF)", err)
			}
			// A reset is reported once, to whichever call meets it first:
			// here the writer, as with curl.
			if err := <-sent; errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("the proxy reset the connection while the client sent: %v", err)
			}
		})
	}
}

// A refusal with no body, to an upload that expected 100-continue, is the
// last the client hears: no 100 Continue follows it while the proxy drops
// what the client might still send before it closes.
func TestARefusalWithoutABodyIsNotFollowedByAContinue(t *testing.T) {
	port := tcpService(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			io.WriteString(c, "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n")
		}
	})
	p := New()
	p.SetRoutes([]Route{{Host: "svc.w.acme.localhost", World: "w", Service: "svc", Port: port, Up: true}})
	c := dial(t, strings.TrimPrefix(serve(t, p).URL, "http://"))
	io.WriteString(c, "POST /up HTTP/1.1\r\nHost: svc.w.acme.localhost\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	raw, err := io.ReadAll(c)
	if got := string(raw); !strings.HasPrefix(got, "HTTP/1.1 401 ") || strings.Count(got, "HTTP/1.1 ") != 1 || err != nil {
		t.Errorf("the client got %q (%v), want the 401 alone, then the connection closed", got, err)
	}
}
