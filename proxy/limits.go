package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// limits bound what a client may hold without sending anything, as nginx's
// defaults do: a kept connection that sends no request for idle is closed
// (keepalive_timeout 75 s), and a request whose body sends nothing for body
// gets a 408 and its connection closed (client_body_timeout 60 s). A
// service may take as long as it likes to answer: dev servers hold long
// polls and event streams open, so no limit is put on a response.
type limits struct{ idle, body time.Duration }

var defaultLimits = limits{idle: 75 * time.Second, body: 60 * time.Second}

type limitsKey struct{}

// limitsOf returns the limits the server running r set, or the defaults
// (a Proxy served by another http.Server).
func limitsOf(r *http.Request) limits {
	if l, ok := r.Context().Value(limitsKey{}).(limits); ok {
		return l
	}
	return defaultLimits
}

// stallReader reads a request body, giving each read d to bring
// something: conn is the client's connection on the fast path, net/http's
// ResponseController on its path (ErrNotSupported there: no limit).
type stallReader struct {
	io.Reader
	conn    interface{ SetReadDeadline(time.Time) error }
	d       time.Duration
	stalled bool
	// bad is the client's body failing to parse (a malformed chunk):
	// the client's fault, a 400, not the service's.
	bad error
	// failed is any error reading the client's body.
	failed error
}

func (s *stallReader) Read(p []byte) (int, error) {
	s.conn.SetReadDeadline(time.Now().Add(s.d))
	n, err := s.Reader.Read(p)
	if err != nil && err != io.EOF {
		s.failed = err
	}
	switch {
	case err == nil, err == io.EOF:
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.stalled = true
	case !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrUnexpectedEOF):
		var ne net.Error
		if !errors.As(err, &ne) {
			s.bad = err
		}
	}
	return n, err
}

func stalledMessage(d time.Duration) string {
	return fmt.Sprintf("binky proxy: the request body sent nothing for %s; the request was not completed\n", d)
}

// writeStalled answers a request whose body stalled, on the fast path.
func writeStalled(bw *bufio.Writer, d time.Duration) {
	msg := stalledMessage(d)
	fmt.Fprintf(bw, "HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg)
	bw.Flush()
}

// ownAnswer readies w for an answer the proxy writes itself (a 404, a 503):
// a body sent with the request is not wanted, and net/http would read up
// to 256 KB of it before answering, from a client that may have stopped
// sending. The connection closes after the answer instead, and a read of
// it gets the body limit.
func ownAnswer(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 {
		return
	}
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(limitsOf(r).body))
	w.Header().Set("Connection", "close")
}

// withLimits has every request of an http.Server carry lim.
func withLimits(lim limits) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, _ net.Conn) context.Context { return context.WithValue(ctx, limitsKey{}, lim) }
}
