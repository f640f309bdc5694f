package qdrant

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/adapterstest"
)

const ownerA = `{"result":{"id":"x","payload":{"slice":"acme_a","world":"w-a","home":"h1","mark":"binky:world=w-a;home=h1"}},"status":"ok"}`

// Every collection of the server: world acme_a's two, and names that share
// its first letters but belong to other worlds (acme_a_b, acme_ab) or to
// nobody binky knows (acme_a, without the separator).
const collections = `{"result":{"collections":[{"name":"acme_a-default"},{"name":"acme_a-docs"},{"name":"acme_a_b-default"},
	{"name":"acme_ab-x"},{"name":"acme_a"},{"name":"binky_marks"},{"name":"acme_a_-x"}]},"status":"ok"}`

func sliceA(admin string) adapters.Slice {
	return adapters.Slice{Name: "acme_a", World: "w-a", Home: "h1", AdminURL: admin, Password: "pw"}
}

func TestTeardownDeletesOnlyTheWorldsCollectionsByExactName(t *testing.T) {
	r := newRecorder(t, map[string]reply{
		"GET /collections/binky_marks/points/" + pointID("acme_a"): {200, ownerA},
		"GET /collections": {200, collections},
	})
	if err := New().Teardown(context.Background(), sliceA(r.url("admin-key"))); err != nil {
		t.Fatal(err)
	}
	want := []string{"DELETE /collections/acme_a-default", "DELETE /collections/acme_a-docs"}
	if got := r.sent(http.MethodDelete); !reflect.DeepEqual(got, want) {
		t.Errorf("teardown deleted %v, want exactly %v (never acme_a_b-default, acme_ab-x, acme_a, acme_a_-x)", got, want)
	}
	del := r.find(http.MethodPost, "/collections/binky_marks/points/delete")
	if del == nil || !strings.Contains(del.Body, pointID("acme_a")) {
		t.Errorf("the mark was not deleted: %+v", del)
	}
	for _, q := range r.Reqs {
		if q.Key != "admin-key" {
			t.Errorf("%s %s sent with key %q, want the admin's", q.Method, q.Path, q.Key)
		}
	}
}

// Slice names are [a-z0-9_]; the prefix adds '-', which they cannot hold, so
// one world's prefix never starts another world's name.
func TestNoPrefixMatchesAnotherSlicesNames(t *testing.T) {
	names := []string{"acme_a", "acme_a_b", "acme_ab", "acme_a_b_c", "acme", "a"}
	for _, x := range names {
		for _, y := range names {
			if x != y && strings.HasPrefix(Prefix(y)+"default", Prefix(x)) {
				t.Errorf("prefix %q matches %q's collection", Prefix(x), y)
			}
		}
		if strings.HasPrefix(MarksCollection, Prefix(x)) {
			t.Errorf("prefix %q matches binky's marks", Prefix(x))
		}
	}
	if got := under([]string{"acme_a-x", "acme_a_b-x", "acme_a", "acme_a--y"}, "acme_a"); !reflect.DeepEqual(got, []string{"acme_a-x", "acme_a--y"}) {
		t.Errorf("under(acme_a) = %v", got)
	}
}

func TestTeardownOfAnotherWorldsPrefixChangesNothing(t *testing.T) {
	r := newRecorder(t, map[string]reply{
		"GET /collections/binky_marks/points/" + pointID("acme_a"): {200, ownerA},
		"GET /collections": {200, collections},
	})
	for _, imposter := range []adapters.Slice{
		{Name: "acme_a", World: "w-b", Home: "h1", AdminURL: r.url("k")},
		{Name: "acme_a", World: "w-a", Home: "h2", AdminURL: r.url("k")},
	} {
		if err := New().Teardown(context.Background(), imposter); !errors.Is(err, adapters.ErrNotOurs) {
			t.Errorf("teardown as %s/%s: %v, want ErrNotOurs", imposter.World, imposter.Home, err)
		}
	}
	if got := append(r.sent(http.MethodDelete), r.sent(http.MethodPost)...); len(got) != 0 {
		t.Errorf("teardown of another's prefix sent %v", got)
	}
}

func TestUnmarkedCollectionsAreNeverTakenOrDeleted(t *testing.T) {
	r := newRecorder(t, map[string]reply{
		"GET /collections/binky_marks/points/" + pointID("acme_a"): {404, `{"status":{"error":"Not found"}}`},
		"GET /collections": {200, collections},
	})
	if err := New().Provision(context.Background(), sliceA(r.url("k"))); !errors.Is(err, adapters.ErrTaken) {
		t.Errorf("provision over unmarked acme_a-default: %v, want ErrTaken", err)
	}
	if err := New().Teardown(context.Background(), sliceA(r.url("k"))); !errors.Is(err, adapters.ErrNotOurs) {
		t.Errorf("teardown of unmarked acme_a-*: %v, want ErrNotOurs", err)
	}
	for _, s := range r.sent("") {
		if strings.HasPrefix(s, "DELETE") || strings.HasPrefix(s, "PUT /collections/acme") || strings.Contains(s, "points?") {
			t.Errorf("sent %s for a prefix binky did not make", s)
		}
	}
}

func TestProvisionMarksFirstThenCreatesTheOptionsCollections(t *testing.T) {
	r := newRecorder(t, map[string]reply{
		"GET /collections/binky_marks/points/" + pointID("acme_a"): {404, `{}`},
		"GET /collections": {200, `{"result":{"collections":[{"name":"binky_marks"},{"name":"acme_a_b-default"}]}}`},
	})
	sl := sliceA(r.url("k"))
	sl.Config = map[string]any{"collections": []any{"default", "docs"}, "vector_size": int64(768), "distance": "dot"}
	// The recorder answers the re-read of the mark with 404 as well: that is
	// "another binky won the race", and provision must back off.
	if err := New().Provision(context.Background(), sl); !errors.Is(err, adapters.ErrTaken) {
		t.Fatalf("provision when the mark does not read back: %v, want ErrTaken", err)
	}
	if got := r.sent(http.MethodPut); !reflect.DeepEqual(got, []string{"PUT /collections/binky_marks/points"}) {
		t.Errorf("before the mark reads back, provision sent %v, want only the mark", got)
	}
	put := r.find(http.MethodPut, "/collections/binky_marks/points")
	var body struct {
		Points []struct {
			ID      string      `json:"id"`
			Payload markPayload `json:"payload"`
		} `json:"points"`
	}
	if err := json.Unmarshal([]byte(put.Body), &body); err != nil || len(body.Points) != 1 {
		t.Fatalf("mark body %s: %v", put.Body, err)
	}
	if p := body.Points[0]; p.ID != pointID("acme_a") || p.Payload.World != "w-a" || p.Payload.Home != "h1" || p.Payload.Mark != adapters.Mark(sl.Owner()) {
		t.Errorf("mark %+v", p)
	}

	// Marked as ours: the collections of options are created, with the
	// vectors asked for.
	r2 := newRecorder(t, map[string]reply{
		"GET /collections/binky_marks/points/" + pointID("acme_a"): {200, ownerA},
		"GET /collections": {200, `{"result":{"collections":[{"name":"binky_marks"},{"name":"acme_a-default"}]}}`},
	})
	sl.AdminURL = r2.url("k")
	if err := New().Provision(context.Background(), sl); err != nil {
		t.Fatal(err)
	}
	if got := r2.sent(http.MethodPut); !reflect.DeepEqual(got, []string{"PUT /collections/acme_a-docs"}) {
		t.Errorf("provision sent %v, want only the missing collection acme_a-docs", got)
	}
	if c := r2.find(http.MethodPut, "/collections/acme_a-docs"); c == nil || c.Body != `{"vectors":{"distance":"Dot","size":768}}` {
		t.Errorf("create body %+v", c)
	}
}

func TestBadOptionsAreRefusedBeforeAnyRequest(t *testing.T) {
	r := newRecorder(t, nil)
	for _, cfg := range []map[string]any{
		{"collections": []any{"../x"}},
		{"collections": []any{"a/b"}},
		{"collections": "default"},
		{"vector_size": "big"},
		{"vector_size": int64(0)},
		{"distance": "hamming"},
	} {
		sl := sliceA(r.url("k"))
		sl.Config = cfg
		if err := New().Provision(context.Background(), sl); err == nil {
			t.Errorf("options %v accepted", cfg)
		}
	}
	if got := r.sent(""); len(got) != 0 {
		t.Errorf("bad options still sent %v", got)
	}
}

// The token is what isolation rests on: HS256 over the API key, an exp
// (Qdrant rejects a token without one), and an access list naming exactly
// the world's collections with "rw", never a global "m".
func TestTokenNamesExactlyTheWorldsCollections(t *testing.T) {
	exp := time.Unix(1900000000, 0)
	tok, err := Token("the-api-key", []string{"acme_a-default", "acme_a-docs"}, exp)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a JWT", tok)
	}
	m := hmac.New(sha256.New, []byte("the-api-key"))
	m.Write([]byte(parts[0] + "." + parts[1]))
	if sig, _ := base64.RawURLEncoding.DecodeString(parts[2]); !hmac.Equal(sig, m.Sum(nil)) {
		t.Error("signature is not HMAC-SHA256 of the API key")
	}
	head, _ := base64.RawURLEncoding.DecodeString(parts[0])
	if string(head) != `{"alg":"HS256","typ":"JWT"}` {
		t.Errorf("header %s", head)
	}
	claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	want := `{"access":[{"access":"rw","collection":"acme_a-default"},{"access":"rw","collection":"acme_a-docs"}],"exp":1900000000}`
	if string(claims) != want {
		t.Errorf("claims %s\nwant   %s", claims, want)
	}
	// No collections yet: an empty list (no access), never a missing claim
	// (which Qdrant reads as full access).
	tok, _ = Token("k", nil, exp)
	claims, _ = base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	if !strings.Contains(string(claims), `"access":[]`) {
		t.Errorf("claims with no collections: %s", claims)
	}
}

func TestResolveIssuesATokenForTheCollectionsUnderThePrefix(t *testing.T) {
	r := newRecorder(t, map[string]reply{
		"GET /collections": {200, collections},
	})
	now := time.Unix(1800000000, 0)
	q := &Qdrant{Now: func() time.Time { return now }}
	addr, err := q.Resolve(context.Background(), sliceA(r.url("admin-key")))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Token("admin-key", []string{"acme_a-default", "acme_a-docs"}, now.Add(TokenLifetime))
	if addr["api_key"] != want || addr["isolation"] != IsolationToken {
		t.Errorf("api_key %q isolation %q, want the token for acme_a-default and acme_a-docs", addr["api_key"], addr["isolation"])
	}
	if addr["prefix"] != "acme_a-" || addr["collection"] != "acme_a-default" || addr["url"] != r.URL {
		t.Errorf("address %v", addr)
	}
	if strings.Contains(addr["url"], "admin-key") || addr["api_key"] == "admin-key" {
		t.Error("the world's address carries the admin's key")
	}
	// The probe that found jwt_rbac on used a read-only token for binky_marks.
	var probe *recorded
	for i, q := range r.Reqs {
		if q.Method == http.MethodGet && q.Path == "/collections/binky_marks" && q.Key != "admin-key" {
			probe = &r.Reqs[i]
		}
	}
	if probe == nil {
		t.Fatalf("no jwt_rbac probe with a token: %+v", r.Reqs)
	}
	if !strings.Contains(claimsOf(t, probe.Key), `{"access":"r","collection":"binky_marks"}`) {
		t.Errorf("probe token claims %s", claimsOf(t, probe.Key))
	}
	// A refused probe hands the world the admin's key, so the probe must
	// outlive a server clock that runs an hour ahead of this one.
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal([]byte(claimsOf(t, probe.Key)), &claims); err != nil || claims.Exp < now.Add(time.Hour).Unix() {
		t.Errorf("probe token expires at %d (%v), want more than an hour after %d", claims.Exp, err, now.Unix())
	}
}

func TestResolveWithoutJWTAccessControlSaysIsolationIsNone(t *testing.T) {
	// The server knows the API key but not tokens: it refuses the probe.
	r := newRecorder(t, nil)
	q := New()
	q.HTTP = &http.Client{Transport: refuseTokens{http.DefaultTransport}}
	addr, err := q.Resolve(context.Background(), sliceA(r.url("admin-key")))
	if err != nil {
		t.Fatal(err)
	}
	if addr["isolation"] != IsolationNone || addr["api_key"] != "admin-key" {
		t.Errorf("without jwt_rbac: isolation %q api_key %q, want none and the admin's key", addr["isolation"], addr["api_key"])
	}
	// No API key at all: no key for the world either.
	addr, err = New().Resolve(context.Background(), sliceA(strings.Replace(r.URL, "http://", "qdrant://", 1)))
	if err != nil || addr["api_key"] != "" || addr["isolation"] != IsolationNone {
		t.Errorf("without an API key: %v, %v", addr, err)
	}
}

// refuseTokens answers 403 to any request whose api-key is a JWT, as a
// server with an API key and no jwt_rbac does.
type refuseTokens struct{ next http.RoundTripper }

func (rt refuseTokens) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.Count(req.Header.Get("api-key"), ".") == 2 {
		return &http.Response{StatusCode: 403, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
	}
	return rt.next.RoundTrip(req)
}

func claimsOf(t *testing.T, tok string) string {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not a JWT", tok)
	}
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	return string(b)
}

func TestAdminURLs(t *testing.T) {
	for _, tc := range []struct{ in, base, key, err string }{
		{"qdrant://:k3y@127.0.0.1:6333", "http://127.0.0.1:6333", "k3y", ""},
		{"qdrant://127.0.0.1", "http://127.0.0.1:6333", "", ""},
		{"qdrants://:k@q.internal", "https://q.internal:6333", "k", ""},
		{"http://localhost:6333?api_key=abc", "http://localhost:6333", "abc", ""},
		{"https://k9@q.example:443", "https://q.example:443", "k9", ""},
		{"redis://x", "", "", "scheme"},
	} {
		base, key, err := parseAdmin(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseAdmin(%q): %v, want an error about %s", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || base.String() != tc.base || key != tc.key {
			t.Errorf("parseAdmin(%q) = %s %q %v, want %s %q", tc.in, base.String(), key, err, tc.base, tc.key)
		}
	}
}

func TestPointIDsAreStableUUIDs(t *testing.T) {
	id := pointID("acme_a")
	if id != pointID("acme_a") || id == pointID("acme_b") || len(id) != 36 || strings.Count(id, "-") != 4 {
		t.Errorf("pointID = %q", id)
	}
}

// --- against a real Qdrant: runs only when BINKY_TEST_QDRANT is set; never
// run here (no Qdrant can be installed on binky's build machine).

func realAdmin(t *testing.T) string {
	u := os.Getenv("BINKY_TEST_QDRANT")
	if u == "" {
		t.Skip("BINKY_TEST_QDRANT is unset: point it at a Qdrant 1.9+ (qdrant://:API_KEY@127.0.0.1:6333, with service.jwt_rbac = true) to run this test")
	}
	return u
}

func TestConformance(t *testing.T) {
	admin := realAdmin(t)
	s, err := New().connect(admin)
	if err != nil {
		t.Fatal(err)
	}
	adapterstest.RunServer(t, New(), adapterstest.Server{
		AdminURL: admin,
		Foreign: func(ctx context.Context, slice string) error {
			return s.do(ctx, s.key, http.MethodPut, collPath(Prefix(slice)+"default"), map[string]any{"vectors": map[string]any{"size": 2, "distance": "Dot"}}, nil)
		},
		Intact: func(ctx context.Context, slice string) (bool, error) {
			ok, err := s.exists(ctx, Prefix(slice)+"default")
			s.do(ctx, s.key, http.MethodDelete, collPath(Prefix(slice)+"default"), nil, nil)
			return ok, err
		},
	})
}

func TestAWorldsTokenReachesOnlyItsCollections(t *testing.T) {
	admin := realAdmin(t)
	ctx := context.Background()
	q := New()
	run := fmt.Sprint(time.Now().UnixNano() % 1e9)
	sa := adapters.Slice{Name: "qiso_a_" + run, World: "w-a", Home: "h", AdminURL: admin, Config: map[string]any{"vector_size": int64(2)}}
	sb := adapters.Slice{Name: "qiso_a_" + run + "_b", World: "w-b", Home: "h", AdminURL: admin, Config: map[string]any{"vector_size": int64(2)}}
	for _, sl := range []adapters.Slice{sa, sb} {
		if err := q.Provision(ctx, sl); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { q.Teardown(context.Background(), sl) })
	}
	ra, _ := q.Resolve(ctx, sa)
	if ra["isolation"] != IsolationToken {
		t.Skipf("this Qdrant gives no tokens (isolation %q): set service.api_key and service.jwt_rbac = true", ra["isolation"])
	}
	s, _ := q.connect(admin)
	point := map[string]any{"points": []any{map[string]any{"id": 1, "vector": []float32{1, 0}}}}
	if err := s.do(ctx, ra["api_key"], http.MethodPut, collPath(ra["collection"], "/points?wait=true"), point, nil); err != nil {
		t.Fatalf("A cannot write its own collection: %v", err)
	}
	b := Prefix(sb.Name) + "default"
	for what, try := range map[string]func() error{
		"read B's collection": func() error { return s.do(ctx, ra["api_key"], http.MethodGet, collPath(b), nil, nil) },
		"write B's collection": func() error {
			return s.do(ctx, ra["api_key"], http.MethodPut, collPath(b, "/points?wait=true"), point, nil)
		},
		"delete B's collection": func() error { return s.do(ctx, ra["api_key"], http.MethodDelete, collPath(b), nil, nil) },
		"read binky's marks":    func() error { return s.do(ctx, ra["api_key"], http.MethodGet, collPath(MarksCollection), nil, nil) },
		"create a collection": func() error {
			return s.do(ctx, ra["api_key"], http.MethodPut, collPath(Prefix(sa.Name)+"new"), map[string]any{"vectors": map[string]any{"size": 2, "distance": "Dot"}}, nil)
		},
	} {
		if err := try(); err == nil {
			t.Errorf("%s with A's token: allowed, want refused", what)
		}
	}
	if ok, _ := s.exists(ctx, b); !ok {
		t.Error("B's collection is gone")
	}
}
