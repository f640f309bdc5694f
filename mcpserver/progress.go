package mcpserver

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/git-binky/git-binky/api"
)

// DefaultHeartbeat is how often a long call reports that it is still
// working when nothing else happened: clients (the TypeScript SDK's among
// them) give up on a request after 60 s without a response or progress.
const DefaultHeartbeat = 10 * time.Second

// progress sends notifications/progress for one tool call whose request
// carried a progressToken; without one it does nothing. Over stdio they
// are written at once, in order, through the output filter, and none after
// done: the protocol says a request's progress stops with its response,
// and mcp-go's own notification queue could overtake the response.
type progress struct {
	ctx   context.Context
	srv   *server.MCPServer
	out   *cancelFilter // nil: through mcp-go's queue (not over stdio)
	token mcp.ProgressToken

	mu    sync.Mutex
	n     int
	last  string
	ended bool
	start time.Time
	every time.Duration
	stop  chan struct{}

	// hide, when set, hides the world's credentials in each line reported.
	hide func(string) string
}

// filterKey carries the stdio output filter in a call's context.
type filterKey struct{}

func (s *Server) newProgress(ctx context.Context, req mcp.CallToolRequest) *progress {
	p := &progress{ctx: ctx, start: time.Now(), every: s.Heartbeat}
	if p.every <= 0 {
		p.every = DefaultHeartbeat
	}
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return p
	}
	p.srv, p.token = server.ServerFromContext(ctx), req.Params.Meta.ProgressToken
	p.out, _ = ctx.Value(filterKey{}).(*cancelFilter)
	if p.srv == nil && p.out == nil {
		return p
	}
	p.stop = make(chan struct{})
	go p.beat()
	context.AfterFunc(ctx, func() { close(p.stop) })
	return p
}

// done ends the progress of a call about to return its response: nothing
// is sent after it.
func (p *progress) done() {
	p.mu.Lock()
	p.ended = true
	p.mu.Unlock()
}

// beat repeats the last message every heartbeat until the call ends.
func (p *progress) beat() {
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			msg := p.last
			p.mu.Unlock()
			if msg == "" {
				msg = "working"
			}
			p.send(fmt.Sprintf("%s (%s so far)", msg, time.Since(p.start).Round(time.Second)))
		}
	}
}

func (p *progress) send(msg string) {
	if (p.srv == nil && p.out == nil) || p.ctx.Err() != nil {
		return
	}
	// Under the lock, so that done waits for a notification being written.
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.n++
	params := map[string]any{"progressToken": p.token, "progress": p.n, "message": msg}
	if p.out != nil {
		_ = p.out.notify(string(mcp.MethodNotificationProgress), params)
		return
	}
	_ = p.srv.SendNotificationToClient(p.ctx, string(mcp.MethodNotificationProgress), params)
}

// event reports a daemon event of up or reload: a service starting, a
// golden template building, a world queued.
func (p *progress) event(e api.Event) {
	var parts []string
	for _, s := range []string{e.World, e.Service, e.State} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	msg := strings.Join(parts, " ")
	if e.Message != "" {
		if msg != "" {
			msg += ": "
		}
		msg += e.Message
	}
	if msg == "" {
		return
	}
	p.mu.Lock()
	p.last = msg
	p.mu.Unlock()
	p.send(msg)
}

// notice reports msg once. Unlike an event's, it is not what the
// heartbeat repeats: what it says (a wait for a stopping daemon) may be
// over by then.
func (p *progress) notice(msg string) { p.send(api.EventNotice + ": " + msg) }

// lines returns a writer that reports each line written to it (verify's
// output), or nil when there is no one to report to.
func (p *progress) lines() io.Writer {
	if p.srv == nil && p.out == nil {
		return nil
	}
	return &lineReporter{p: p}
}

type lineReporter struct {
	p       *progress
	partial []byte
}

func (l *lineReporter) Write(b []byte) (int, error) {
	l.partial = append(l.partial, b...)
	for {
		i := strings.IndexByte(string(l.partial), '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
		if l.p.hide != nil {
			line = l.p.hide(line)
		}
		if line != "" {
			l.p.event(api.Event{Message: line})
		}
	}
	return len(b), nil
}
