package qdrant

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// recorder captures the requests the adapter sends and answers each with a
// canned reply. It is not a Qdrant: tests use it to check what binky asks
// for (names, escaping, which collections teardown deletes), never to call
// the adapter tested against a server.
type recorder struct {
	mu      sync.Mutex
	reqs    []recorded
	replies map[string]reply // "METHOD /path" (path without query) → reply
	srv     *httptest.Server
}

type recorded struct {
	Method, Path, RawPath, Query, Key, Body string
}

type reply struct {
	status int
	body   string
}

func newRecorder(t *testing.T, replies map[string]reply) *recorder {
	r := &recorder{replies: replies}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, recorded{Method: req.Method, Path: req.URL.Path, RawPath: req.URL.EscapedPath(), Query: req.URL.RawQuery,
			Key: req.Header.Get("api-key"), Body: string(b)})
		rep, ok := r.replies[req.Method+" "+req.URL.Path]
		r.mu.Unlock()
		if !ok {
			rep = reply{200, `{"result":true,"status":"ok"}`}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.status)
		io.WriteString(w, rep.body)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *recorder) url(key string) string {
	return strings.Replace(r.srv.URL, "http://", "qdrant://:"+key+"@", 1)
}

// sent returns the "METHOD /path" of every request, in order.
func (r *recorder) sent(method string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, q := range r.reqs {
		if method == "" || q.Method == method {
			out = append(out, q.Method+" "+q.RawPath)
		}
	}
	return out
}

func (r *recorder) find(method, path string) *recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.reqs {
		if r.reqs[i].Method == method && r.reqs[i].Path == path {
			return &r.reqs[i]
		}
	}
	return nil
}
