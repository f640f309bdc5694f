// Package proxy routes <url>.<worktree>.<project>.<domain> to the port of
// that world's service on loopback: plain requests, streaming responses and
// WebSocket upgrades (dev servers' hot reload), with X-Forwarded-* headers.
// An unknown host gets a page listing the worlds it knows, never another
// world's service; a stopped service gets a 503 that says so.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/git-binky/git-binky/world"
)

// Route is one service reachable through the proxy.
type Route struct {
	Host    string // the full host name, lowercase
	Project string
	World   string
	Service string
	Group   string // the group that starts it, when a plain up does not
	// Ungrouped: neither a plain up nor any group starts it.
	Ungrouped bool
	Port      int
	// Up reports whether the service is meant to be running; a request for
	// a service that is not gets a 503 naming the way to start it.
	Up    bool
	State string
	// Reason is binky's word on why a service that is not up is so (a
	// crash, a port another program holds), one line.
	Reason string
}

// Proxy is an http.Handler over a route table that can change at any time.
type Proxy struct {
	mu     sync.RWMutex
	routes map[string]Route

	pool pool                   // kept connections of plain requests (forward.go)
	rp   *httputil.ReverseProxy // upgrades (WebSockets)
}

type routeKey struct{}

// New returns a proxy with no routes.
func New() *Proxy {
	p := &Proxy{routes: map[string]Route{}}
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   false,
	}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			rt := r.In.Context().Value(routeKey{}).(Route)
			r.SetURL(&url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(rt.Port)})
			r.Out.Host = r.In.Host // dev servers check Host (Vite's allowedHosts)
			proto, fwdHost := r.In.Header.Get("X-Forwarded-Proto"), r.In.Header.Get("X-Forwarded-Host")
			r.SetXForwarded()
			// Behind binky's TLS front (Caddy, also on loopback), keep what
			// it says the client asked for.
			if proto == "https" {
				r.Out.Header.Set("X-Forwarded-Proto", proto)
				if fwdHost != "" {
					r.Out.Header.Set("X-Forwarded-Host", fwdHost)
				}
			}
		},
		Transport: transport,
		// 0 still flushes at once for streaming responses (no length, or
		// text/event-stream), and spares a syscall per write otherwise.
		FlushInterval: 0,
		BufferPool:    bufferPool{},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			rt := r.Context().Value(routeKey{}).(Route)
			if connRefused(err) {
				unavailable(w, rt, "is not accepting connections (starting or restarting?)")
				return
			}
			if errors.Is(err, context.Canceled) {
				// The client went away: no answer at all (returning would
				// let net/http send a 200 the service never gave).
				panic(http.ErrAbortHandler)
			}
			http.Error(w, fmt.Sprintf("binky proxy: %s of %s: %v", rt.Service, rt.World, err), http.StatusBadGateway)
		},
	}
	return p
}

// SetRoutes replaces the route table.
func (p *Proxy) SetRoutes(routes []Route) {
	m := make(map[string]Route, len(routes))
	ports := make(map[int]bool, len(routes))
	for _, r := range routes {
		m[asciiLower(r.Host)] = r
		ports[r.Port] = true
	}
	p.mu.Lock()
	p.routes = m
	p.mu.Unlock()
	p.pool.retain(ports)
}

// Routes returns the current routes sorted by host.
func (p *Proxy) Routes() []Route {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]Route, 0, len(p.routes))
	for _, r := range p.routes {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}

// AskPath is where the TLS front asks whether a host may get a certificate.
const AskPath = "/.binky/ask"

// routeHost is the route-table key of a Host header: lowercase, with no
// port and no trailing dot.
func routeHost(host string) string {
	host = asciiLower(host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.TrimSuffix(host, ".")
}

// asciiLower lowercases ASCII letters only: Unicode case folding would
// take "apİ" (U+0130) to a route named "api".
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// lookup returns the route for a Host header.
func (p *Proxy) lookup(hostHeader string) (Route, bool) {
	host := routeHost(hostHeader)
	p.mu.RLock()
	rt, ok := p.routes[host]
	p.mu.RUnlock()
	return rt, ok
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if len(r.TransferEncoding) > 0 || !r.ProtoAtLeast(1, 1) {
		// Go's server reads a chunked body by its chunks and drops a
		// Content-Length sent beside them without a word to the handler,
		// but keeps the connection. RFC 9112 6.1 wants one that carried
		// both closed after the answer: a front that went by the length
		// would take what follows the body as another request. Since the
		// two cannot be told apart here, any chunked request closes its
		// connection (a reconnect on loopback). So does any HTTP/1.0 one:
		// there Go ignores a Transfer-Encoding (and hides it), framing by
		// the length, which RFC 9112 6.1 calls faulty framing.
		w.Header().Set("Connection", "close")
	}
	host := routeHost(r.Host)
	if r.URL.Path == AskPath && (host == "127.0.0.1" || host == "localhost") {
		ownAnswer(w, r)
		p.mu.RLock()
		_, ok := p.routes[asciiLower(r.URL.Query().Get("domain"))]
		p.mu.RUnlock()
		if ok {
			w.WriteHeader(http.StatusOK)
		} else {
			http.Error(w, "not a binky host", http.StatusNotFound)
		}
		return
	}
	p.mu.RLock()
	rt, ok := p.routes[host]
	p.mu.RUnlock()
	if !ok {
		ownAnswer(w, r)
		p.notFound(w, host)
		return
	}
	if !rt.Up {
		ownAnswer(w, r)
		why := "is " + orDefault(rt.State, "stopped")
		if rt.Reason != "" {
			why += " (" + rt.Reason + ")"
		}
		unavailable(w, rt, why)
		return
	}
	if isUpgrade(r) {
		p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), routeKey{}, rt)))
		return
	}
	p.forward(w, r, rt)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func unavailable(w http.ResponseWriter, rt Route, why string) {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusServiceUnavailable)
	start := "Start it with: git binky up " + world.ShellArg(rt.World)
	if rt.Group != "" {
		start += " --group " + world.ShellArg(rt.Group)
	}
	if rt.Ungrouped {
		start = "Neither a plain 'git binky up' nor a group of binky.toml starts it: add it to a group in [groups]."
	}
	fmt.Fprintf(w, "binky: service %s of world %s (%s) %s.\n%s\n", rt.Service, rt.World, rt.Project, why, start)
}

// notFound lists the hosts the proxy knows under the domain the request
// named, so a typo is easy to fix; it serves nothing of any world. A host
// under no world's domain (evil.example, a bare IP) gets no list: a page
// that rebinds its own name to 127.0.0.1 would otherwise read every
// world's host, project and worktree from it. A loopback IP lists all.
func (p *Proxy) notFound(w http.ResponseWriter, host string) {
	// An address typed as a loopback IP is not a name anyone could rebind.
	ip := net.ParseIP(strings.Trim(host, "[]"))
	loopback := ip != nil && ip.IsLoopback()
	var routes []Route
	for _, r := range p.Routes() {
		if d := routeDomain(r.Host); loopback || host == d || strings.HasSuffix(host, "."+d) {
			routes = append(routes, r)
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprintf(w, "<!doctype html><title>binky: no world here</title><h1>No world answers to %s</h1>\n", html.EscapeString(host))
	if len(routes) == 0 {
		fmt.Fprint(w, "<p>No world is known here: <code>git binky up</code> in a worktree starts one, and <code>git binky status</code> lists their URLs.</p>\n")
		return
	}
	fmt.Fprint(w, "<p>Known worlds:</p><ul>\n")
	for _, r := range routes {
		state := "up"
		if !r.Up {
			state = orDefault(r.State, "stopped")
		}
		fmt.Fprintf(w, "<li><code>%s</code> — %s of %s (%s), %s</li>\n", html.EscapeString(r.Host),
			html.EscapeString(r.Service), html.EscapeString(r.World), html.EscapeString(r.Project), html.EscapeString(state))
	}
	fmt.Fprint(w, "</ul>\n")
}

// routeDomain is the domain of a route's host, <url>.<world>.<project>.<domain>
// (world.Host): what follows its first three labels.
func routeDomain(host string) string {
	parts := strings.SplitN(host, ".", 4)
	if len(parts) < 4 {
		return host
	}
	return parts[3]
}

// Listen opens the proxy's listeners on loopback only: 127.0.0.1 and, where
// the machine has IPv6, ::1.
func Listen(port int) ([]net.Listener, error) {
	l4, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("proxy: listen on 127.0.0.1:%d: %w (choose another with 'git binky port --proxy N')", port, err)
	}
	ls := []net.Listener{l4}
	if l6, err := net.Listen("tcp6", net.JoinHostPort("::1", strconv.Itoa(port))); err == nil {
		ls = append(ls, l6)
	}
	return ls, nil
}

// Serve serves h on the listeners until ctx is done. A *Proxy is served
// by its fast path (fast.go), with net/http for what that leaves.
func Serve(ctx context.Context, h http.Handler, ls []net.Listener) {
	serveLimited(ctx, h, ls, defaultLimits)
}

func serveLimited(ctx context.Context, h http.Handler, ls []net.Listener, lim limits) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: headerTimeout, IdleTimeout: lim.idle, ConnContext: withLimits(lim)}
	p, fast := h.(*Proxy)
	if !fast || len(ls) == 0 {
		for _, l := range ls {
			go srv.Serve(l)
		}
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shut)
		return
	}
	s := &server{p: p, fallback: srv, handoff: newHandoffListener(ls[0].Addr()), lim: lim, conns: map[net.Conn]*connState{}}
	go srv.Serve(s.handoff)
	for _, l := range ls {
		go s.serve(l)
	}
	<-ctx.Done()
	for _, l := range ls {
		l.Close()
	}
	shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Shutdown(shut) // also closes the hand-off listener
	s.shutdown(shut)
}

// bufferPool reuses the copy buffers of proxied bodies.
type bufferPool struct{}

var buffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *(buffers.Get().(*[]byte)) }
func (bufferPool) Put(b []byte) { buffers.Put(&b) }
