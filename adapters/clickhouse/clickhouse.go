// Package clickhouse is the ClickHouse adapter: a database per world and,
// where the server has SQL-driven access control (ClickHouse 20.5 and later,
// with access_management for the admin), a user of its own with all rights
// on that database and none elsewhere. On a server without it (Debian's
// clickhouse-server 18.16 has none) a world gets its database only and
// reaches it with the admin's credentials: isolation is then a convention,
// not enforced, and the address says so (isolation = "none").
//
// It speaks the HTTP interface (port 8123) with plain net/http, which old
// and modern servers share. Ownership marks live in a table of binky's own,
// binky.marks, one row per object and change (a newer row with removed = 1
// is a tombstone), since ClickHouse 18.16 has neither comments on databases
// nor synchronous deletes.
package clickhouse

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/git-binky/git-binky/adapters"
)

// ClickHouse implements adapters.Adapter, Cloner and Lister.
type ClickHouse struct {
	// HTTP is the client requests go through; nil means a default one.
	HTTP *http.Client
}

// New returns the adapter.
func New() *ClickHouse { return &ClickHouse{} }

// marksDB is binky's own database, holding the ownership marks. A slice of
// that name would share it with the marks, so the name is refused.
const marksDB = "binky"

// Isolation values of the address's "isolation" field.
const (
	// IsolationUser: the world has a user of its own, limited to its
	// database.
	IsolationUser = "user"
	// IsolationNone: the server has no SQL users; the world uses the
	// admin's credentials and can reach every database, binky's marks
	// included.
	IsolationNone = adapters.IsolationNone
)

// server is one ClickHouse reached through its HTTP interface.
type server struct {
	base       url.URL // scheme and host only
	user, pass string
	http       *http.Client
}

// Error is an error the server answered, with its ClickHouse error code.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("clickhouse: code %d: %s", e.Code, e.Message) }

// ClickHouse error codes binky branches on.
const (
	codeUnknownTable    = 60
	codeDatabaseExists  = 82
	codeUnknownDatabase = 81
)

// parseAdmin reads an admin_url: clickhouse://user:pw@host:8123 (plain
// HTTP), clickhouses://... (HTTPS), or http(s)://user:pw@host:port.
func parseAdmin(raw string) (url.URL, string, string, error) {
	u, err := adapters.ParseURL(raw)
	if err != nil {
		return url.URL{}, "", "", fmt.Errorf("clickhouse admin_url %s: %w", adapters.Redact(raw), err)
	}
	base := url.URL{Host: u.Host}
	switch u.Scheme {
	case "clickhouse", "http":
		base.Scheme = "http"
	case "clickhouses", "https":
		base.Scheme = "https"
	default:
		return url.URL{}, "", "", fmt.Errorf("clickhouse admin_url %s: scheme %q: want clickhouse://user:password@host:8123 (the HTTP interface) or http(s)://", adapters.Redact(raw), u.Scheme)
	}
	if u.Query().Get("secure") == "true" {
		base.Scheme = "https"
	}
	if u.Hostname() == "" {
		return url.URL{}, "", "", fmt.Errorf("clickhouse admin_url %s has no host", adapters.Redact(raw))
	}
	if u.Port() == "" {
		port := "8123"
		if base.Scheme == "https" {
			port = "8443"
		}
		base.Host = net.JoinHostPort(u.Hostname(), port)
	}
	user, pass := "default", ""
	if u.User != nil {
		if n := u.User.Username(); n != "" {
			user = n
		}
		pass, _ = u.User.Password()
	}
	return base, user, pass, nil
}

func (c *ClickHouse) connect(adminURL string) (*server, error) {
	base, user, pass, err := parseAdmin(adminURL)
	if err != nil {
		return nil, err
	}
	h := c.HTTP
	if h == nil {
		h = &http.Client{Timeout: 60 * time.Second}
	}
	return &server{base: base, user: user, pass: pass, http: h}, nil
}

// exec runs one statement and returns the body of the answer.
func (s *server) exec(ctx context.Context, query string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base.String()+"/", strings.NewReader(query))
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(s.user, s.pass)
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("clickhouse at %s: %w", s.base.Host, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("clickhouse at %s: %w", s.base.Host, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, serverError(resp.StatusCode, body)
	}
	return body, nil
}

// serverError reads "Code: 60, e.displayText() = DB::Exception: ..." (old)
// or "Code: 60. DB::Exception: ..." (new) into an *Error.
func serverError(status int, body []byte) error {
	msg := strings.TrimSpace(string(body))
	e := &Error{Message: msg}
	if rest, ok := strings.CutPrefix(msg, "Code: "); ok {
		end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if end > 0 {
			e.Code, _ = strconv.Atoi(rest[:end])
		}
	}
	if e.Code == 0 {
		e.Message = fmt.Sprintf("HTTP %d: %s", status, msg)
	}
	return e
}

func isCode(err error, code int) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// rows runs a SELECT and decodes its JSONEachRow answer into one map per row.
func (s *server) rows(ctx context.Context, query string) ([]map[string]any, error) {
	body, err := s.exec(ctx, query+" FORMAT JSONEachRow")
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var row map[string]any
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			return nil, fmt.Errorf("clickhouse: unreadable answer to %q: %w", query, err)
		}
		out = append(out, row)
	}
	return out, sc.Err()
}

// Ident quotes an identifier with backticks, escaping backslashes and
// backticks, as ClickHouse reads them.
func Ident(name string) string {
	return "`" + strings.NewReplacer(`\`, `\\`, "`", "\\`").Replace(name) + "`"
}

// Literal quotes a string literal, escaping backslashes and quotes (and
// control characters, which ClickHouse reads as escapes).
func Literal(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case 0:
			b.WriteString(`\0`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// ensureMarks creates binky's marks table once.
func (s *server) ensureMarks(ctx context.Context) error {
	for _, q := range []string{
		"CREATE DATABASE IF NOT EXISTS " + Ident(marksDB),
		"CREATE TABLE IF NOT EXISTS " + Ident(marksDB) + ".marks (slice String, kind String, world String, home String, " +
			"created DateTime, seq UInt64, removed UInt8) ENGINE = MergeTree ORDER BY (slice, kind, seq)",
	} {
		if _, err := s.exec(ctx, q); err != nil {
			return fmt.Errorf("create binky's marks table on clickhouse at %s: %w", s.base.Host, err)
		}
	}
	return nil
}

// mark records (or, removed, tombstones) the owner of one object.
func (s *server) mark(ctx context.Context, slice, kind string, o adapters.Owner, removed bool) error {
	r := 0
	if removed {
		r = 1
	}
	q := fmt.Sprintf("INSERT INTO %s.marks (slice, kind, world, home, created, seq, removed) VALUES (%s, %s, %s, %s, now(), %d, %d)",
		Ident(marksDB), Literal(slice), Literal(kind), Literal(o.World), Literal(o.Home), time.Now().UnixNano(), r)
	if _, err := s.exec(ctx, q); err != nil {
		return fmt.Errorf("mark %s %s on clickhouse: %w", kind, slice, err)
	}
	return nil
}

// owner returns the owner marked for one object, and whether a live mark
// exists. A server without the marks table has none.
func (s *server) owner(ctx context.Context, slice, kind string) (adapters.Owner, bool, error) {
	rows, err := s.rows(ctx, fmt.Sprintf("SELECT argMax(world, seq) AS world, argMax(home, seq) AS home, argMax(removed, seq) AS removed "+
		"FROM %s.marks WHERE slice = %s AND kind = %s GROUP BY slice", Ident(marksDB), Literal(slice), Literal(kind)))
	if isCode(err, codeUnknownTable) || isCode(err, codeUnknownDatabase) {
		return adapters.Owner{}, false, nil
	}
	if err != nil {
		return adapters.Owner{}, false, err
	}
	if len(rows) == 0 || num(rows[0]["removed"]) != 0 {
		return adapters.Owner{}, false, nil
	}
	return adapters.Owner{World: str(rows[0]["world"]), Home: str(rows[0]["home"])}, true, nil
}

func str(v any) string { s, _ := v.(string); return s }

// num reads a JSON number, or a number ClickHouse quoted (64-bit integers).
func num(v any) int64 {
	switch x := v.(type) {
	case float64:
		return int64(x)
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// exists reports whether a row matches in a system table.
func (s *server) exists(ctx context.Context, query string) (bool, error) {
	rows, err := s.rows(ctx, query)
	if err != nil {
		return false, err
	}
	return len(rows) > 0, nil
}

func (s *server) databaseExists(ctx context.Context, name string) (bool, error) {
	return s.exists(ctx, "SELECT name FROM system.databases WHERE name = "+Literal(name))
}

// hasUsers reports whether the server has SQL-driven access control: the
// system.users table exists (ClickHouse 20.5 and later). Asking
// system.tables needs no privilege, unlike reading system.users.
func (s *server) hasUsers(ctx context.Context) (bool, error) {
	return s.exists(ctx, "SELECT name FROM system.tables WHERE database = 'system' AND name = 'users'")
}

func (s *server) userExists(ctx context.Context, name string) (bool, error) {
	return s.exists(ctx, "SELECT name FROM system.users WHERE name = "+Literal(name))
}

// Provision creates the world's database and, where the server has SQL
// users, the world's user with all rights on that database only.
func (c *ClickHouse) Provision(ctx context.Context, sl adapters.Slice) error {
	s, err := c.connect(sl.AdminURL)
	if err != nil {
		return err
	}
	return c.provision(ctx, s, sl)
}

func (c *ClickHouse) provision(ctx context.Context, s *server, sl adapters.Slice) error {
	if sl.Name == marksDB {
		return fmt.Errorf("clickhouse database %s holds binky's marks: %w", sl.Name, adapters.ErrTaken)
	}
	if err := s.ensureMarks(ctx); err != nil {
		return err
	}
	if err := c.claim(ctx, s, sl, "database", s.databaseExists); err != nil {
		return err
	}
	if _, err := s.exec(ctx, "CREATE DATABASE IF NOT EXISTS "+Ident(sl.Name)); err != nil {
		return fmt.Errorf("create clickhouse database %s: %w", sl.Name, err)
	}
	users, err := s.hasUsers(ctx)
	if err != nil || !users {
		return err
	}
	if err := c.claim(ctx, s, sl, "user", s.userExists); err != nil {
		return err
	}
	db, user, pw := Ident(sl.Name), Ident(sl.Name), Literal(sl.Password)
	for _, q := range []string{
		// No DEFAULT DATABASE clause: servers from 20.5 until it came lack
		// it, and the world's url names its database anyway.
		"CREATE USER IF NOT EXISTS " + user + " IDENTIFIED WITH sha256_password BY " + pw,
		// The password is derived, and may have been derived anew.
		"ALTER USER " + user + " IDENTIFIED WITH sha256_password BY " + pw,
		"GRANT ALL ON " + db + ".* TO " + user,
	} {
		if _, err := s.exec(ctx, q); err != nil {
			verb, _, _ := strings.Cut(q, " IDENTIFIED")
			return fmt.Errorf("%s on clickhouse at %s: %w (the admin user needs access_management: in users.xml <access_management>1</access_management>, "+
				"or CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT=1 in the official image)", verb, s.base.Host, err)
		}
	}
	return nil
}

// claim marks one object (database or user) as the slice's before creating
// it, so that a crash leaves a mark gc finds rather than an unmarked object
// nobody may drop. An object that exists unmarked, or is marked for another
// world or home, is not the slice's: ErrTaken.
func (c *ClickHouse) claim(ctx context.Context, s *server, sl adapters.Slice, kind string, exists func(context.Context, string) (bool, error)) error {
	o, marked, err := s.owner(ctx, sl.Name, kind)
	if err != nil {
		return err
	}
	if marked {
		if !o.Is(sl.Owner()) {
			return fmt.Errorf("clickhouse %s %s: %w", kind, sl.Name, adapters.ErrTaken)
		}
		return nil
	}
	there, err := exists(ctx, sl.Name)
	if err != nil {
		return err
	}
	if there {
		return fmt.Errorf("clickhouse %s %s exists and binky did not make it: %w", kind, sl.Name, adapters.ErrTaken)
	}
	if err := s.mark(ctx, sl.Name, kind, sl.Owner(), false); err != nil {
		return err
	}
	// Two binkys may have marked it at once: the later mark wins, and the
	// earlier one must back off.
	o, marked, err = s.owner(ctx, sl.Name, kind)
	if err != nil {
		return err
	}
	if !marked || !o.Is(sl.Owner()) {
		return fmt.Errorf("clickhouse %s %s: %w", kind, sl.Name, adapters.ErrTaken)
	}
	return nil
}

// Clone creates the world's slice as a copy of template, table by table on
// the server: CREATE TABLE new.t AS template.t, then INSERT ... SELECT.
// Views, dictionaries and replicated tables are not copied this way: the
// clone fails and binky falls back to provision, migrate and seed.
func (c *ClickHouse) Clone(ctx context.Context, template string, sl adapters.Slice) error {
	s, err := c.connect(sl.AdminURL)
	if err != nil {
		return err
	}
	if there, err := s.databaseExists(ctx, template); err != nil {
		return err
	} else if !there {
		return fmt.Errorf("clickhouse template database %s does not exist", template)
	}
	tables, err := s.rows(ctx, "SELECT name, engine FROM system.tables WHERE database = "+Literal(template)+" ORDER BY name")
	if err != nil {
		return err
	}
	for _, t := range tables {
		if engine := str(t["engine"]); !copyable(engine) {
			return fmt.Errorf("clickhouse template %s: table %s has engine %s, which a copy per table cannot reproduce "+
				"(binky copies tables that hold their own rows: MergeTree and Log families, Memory, Set, Join, Null)", template, str(t["name"]), engine)
		}
	}
	// A MATERIALIZED column is computed by the INSERT, which the admin
	// runs: its expression, the template user's choice, would run with
	// the admin's rights.
	if cols, err := s.rows(ctx, "SELECT table, name FROM system.columns WHERE database = "+Literal(template)+" AND default_kind = 'MATERIALIZED' ORDER BY table, name"); err != nil {
		return err
	} else if len(cols) > 0 {
		return fmt.Errorf("clickhouse template %s: column %s.%s is MATERIALIZED, which a copy would compute with the admin's rights", template, str(cols[0]["table"]), str(cols[0]["name"]))
	}
	if err := c.provision(ctx, s, sl); err != nil {
		return err
	}
	for _, t := range tables {
		name := str(t["name"])
		dst, src := Ident(sl.Name)+"."+Ident(name), Ident(template)+"."+Ident(name)
		for _, q := range []string{"CREATE TABLE IF NOT EXISTS " + dst + " AS " + src, "INSERT INTO " + dst + " SELECT * FROM " + src} {
			if _, err := s.exec(ctx, q); err != nil {
				return fmt.Errorf("copy clickhouse table %s from %s: %w", name, template, err)
			}
		}
	}
	return nil
}

// copyable reports whether a table of that engine holds its own rows on
// this server, so that CREATE TABLE ... AS and INSERT ... SELECT copy it.
// Only these: the others read or write elsewhere (Merge, Buffer,
// Distributed, Dictionary, views, URL, File, MySQL, Kafka, ...), so the
// admin copying a template's table would read, or the copy later reach,
// what the template's user chose, another world's tables among them.
func copyable(engine string) bool {
	if strings.HasPrefix(engine, "Replicated") {
		return false
	}
	if strings.HasSuffix(engine, "MergeTree") {
		return true
	}
	switch engine {
	case "TinyLog", "StripeLog", "Log", "Memory", "Set", "Join", "Null":
		return true
	}
	return false
}

// PrepareTemplate takes a built golden template's rights from its user,
// where the server has SQL users (on one without, every world has the
// admin's credentials anyway): its password was given to the migrate and
// seed that built it (a branch's code), which could otherwise change what
// every later world starts from. The user loses its grants and gets a
// password nobody knows, and its running queries are killed. A rebuild
// provisions it again, which gives both back.
func (c *ClickHouse) PrepareTemplate(ctx context.Context, adminURL, name string) error {
	s, err := c.connect(adminURL)
	if err != nil {
		return err
	}
	if users, err := s.hasUsers(ctx); err != nil || !users {
		return err
	}
	if there, err := s.userExists(ctx, name); err != nil || !there {
		return err
	}
	pw := make([]byte, 24)
	if _, err := rand.Read(pw); err != nil {
		return err
	}
	user := Ident(name)
	for _, q := range []string{
		"ALTER USER " + user + " IDENTIFIED WITH sha256_password BY " + Literal(hex.EncodeToString(pw)),
		"REVOKE ALL ON *.* FROM " + user,
		"KILL QUERY WHERE user = " + Literal(name) + " ASYNC",
	} {
		if _, err := s.exec(ctx, q); err != nil {
			return fmt.Errorf("template %s: take its user's rights: %w", name, err)
		}
	}
	return nil
}

// Exists reports whether a database of that name exists (for golden
// templates).
func (c *ClickHouse) Exists(ctx context.Context, adminURL, name string) (bool, error) {
	s, err := c.connect(adminURL)
	if err != nil {
		return false, err
	}
	return s.databaseExists(ctx, name)
}

// Resolve returns the world's address: its own user where the server has
// SQL users; else the admin's credentials, with isolation = "none".
func (c *ClickHouse) Resolve(ctx context.Context, sl adapters.Slice) (adapters.Address, error) {
	s, err := c.connect(sl.AdminURL)
	if err != nil {
		return nil, err
	}
	users, err := s.hasUsers(ctx)
	if err != nil {
		return nil, err
	}
	user, pass, isolation := sl.Name, sl.Password, IsolationUser
	if !users {
		user, pass, isolation = s.user, s.pass, IsolationNone
	}
	u := url.URL{Scheme: s.base.Scheme, User: url.UserPassword(user, pass), Host: s.base.Host, Path: "/",
		RawQuery: url.Values{"database": {sl.Name}}.Encode()}
	return adapters.Address{"url": u.String(), "host": s.base.Hostname(), "port": s.base.Port(), "user": user, "password": pass,
		"name": sl.Name, "database": sl.Name, "isolation": isolation}, nil
}

// Teardown drops the world's database and user, each only if marked as the
// slice's, and tombstones their marks.
func (c *ClickHouse) Teardown(ctx context.Context, sl adapters.Slice) error {
	s, err := c.connect(sl.AdminURL)
	if err != nil {
		return err
	}
	if sl.Name == marksDB {
		return fmt.Errorf("clickhouse database %s holds binky's marks: %w", sl.Name, adapters.ErrNotOurs)
	}
	users, err := s.hasUsers(ctx)
	if err != nil {
		return err
	}
	type object struct {
		kind   string
		exists func(context.Context, string) (bool, error)
		drop   string
	}
	objects := []object{{"database", s.databaseExists, "DROP DATABASE IF EXISTS " + Ident(sl.Name)}}
	if users {
		objects = append(objects, object{"user", s.userExists, "DROP USER IF EXISTS " + Ident(sl.Name)})
	}
	var errs []error
	for _, k := range objects {
		o, marked, err := s.owner(ctx, sl.Name, k.kind)
		if err != nil {
			return err
		}
		if !marked {
			if there, err := k.exists(ctx, sl.Name); err != nil {
				return err
			} else if there {
				errs = append(errs, fmt.Errorf("clickhouse %s %s: %w", k.kind, sl.Name, adapters.ErrNotOurs))
			}
			continue
		}
		if !o.Is(sl.Owner()) {
			errs = append(errs, fmt.Errorf("clickhouse %s %s: %w", k.kind, sl.Name, adapters.ErrNotOurs))
			continue
		}
		if _, err := s.exec(ctx, k.drop); err != nil {
			return fmt.Errorf("teardown clickhouse %s %s: %w", k.kind, sl.Name, err)
		}
		if k.kind == "user" {
			// Its queries still running end too; none running is fine.
			_, _ = s.exec(ctx, "KILL QUERY WHERE user = "+Literal(sl.Name)+" ASYNC")
		}
		if err := s.mark(ctx, sl.Name, k.kind, sl.Owner(), true); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// List returns every database and user binky marked on the server.
func (c *ClickHouse) List(ctx context.Context, adminURL string) ([]adapters.Owned, error) {
	s, err := c.connect(adminURL)
	if err != nil {
		return nil, err
	}
	rows, err := s.rows(ctx, "SELECT slice, kind, argMax(world, seq) AS world, argMax(home, seq) AS home, argMax(removed, seq) AS removed "+
		"FROM "+Ident(marksDB)+".marks GROUP BY slice, kind ORDER BY slice, kind")
	if isCode(err, codeUnknownTable) || isCode(err, codeUnknownDatabase) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []adapters.Owned
	for _, r := range rows {
		if num(r["removed"]) != 0 {
			continue
		}
		name := str(r["slice"])
		out = append(out, adapters.Owned{Slice: name, Kind: str(r["kind"]), Name: name,
			Owner: adapters.Owner{World: str(r["world"]), Home: str(r["home"])}})
	}
	return out, nil
}

// Capabilities: clones server-side, lists its slices.
func (c *ClickHouse) Capabilities() adapters.Capabilities {
	return adapters.Capabilities{Clone: true, List: true}
}

var (
	_ adapters.Adapter = (*ClickHouse)(nil)
	_ adapters.Cloner  = (*ClickHouse)(nil)
	_ adapters.Lister  = (*ClickHouse)(nil)
)
