package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// cancelFilter sits between mcp-go's stdio server and the client. It notes
// the requests the client cancelled (notifications/cancelled) as they come
// in, and drops the responses to them on the way out: the protocol says a
// cancelled request gets none, and mcp-go would still send the handler's.
type cancelFilter struct {
	out io.Writer

	mu        sync.Mutex
	cancelled map[string]bool // request ids, as their JSON text
	pending   []byte          // an output line not finished yet

	// The lifecycle (refuseEarly): the ids of initialize requests not
	// answered yet, and whether one was answered with a result.
	initializing map[string]bool
	// late holds the initializes whose answer was waited for past
	// initializeWait: what follows no longer waits, but their answer,
	// when it comes, still opens the session.
	late        map[string]bool
	initialized atomic.Bool
	answered    *sync.Cond // on mu: an initialize request was answered

	// Error codes a resource handler chose, by request id: mcp-go answers
	// every handler error with -32603 (internal error), and a world that
	// does not exist is not the server's failure.
	codes map[string]int
}

func newCancelFilter(out io.Writer) *cancelFilter {
	f := &cancelFilter{out: out, cancelled: map[string]bool{}, initializing: map[string]bool{}, late: map[string]bool{}, codes: map[string]int{}}
	f.answered = sync.NewCond(&f.mu)
	return f
}

// awaitInitialize holds what a client sent behind an initialize request
// until that is answered: a client that writes its first requests at once
// (initialize, initialized, tools/list) has them answered in turn, not
// refused for coming before an answer it could not yet have read.
//
// It waits at most initializeWait: a request mcp-go never answers held
// every line after it, end of input included, and the session with it.
func (f *cancelFilter) awaitInitialize() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.initialized.Load() || len(f.initializing) == 0 {
		return
	}
	deadline := time.Now().Add(initializeWait)
	wake := time.AfterFunc(initializeWait, func() {
		f.mu.Lock()
		f.answered.Broadcast()
		f.mu.Unlock()
	})
	defer wake.Stop()
	for !f.initialized.Load() && len(f.initializing) > 0 {
		if !time.Now().Before(deadline) {
			// Unanswered: what follows is refused as early until it is.
			for k := range f.initializing {
				f.late[k] = true
			}
			clear(f.initializing)
			return
		}
		f.answered.Wait()
	}
}

// initializeWait bounds the wait for an initialize's answer, which mcp-go
// gives at once.
var initializeWait = 10 * time.Second

// refuseInvalid answers a request that also carries a result or an error
// member (JSON-RPC's Invalid Request) and reports whether it did: mcp-go
// takes such a line for a response to a request of its own and drops it,
// and the client waited for good, an initialize among them.
func (f *cancelFilter) refuseInvalid(line []byte) bool {
	// A cheap look before decoding, as loose as Go's decoder (mcp-go's),
	// which folds the case of keys (Unicode's folding: "reſult" is a
	// result) and reads escapes in them.
	if !bytes.Contains(line, []byte(`\u`)) && !hasNonASCII(line) {
		lower := bytes.ToLower(line)
		if !bytes.Contains(lower, []byte(`"result"`)) && !bytes.Contains(lower, []byte(`"error"`)) {
			return false
		}
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method == nil || (m.Result == nil && m.Error == nil) {
		return false
	}
	if len(m.ID) == 0 || bytes.Equal(m.ID, []byte("null")) {
		return true // a notification: no one waits for an answer
	}
	return f.refuse(m.ID, fmt.Sprintf("%s with a result or an error member: a request carries neither (JSON-RPC)", *m.Method))
}

func hasNonASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// refuse answers request id with JSON-RPC's Invalid Request and message,
// reporting whether it could.
func (f *cancelFilter) refuse(id json.RawMessage, message string) bool {
	resp, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{
		"code": mcp.INVALID_REQUEST, "message": message,
	}})
	if err != nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out.Write(append(resp, '\n'))
	return true
}

// watch returns in as mcp-go should read it, noting cancellations.
func (f *cancelFilter) watch(in io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := readLine(r, MaxMessage)
			if errors.Is(err, errTooLong) {
				f.tooLong()
				continue
			}
			if len(line) > 0 {
				if f.refuseInvalid(line) {
					continue
				}
				f.note(line)
				f.awaitInitialize()
				if f.refuseEarly(line) {
					continue
				}
				if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return pr
}

// MaxMessage bounds one message from the client: a 400 MB line took 2.1
// GB to read and parse (an attack). Nothing an MCP client sends binky
// comes near it.
const MaxMessage = 16 << 20

var errTooLong = errors.New("message too long")

// readLine reads one line of at most max bytes and its newline. A
// longer one is read to its end and dropped, holding no more than max,
// and errTooLong returned.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		if len(line)+len(part) > max+1 { // the newline is not the message's
			for err == bufio.ErrBufferFull {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return nil, err
			}
			return nil, errTooLong
		}
		line = append(line, part...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// tooLong answers a message over MaxMessage as JSON-RPC answers what it
// cannot parse: its id is unknown.
func (f *cancelFilter) tooLong() {
	resp, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{
		"code": mcp.PARSE_ERROR, "message": fmt.Sprintf("message over %d MiB: not read", MaxMessage>>20)}})
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out.Write(append(resp, '\n'))
}

func (f *cancelFilter) note(line []byte) {
	if !bytes.Contains(line, []byte(mcp.MethodNotificationCancelled)) {
		return
	}
	var n struct {
		Method string `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &n) == nil && n.Method == string(mcp.MethodNotificationCancelled) && len(n.Params.RequestID) > 0 {
		f.mu.Lock()
		f.cancelled[idKey(n.Params.RequestID)] = true
		f.mu.Unlock()
	}
}

// idKey is a request id as one text however the client wrote it (3 and
// 3.0 are one id): mcp-go decodes ids to float64 or string, and writes
// responses with them so.
func idKey(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	return idKeyOf(v)
}

// refuseEarly answers a request sent before the session is initialized
// with an error and reports whether it did: the lifecycle starts with
// initialize (which settles the protocol version both sides speak), and
// mcp-go would run a tool call sent before it — an up or a remove
// included. The session is initialized once an initialize request got a
// result (Write sees it go out). Pings may come any time; a client of
// protocol 2026-07-28 or later has no initialize: it may send
// server/discover, and every request carries its version in _meta, which
// mcp-go checks.
func (f *cancelFilter) refuseEarly(line []byte) bool {
	if f.initialized.Load() {
		return false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method == "" {
		return false // not a request: mcp-go answers what it cannot parse
	}
	hasID := len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null"))
	version, _ := m.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
	switch {
	case m.Method == string(mcp.MethodInitialize) && hasID:
		f.mu.Lock()
		f.initializing[idKey(m.ID)] = true
		f.mu.Unlock()
		return false
	case m.Method == string(mcp.MethodPing), m.Method == string(mcp.MethodServerDiscover), mcp.IsModernProtocol(version):
		return false
	case !hasID:
		return true // a notification: nothing to answer, nothing to run
	}
	return f.refuse(m.ID, fmt.Sprintf("%s before initialize: an MCP session starts with an initialize request (what comes after one waits for its answer), and none has succeeded", m.Method))
}

// noteInitializedLocked marks the session initialized when line answers a
// pending initialize request with a result.
func (f *cancelFilter) noteInitializedLocked(line []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "" || len(m.ID) == 0 {
		return
	}
	key := idKey(m.ID)
	if !f.initializing[key] && !f.late[key] {
		return
	}
	// Only initialize's own answer: a client that gave a ping the pending
	// initialize's id had the ping's {} taken for it, and a failed
	// initialize unlocked the session (an attack ran a tool that way).
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	switch {
	case len(m.Result) == 0 || bytes.Equal(m.Result, []byte("null")):
		delete(f.initializing, key) // an error: initialize failed
		delete(f.late, key)
		f.answered.Broadcast()
	case json.Unmarshal(m.Result, &res) == nil && res.ProtocolVersion != "":
		delete(f.initializing, key)
		clear(f.late) // nothing left to look for in what goes out
		f.initialized.Store(true)
		f.answered.Broadcast()
	}
}

func idKeyOf(id any) string {
	b, err := json.Marshal(id)
	if err != nil {
		return fmt.Sprint(id)
	}
	return string(b)
}

// isCancelled reports whether the client cancelled the request with id
// (as idKeyOf writes it).
func (f *cancelFilter) isCancelled(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cancelled[key]
}

// requestIDField carries a tool call's JSON-RPC id from the beforeCallTool
// hook to the tool's middleware, in the call's _meta.
const requestIDField = "git-binky/request-id"

// noteRequestID is a beforeCallTool hook: it runs once mcp-go can cancel
// the call, and leaves its id where skipCancelled finds it.
func noteRequestID(_ context.Context, id any, req *mcp.CallToolRequest) {
	req.Params.Meta = withRequestID(req.Params.Meta, id)
}

// noteReadID is a beforeReadResource hook: it leaves the request's id
// where a resource handler finds it to choose its error's code.
func noteReadID(_ context.Context, id any, req *mcp.ReadResourceRequest) {
	req.Params.Meta = withRequestID(req.Params.Meta, id)
}

func withRequestID(meta *mcp.Meta, id any) *mcp.Meta {
	if meta == nil {
		meta = &mcp.Meta{}
	}
	if meta.AdditionalFields == nil {
		meta.AdditionalFields = map[string]any{}
	}
	meta.AdditionalFields[requestIDField] = idKeyOf(id)
	return meta
}

// skipCancelled does not run a call the client cancelled before it
// started: mcp-go only cancels a call that has started, and one queued
// behind others (or a cancel that overtook it) would otherwise still run,
// a down or a remove included. Its response is dropped like any other.
func (f *cancelFilter) skipCancelled(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if req.Params.Meta != nil {
			if key, ok := req.Params.Meta.AdditionalFields[requestIDField].(string); ok && f.isCancelled(key) {
				return mcp.NewToolResultError("cancelled by the client before it started"), nil
			}
		}
		return next(ctx, req)
	}
}

// notify writes a notification as one line of its own, at once: a line of
// mcp-go's that is not finished yet stays pending, so the two never mix.
func (f *cancelFilter) notify(method string, params any) error {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err = f.out.Write(append(b, '\n'))
	return err
}

// Write passes whole lines on, except responses to cancelled requests.
func (f *cancelFilter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(f.pending, p...)
	for {
		i := bytes.IndexByte(f.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := f.pending[:i+1]
		if len(f.initializing) > 0 || len(f.late) > 0 {
			f.noteInitializedLocked(line)
		}
		if len(f.codes) > 0 {
			line = f.recodeLocked(line)
		}
		if !f.dropLocked(line) {
			if _, err := f.out.Write(line); err != nil {
				f.pending = f.pending[i+1:]
				return len(p), err
			}
		}
		f.pending = append([]byte(nil), f.pending[i+1:]...)
	}
}

// setCode makes code the error code of the response to the request with
// id (as idKeyOf writes it), if that response is an error.
func (f *cancelFilter) setCode(key string, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.codes[key] = code
}

// recodeLocked gives an error response the code its handler chose.
func (f *cancelFilter) recodeLocked(line []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(line, &m) != nil || len(m["id"]) == 0 || len(m["method"]) > 0 {
		return line
	}
	key := idKey(m["id"])
	code, ok := f.codes[key]
	if !ok {
		return line
	}
	delete(f.codes, key)
	var e map[string]json.RawMessage
	if json.Unmarshal(m["error"], &e) != nil || e == nil {
		return line
	}
	e["code"], _ = json.Marshal(code)
	m["error"], _ = json.Marshal(e)
	out, err := json.Marshal(m)
	if err != nil {
		return line
	}
	return append(out, '\n')
}

func (f *cancelFilter) dropLocked(line []byte) bool {
	if len(f.cancelled) == 0 {
		return false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil || len(m.ID) == 0 || m.Method != "" {
		return false // not a response
	}
	if key := idKey(m.ID); f.cancelled[key] {
		delete(f.cancelled, key)
		return true
	}
	return false
}

// objectArguments refuses a call whose arguments are not a JSON object (an
// array, a string, a number): mcp-go would read them as no arguments at all
// and act on the current world.
func objectArguments(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		raw := bytes.TrimSpace(req.Params.RawArguments)
		switch {
		case len(raw) > 0 && !bytes.Equal(raw, []byte("null")) && raw[0] != '{':
			return mcp.NewToolResultError("invalid arguments: they must be a JSON object of named arguments, e.g. {\"name\": \"fix-login\"}"), nil
		case len(raw) == 0 && req.Params.Arguments != nil:
			if _, ok := req.Params.Arguments.(map[string]any); !ok {
				return mcp.NewToolResultError("invalid arguments: they must be a JSON object of named arguments"), nil
			}
		}
		return next(ctx, req)
	}
}
