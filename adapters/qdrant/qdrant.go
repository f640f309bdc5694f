// Package qdrant is the Qdrant adapter: per world a collection-name prefix
// "<slice>-" and the collections binky.toml names under it (options
// collections, default ["default"]), and, where the server has an API key and
// JWT access control (Qdrant 1.9+ with service.jwt_rbac), a token signed with
// the API key that grants read-write on exactly those collections.
//
// Qdrant's tokens name collections, not prefixes, and read-write access to a
// collection is not the right to create one: a world cannot make new
// collections itself. Provision creates the ones its options list; the
// token Resolve issues lists every collection under the prefix at that time
// (a collection added to options appears at the next up).
//
// The prefix is the slice name and a '-', which slice names ([a-z0-9_])
// cannot hold: no world's prefix is the start of another's ("acme_a-" never
// matches "acme_a_b-default"). Teardown lists the server's collections and
// deletes those names that start with the prefix, one by one, by exact name.
// Ownership marks are points in binky's own collection binky_marks, which no
// world token names.
//
// This adapter speaks the documented REST API (port 6333) with net/http. It
// was not run against a real Qdrant here: its tests check the requests it
// sends, and its integration tests run when BINKY_TEST_QDRANT is set.
package qdrant

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/git-binky/git-binky/adapters"
)

// Qdrant implements adapters.Adapter and Lister.
type Qdrant struct {
	// HTTP is the client requests go through; nil means a default one.
	HTTP *http.Client
	// Now is the clock tokens are issued by; nil means time.Now.
	Now func() time.Time
}

// New returns the adapter.
func New() *Qdrant { return &Qdrant{} }

// MarksCollection holds one point per slice: its owner. Its name has no
// '-', so it is under no world's prefix.
const MarksCollection = "binky_marks"

// TokenLifetime is how long a world's token is valid; every up resolves
// the slice again and issues a fresh one.
const TokenLifetime = 365 * 24 * time.Hour

// Isolation values of the address's "isolation" field.
const (
	// IsolationToken: the world's api_key is a JWT naming its collections.
	IsolationToken = "token"
	// IsolationNone: the server has no API key, or no jwt_rbac; the world
	// gets no key, or the admin's, and can reach every collection.
	IsolationNone = adapters.IsolationNone
)

// Prefix is the collection-name prefix of a slice.
func Prefix(slice string) string { return slice + "-" }

type server struct {
	base url.URL
	key  string
	http *http.Client
}

// parseAdmin reads an admin_url: qdrant://:API_KEY@host:6333 (plain HTTP),
// qdrants://... (HTTPS), or http(s)://:API_KEY@host:port; the key may also
// be given as ?api_key=. The user part is ignored.
func parseAdmin(raw string) (url.URL, string, error) {
	u, err := adapters.ParseURL(raw)
	if err != nil {
		return url.URL{}, "", fmt.Errorf("qdrant admin_url %s: %w", adapters.Redact(raw), err)
	}
	base := url.URL{Host: u.Host}
	switch u.Scheme {
	case "qdrant", "http":
		base.Scheme = "http"
	case "qdrants", "https":
		base.Scheme = "https"
	default:
		return url.URL{}, "", fmt.Errorf("qdrant admin_url %s: scheme %q: want qdrant://:API_KEY@host:6333 or http(s)://", adapters.Redact(raw), u.Scheme)
	}
	if u.Hostname() == "" {
		return url.URL{}, "", fmt.Errorf("qdrant admin_url %s has no host", adapters.Redact(raw))
	}
	if u.Port() == "" {
		base.Host = net.JoinHostPort(u.Hostname(), "6333")
	}
	key := u.Query().Get("api_key")
	if u.User != nil {
		if p, ok := u.User.Password(); ok && p != "" {
			key = p
		} else if key == "" {
			key = u.User.Username()
		}
	}
	return base, key, nil
}

func (q *Qdrant) connect(adminURL string) (*server, error) {
	base, key, err := parseAdmin(adminURL)
	if err != nil {
		return nil, err
	}
	h := q.HTTP
	if h == nil {
		h = &http.Client{Timeout: 60 * time.Second}
	}
	return &server{base: base, key: key, http: h}, nil
}

func (q *Qdrant) now() time.Time {
	if q.Now != nil {
		return q.Now()
	}
	return time.Now()
}

// StatusError is an answer that was not 2xx.
type StatusError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("qdrant %s %s: HTTP %d: %s", e.Method, e.Path, e.Status, e.Body)
}

func status(err error) int {
	var e *StatusError
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// do sends one request with key (none when empty) and decodes the answer's
// "result" into out (when not nil).
func (s *server) do(ctx context.Context, key, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base.String()+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("api-key", key)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("qdrant at %s: %w", s.base.Host, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("qdrant at %s: %w", s.base.Host, err)
	}
	if resp.StatusCode/100 != 2 {
		return &StatusError{Method: method, Path: path, Status: resp.StatusCode, Body: strings.TrimSpace(string(b))}
	}
	if out == nil {
		return nil
	}
	var env struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("qdrant %s %s: unreadable answer: %w", method, path, err)
	}
	return json.Unmarshal(env.Result, out)
}

// collPath is the path of a collection, its name escaped as one segment.
func collPath(name string, rest ...string) string {
	return "/collections/" + url.PathEscape(name) + strings.Join(rest, "")
}

// collections lists every collection's name.
func (s *server) collections(ctx context.Context) ([]string, error) {
	var res struct {
		Collections []struct {
			Name string `json:"name"`
		} `json:"collections"`
	}
	if err := s.do(ctx, s.key, http.MethodGet, "/collections", nil, &res); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(res.Collections))
	for _, c := range res.Collections {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return names, nil
}

// under returns the names that carry the slice's prefix: exact string
// prefix, never a pattern.
func under(names []string, slice string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, Prefix(slice)) {
			out = append(out, n)
		}
	}
	return out
}

func (s *server) exists(ctx context.Context, name string) (bool, error) {
	err := s.do(ctx, s.key, http.MethodGet, collPath(name), nil, nil)
	switch {
	case err == nil:
		return true, nil
	case status(err) == http.StatusNotFound:
		return false, nil
	}
	return false, err
}

// ensureMarks creates binky's marks collection once: one-dimensional
// vectors, since only the payload matters.
func (s *server) ensureMarks(ctx context.Context) error {
	there, err := s.exists(ctx, MarksCollection)
	if err != nil || there {
		return err
	}
	err = s.do(ctx, s.key, http.MethodPut, collPath(MarksCollection), map[string]any{"vectors": map[string]any{"size": 1, "distance": "Dot"}}, nil)
	if err != nil && (status(err) == http.StatusConflict || status(err) == http.StatusBadRequest) {
		if there, _ := s.exists(ctx, MarksCollection); there {
			return nil // made by another binky meanwhile
		}
	}
	if err != nil {
		return fmt.Errorf("create qdrant collection %s for binky's marks: %w", MarksCollection, err)
	}
	return nil
}

// pointID is the id of a slice's mark: a UUID derived from its name.
func pointID(slice string) string {
	sum := sha256.Sum256([]byte("binky-slice\x00" + slice))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

type markPayload struct {
	Slice string `json:"slice"`
	World string `json:"world"`
	Home  string `json:"home"`
	Mark  string `json:"mark"`
}

func (p markPayload) owner() adapters.Owner { return adapters.Owner{World: p.World, Home: p.Home} }

// owner reads a slice's mark; ok is false when it has none.
func (s *server) owner(ctx context.Context, slice string) (adapters.Owner, bool, error) {
	var pt struct {
		Payload markPayload `json:"payload"`
	}
	err := s.do(ctx, s.key, http.MethodGet, collPath(MarksCollection, "/points/", pointID(slice)), nil, &pt)
	if status(err) == http.StatusNotFound {
		return adapters.Owner{}, false, nil
	}
	if err != nil {
		return adapters.Owner{}, false, err
	}
	return pt.Payload.owner(), true, nil
}

func (s *server) setMark(ctx context.Context, sl adapters.Slice) error {
	pt := map[string]any{"id": pointID(sl.Name), "vector": []float32{1},
		"payload": markPayload{Slice: sl.Name, World: sl.World, Home: sl.Home, Mark: adapters.Mark(sl.Owner())}}
	return s.do(ctx, s.key, http.MethodPut, collPath(MarksCollection, "/points?wait=true"), map[string]any{"points": []any{pt}}, nil)
}

func (s *server) dropMark(ctx context.Context, slice string) error {
	return s.do(ctx, s.key, http.MethodPost, collPath(MarksCollection, "/points/delete?wait=true"), map[string]any{"points": []string{pointID(slice)}}, nil)
}

// options are a slice's collections and their vectors, from [options].
type options struct {
	Collections []string
	Size        int
	Distance    string
}

// readOptions reads collections (names under the prefix; default
// ["default"]), vector_size (default 384) and distance (default "Cosine").
func readOptions(cfg map[string]any) (options, error) {
	o := options{Collections: []string{"default"}, Size: 384, Distance: "Cosine"}
	if v, ok := cfg["collections"]; ok {
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return o, fmt.Errorf("qdrant options.collections: want a list of names such as [\"default\", \"docs\"], got %v", v)
		}
		o.Collections = nil
		for _, x := range list {
			n, _ := x.(string)
			if !validSuffix(n) {
				return o, fmt.Errorf("qdrant options.collections: %q: names are lowercase letters, digits, '_' and '-'", x)
			}
			o.Collections = append(o.Collections, n)
		}
	}
	if v, ok := cfg["vector_size"]; ok {
		switch n := v.(type) {
		case int64:
			o.Size = int(n)
		case int:
			o.Size = n
		case float64:
			o.Size = int(n)
		default:
			return o, fmt.Errorf("qdrant options.vector_size: want a number, got %v", v)
		}
		if o.Size < 1 || o.Size > 65536 {
			return o, fmt.Errorf("qdrant options.vector_size %d: want 1 to 65536", o.Size)
		}
	}
	if v, ok := cfg["distance"]; ok {
		d, _ := v.(string)
		switch strings.ToLower(d) {
		case "cosine":
			o.Distance = "Cosine"
		case "dot":
			o.Distance = "Dot"
		case "euclid":
			o.Distance = "Euclid"
		case "manhattan":
			o.Distance = "Manhattan"
		default:
			return o, fmt.Errorf("qdrant options.distance %v: want Cosine, Dot, Euclid or Manhattan", v)
		}
	}
	return o, nil
}

func validSuffix(n string) bool {
	if n == "" || len(n) > 120 {
		return false
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// Provision marks the prefix as the world's and creates the collections its
// options name.
func (q *Qdrant) Provision(ctx context.Context, sl adapters.Slice) error {
	opts, err := readOptions(sl.Config)
	if err != nil {
		return err
	}
	s, err := q.connect(sl.AdminURL)
	if err != nil {
		return err
	}
	if err := s.ensureMarks(ctx); err != nil {
		return err
	}
	o, marked, err := s.owner(ctx, sl.Name)
	if err != nil {
		return err
	}
	if marked && !o.Is(sl.Owner()) {
		return fmt.Errorf("qdrant prefix %s: %w", Prefix(sl.Name), adapters.ErrTaken)
	}
	names, err := s.collections(ctx)
	if err != nil {
		return err
	}
	if !marked {
		if mine := under(names, sl.Name); len(mine) > 0 {
			return fmt.Errorf("qdrant collection %s exists and binky did not make it: %w", mine[0], adapters.ErrTaken)
		}
		// The mark first: a crash after it leaves what gc finds.
		if err := s.setMark(ctx, sl); err != nil {
			return fmt.Errorf("mark qdrant prefix %s: %w", Prefix(sl.Name), err)
		}
		if o, _, err := s.owner(ctx, sl.Name); err != nil {
			return err
		} else if !o.Is(sl.Owner()) { // another binky marked it meanwhile
			return fmt.Errorf("qdrant prefix %s: %w", Prefix(sl.Name), adapters.ErrTaken)
		}
	}
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	for _, c := range opts.Collections {
		name := Prefix(sl.Name) + c
		if have[name] {
			continue
		}
		body := map[string]any{"vectors": map[string]any{"size": opts.Size, "distance": opts.Distance}}
		if err := s.do(ctx, s.key, http.MethodPut, collPath(name), body, nil); err != nil {
			return fmt.Errorf("create qdrant collection %s: %w", name, err)
		}
	}
	return nil
}

// Resolve returns the world's address; where the server checks JWTs, its
// api_key is a token naming every collection under the prefix.
func (q *Qdrant) Resolve(ctx context.Context, sl adapters.Slice) (adapters.Address, error) {
	opts, err := readOptions(sl.Config)
	if err != nil {
		return nil, err
	}
	s, err := q.connect(sl.AdminURL)
	if err != nil {
		return nil, err
	}
	addr := adapters.Address{"url": s.base.String(), "host": s.base.Hostname(), "port": s.base.Port(),
		"prefix": Prefix(sl.Name), "collection": Prefix(sl.Name) + opts.Collections[0], "isolation": IsolationNone, "api_key": ""}
	if s.key == "" {
		return addr, nil // a server without an API key: open to all
	}
	rbac, err := q.jwtRBAC(ctx, s)
	if err != nil {
		return nil, err
	}
	if !rbac {
		// An API key but no jwt_rbac: the only key there is, the admin's.
		addr["api_key"] = s.key
		return addr, nil
	}
	names, err := s.collections(ctx)
	if err != nil {
		return nil, err
	}
	tok, err := Token(s.key, under(names, sl.Name), q.now().Add(TokenLifetime))
	if err != nil {
		return nil, err
	}
	addr["api_key"], addr["isolation"] = tok, IsolationToken
	return addr, nil
}

// jwtRBAC reports whether the server accepts tokens signed with its API key:
// a token that may only read binky_marks is asked to read it. A refusal
// means no jwt_rbac, and the world gets the admin's key: so the probe's
// token is valid for a day, that a server whose clock runs minutes ahead
// of this one does not refuse it as expired.
func (q *Qdrant) jwtRBAC(ctx context.Context, s *server) (bool, error) {
	if err := s.ensureMarks(ctx); err != nil {
		return false, err
	}
	tok, err := tokenFor(s.key, []any{map[string]string{"collection": MarksCollection, "access": "r"}}, q.now().Add(24*time.Hour))
	if err != nil {
		return false, err
	}
	err = s.do(ctx, tok, http.MethodGet, collPath(MarksCollection), nil, nil)
	switch status(err) {
	case 0:
		return err == nil, err
	case http.StatusUnauthorized, http.StatusForbidden:
		return false, nil
	}
	return false, err
}

// Token is a JWT (HS256, signed with the API key) granting read-write on
// exactly the collections named, until exp. Qdrant requires exp.
func Token(apiKey string, collections []string, exp time.Time) (string, error) {
	access := make([]any, 0, len(collections))
	for _, c := range collections {
		access = append(access, map[string]string{"collection": c, "access": "rw"})
	}
	return tokenFor(apiKey, access, exp)
}

func tokenFor(apiKey string, access []any, exp time.Time) (string, error) {
	// An empty list would parse as "no collections", but say it plainly:
	// a token must never fall back to Qdrant's default of full access,
	// which is what a missing access claim means.
	claims, err := json.Marshal(map[string]any{"exp": exp.Unix(), "access": access})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	signing := head + "." + enc.EncodeToString(claims)
	m := hmac.New(sha256.New, []byte(apiKey))
	m.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(m.Sum(nil)), nil
}

// Teardown deletes every collection under the world's prefix, by exact
// name, and then its mark, only if the mark names the slice's world and
// home.
func (q *Qdrant) Teardown(ctx context.Context, sl adapters.Slice) error {
	s, err := q.connect(sl.AdminURL)
	if err != nil {
		return err
	}
	o, marked, err := s.owner(ctx, sl.Name)
	if status(err) == http.StatusNotFound {
		marked, err = false, nil // no marks collection yet
	}
	if err != nil {
		return err
	}
	names, err := s.collections(ctx)
	if err != nil {
		return err
	}
	mine := under(names, sl.Name)
	if !marked {
		if len(mine) > 0 {
			return fmt.Errorf("qdrant collections %s: %w", strings.Join(mine, ", "), adapters.ErrNotOurs)
		}
		return nil
	}
	if !o.Is(sl.Owner()) {
		return fmt.Errorf("qdrant prefix %s: %w", Prefix(sl.Name), adapters.ErrNotOurs)
	}
	for _, n := range mine {
		if err := s.do(ctx, s.key, http.MethodDelete, collPath(n), nil, nil); err != nil && status(err) != http.StatusNotFound {
			return fmt.Errorf("delete qdrant collection %s: %w", n, err)
		}
	}
	return s.dropMark(ctx, sl.Name)
}

// List returns every prefix binky marked on the server.
func (q *Qdrant) List(ctx context.Context, adminURL string) ([]adapters.Owned, error) {
	s, err := q.connect(adminURL)
	if err != nil {
		return nil, err
	}
	var out []adapters.Owned
	var offset any
	for {
		body := map[string]any{"limit": 256, "with_payload": true, "with_vector": false}
		if offset != nil {
			body["offset"] = offset
		}
		var page struct {
			Points []struct {
				Payload markPayload `json:"payload"`
			} `json:"points"`
			Next any `json:"next_page_offset"`
		}
		err := s.do(ctx, s.key, http.MethodPost, collPath(MarksCollection, "/points/scroll"), body, &page)
		if status(err) == http.StatusNotFound {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		for _, p := range page.Points {
			if p.Payload.Slice != "" {
				out = append(out, adapters.Owned{Slice: p.Payload.Slice, Kind: "prefix", Name: Prefix(p.Payload.Slice), Owner: p.Payload.owner()})
			}
		}
		if page.Next == nil {
			return out, nil
		}
		offset = page.Next
	}
}

// Capabilities: no server-side clone; lists its slices.
func (q *Qdrant) Capabilities() adapters.Capabilities { return adapters.Capabilities{List: true} }

var (
	_ adapters.Adapter = (*Qdrant)(nil)
	_ adapters.Lister  = (*Qdrant)(nil)
)
