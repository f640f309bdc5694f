package adapterstest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Recorder captures the HTTP requests an adapter sends and answers each with
// a canned reply. It is not the server: tests of adapters that no real
// server here can run (Qdrant, Elasticsearch) use it to check what binky
// asks for (names, escaping, which objects teardown deletes), never to call
// the adapter tested against a server.
type Recorder struct {
	mu      sync.Mutex
	Reqs    []Recorded
	replies map[string]Reply // "METHOD /path" (path without query) → reply
	URL     string           // http://127.0.0.1:port
}

// Recorded is one request as the recorder saw it; Key is the header the
// recorder was told carries the credential.
type Recorded struct {
	Method, Path, RawPath, Query, Key, Body string
}

// Reply is a canned answer.
type Reply struct {
	Status int
	Body   string
}

// NewRecorder starts a recorder on loopback that answers "METHOD /path" from
// replies (others with 200 and deflt) and notes keyHeader of each request.
func NewRecorder(t *testing.T, keyHeader, deflt string, replies map[string]Reply) *Recorder {
	r := &Recorder{replies: replies}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.Reqs = append(r.Reqs, Recorded{Method: req.Method, Path: req.URL.Path, RawPath: req.URL.EscapedPath(), Query: req.URL.RawQuery,
			Key: req.Header.Get(keyHeader), Body: string(b)})
		rep, ok := r.replies[req.Method+" "+req.URL.Path]
		r.mu.Unlock()
		if !ok {
			rep = Reply{Status: 200, Body: deflt}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		io.WriteString(w, rep.Body)
	}))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

// Sent returns the "METHOD /path" of every request (of method, if given),
// in order.
func (r *Recorder) Sent(method string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, q := range r.Reqs {
		if method == "" || q.Method == method {
			out = append(out, q.Method+" "+q.RawPath)
		}
	}
	return out
}

// Find returns the first request of method to path, or nil.
func (r *Recorder) Find(method, path string) *Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.Reqs {
		if r.Reqs[i].Method == method && r.Reqs[i].Path == path {
			return &r.Reqs[i]
		}
	}
	return nil
}
