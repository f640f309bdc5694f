// Package elasticsearch is the Elasticsearch and OpenSearch adapter
// (opensearch is an alias): per world an index prefix "<slice>-" and, where
// the security API is on, a role allowed every index privilege on
// "<slice>-*" and nothing else, and a user holding only that role.
// Elasticsearch's roles and users are made with /_security/role and
// /_security/user; OpenSearch's with the security plugin's
// /_plugins/_security/api/roles, internalusers and rolesmapping.
//
// The prefix is the slice name and a '-', which slice names ([a-z0-9_])
// cannot hold, so no world's pattern matches another world's indices
// ("acme_a-*" never matches "acme_a_b-logs"). The one slice name whose
// pattern would match binky's own index, binky-marks, is "binky": it is
// refused (ErrTaken), and the daemon salts it. Teardown lists the indices
// and data streams under the prefix and deletes each by its exact name,
// then the role and user, each only if marked as the world's. Marks are a
// document per slice in binky-marks, and the metadata (Elasticsearch) or
// description (OpenSearch) of every role, user and mapping binky makes.
//
// This adapter speaks the documented REST APIs with net/http. It was not
// run against a real Elasticsearch or OpenSearch here: its tests check the
// requests it sends, and its integration tests run when
// BINKY_TEST_ELASTICSEARCH or BINKY_TEST_OPENSEARCH is set.
package elasticsearch

import (
	"bytes"
	"context"
	"crypto/tls"
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

// Elasticsearch implements adapters.Adapter and Lister, for Elasticsearch
// and OpenSearch alike.
type Elasticsearch struct {
	// HTTP is the client requests go through; nil means a default one
	// (which skips TLS verification only when the admin_url asks, with
	// ?insecure=true).
	HTTP *http.Client
}

// New returns the adapter.
func New() *Elasticsearch { return &Elasticsearch{} }

// MarksIndex holds one document per slice: its owner.
const MarksIndex = "binky-marks"

// reserved is the slice name whose pattern "binky-*" would cover MarksIndex.
const reserved = "binky"

// markKey is the metadata key (Elasticsearch) holding binky's mark.
const markKey = "binky_mark"

// Isolation values of the address's "isolation" field.
const (
	// IsolationUser: the world has a user of its own, limited to its prefix.
	IsolationUser = "user"
	// IsolationNone: no security API; every world can reach every index.
	IsolationNone = adapters.IsolationNone
)

// Prefix is the index prefix of a slice.
func Prefix(slice string) string { return slice + "-" }

// Pattern is the index pattern of a slice's role and listings.
func Pattern(slice string) string { return Prefix(slice) + "*" }

type server struct {
	base       url.URL
	user, pass string
	http       *http.Client
}

// parseAdmin reads an admin_url: http(s)://user:password@host:9200, or
// elasticsearch:// / opensearch:// for plain HTTP (elasticsearchs://,
// opensearchs:// for HTTPS). ?insecure=true skips TLS verification (a
// development cluster's self-signed certificate).
func parseAdmin(raw string) (url.URL, string, string, bool, error) {
	u, err := adapters.ParseURL(raw)
	if err != nil {
		return url.URL{}, "", "", false, fmt.Errorf("elasticsearch admin_url %s: %w", adapters.Redact(raw), err)
	}
	base := url.URL{Host: u.Host}
	switch u.Scheme {
	case "http", "elasticsearch", "opensearch":
		base.Scheme = "http"
	case "https", "elasticsearchs", "opensearchs":
		base.Scheme = "https"
	default:
		return url.URL{}, "", "", false, fmt.Errorf("elasticsearch admin_url %s: scheme %q: want http(s)://user:password@host:9200", adapters.Redact(raw), u.Scheme)
	}
	if u.Hostname() == "" {
		return url.URL{}, "", "", false, fmt.Errorf("elasticsearch admin_url %s has no host", adapters.Redact(raw))
	}
	if u.Port() == "" {
		base.Host = net.JoinHostPort(u.Hostname(), "9200")
	}
	var user, pass string
	if u.User != nil {
		user = u.User.Username()
		pass, _ = u.User.Password()
	}
	return base, user, pass, u.Query().Get("insecure") == "true", nil
}

func (e *Elasticsearch) connect(adminURL string) (*server, error) {
	base, user, pass, insecure, err := parseAdmin(adminURL)
	if err != nil {
		return nil, err
	}
	h := e.HTTP
	if h == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		if insecure {
			t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
		}
		h = &http.Client{Timeout: 60 * time.Second, Transport: t}
	}
	return &server{base: base, user: user, pass: pass, http: h}, nil
}

// StatusError is an answer that was not 2xx.
type StatusError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("elasticsearch %s %s: HTTP %d: %s", e.Method, e.Path, e.Status, e.Body)
}

func status(err error) int {
	var e *StatusError
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// do sends one request as the admin and decodes the answer into out.
func (s *server) do(ctx context.Context, method, path string, body, out any) error {
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
	if s.user != "" {
		req.SetBasicAuth(s.user, s.pass)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("elasticsearch at %s: %w", s.base.Host, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("elasticsearch at %s: %w", s.base.Host, err)
	}
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(b))
		if len(msg) > 500 {
			msg = msg[:500] + "..."
		}
		return &StatusError{Method: method, Path: path, Status: resp.StatusCode, Body: msg}
	}
	if out == nil || len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("elasticsearch %s %s: unreadable answer: %w", method, path, err)
	}
	return nil
}

// seg escapes a name as one path segment.
func seg(name string) string { return url.PathEscape(name) }

// flavor is what differs between Elasticsearch's and OpenSearch's security
// APIs.
type flavor struct {
	name     string // "elasticsearch" or "opensearch"
	security bool
}

// detect finds the distribution (GET /) and whether its security API is on.
func (s *server) detect(ctx context.Context) (flavor, error) {
	var info struct {
		Version struct {
			Distribution string `json:"distribution"`
		} `json:"version"`
	}
	if err := s.do(ctx, http.MethodGet, "/", nil, &info); err != nil {
		return flavor{}, err
	}
	f := flavor{name: "elasticsearch"}
	path := "/_security/_authenticate"
	if info.Version.Distribution == "opensearch" {
		f.name, path = "opensearch", "/_plugins/_security/authinfo"
	}
	err := s.do(ctx, http.MethodGet, path, nil, nil)
	switch st := status(err); {
	case err == nil:
		f.security = true
	case st == http.StatusUnauthorized || st == http.StatusForbidden:
		return f, fmt.Errorf("%s at %s refused the admin_url's credentials: %w", f.name, s.base.Host, err)
	case st != 0:
		// 400 ("security is not enabled"), 404 (no plugin), 500: no
		// security API, so no users to make.
	default:
		return f, err
	}
	return f, nil
}

// rolePath, userPath and mappingPath are the security API paths of a
// slice's objects.
func (f flavor) rolePath(name string) string {
	if f.name == "opensearch" {
		return "/_plugins/_security/api/roles/" + seg(name)
	}
	return "/_security/role/" + seg(name)
}

func (f flavor) userPath(name string) string {
	if f.name == "opensearch" {
		return "/_plugins/_security/api/internalusers/" + seg(name)
	}
	return "/_security/user/" + seg(name)
}

func (f flavor) mappingPath(name string) string {
	return "/_plugins/_security/api/rolesmapping/" + seg(name)
}

// roleBody grants every index privilege on the slice's pattern and no
// cluster privilege beyond, on OpenSearch, the composite actions (bulk,
// mget, msearch) that OpenSearch checks at cluster level.
func (f flavor) roleBody(sl adapters.Slice) any {
	mark := adapters.Mark(sl.Owner())
	if f.name == "opensearch" {
		return map[string]any{"description": mark, "cluster_permissions": []string{"cluster_composite_ops"},
			"index_permissions": []any{map[string]any{"index_patterns": []string{Pattern(sl.Name)}, "allowed_actions": []string{"indices_all"}}}}
	}
	return map[string]any{"cluster": []string{}, "indices": []any{map[string]any{"names": []string{Pattern(sl.Name)}, "privileges": []string{"all"}}},
		"metadata": map[string]string{markKey: mark}}
}

func (f flavor) userBody(sl adapters.Slice) any {
	mark := adapters.Mark(sl.Owner())
	if f.name == "opensearch" {
		return map[string]any{"password": sl.Password, "description": mark, "backend_roles": []string{}, "attributes": map[string]string{markKey: mark}}
	}
	return map[string]any{"password": sl.Password, "roles": []string{sl.Name}, "metadata": map[string]string{markKey: mark}}
}

// markOf reads binky's mark on a role or user: found is false when the
// object does not exist.
func (s *server) markOf(ctx context.Context, path string) (o adapters.Owner, marked, found bool, err error) {
	var objs map[string]struct {
		Metadata    map[string]any    `json:"metadata"`
		Description string            `json:"description"`
		Attributes  map[string]string `json:"attributes"`
	}
	err = s.do(ctx, http.MethodGet, path, nil, &objs)
	if status(err) == http.StatusNotFound {
		return o, false, false, nil
	}
	if err != nil {
		return o, false, false, err
	}
	for _, obj := range objs {
		found = true
		for _, text := range []string{fmt.Sprint(obj.Metadata[markKey]), obj.Description, obj.Attributes[markKey]} {
			if m, ok := adapters.ParseMark(text); ok {
				return m, true, true, nil
			}
		}
	}
	return o, false, found, nil
}

// ensureMarks creates binky's marks index once, without replicas (a
// development cluster often has one node).
func (s *server) ensureMarks(ctx context.Context) error {
	err := s.do(ctx, http.MethodHead, "/"+MarksIndex, nil, nil)
	if err == nil {
		return nil
	}
	if status(err) != http.StatusNotFound {
		return err
	}
	err = s.do(ctx, http.MethodPut, "/"+MarksIndex, map[string]any{"settings": map[string]any{"number_of_replicas": 0}}, nil)
	if status(err) == http.StatusBadRequest && strings.Contains(err.Error(), "resource_already_exists") {
		return nil // made by another binky meanwhile
	}
	if err != nil {
		return fmt.Errorf("create index %s for binky's marks: %w", MarksIndex, err)
	}
	return nil
}

type markDoc struct {
	Slice   string `json:"slice"`
	World   string `json:"world"`
	Home    string `json:"home"`
	Mark    string `json:"mark"`
	Created string `json:"created,omitempty"`
}

func (s *server) owner(ctx context.Context, slice string) (adapters.Owner, bool, error) {
	var doc struct {
		Found  bool    `json:"found"`
		Source markDoc `json:"_source"`
	}
	err := s.do(ctx, http.MethodGet, "/"+MarksIndex+"/_doc/"+seg(slice), nil, &doc)
	if status(err) == http.StatusNotFound {
		return adapters.Owner{}, false, nil
	}
	if err != nil || !doc.Found {
		return adapters.Owner{}, false, err
	}
	return adapters.Owner{World: doc.Source.World, Home: doc.Source.Home}, true, nil
}

// names lists the indices and data streams whose names start with the
// slice's prefix: asked for by its pattern, then each checked by exact
// string prefix, so that nothing but the slice's own is ever deleted.
func (s *server) names(ctx context.Context, slice string) (indices, streams []string, err error) {
	var rows []struct {
		Index string `json:"index"`
	}
	if err := s.do(ctx, http.MethodGet, "/_cat/indices/"+seg(Pattern(slice))+"?format=json&h=index&expand_wildcards=all", nil, &rows); err != nil && status(err) != http.StatusNotFound {
		return nil, nil, err
	}
	for _, r := range rows {
		if strings.HasPrefix(r.Index, Prefix(slice)) {
			indices = append(indices, r.Index)
		}
	}
	var ds struct {
		DataStreams []struct {
			Name string `json:"name"`
		} `json:"data_streams"`
	}
	err = s.do(ctx, http.MethodGet, "/_data_stream/"+seg(Pattern(slice))+"?expand_wildcards=all", nil, &ds)
	if err != nil && status(err) == 0 {
		return nil, nil, err
	}
	// A cluster without data streams (or none matching) answers 404/400.
	for _, d := range ds.DataStreams {
		if strings.HasPrefix(d.Name, Prefix(slice)) {
			streams = append(streams, d.Name)
		}
	}
	sort.Strings(indices)
	sort.Strings(streams)
	return indices, streams, nil
}

// Provision marks the prefix as the world's and, where security is on,
// creates its role and user.
func (e *Elasticsearch) Provision(ctx context.Context, sl adapters.Slice) error {
	if sl.Name == reserved {
		return fmt.Errorf("index prefix %s would cover binky's %s: %w", Prefix(sl.Name), MarksIndex, adapters.ErrTaken)
	}
	s, err := e.connect(sl.AdminURL)
	if err != nil {
		return err
	}
	f, err := s.detect(ctx)
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
		return fmt.Errorf("%s prefix %s: %w", f.name, Prefix(sl.Name), adapters.ErrTaken)
	}
	if !marked {
		indices, streams, err := s.names(ctx, sl.Name)
		if err != nil {
			return err
		}
		if len(indices)+len(streams) > 0 {
			return fmt.Errorf("%s index %s exists and binky did not make it: %w", f.name, append(indices, streams...)[0], adapters.ErrTaken)
		}
		doc := markDoc{Slice: sl.Name, World: sl.World, Home: sl.Home, Mark: adapters.Mark(sl.Owner()), Created: time.Now().UTC().Format(time.RFC3339)}
		err = s.do(ctx, http.MethodPut, "/"+MarksIndex+"/_create/"+seg(sl.Name)+"?refresh=true", doc, nil)
		if status(err) == http.StatusConflict {
			if o, _, err := s.owner(ctx, sl.Name); err != nil {
				return err
			} else if !o.Is(sl.Owner()) {
				return fmt.Errorf("%s prefix %s: %w", f.name, Prefix(sl.Name), adapters.ErrTaken)
			}
		} else if err != nil {
			return fmt.Errorf("mark %s prefix %s: %w", f.name, Prefix(sl.Name), err)
		}
	}
	if !f.security {
		return nil
	}
	paths := []string{f.rolePath(sl.Name), f.userPath(sl.Name)}
	if f.name == "opensearch" {
		paths = append(paths, f.mappingPath(sl.Name))
	}
	for _, p := range paths {
		o, marked, found, err := s.markOf(ctx, p)
		if err != nil {
			return err
		}
		if found && (!marked || !o.Is(sl.Owner())) {
			return fmt.Errorf("%s %s exists and is not this world's: %w", f.name, p, adapters.ErrTaken)
		}
	}
	bodies := []any{f.roleBody(sl), f.userBody(sl)}
	if f.name == "opensearch" {
		bodies = append(bodies, map[string]any{"users": []string{sl.Name}, "description": adapters.Mark(sl.Owner())})
	}
	for i, p := range paths {
		if err := s.do(ctx, http.MethodPut, p, bodies[i], nil); err != nil {
			// The error holds the server's answer, never the request body
			// (which carries the password).
			return fmt.Errorf("create %s %s: %w", f.name, p, err)
		}
	}
	return nil
}

// Resolve returns the world's address: its own user where security is on.
func (e *Elasticsearch) Resolve(ctx context.Context, sl adapters.Slice) (adapters.Address, error) {
	s, err := e.connect(sl.AdminURL)
	if err != nil {
		return nil, err
	}
	f, err := s.detect(ctx)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: s.base.Scheme, Host: s.base.Host}
	addr := adapters.Address{"host": s.base.Hostname(), "port": s.base.Port(), "prefix": Prefix(sl.Name), "isolation": IsolationNone}
	if f.security {
		u.User = url.UserPassword(sl.Name, sl.Password)
		addr["user"], addr["password"], addr["isolation"] = sl.Name, sl.Password, IsolationUser
	}
	addr["url"] = u.String()
	return addr, nil
}

// Teardown deletes the world's indices and data streams by exact name, then
// its role, user (and OpenSearch role mapping), then its mark; only what is
// marked as the world's.
func (e *Elasticsearch) Teardown(ctx context.Context, sl adapters.Slice) error {
	if sl.Name == reserved {
		return fmt.Errorf("index prefix %s: %w", Prefix(sl.Name), adapters.ErrNotOurs)
	}
	s, err := e.connect(sl.AdminURL)
	if err != nil {
		return err
	}
	f, err := s.detect(ctx)
	if err != nil {
		return err
	}
	o, marked, err := s.owner(ctx, sl.Name)
	if err != nil {
		return err
	}
	indices, streams, err := s.names(ctx, sl.Name)
	if err != nil {
		return err
	}
	if !marked {
		if len(indices)+len(streams) > 0 {
			return fmt.Errorf("%s indices %s: %w", f.name, strings.Join(append(indices, streams...), ", "), adapters.ErrNotOurs)
		}
		return nil
	}
	if !o.Is(sl.Owner()) {
		return fmt.Errorf("%s prefix %s: %w", f.name, Prefix(sl.Name), adapters.ErrNotOurs)
	}
	for _, d := range streams {
		if err := s.do(ctx, http.MethodDelete, "/_data_stream/"+seg(d), nil, nil); err != nil && status(err) != http.StatusNotFound {
			return fmt.Errorf("delete %s data stream %s: %w", f.name, d, err)
		}
	}
	for _, i := range indices {
		if err := s.do(ctx, http.MethodDelete, "/"+seg(i), nil, nil); err != nil && status(err) != http.StatusNotFound {
			return fmt.Errorf("delete %s index %s: %w", f.name, i, err)
		}
	}
	var errs []error
	if f.security {
		paths := []string{f.userPath(sl.Name), f.rolePath(sl.Name)}
		if f.name == "opensearch" {
			paths = []string{f.mappingPath(sl.Name), f.userPath(sl.Name), f.rolePath(sl.Name)}
		}
		for _, p := range paths {
			o, marked, found, err := s.markOf(ctx, p)
			switch {
			case err != nil:
				return err
			case !found:
			case !marked || !o.Is(sl.Owner()):
				errs = append(errs, fmt.Errorf("%s %s: %w", f.name, p, adapters.ErrNotOurs))
			default:
				if err := s.do(ctx, http.MethodDelete, p, nil, nil); err != nil && status(err) != http.StatusNotFound {
					return fmt.Errorf("delete %s %s: %w", f.name, p, err)
				}
			}
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...) // the mark stays: something of the slice is left
	}
	if err := s.do(ctx, http.MethodDelete, "/"+MarksIndex+"/_doc/"+seg(sl.Name)+"?refresh=true", nil, nil); err != nil && status(err) != http.StatusNotFound {
		return fmt.Errorf("delete the mark of %s: %w", sl.Name, err)
	}
	return nil
}

// List returns every prefix binky marked on the cluster.
func (e *Elasticsearch) List(ctx context.Context, adminURL string) ([]adapters.Owned, error) {
	s, err := e.connect(adminURL)
	if err != nil {
		return nil, err
	}
	var res struct {
		Hits struct {
			Hits []struct {
				Source markDoc `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	err = s.do(ctx, http.MethodPost, "/"+MarksIndex+"/_search", map[string]any{"size": 10000, "query": map[string]any{"match_all": map[string]any{}}}, &res)
	if status(err) == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []adapters.Owned
	for _, h := range res.Hits.Hits {
		if h.Source.Slice != "" {
			out = append(out, adapters.Owned{Slice: h.Source.Slice, Kind: "prefix", Name: Prefix(h.Source.Slice),
				Owner: adapters.Owner{World: h.Source.World, Home: h.Source.Home}})
		}
	}
	return out, nil
}

// Capabilities: no server-side clone; lists its slices.
func (e *Elasticsearch) Capabilities() adapters.Capabilities {
	return adapters.Capabilities{List: true}
}

var (
	_ adapters.Adapter = (*Elasticsearch)(nil)
	_ adapters.Lister  = (*Elasticsearch)(nil)
)
