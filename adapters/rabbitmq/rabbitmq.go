// Package rabbitmq is the RabbitMQ adapter: per world a vhost and a user of
// the slice's name, the user allowed to configure, write and read on that
// vhost only and given no management tags (so it cannot use the management
// API at all). Everything is done through the management HTTP API (the
// rabbitmq_management plugin) with plain net/http. The ownership mark is the
// vhost's description, which only an administrator can set.
package rabbitmq

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/git-binky/git-binky/adapters"
)

// DefaultManagementPort is where the management API listens when the admin
// URL does not say.
const DefaultManagementPort = 15672

// markTag is the tag binky's vhosts carry, beside the mark in the
// description, so that people browsing the management UI see whose they are.
const markTag = "binky"

// RabbitMQ implements adapters.Adapter and Lister.
type RabbitMQ struct {
	// HTTP is the client for the management API; nil is a client with a
	// 30 s timeout.
	HTTP *http.Client
}

// New returns the adapter.
func New() *RabbitMQ { return &RabbitMQ{} }

// Admin is a parsed admin URL: amqp://user:pw@host:port, with the
// management API's port (?management=15672) or full URL
// (?management=http://host:15672) in the query, or the default port on the
// AMQP host.
type Admin struct {
	Scheme     string // amqp or amqps
	Host, Port string // the AMQP listener
	User       string
	Password   string
	Management *url.URL // the management API's base URL, without credentials
}

// ParseAdminURL reads an admin URL.
func ParseAdminURL(raw string) (Admin, error) {
	bad := func(why string) (Admin, error) {
		return Admin{}, fmt.Errorf("rabbitmq admin_url %s: %s (want amqp://user:password@host:5672?management=15672)", adapters.Redact(raw), why)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad("it does not parse")
	}
	if u.Scheme != "amqp" && u.Scheme != "amqps" {
		return bad("the scheme must be amqp:// or amqps://")
	}
	if u.User == nil || u.User.Username() == "" {
		return bad("it names no user; binky needs one with the administrator tag")
	}
	a := Admin{Scheme: u.Scheme, Host: u.Hostname(), Port: u.Port(), User: u.User.Username()}
	a.Password, _ = u.User.Password()
	if a.Host == "" {
		return bad("it names no host")
	}
	if a.Port == "" {
		a.Port = "5672"
		if u.Scheme == "amqps" {
			a.Port = "5671"
		}
	}
	m := u.Query().Get("management")
	switch {
	case m == "":
		a.Management = &url.URL{Scheme: "http", Host: net.JoinHostPort(a.Host, strconv.Itoa(DefaultManagementPort))}
	case strings.Contains(m, "://"):
		mu, err := url.Parse(m)
		if err != nil || (mu.Scheme != "http" && mu.Scheme != "https") || mu.Host == "" {
			return bad("management= is not an http(s) URL")
		}
		mu.User = nil
		mu.Path = strings.TrimSuffix(mu.Path, "/")
		mu.RawQuery, mu.Fragment = "", ""
		a.Management = mu
	default:
		p, err := strconv.Atoi(m)
		if err != nil || p <= 0 || p > 65535 {
			return bad("management= is neither a port nor a URL")
		}
		a.Management = &url.URL{Scheme: "http", Host: net.JoinHostPort(a.Host, m)}
	}
	return a, nil
}

// api is the management API as the admin.
type api struct {
	admin Admin
	http  *http.Client
}

func (r *RabbitMQ) open(adminURL string) (*api, error) {
	a, err := ParseAdminURL(adminURL)
	if err != nil {
		return nil, err
	}
	c := r.HTTP
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	return &api{admin: a, http: c}, nil
}

// errNotFound is a 404 from the management API.
var errNotFound = errors.New("not found")

// do sends one request; path segments are escaped here, so a name never
// becomes a path of its own. A non-2xx answer is an error naming the
// request; 404 wraps errNotFound.
func (a *api) do(ctx context.Context, method string, out any, body any, segments ...string) error {
	raw := a.admin.Management.EscapedPath() + "/api"
	plain := a.admin.Management.Path + "/api"
	for _, s := range segments {
		raw += "/" + url.PathEscape(s)
		plain += "/" + s
	}
	u := *a.admin.Management
	u.Path, u.RawPath = plain, raw
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return err
	}
	req.SetBasicAuth(a.admin.User, a.admin.Password)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	what := method + " " + strings.Join(append([]string{"/api"}, segments...), "/")
	resp, err := a.http.Do(req)
	if err != nil {
		return fmt.Errorf("rabbitmq management API at %s: %s: %w", a.admin.Management, what, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("rabbitmq %s: %w", what, errNotFound)
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("rabbitmq management API at %s refused user %q (%s): it needs the administrator tag", a.admin.Management, a.admin.User, what)
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("rabbitmq management API at %s: %s: %s: %s", a.admin.Management, what, resp.Status, strings.TrimSpace(string(data)))
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("rabbitmq management API at %s: %s: %w", a.admin.Management, what, err)
		}
	}
	return nil
}

type vhost struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Metadata    struct {
		Description string `json:"description"`
	} `json:"metadata"`
}

// mark is the vhost's ownership mark, read from the description (3.8+
// also keeps it under metadata).
func (v vhost) mark() (adapters.Owner, bool) {
	d := v.Description
	if d == "" {
		d = v.Metadata.Description
	}
	return adapters.ParseMark(d)
}

type user struct {
	Name string          `json:"name"`
	Tags json.RawMessage `json:"tags"` // a list in 3.9+, a comma-separated string before
	// PasswordHash is base64 of a 4-byte salt and the hash of the salt and
	// the password, by HashingAlgorithm.
	PasswordHash     string `json:"password_hash"`
	HashingAlgorithm string `json:"hashing_algorithm"`
}

// hasPassword reports whether the user's stored hash is of password. A
// world's password derives from the home's secret, so a user that has it
// was made by this home's binky: a user of the same name that someone
// else made (or gave another password) does not.
func (u user) hasPassword(password string) bool {
	raw, err := base64.StdEncoding.DecodeString(u.PasswordHash)
	if err != nil || len(raw) <= 4 || password == "" {
		return false
	}
	var h hash.Hash
	switch u.HashingAlgorithm {
	case "rabbit_password_hashing_sha256": // the default since 3.6
		h = sha256.New()
	case "rabbit_password_hashing_sha512":
		h = sha512.New()
	case "rabbit_password_hashing_md5", "": // configured so, or a node before 3.6 (no field)
		h = md5.New()
	default: // a plugin's: unproven
		return false
	}
	h.Write(raw[:4])
	h.Write([]byte(password))
	return subtle.ConstantTimeCompare(h.Sum(nil), raw[4:]) == 1
}

type permission struct {
	User  string `json:"user"`
	Vhost string `json:"vhost"`
}

func (a *api) vhost(ctx context.Context, name string) (vhost, bool, error) {
	var v vhost
	err := a.do(ctx, http.MethodGet, &v, nil, "vhosts", name)
	if errors.Is(err, errNotFound) {
		return v, false, nil
	}
	return v, err == nil, err
}

func (a *api) userExists(ctx context.Context, name string) (bool, error) {
	err := a.do(ctx, http.MethodGet, nil, nil, "users", name)
	if errors.Is(err, errNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Provision creates the vhost with the mark in its description first, so
// that what a crash leaves behind is marked and found by gc, then the user
// and its permissions on that vhost. A vhost not marked as this world's, or
// a user of the name with no vhost binky made, is ErrTaken.
func (r *RabbitMQ) Provision(ctx context.Context, s adapters.Slice) error {
	a, err := r.open(s.AdminURL)
	if err != nil {
		return err
	}
	v, exists, err := a.vhost(ctx, s.Name)
	if err != nil {
		return err
	}
	if exists {
		if o, ok := v.mark(); !ok || !o.Is(s.Owner()) {
			return fmt.Errorf("rabbitmq vhost %s: %w", s.Name, adapters.ErrTaken)
		}
	} else {
		// A user of the name that binky did not make: its password and
		// rights are someone else's.
		taken, err := a.userExists(ctx, s.Name)
		if err != nil {
			return err
		}
		if taken {
			return fmt.Errorf("rabbitmq user %s exists and has no vhost binky made: %w", s.Name, adapters.ErrTaken)
		}
		body := map[string]any{"description": adapters.Mark(s.Owner()), "tags": markTag}
		if err := a.do(ctx, http.MethodPut, nil, body, "vhosts", s.Name); err != nil {
			return fmt.Errorf("create rabbitmq vhost %s: %w", s.Name, err)
		}
	}
	// No tags: the world's user can use AMQP, never the management API.
	if err := a.do(ctx, http.MethodPut, nil, map[string]any{"password": s.Password, "tags": ""}, "users", s.Name); err != nil {
		return fmt.Errorf("create rabbitmq user %s: %w", s.Name, err)
	}
	perm := map[string]string{"configure": ".*", "write": ".*", "read": ".*"}
	if err := a.do(ctx, http.MethodPut, nil, perm, "permissions", s.Name, s.Name); err != nil {
		return fmt.Errorf("grant rabbitmq user %s its vhost: %w", s.Name, err)
	}
	return nil
}

// Resolve returns the world's AMQP URL (its own user, its vhost) and the
// parts of it.
func (r *RabbitMQ) Resolve(ctx context.Context, s adapters.Slice) (adapters.Address, error) {
	a, err := ParseAdminURL(s.AdminURL)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: a.Scheme, User: url.UserPassword(s.Name, s.Password), Host: net.JoinHostPort(a.Host, a.Port),
		Path: "/" + s.Name, RawPath: "/" + url.PathEscape(s.Name)}
	return adapters.Address{
		"url": u.String(), "host": a.Host, "port": a.Port, "vhost": s.Name,
		"user": s.Name, "password": s.Password, "management_url": a.Management.String(),
	}, nil
}

// Teardown deletes the user and then the vhost (its queues and exchanges
// with it, and its connections closed), only when the vhost's mark names
// s.World and s.Home. The mark goes last, so a teardown cut short is found
// again by gc. A user is deleted only when it is provably the one binky
// made: it has rights on this vhost alone and the password binky gives
// the world (s.Password). Any other user of the name is left.
func (r *RabbitMQ) Teardown(ctx context.Context, s adapters.Slice) error {
	a, err := r.open(s.AdminURL)
	if err != nil {
		return err
	}
	v, exists, err := a.vhost(ctx, s.Name)
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("rabbitmq vhost %s is absent: %w", s.Name, adapters.ErrNotOurs)
	}
	if o, ok := v.mark(); !ok || !o.Is(s.Owner()) {
		return fmt.Errorf("rabbitmq vhost %s: %w", s.Name, adapters.ErrNotOurs)
	}
	var perms []permission
	var kept error
	err = a.do(ctx, http.MethodGet, &perms, nil, "users", s.Name, "permissions")
	switch {
	case errors.Is(err, errNotFound):
	case err != nil:
		return err
	case onlyOn(perms, s.Name):
		var u user
		err := a.do(ctx, http.MethodGet, &u, nil, "users", s.Name)
		switch {
		case errors.Is(err, errNotFound):
		case err != nil:
			return err
		case u.hasPassword(s.Password):
			if err := a.do(ctx, http.MethodDelete, nil, nil, "users", s.Name); err != nil && !errors.Is(err, errNotFound) {
				return fmt.Errorf("delete rabbitmq user %s: %w", s.Name, err)
			}
		default:
			// Said, not kept silently: once the vhost is gone nothing
			// lists the user again (gc looks beside marked vhosts).
			kept = adapters.Kept("rabbitmq vhost %s dropped; user %s kept: its password is not the one binky gives this world "+
				"(someone made or changed it by hand, or the server hashes with %q, which binky cannot check); "+
				"if it is binky's, delete it with 'rabbitmqctl delete_user %s'", s.Name, s.Name, u.HashingAlgorithm, s.Name)
		}
	}
	if err := a.do(ctx, http.MethodDelete, nil, nil, "vhosts", s.Name); err != nil && !errors.Is(err, errNotFound) {
		return fmt.Errorf("delete rabbitmq vhost %s: %w", s.Name, err)
	}
	return kept
}

func onlyOn(perms []permission, vhost string) bool {
	for _, p := range perms {
		if p.Vhost != vhost {
			return false
		}
	}
	return true
}

// List returns every vhost binky marked and, beside each, the user of its
// name where one exists.
func (r *RabbitMQ) List(ctx context.Context, adminURL string) ([]adapters.Owned, error) {
	a, err := r.open(adminURL)
	if err != nil {
		return nil, err
	}
	var vhosts []vhost
	if err := a.do(ctx, http.MethodGet, &vhosts, nil, "vhosts"); err != nil {
		return nil, err
	}
	var users []user
	if err := a.do(ctx, http.MethodGet, &users, nil, "users"); err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, u := range users {
		have[u.Name] = true
	}
	sort.Slice(vhosts, func(i, j int) bool { return vhosts[i].Name < vhosts[j].Name })
	var out []adapters.Owned
	for _, v := range vhosts {
		o, ok := v.mark()
		if !ok {
			continue
		}
		out = append(out, adapters.Owned{Slice: v.Name, Kind: "vhost", Name: v.Name, Owner: o})
		if have[v.Name] {
			out = append(out, adapters.Owned{Slice: v.Name, Kind: "user", Name: v.Name, Owner: o})
		}
	}
	return out, nil
}

// Capabilities: no server-side clone; lists its slices.
func (r *RabbitMQ) Capabilities() adapters.Capabilities { return adapters.Capabilities{List: true} }

var (
	_ adapters.Adapter = (*RabbitMQ)(nil)
	_ adapters.Lister  = (*RabbitMQ)(nil)
)
