package proxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The forwarder sends a plain (non-upgrade) request to its service on the
// handler's own goroutine: write the head and body on a pooled keep-alive
// connection, read the response head, copy the body back. httputil's
// ReverseProxy over http.Transport does the same work through two more
// goroutines per upstream connection (its read and write loops) and a
// channel hand-off each way per request; on a small machine those
// hand-offs, not the bytes, were most of the proxy's cost (see
// docs/performance.md). Upgrades (WebSockets) still go through
// ReverseProxy, which handles the hijack.

const (
	// maxIdlePerPort bounds the kept connections to one service: more
	// than the clients a dev machine sends at once.
	maxIdlePerPort = 64
	// idleTimeout drops a kept connection nobody used for this long.
	idleTimeout = 90 * time.Second
	// maxRetries bounds how often a request that can be sent again is,
	// after a kept connection turned out closed: the kept ones are dropped
	// then, so the next try is on a new connection unless another request
	// has kept one meanwhile.
	maxRetries = 3
)

// upstream is one keep-alive connection to a service.
type upstream struct {
	conn net.Conn
	head *capReader // under br: bounds a response's head (readResponse)
	br   *bufio.Reader
	bw   *bufio.Writer
	port int
	idle time.Time // when it was put back
	pool *pool
	// waiting is the fast-path client whose request waits for its answer
	// on this connection, goneRef once the watcher found it gone.
	waiting atomic.Pointer[clientRef]
}

// pool keeps idle connections per service port, newest last.
type pool struct {
	mu   sync.Mutex
	idle map[int][]*upstream
	// clients counts the fast path's client connections: reads spin
	// only while there are few (spin_unix.go).
	clients atomic.Int32

	// live is every open connection to a service, for the watcher of
	// waiting clients (watchClients), which runs while any request
	// waits (waiting counts them).
	liveMu   sync.Mutex
	live     map[*upstream]struct{}
	waiting  atomic.Int32
	watching atomic.Bool
}

var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 4<<10) }}
	writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}
)

// get returns a kept connection to port, or nil: only one the service has
// sent nothing on since its last response (bytes it sent unasked would be
// read as the next request's answer, and every answer after it would go
// to the wrong request; see peekAfter) and, with check, has not closed: a
// request that cannot be sent again (a body, or a method that is not
// idempotent) must not find out by failing; dev servers restart all the
// time, closing every kept connection.
func (p *pool) get(port int, check bool) *upstream {
	for {
		now := time.Now()
		u := p.pop(port, now)
		if u == nil || u.reusable(check, now.Sub(u.idle)) {
			return u
		}
		u.close()
	}
}

// peekAfter is how long a kept connection sits idle before reusing it
// costs a look at its socket (alive) even for a request that could be sent
// again: bytes a service sends late, unasked, have arrived by then. Under
// load connections come back sooner, and a syscall per request cost ~15%
// of the proxy's CPU per request.
const peekAfter = time.Millisecond

// drop closes every kept connection to port: one found closed by the
// service means it restarted, and the others it had are closed too.
func (p *pool) drop(port int) {
	p.mu.Lock()
	list := p.idle[port]
	delete(p.idle, port)
	p.mu.Unlock()
	for _, u := range list {
		u.close()
	}
}

func (p *pool) pop(port int, now time.Time) *upstream {
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.idle[port]
	if len(list) == 0 {
		return nil
	}
	u := list[len(list)-1]
	if now.Sub(u.idle) > idleTimeout {
		// Everything below it is older still.
		for _, old := range list {
			old.close()
		}
		p.idle[port] = list[:0]
		return nil
	}
	list[len(list)-1] = nil
	p.idle[port] = list[:len(list)-1]
	return u
}

// retain closes the kept connections of ports no route uses any more
// (a removed world, a service moved), and any idle past idleTimeout:
// nothing else would, since only a request to a port looks at its list.
func (p *pool) retain(ports map[int]bool) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for port, list := range p.idle {
		kept := list[:0]
		for _, u := range list {
			if ports[port] && now.Sub(u.idle) <= idleTimeout {
				kept = append(kept, u)
			} else {
				u.close()
			}
		}
		clear(list[len(kept):])
		if len(kept) == 0 {
			delete(p.idle, port)
		} else {
			p.idle[port] = kept
		}
	}
}

func (p *pool) put(u *upstream) {
	if u.br.Buffered() > 0 {
		// The service sent more than the response it framed (a body on a
		// HEAD, a second response): never to be read as another's.
		u.close()
		return
	}
	u.idle = time.Now()
	p.mu.Lock()
	if p.idle == nil {
		p.idle = map[int][]*upstream{}
	}
	list := p.idle[u.port]
	if len(list) >= maxIdlePerPort {
		p.mu.Unlock()
		u.close()
		return
	}
	p.idle[u.port] = append(list, u)
	p.mu.Unlock()
}

func (u *upstream) close() {
	if p := u.pool; p != nil {
		p.liveMu.Lock()
		delete(p.live, u)
		p.liveMu.Unlock()
	}
	u.conn.Close()
	if u.br != nil {
		u.br.Reset(nil)
		readers.Put(u.br)
		u.bw.Reset(nil)
		writers.Put(u.bw)
		u.br, u.bw = nil, nil
	}
}

var dialer = &net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}

func (p *pool) dial(ctx context.Context, port int) (*upstream, error) {
	c, err := dialer.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return nil, err
	}
	br, bw := readers.Get().(*bufio.Reader), writers.Get().(*bufio.Writer)
	head := &capReader{r: spinWrap(c, &p.clients), left: -1}
	br.Reset(head)
	bw.Reset(c)
	u := &upstream{conn: c, head: head, br: br, bw: bw, port: port, pool: p}
	p.liveMu.Lock()
	if p.live == nil {
		p.live = map[*upstream]struct{}{}
	}
	p.live[u] = struct{}{}
	p.liveMu.Unlock()
	return u, nil
}

// maxResponseHead bounds a service's response head (status line and
// headers), as Go's own Transport does (10 MB there): http.ReadResponse
// has no bound of its own, and a service that sent 300 MB of one header
// held almost 1 GB of the daemon, which serves every world.
const maxResponseHead = 1 << 20

// errHeadTooLarge is a response head past maxResponseHead.
var errHeadTooLarge = fmt.Errorf("its response head is over %d MiB", maxResponseHead>>20)

// capReader reads r, at most left bytes while left >= 0.
type capReader struct {
	r    io.Reader
	left int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.left < 0 {
		return c.r.Read(p)
	}
	if c.left == 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

// readResponse reads a response head from u, of at most maxResponseHead
// bytes read from its connection from here on.
func readResponse(u *upstream, r *http.Request) (*http.Response, error) {
	u.head.left = maxResponseHead
	resp, err := http.ReadResponse(u.br, r)
	u.head.left = -1
	return resp, err
}

// isUpgrade reports whether r asks to switch protocols (WebSocket).
func isUpgrade(r *http.Request) bool {
	for _, v := range r.Header["Connection"] {
		if headerHasToken(v, "upgrade") {
			return true
		}
	}
	return false
}

func headerHasToken(v, token string) bool {
	for f := range strings.SplitSeq(v, ",") {
		if strings.EqualFold(textproto.TrimString(f), token) {
			return true
		}
	}
	return false
}

// hop-by-hop headers (RFC 9110 7.6.1) are never forwarded; the
// X-Forwarded-* set is rewritten by the proxy itself.
var skipRequest = map[string]bool{
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	// roundTrip asks the service to continue itself, for a body net/http
	// has not yet told its client to send (awaitContinue).
	"Expect": true,
	// roundTrip frames the body itself (writeFraming).
	"Content-Length": true,
	"Forwarded":      true, "X-Forwarded-For": true, "X-Forwarded-Host": true, "X-Forwarded-Proto": true,
}

// forwardedAlias reports whether k names, with '_' for '-', a header the
// proxy writes itself (foldDash says why).
func forwardedAlias(k string) bool {
	k = strings.ReplaceAll(k, "_", "-")
	return strings.EqualFold(k, "X-Forwarded-For") || strings.EqualFold(k, "X-Forwarded-Host") || strings.EqualFold(k, "X-Forwarded-Proto")
}

var skipResponse = map[string]bool{
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Content-Length": true,
}

// connectionListed returns the header names h's Connection header marks
// as hop-by-hop, canonical; nil for the usual case of none.
func connectionListed(h http.Header) map[string]bool {
	var m map[string]bool
	for _, v := range h["Connection"] {
		for f := range strings.SplitSeq(v, ",") {
			if f = textproto.TrimString(f); f != "" && !strings.EqualFold(f, "close") && !strings.EqualFold(f, "keep-alive") {
				if m == nil {
					m = map[string]bool{}
				}
				m[textproto.CanonicalMIMEHeaderKey(f)] = true
			}
		}
	}
	return m
}

// errBeforeResponse marks a failure on a kept connection before any byte
// of the response came back: the service closed it while idle, and an
// idempotent request can be sent again on a new one.
var errBeforeResponse = errors.New("kept connection closed before the response")

// fail answers a request its service did not, as ReverseProxy's error
// handler does: a 503 while it is not accepting connections, else a 502.
func (p *Proxy) fail(w http.ResponseWriter, r *http.Request, rt Route, err error) {
	p.rp.ErrorHandler(w, r.WithContext(context.WithValue(r.Context(), routeKey{}, rt)), err)
}

// forward proxies r to rt's port.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, rt Route) {
	hasBody := r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody
	retryable := !hasBody && (r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions)
	// r.Body stays as net/http made it: the server looks at its type after
	// the answer (an Expect body left unread closes the connection; a
	// large one cut short is closed without a reset under the answer).
	var body *stallReader
	if hasBody {
		body = &stallReader{Reader: r.Body, conn: http.NewResponseController(w), d: limitsOf(r).body}
	}
	for attempt := 0; ; attempt++ {
		u := p.pool.get(rt.Port, !retryable)
		reused := u != nil
		if u == nil {
			var err error
			if u, err = p.pool.dial(r.Context(), rt.Port); err != nil {
				p.fail(w, r, rt, err)
				return
			}
		}
		err := p.roundTrip(w, r, u, body, reused)
		if err == nil {
			return
		}
		if errors.Is(err, errBeforeResponse) && retryable && attempt < maxRetries {
			p.pool.drop(rt.Port)
			continue
		}
		if body != nil && body.stalled {
			w.Header().Set("Connection", "close")
			http.Error(w, stalledMessage(body.d), http.StatusRequestTimeout)
			return
		}
		if r.Context().Err() != nil {
			// The client went away (its deadline, set then, is what
			// failed): no answer, and nothing blamed on the service.
			panic(http.ErrAbortHandler)
		}
		if body != nil && body.bad != nil {
			w.Header().Set("Connection", "close")
			http.Error(w, "binky proxy: the request body is malformed: "+body.bad.Error(), http.StatusBadRequest)
			return
		}
		p.fail(w, r, rt, err)
		return
	}
}

// roundTrip sends r, with body (nil for none), on u and copies the
// response to w. It owns u: back to the pool when the exchange ended
// cleanly, closed otherwise. An error returned means nothing was written
// to w yet.
func (p *Proxy) roundTrip(w http.ResponseWriter, r *http.Request, u *upstream, body *stallReader, reused bool) (err error) {
	keep := false
	defer func() {
		if keep {
			p.pool.put(u)
		} else {
			u.close()
		}
	}()
	// A client that goes away (or a handler that returns) cancels r's
	// context; the exchange with the service ends with it.
	stop := context.AfterFunc(r.Context(), func() { u.conn.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		if !stop() {
			keep = false
		}
	}()

	writeHead(u.bw, r)
	// The client of a body that expects 100-continue waits to be told to
	// send it, and net/http tells it on the body's first read: the service
	// is asked first, so that a body it refuses from the head is never sent.
	expect := body != nil && expectsContinue(r)
	if expect {
		u.bw.WriteString("Expect: 100-continue\r\n")
	}
	writeFraming(u.bw, r, body)
	if expect {
		resp, err := awaitContinue(u, r)
		if err != nil {
			return err
		}
		if resp != nil {
			// Refused from the head (a 413, a 401): the client, never told
			// to continue, need not send the body, and the connection
			// closes after the answer; what the client sends meanwhile
			// (curl stops waiting after a second) is dropped first.
			w.Header().Set("Connection", "close")
			relay(w, resp)
			lingerAnswered(w, r)
			return nil
		}
	}
	if err := sendBody(u, body, r.ContentLength); err != nil {
		if body == nil || body.failed != nil || errors.Is(err, io.EOF) {
			// Not the service's doing: the client's body failed or ended
			// short, or a kept connection was found closed.
			if reused && body == nil {
				return errBeforeResponse
			}
			return err
		}
		// The service stopped reading (a 413 for a large upload, then
		// close): the client gets what it answered before it did. The
		// connection closes after that, as the rest of the body is still
		// on its way.
		u.conn.SetReadDeadline(time.Now().Add(time.Second))
		resp, rerr := readFinal(u, r, false)
		if rerr != nil {
			return fmt.Errorf("it stopped reading the request body: %w", err)
		}
		w.Header().Set("Connection", "close")
		relay(w, resp)
		lingerAnswered(w, r)
		return nil
	}
	resp, err := readFinal(u, r, reused)
	if err != nil {
		return err
	}
	keep = relay(w, resp)
	return nil
}

// writeFraming ends r's head with its body's framing, chosen here: a
// second Content-Length makes strict parsers (Node's) answer 400.
func writeFraming(bw *bufio.Writer, r *http.Request, body *stallReader) {
	switch {
	case body == nil:
		if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
			bw.WriteString("Content-Length: 0\r\n")
		}
	case r.ContentLength > 0:
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.FormatInt(r.ContentLength, 10))
		bw.WriteString("\r\n")
	default:
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	bw.WriteString("\r\n")
}

// sendBody sends body (nil for none) of length n (-1: chunked) to u, with
// whatever of the head is still in u's buffer.
func sendBody(u *upstream, body *stallReader, n int64) error {
	switch {
	case body == nil:
	case n > 0:
		if _, err := io.CopyN(u.bw, body, n); err != nil {
			return err
		}
	default:
		if _, err := copyBuffer(newChunkedWriter(u.bw), body); err != nil {
			return err
		}
		u.bw.WriteString("0\r\n\r\n")
	}
	return u.bw.Flush()
}

// lingerAnswered reads and drops, with the answer out, what the client
// still sends of a body the service refused or cut, until the body ends
// or the client closes, or for continueWait; net/http then closes the
// connection. Left to itself it would close at once after a body that
// expected 100-continue, with the client's bytes unread: a reset, which a
// client still sending reports (curl's "Send failure") rather than the
// answer. After any other body it would wait for up to 256 KB more from a
// client that may have stopped. (The answer's head is out: reading the
// body sends no 100 Continue.)
func lingerAnswered(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	rc.SetReadDeadline(time.Now().Add(continueWait))
	copyBuffer(io.Discard, r.Body)
}

// continueWait is how long a request that asked to continue waits for its
// service's word before the body goes anyway: a service need not answer
// one, and curl does not wait longer either.
const continueWait = time.Second

// expectsContinue reports whether r's client waits to be told to send its
// body (net/http honours Expect: 100-continue on HTTP/1.1 only).
func expectsContinue(r *http.Request) bool {
	return r.ProtoAtLeast(1, 1) && headerHasToken(r.Header.Get("Expect"), "100-continue")
}

// awaitContinue sends the head in u's buffer, of a request that asked to
// continue, and waits for the service's word: nil to send the body (a 100
// Continue, or nothing for continueWait), or the final answer it gave from
// the head alone.
func awaitContinue(u *upstream, r *http.Request) (*http.Response, error) {
	if err := u.bw.Flush(); err != nil {
		return nil, err
	}
	for {
		u.conn.SetReadDeadline(time.Now().Add(continueWait))
		_, err := u.br.Peek(1)
		u.conn.SetReadDeadline(time.Time{})
		if cerr := r.Context().Err(); cerr != nil {
			// The client went away; the deadline that cut the exchange
			// short may have been undone just now.
			return nil, cerr
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		resp, err := readResponse(u, r)
		switch {
		case err != nil:
			return nil, err
		case resp.StatusCode == http.StatusContinue:
			return nil, nil
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, errUnaskedSwitch
		case resp.StatusCode >= 200:
			return resp, nil
		}
		// Another interim answer (103 Early Hints): wait on.
	}
}

// errUnaskedSwitch is a 101 to a request that asked for no upgrade.
var errUnaskedSwitch = errors.New("switched protocols on a request that asked for no upgrade")

// readFinal reads the service's final response to r from u. reused: a
// failure before its first byte is errBeforeResponse (a kept connection
// the service closed while it sat idle).
func readFinal(u *upstream, r *http.Request, reused bool) (*http.Response, error) {
	for {
		if _, err := u.br.Peek(1); err != nil && reused {
			return nil, errBeforeResponse
		}
		resp, err := readResponse(u, r)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			// Upgrades go through the reverse proxy; here none was asked
			// for, and the connection now speaks something else.
			return nil, errUnaskedSwitch
		}
		// 1xx are interim (100 Continue, 103 Early Hints): the final
		// response follows.
		if resp.StatusCode >= 200 {
			return resp, nil
		}
	}
}

// relay copies resp to w, and reports whether the service's connection can
// serve another request.
func relay(w http.ResponseWriter, resp *http.Response) (keep bool) {
	defer resp.Body.Close()
	listed := connectionListed(resp.Header)
	h := w.Header()
	for k, vs := range resp.Header {
		if skipResponse[k] || listed[k] {
			continue
		}
		h[k] = vs
	}
	if resp.ContentLength >= 0 {
		h["Content-Length"] = []string{strconv.FormatInt(resp.ContentLength, 10)}
	}
	w.WriteHeader(resp.StatusCode)
	// A response of unknown length or an event stream is flushed as it
	// comes (dev servers stream logs and hot-reload events); one of known
	// length leaves it to the server's buffer, sparing a write per read.
	flush := resp.ContentLength < 0 || isEventStream(resp.Header.Get("Content-Type"))
	var fl http.Flusher
	if flush {
		fl, _ = w.(http.Flusher)
	}
	bufp := buffers.Get().(*[]byte)
	defer buffers.Put(bufp)
	buf := *bufp
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return false // the client went away
			}
			if fl != nil {
				fl.Flush()
			}
		}
		if rerr == io.EOF {
			// Trailers come with the body's end; net/http sends them
			// after a chunked body.
			for k, vs := range resp.Trailer {
				h[http.TrailerPrefix+k] = vs
			}
			return !resp.Close
		}
		if rerr != nil {
			// Headers are out: all that is left is to cut the response
			// short, as the service did.
			panic(http.ErrAbortHandler)
		}
	}
}

func isEventStream(ct string) bool {
	// ParseMediaType allocates: only a candidate is worth parsing.
	if len(ct) < len("text/event-stream") || !strings.EqualFold(ct[:len("text/event-stream")], "text/event-stream") {
		return false
	}
	base, _, _ := mime.ParseMediaType(ct)
	return base == "text/event-stream"
}

// writeHead writes r's request line and end-to-end headers with the
// X-Forwarded-* the proxy promises, without the blank line that ends them.
func writeHead(bw *bufio.Writer, r *http.Request) {
	bw.WriteString(r.Method)
	bw.WriteByte(' ')
	bw.WriteString(r.URL.RequestURI())
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	// Dev servers check Host (Vite's allowedHosts): pass the client's on.
	bw.WriteString(r.Host)
	bw.WriteString("\r\n")
	listed := connectionListed(r.Header)
	for k, vs := range r.Header {
		if skipRequest[k] || listed[k] || strings.ContainsRune(k, '_') && forwardedAlias(k) {
			if k == "Te" && len(vs) == 1 && headerHasToken(vs[0], "trailers") {
				bw.WriteString("Te: trailers\r\n")
			}
			continue
		}
		for _, v := range vs {
			writeHeader(bw, k, v)
		}
	}
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		writeHeader(bw, "X-Forwarded-For", ip)
	}
	// Behind binky's TLS front (Caddy, also on loopback), keep what it
	// says the client asked for.
	if proto := r.Header.Get("X-Forwarded-Proto"); proto == "https" {
		writeHeader(bw, "X-Forwarded-Proto", proto)
		if fh := r.Header.Get("X-Forwarded-Host"); fh != "" {
			writeHeader(bw, "X-Forwarded-Host", fh)
		} else {
			writeHeader(bw, "X-Forwarded-Host", r.Host)
		}
	} else {
		writeHeader(bw, "X-Forwarded-Host", r.Host)
		if r.TLS != nil {
			writeHeader(bw, "X-Forwarded-Proto", "https")
		} else {
			writeHeader(bw, "X-Forwarded-Proto", "http")
		}
	}
}

// headerValue drops what would end a header line early: http.Server
// already refuses such values, this keeps a direct caller honest too.
var headerValue = strings.NewReplacer("\r", " ", "\n", " ")

func writeHeader(bw *bufio.Writer, k, v string) {
	bw.WriteString(k)
	bw.WriteString(": ")
	if strings.ContainsAny(v, "\r\n") {
		v = headerValue.Replace(v)
	}
	bw.WriteString(v)
	bw.WriteString("\r\n")
}

// chunkedWriter writes each Write as one HTTP/1.1 chunk.
type chunkedWriter struct{ bw *bufio.Writer }

func newChunkedWriter(bw *bufio.Writer) chunkedWriter { return chunkedWriter{bw} }

func (c chunkedWriter) Write(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.bw.WriteString(strconv.FormatInt(int64(len(b)), 16))
	c.bw.WriteString("\r\n")
	c.bw.Write(b)
	if _, err := c.bw.WriteString("\r\n"); err != nil {
		return 0, err
	}
	// A streamed request body goes on as it comes.
	return len(b), c.bw.Flush()
}

func copyBuffer(dst io.Writer, src io.Reader) (int64, error) {
	bufp := buffers.Get().(*[]byte)
	defer buffers.Put(bufp)
	return io.CopyBuffer(dst, src, *bufp)
}
