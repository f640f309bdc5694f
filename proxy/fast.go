package proxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The fast path serves a client connection on one goroutine without
// net/http's server: read the request head, pick the route by Host, write
// the head (with X-Forwarded-*) and body to a kept connection to the
// service, read its response and write it back. Measured on a 2-core
// machine (docs/performance.md), http.Server costs a goroutine start, a
// background read and its cancellation per request on top of the
// forwarding itself; this path costs about what nginx does.
//
// It takes only what it fully understands: HTTP/1.1, an origin-form
// target, one Host, no Transfer-Encoding, no Expect, no Upgrade, no
// hop-by-hop headers named in Connection, a route that is up. Anything
// else, before a byte is forwarded, hands the connection (with what was
// read of it) to an http.Server running the same Proxy as a handler,
// which serves WebSocket upgrades, the 404 page, the 503s and the
// certificate question, and rejects what is malformed as net/http does.

// headerTimeout bounds how long a client may take to send a request head
// once it started one (http.Server's ReadHeaderTimeout before).
const headerTimeout = 10 * time.Second

var (
	clientReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 8<<10) }}
	clientWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 8<<10) }}
)

// server runs the fast path and its fallback on the same listeners.
type server struct {
	p        *Proxy
	fallback *http.Server
	handoff  *handoffListener
	lim      limits

	mu    sync.Mutex
	conns map[net.Conn]*connState
}

type connState struct{ active bool }

func (s *server) track(c net.Conn, st *connState) {
	s.mu.Lock()
	if st == nil {
		delete(s.conns, c)
	} else {
		s.conns[c] = st
	}
	s.mu.Unlock()
}

func (s *server) setActive(st *connState, active bool) {
	s.mu.Lock()
	st.active = active
	s.mu.Unlock()
}

// serve accepts on l until it is closed.
func (s *server) serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return
		}
		go s.serveConn(c)
	}
}

// shutdown stops the fast path: idle connections at once, busy ones
// when they finish or the context ends.
func (s *server) shutdown(ctx context.Context) {
	for {
		s.mu.Lock()
		busy := 0
		for c, st := range s.conns {
			if st.active {
				busy++
			} else {
				c.Close()
			}
		}
		s.mu.Unlock()
		if busy == 0 || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
}

// fastRequest is what the fast path needs of a request head.
type fastRequest struct {
	method, host  []byte
	contentLength int64
	close         bool   // Connection: close
	xfp, xfh      []byte // X-Forwarded-Proto/Host the client (the TLS front) sent
}

func (s *server) serveConn(c net.Conn) {
	st := &connState{}
	client := &clientRef{c: c}
	s.track(c, st)
	br := clientReaders.Get().(*bufio.Reader)
	bw := clientWriters.Get().(*bufio.Writer)
	br.Reset(spinWrap(c, &s.p.pool.clients))
	bw.Reset(c)
	handedOff := false
	s.p.pool.clients.Add(1)
	defer func() {
		s.p.pool.clients.Add(-1)
		s.track(c, nil)
		if handedOff {
			return // br now belongs to the handed-off connection
		}
		c.Close()
		br.Reset(nil)
		clientReaders.Put(br)
		bw.Reset(nil)
		clientWriters.Put(bw)
	}()
	var req fastRequest
	// Every read of c sets its own deadline: the wait for a request (the
	// idle limit, here), a slow head (readHead), a body (stallReader), and
	// net/http's after a hand-off. Moving a deadline costs more than reading
	// the clock (0.24 µs against 0.07 here), so the idle one is moved only
	// when it was set more than idle/64 ago by this loop.
	var idleSet time.Time
	for {
		if br.Buffered() == 0 {
			if now := time.Now(); now.Sub(idleSet) > s.lim.idle/64 {
				c.SetReadDeadline(now.Add(s.lim.idle))
				idleSet = now
			}
		}
		if _, err := br.Peek(1); err != nil {
			return
		}
		s.setActive(st, true)
		head, ok, slow := readHead(c, br)
		if slow {
			idleSet = time.Time{}
		}
		if !ok {
			if br.Buffered() > 0 {
				handedOff = s.handOff(c, br)
			}
			return
		}
		if !parseRequest(head, &req) {
			handedOff = s.handOff(c, br)
			return
		}
		rt, ok := s.p.lookup(string(req.host))
		if !ok || !rt.Up {
			handedOff = s.handOff(c, br)
			return
		}
		if req.contentLength > 0 {
			idleSet = time.Time{} // the body's reads moved the deadline
		}
		switch s.p.exchange(c, client, br, bw, head, &req, rt, s.lim.body) {
		case handOff:
			handedOff = s.handOff(c, br)
			return
		case closeConn:
			return
		}
		if req.close {
			return
		}
		s.setActive(st, false)
	}
}

// readHead returns the request head at the start of br (up to and
// including the blank line) without consuming it, or false when it does
// not fit in br's buffer or does not arrive in time. slow reports that it
// set a read deadline on c (the head did not come in one read).
func readHead(c net.Conn, br *bufio.Reader) (head []byte, ok, slow bool) {
	for {
		buf, _ := br.Peek(br.Buffered())
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			return buf[:i+4], true, slow
		}
		// A head whose lines end in a bare LF (which HTTP/1.1 lets a
		// server accept) is net/http's at once, not after the timeout.
		if bytes.Contains(buf, []byte("\n\n")) || bytes.Contains(buf, []byte("\n\r\n")) || br.Buffered() >= br.Size() {
			return nil, false, slow
		}
		// Most heads arrive in one segment; only a slow one needs a timer.
		if !slow {
			slow = true
			c.SetReadDeadline(time.Now().Add(headerTimeout))
		}
		if _, err := br.Peek(br.Buffered() + 1); err != nil {
			return nil, false, slow
		}
	}
}

// parseLength reads a Content-Length value: decimal digits only (RFC 9110),
// so "-0", "+5" or " 5" are not lengths and go to net/http, which refuses
// them rather than forward them.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	for _, b := range v {
		if b < '0' || b > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// parseRequest fills r from head, or returns false for anything the fast
// path leaves to net/http.
func parseRequest(head []byte, r *fastRequest) bool {
	*r = fastRequest{contentLength: 0}
	line, rest, ok := bytes.Cut(head, []byte("\r\n"))
	if !ok {
		return false
	}
	method, line, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(method) == 0 || !isToken(method) {
		return false
	}
	target, proto, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(target) == 0 || target[0] != '/' || string(proto) != "HTTP/1.1" {
		return false
	}
	for _, b := range target {
		if b <= ' ' || b == 0x7f {
			return false
		}
	}
	r.method = method
	sawLength := false
	for len(rest) > 2 {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(name) == 0 || !isToken(name) {
			return false // also folded (obs-fold) lines
		}
		value = bytes.Trim(value, " \t")
		for _, b := range value {
			if b < ' ' && b != '\t' || b == 0x7f {
				return false
			}
		}
		switch {
		case fold(name, "host"):
			if r.host != nil || len(value) == 0 || !asciiHost(value) {
				return false // net/http answers a bad Host with a 400
			}
			r.host = value
		case fold(name, "content-length"):
			n, ok := parseLength(value)
			if sawLength || !ok {
				return false
			}
			sawLength, r.contentLength = true, n
		case fold(name, "connection"):
			for _, t := range bytes.Split(value, []byte(",")) {
				t = bytes.Trim(t, " \t")
				switch {
				case fold(t, "close"):
					r.close = true
				case fold(t, "keep-alive"), len(t) == 0:
				default:
					return false // upgrade, or a header made hop-by-hop
				}
			}
		case fold(name, "transfer-encoding"), fold(name, "expect"), fold(name, "upgrade"), fold(name, "te"), fold(name, "trailer"):
			return false
		case fold(name, "x-forwarded-proto"):
			r.xfp = value
		case fold(name, "x-forwarded-host"):
			r.xfh = value
		}
	}
	return r.host != nil
}

// foldDash is fold with '_' taken for '-': the headers the proxy writes
// itself, which a client sent as X_Forwarded_For reached the service,
// and CGI-style servers (wsgiref, PHP) read both as HTTP_X_FORWARDED_FOR,
// the client's forged address first. (Only for these: a transfer_encoding
// is not Transfer-Encoding to the service either.)
func foldDash(b []byte, lower string) bool { return foldAs(b, lower, true) }

func fold(b []byte, lower string) bool { return foldAs(b, lower, false) }

// foldAs reports whether b is lower, ASCII case aside (and, with dash,
// '_' for '-').
func foldAs(b []byte, lower string, dash bool) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] && !(dash && c == '_' && lower[i] == '-') {
			return false
		}
	}
	return true
}

func isToken(b []byte) bool {
	for _, c := range b {
		if !tokenByte[c] {
			return false
		}
	}
	return true
}

// tokenByte holds the bytes of an RFC 9110 token (a header name, a method).
var tokenByte = func() (t [256]bool) {
	for c := '!'; c <= '~'; c++ {
		t[c] = !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, c)
	}
	return t
}()

// skipForward are the request headers the fast path does not pass on:
// hop-by-hop ones (RFC 9110 7.6.1) and the X-Forwarded-* set it writes
// itself. Host is written first, on its own.
func skipForward(name []byte) bool {
	switch len(name) {
	case 4:
		return fold(name, "host")
	case 9:
		return fold(name, "forwarded")
	case 10:
		return fold(name, "connection") || fold(name, "keep-alive")
	case 15:
		return foldDash(name, "x-forwarded-for")
	case 16:
		return foldDash(name, "x-forwarded-host") || fold(name, "proxy-connection")
	case 17:
		return foldDash(name, "x-forwarded-proto")
	case 18:
		return fold(name, "proxy-authenticate")
	case 19:
		return fold(name, "proxy-authorization")
	}
	return false
}

type outcome int

const (
	keepConn outcome = iota
	closeConn
	handOff
)

var (
	getRequest  = &http.Request{Method: http.MethodGet}
	headRequest = &http.Request{Method: http.MethodHead}
)

// exchange forwards the request whose head is at the start of br to rt and
// its response to bw. handOff means nothing was consumed or written. A body
// that sends nothing for bodyStall ends the exchange with a 408.
func (p *Proxy) exchange(c net.Conn, client *clientRef, br *bufio.Reader, bw *bufio.Writer, head []byte, req *fastRequest, rt Route, bodyStall time.Duration) outcome {
	method := string(req.method)
	retryable := req.contentLength == 0 && (method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions)
	var u *upstream
	var resp *http.Response
	for attempt := 0; ; attempt++ {
		u = p.pool.get(rt.Port, !retryable)
		reused := u != nil
		if u == nil {
			var err error
			if u, err = p.pool.dial(context.Background(), rt.Port); err != nil {
				// net/http's path says why (503 while it is not listening).
				return handOff
			}
		}
		writeFastHead(u.bw, head, req, c.RemoteAddr())
		var err error
		if !retryable {
			br.Discard(len(head))
			if req.contentLength > 0 {
				body := &stallReader{Reader: br, conn: c, d: bodyStall}
				if _, err = io.CopyN(u.bw, body, req.contentLength); err != nil {
					switch {
					case body.stalled:
						writeStalled(bw, bodyStall)
					case body.failed == nil && !errors.Is(err, io.EOF):
						// The service stopped reading (a 413 for a large
						// upload, then close): it may have answered. (An
						// EOF is the client's body ending short.)
						answerCutUpload(bw, u, method, rt, err)
						u.close()
						lingerClose(c)
						return closeConn
					}
					u.close()
					return closeConn
				}
			}
		}
		if err = u.bw.Flush(); err == nil {
			err = p.awaitAnswer(u, client)
		}
		if errors.Is(err, errClientGone) {
			u.close()
			return closeConn
		}
		if retryable {
			if err != nil && reused && attempt < maxRetries {
				u.close() // the service closed it while it sat idle
				p.pool.drop(rt.Port)
				continue
			}
			// Until now head stayed in br, unconsumed, for a retry or a
			// hand-off (a request without a body reads nothing more).
			br.Discard(len(head))
		}
		if err == nil {
			// The usual response (a length, a head that fits the
			// buffer) is copied as it came; anything else is parsed.
			if out, keepUp, ok := relayPlain(bw, u.br, method == http.MethodHead, req.close); ok {
				if keepUp {
					p.pool.put(u)
				} else {
					u.close()
				}
				return out
			}
			rr := getRequest
			if method == http.MethodHead {
				rr = headRequest
			}
			for {
				resp, err = readResponse(u, rr)
				// 1xx other than 101 are interim: the final one follows.
				if err != nil || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
					break
				}
			}
			if err == nil && resp.StatusCode == http.StatusSwitchingProtocols {
				err = errors.New("switched protocols on a request that asked for no upgrade")
			}
		}
		if err != nil {
			u.close()
			msg := fmt.Sprintf("binky proxy: %s of %s: %v\n", rt.Service, rt.World, err)
			fmt.Fprintf(bw, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg)
			bw.Flush()
			return closeConn
		}
		break
	}
	out, keepUp := writeResponse(bw, resp, method == http.MethodHead, req.close)
	if keepUp {
		p.pool.put(u)
	} else {
		u.close()
	}
	return out
}

// writeFastHead writes the request head to the service: the request line
// and headers as the client sent them but for hop-by-hop ones, and the
// X-Forwarded-* the proxy promises.
func writeFastHead(w *bufio.Writer, head []byte, req *fastRequest, remote net.Addr) {
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	w.Write(line)
	// Dev servers check Host (Vite's allowedHosts): pass the client's on.
	w.WriteString("\r\nHost: ")
	w.Write(req.host)
	w.WriteString("\r\n")
	for len(rest) > 2 {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, _, _ := bytes.Cut(line, []byte(":"))
		if skipForward(name) {
			continue
		}
		w.Write(line)
		w.WriteString("\r\n")
	}
	if a, ok := remote.(*net.TCPAddr); ok {
		var ip [64]byte
		w.WriteString("X-Forwarded-For: ")
		w.Write(a.AddrPort().Addr().Unmap().AppendTo(ip[:0]))
		w.WriteString("\r\n")
	}
	w.WriteString("X-Forwarded-Host: ")
	// Behind binky's TLS front (Caddy, also on loopback), keep what it
	// says the client asked for.
	if string(req.xfp) == "https" {
		if len(req.xfh) > 0 {
			w.Write(req.xfh)
		} else {
			w.Write(req.host)
		}
		w.WriteString("\r\nX-Forwarded-Proto: https\r\n\r\n")
	} else {
		w.Write(req.host)
		w.WriteString("\r\nX-Forwarded-Proto: http\r\n\r\n")
	}
}

// writeResponse writes resp to the client. keepUp says whether the
// service's connection can serve another request.
func writeResponse(bw *bufio.Writer, resp *http.Response, head, closeAfter bool) (out outcome, keepUp bool) {
	defer resp.Body.Close()
	bw.WriteString("HTTP/1.1 ")
	if resp.Status != "" {
		bw.WriteString(resp.Status)
	} else {
		bw.WriteString(strconv.Itoa(resp.StatusCode))
	}
	bw.WriteString("\r\n")
	listed := connectionListed(resp.Header)
	for k, vs := range resp.Header {
		if skipResponse[k] || listed[k] {
			continue
		}
		for _, v := range vs {
			writeHeader(bw, k, v)
		}
	}
	noBody := head || resp.StatusCode < 200 || resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified
	chunked := false
	switch {
	case noBody:
		// What the service said the body would be, as it said it.
		for _, v := range resp.Header["Content-Length"] {
			writeHeader(bw, "Content-Length", v)
		}
	case resp.ContentLength >= 0:
		bw.WriteString("Content-Length: ")
		bw.WriteString(strconv.FormatInt(resp.ContentLength, 10))
		bw.WriteString("\r\n")
	default:
		chunked = true
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	if closeAfter {
		bw.WriteString("Connection: close\r\n")
	}
	bw.WriteString("\r\n")
	if noBody {
		if bw.Flush() != nil {
			return closeConn, !resp.Close
		}
		return keepConn, !resp.Close
	}
	// A response of unknown length or an event stream goes out as it
	// comes (dev servers stream logs and hot-reload events); one of
	// known length leaves it to the buffer, sparing a write per read.
	flush := chunked || isEventStream(resp.Header.Get("Content-Type"))
	bufp := buffers.Get().(*[]byte)
	defer buffers.Put(bufp)
	buf := *bufp
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			var werr error
			if chunked {
				bw.WriteString(strconv.FormatInt(int64(n), 16))
				bw.WriteString("\r\n")
				bw.Write(buf[:n])
				_, werr = bw.WriteString("\r\n")
			} else {
				_, werr = bw.Write(buf[:n])
			}
			if werr == nil && flush {
				werr = bw.Flush()
			}
			if werr != nil {
				return closeConn, false // the client went away
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			// The head is out: cut the response short, as the service did.
			bw.Flush()
			return closeConn, false
		}
	}
	if chunked {
		// The service's trailers (gRPC's status, a checksum), read with
		// the body's end: the client asked for them (Te: trailers is
		// passed on).
		bw.WriteString("0\r\n")
		for k, vs := range resp.Trailer {
			for _, v := range vs {
				writeHeader(bw, k, v)
			}
		}
		bw.WriteString("\r\n")
	}
	if bw.Flush() != nil {
		return closeConn, !resp.Close
	}
	return keepConn, !resp.Close
}

// handOff gives c, with what br holds of it, to the net/http server.
func (s *server) handOff(c net.Conn, br *bufio.Reader) bool {
	return s.handoff.give(&bufferedConn{Conn: c, br: br})
}

// bufferedConn is a connection whose first bytes were already read into br.
type bufferedConn struct {
	net.Conn
	br *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.br.Read(p) }

// CloseWrite passes a half-close on: an upgraded connection (a WebSocket)
// whose service stops sending stays open for what the client still sends,
// as net/http's upgrade copier does when the connection can half-close.
func (b *bufferedConn) CloseWrite() error {
	if cw, ok := b.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// handoffListener feeds handed-off connections to http.Server.Serve.
type handoffListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newHandoffListener(addr net.Addr) *handoffListener {
	return &handoffListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *handoffListener) give(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *handoffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handoffListener) Addr() net.Addr { return l.addr }

// relayPlain copies a response of the usual shape to the client as the
// service wrote it, less its hop-by-hop headers: HTTP/1.1, a final
// status, a Content-Length (or no body: HEAD, 204, 304), a head that fits
// in br's buffer, no event stream. ok is false, with nothing consumed or
// written, for anything else: http.ReadResponse then handles it.
func relayPlain(bw *bufio.Writer, br *bufio.Reader, isHead, closeAfter bool) (out outcome, keepUp, ok bool) {
	var head []byte
	for {
		buf, err := br.Peek(br.Buffered())
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			head = buf[:i+4]
			break
		}
		if err != nil || br.Buffered() >= br.Size() {
			return 0, false, false
		}
		if _, err := br.Peek(br.Buffered() + 1); err != nil {
			return 0, false, false
		}
	}
	status, rest, _ := bytes.Cut(head, []byte("\r\n"))
	if len(status) < 12 || string(status[:9]) != "HTTP/1.1 " || len(status) > 12 && status[12] != ' ' || !printable(status) {
		return 0, false, false
	}
	code, err := strconv.Atoi(string(status[9:12]))
	if err != nil || code < 200 {
		return 0, false, false
	}
	noBody := isHead || code == http.StatusNoContent || code == http.StatusNotModified
	length, upClose := int64(-1), false
	for lines := rest; len(lines) > 2; {
		var line []byte
		line, lines, _ = bytes.Cut(lines, []byte("\r\n"))
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found || len(name) == 0 || !isToken(name) {
			return 0, false, false
		}
		value = bytes.Trim(value, " \t")
		if !printable(value) {
			// A bare LF may hide a header the client would obey and this
			// reading would not: net/http's parser decides.
			return 0, false, false
		}
		switch {
		case fold(name, "content-length"):
			n, ok := parseLength(value)
			if length >= 0 || !ok {
				return 0, false, false
			}
			length = n
		case fold(name, "connection"):
			for _, t := range bytes.Split(value, []byte(",")) {
				switch t = bytes.Trim(t, " \t"); {
				case fold(t, "close"):
					upClose = true
				case fold(t, "keep-alive"), len(t) == 0:
				default:
					return 0, false, false
				}
			}
		case fold(name, "transfer-encoding"), fold(name, "trailer"), fold(name, "upgrade"):
			return 0, false, false
		case fold(name, "content-type"):
			if isEventStream(string(value)) {
				return 0, false, false
			}
		}
	}
	if length < 0 && !noBody {
		return 0, false, false
	}
	bw.Write(status)
	bw.WriteString("\r\n")
	for lines := rest; len(lines) > 2; {
		var line []byte
		line, lines, _ = bytes.Cut(lines, []byte("\r\n"))
		name, _, _ := bytes.Cut(line, []byte(":"))
		if hopResponse(name) {
			continue
		}
		bw.Write(line)
		bw.WriteString("\r\n")
	}
	if closeAfter {
		bw.WriteString("Connection: close\r\n")
	}
	bw.WriteString("\r\n")
	br.Discard(len(head))
	if !noBody && length > 0 {
		if _, err := io.CopyN(bw, br, length); err != nil {
			// The service cut the body short, or the client went away.
			bw.Flush()
			return closeConn, false, true
		}
	}
	if bw.Flush() != nil {
		return closeConn, !upClose, true
	}
	return keepConn, !upClose, true
}

// hopResponse reports the response headers that are the proxy's own
// business with each side (RFC 9110 7.6.1).
func hopResponse(name []byte) bool {
	switch len(name) {
	case 7:
		return fold(name, "upgrade")
	case 10:
		return fold(name, "connection") || fold(name, "keep-alive")
	case 16:
		return fold(name, "proxy-connection")
	case 18:
		return fold(name, "proxy-authenticate")
	}
	return false
}

// printable: no control byte but a tab (a bare LF, a NUL) in b.
func printable(b []byte) bool {
	for _, c := range b {
		if c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// asciiHost: a Host of printable ASCII. Anything else (UTF-8 that case
// folding would turn into a route's name) is handed off, and net/http
// refuses it.
func asciiHost(h []byte) bool {
	for _, b := range h {
		if b >= 0x80 || b <= ' ' {
			return false
		}
	}
	return true
}

// errClientGone: the client closed its connection while its request
// waited for an answer.
var errClientGone = errors.New("the client went away")

// checkClientEvery is how often the requests waiting for their answers
// look whether their clients are still there.
const checkClientEvery = time.Second

// clientRef is a fast-path client connection, as a request waiting on a
// kept connection names it (one per client connection: nothing is
// allocated per request).
type clientRef struct{ c net.Conn }

// goneRef marks a kept connection whose waiting client went away.
var goneRef = &clientRef{}

// awaitAnswer waits for the first byte of u's answer. While it waits, the
// pool's watcher (watchClients) may find the client gone and close u: a
// long poll whose browser tab closed frees the service's connection, as
// net/http's path does, rather than both being held until the service
// answers. (A read deadline per request did the same at ~15% more of the
// proxy's CPU per request; a map of waiting requests at ~10%.)
func (p *Proxy) awaitAnswer(u *upstream, client *clientRef) error {
	pl := &p.pool
	if pl.waiting.Add(1) == 1 && pl.watching.CompareAndSwap(false, true) {
		go pl.watchClients()
	}
	u.waiting.Store(client)
	_, err := u.br.Peek(1)
	gone := u.waiting.Swap(nil) == goneRef
	pl.waiting.Add(-1)
	if gone {
		return errClientGone
	}
	return err
}

// watchClients looks, every checkClientEvery while requests wait, at the
// client each one waits for (an idle daemon is not woken).
func (p *pool) watchClients() {
	for {
		time.Sleep(checkClientEvery)
		if p.waiting.Load() == 0 {
			p.watching.Store(false)
			// A request that began waiting just now found it watching,
			// and started none: keep watching for it.
			if p.waiting.Load() == 0 || !p.watching.CompareAndSwap(false, true) {
				return
			}
		}
		p.liveMu.Lock()
		for u := range p.live {
			// Only while that request still waits: the swap fails once it
			// stopped (and its connection may serve another by now).
			if r := u.waiting.Load(); r != nil && r != goneRef && peerGone(r.c) && u.waiting.CompareAndSwap(r, goneRef) {
				u.conn.Close()
			}
		}
		p.liveMu.Unlock()
	}
}

// answerCutUpload answers a request whose body the service stopped taking:
// with the answer it sent before it closed (a 413, a 401), else a 502
// saying so. The connection closes after it: the rest of the body is
// still on its way.
func answerCutUpload(bw *bufio.Writer, u *upstream, method string, rt Route, err error) {
	u.conn.SetReadDeadline(time.Now().Add(time.Second))
	if _, _, ok := relayPlain(bw, u.br, method == http.MethodHead, true); ok {
		return
	}
	if resp, rerr := readResponse(u, getRequest); rerr == nil && resp.StatusCode >= 200 {
		writeResponse(bw, resp, method == http.MethodHead, true)
		return
	}
	msg := fmt.Sprintf("binky proxy: %s of %s stopped reading the request body: %v\n", rt.Service, rt.World, err)
	fmt.Fprintf(bw, "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nX-Content-Type-Options: nosniff\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg)
	bw.Flush()
}

// lingerClose readies c, whose client may still be sending a body the
// service cut, to be closed under the answer just sent: closed with the
// client's bytes unread, it would be reset, and a client still sending
// reports the reset (curl's "Send failure") rather than the answer. So its
// sending side is closed first (the client reads the answer, then the
// end), and what the client still sends is read and dropped until it
// closes its side too, or for continueWait.
func lingerClose(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(continueWait))
	bufp := buffers.Get().(*[]byte)
	defer buffers.Put(bufp)
	for {
		if _, err := c.Read(*bufp); err != nil {
			return
		}
	}
}
