package qdrant

import (
	"strings"
	"testing"

	"github.com/git-binky/git-binky/adapters/adapterstest"
)

// The requests the adapter sends, recorded and answered with canned replies
// (adapterstest.Recorder): no real server can run here.
type recorded = adapterstest.Recorded

// reply is a canned answer (status, body).
type reply struct {
	status int
	body   string
}

type recorder struct{ *adapterstest.Recorder }

func newRecorder(t *testing.T, replies map[string]reply) *recorder {
	canned := make(map[string]adapterstest.Reply, len(replies))
	for k, r := range replies {
		canned[k] = adapterstest.Reply{Status: r.status, Body: r.body}
	}
	return &recorder{adapterstest.NewRecorder(t, "api-key", `{"result":true,"status":"ok"}`, canned)}
}

func (r *recorder) url(key string) string {
	return strings.Replace(r.URL, "http://", "qdrant://:"+key+"@", 1)
}

func (r *recorder) sent(method string) []string        { return r.Sent(method) }
func (r *recorder) find(method, path string) *recorded { return r.Find(method, path) }
