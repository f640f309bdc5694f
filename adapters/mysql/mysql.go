// Package mysql is the MySQL adapter (MariaDB and Percona are served by the
// same code): a database and a user of its own per world, carved from one
// shared server, the user granted everything on its database and nothing
// else. It is the only importer of github.com/go-sql-driver/mysql.
//
// MySQL has no comment on a database or a user, so ownership marks live in
// a table of binky's own, `binky`.`marks`, on which no world user has any
// grant: a world can neither forge nor erase one. A mark is written before
// the object it names is created, so a crash in between leaves a mark that
// provision, teardown and gc act on.
//
// Every identifier is quoted with backticks (a backtick doubled); the only
// literals written into statements are binky's own hex passwords, checked.
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/git-binky/git-binky/adapters"
)

// MySQL implements adapters.Adapter, Cloner and Lister.
type MySQL struct{}

// New returns the adapter.
func New() *MySQL { return &MySQL{} }

// MaxUser is the longest user name MySQL 8 takes (MariaDB takes 80): users
// are folded to it so that one name works on both.
const MaxUser = 32

// userHost is the host part of every world user: any, since a server given
// by admin_url may be reached from elsewhere than loopback.
const userHost = "%"

// markSchema is binky's own schema on the server, where marks live.
const markSchema = "binky"

// reserved are schema names a slice never takes: the server's own and
// binky's. A slice that folds to one is refused (ErrTaken), so the daemon
// salts it.
var reserved = map[string]bool{markSchema: true, "mysql": true, "information_schema": true,
	"performance_schema": true, "sys": true}

// MySQL error numbers the adapter branches on.
const (
	errDupKey       = 1062
	errNoSuchTable  = 1146
	errBadDB        = 1049
	errNoSuchThread = 1094
)

// UserName is the user of a slice: its name folded to MaxUser bytes with a
// hash of the whole name when cut.
func UserName(slice string) string { return adapters.FoldName(slice, slice, 0, MaxUser) }

// DBName is the database of a slice: its name, unless the name with its
// wildcards escaped for GRANT ('_' → '\_') is over the 64 bytes MariaDB
// checks a grant's database name against; then it is folded shorter, with
// a hash of the whole name.
func DBName(slice string) string {
	for max := 64; max > 16; max-- {
		name := adapters.FoldName(slice, slice, 0, max)
		if len(escapeGrant(name)) <= 64 {
			return name
		}
	}
	return adapters.FoldName(slice, slice, 0, 16)
}

// ident quotes an identifier: `name`, with any backtick doubled.
func ident(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// grantDB quotes a database name for GRANT, where '_' and '%' are
// wildcards: unescaped, a grant on `acme_a` would also cover `acmeXa`.
func grantDB(s string) string { return ident(escapeGrant(s)) }

func escapeGrant(s string) string {
	return strings.NewReplacer(`\`, `\\`, `_`, `\_`, `%`, `\%`).Replace(s)
}

func account(user string) string { return ident(user) + "@" + ident(userHost) }

// literal quotes a password literal; binky's passwords are hex, and
// anything else is refused rather than escaped.
func literal(s string) (string, error) {
	if s == "" {
		return "", errors.New("mysql: the slice has no password (binky derives one for every slice)")
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return "", errors.New("mysql: refusing to write a password with characters other than [A-Za-z0-9_-] into SQL")
		}
	}
	return "'" + s + "'", nil
}

// Config reads an admin URL: mysql://user:pw@host:port[/][?tls=true|skip-verify|preferred][&socket=/path].
// mariadb:// and percona:// are read the same.
func Config(adminURL string) (*driver.Config, error) {
	u, err := url.Parse(adminURL)
	if err != nil {
		// url.Error quotes the whole URL, password and all: keep its reason.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("mysql admin_url is not a URL (want mysql://user:password@host:port): %w", err)
	}
	switch u.Scheme {
	case "mysql", "mariadb", "percona":
	default:
		return nil, fmt.Errorf("mysql admin_url %s: want mysql://user:password@host:port", adapters.Redact(adminURL))
	}
	cfg := driver.NewConfig()
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "127.0.0.1"
	}
	if port == "" {
		port = "3306"
	}
	cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(host, port)
	q := u.Query()
	if sock := q.Get("socket"); sock != "" {
		cfg.Net, cfg.Addr = "unix", sock
	}
	if tls := q.Get("tls"); tls != "" {
		cfg.TLSConfig = tls
	}
	cfg.Timeout = 10 * time.Second
	// A server that asks for a public key (MySQL 8's caching_sha2_password
	// without TLS) is answered by the driver; nothing else is enabled.
	return cfg, nil
}

// session is one admin connection; statements that set session state
// (FOREIGN_KEY_CHECKS, sql_mode, the current database) need the same one.
type session struct {
	db *sql.DB
	c  *sql.Conn
	// lockKey is known to the admin only (its password): lock names are
	// the server's, and any user may take a lock whose name it can guess.
	lockKey string
}

func connect(ctx context.Context, adminURL string) (*session, error) {
	cfg, err := Config(adminURL)
	if err != nil {
		return nil, err
	}
	conn, err := driver.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql admin_url %s: %w", adapters.Redact(adminURL), err)
	}
	db := sql.OpenDB(conn)
	c, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to mysql at %s: %w", adapters.Redact(adminURL), err)
	}
	return &session{db: db, c: c, lockKey: cfg.User + "\x00" + cfg.Passwd}, nil
}

func (s *session) Close() {
	s.c.Close()
	s.db.Close()
}

func (s *session) exec(ctx context.Context, stmt string, args ...any) error {
	if _, err := s.c.ExecContext(ctx, stmt, args...); err != nil {
		return fmt.Errorf("mysql: %s: %w", redactStmt(stmt), err)
	}
	return nil
}

// redactStmt keeps a password literal out of an error message.
func redactStmt(stmt string) string {
	if i := strings.Index(stmt, " IDENTIFIED BY "); i >= 0 {
		return stmt[:i] + " IDENTIFIED BY '…'"
	}
	return stmt
}

func errNumber(err error) uint16 {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// ensureMarks creates binky's schema and its table of marks. No world user
// is ever granted anything on it.
func (s *session) ensureMarks(ctx context.Context) error {
	if err := s.exec(ctx, "CREATE DATABASE IF NOT EXISTS "+ident(markSchema)+" CHARACTER SET utf8mb4"); err != nil {
		return err
	}
	return s.exec(ctx, "CREATE TABLE IF NOT EXISTS "+ident(markSchema)+".`marks` ("+
		"`kind` VARCHAR(16) NOT NULL, `name` VARCHAR(128) NOT NULL, `slice` VARCHAR(64) NOT NULL, "+
		"`world` VARCHAR(128) NOT NULL, `home` VARCHAR(128) NOT NULL DEFAULT '', "+
		"`created` TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (`kind`, `name`)) "+
		"ENGINE=InnoDB DEFAULT CHARSET=utf8mb4")
}

// mark reads the owner marked on an object; marked is false when there is
// no mark (or no table of marks yet).
func (s *session) mark(ctx context.Context, kind, name string) (o adapters.Owner, marked bool, err error) {
	err = s.c.QueryRowContext(ctx, "SELECT `world`, `home` FROM "+ident(markSchema)+".`marks` WHERE `kind` = ? AND `name` = ?",
		kind, name).Scan(&o.World, &o.Home)
	switch {
	case errors.Is(err, sql.ErrNoRows), errNumber(err) == errNoSuchTable, errNumber(err) == errBadDB:
		return adapters.Owner{}, false, nil
	case err != nil:
		return adapters.Owner{}, false, fmt.Errorf("mysql: read the mark of %s %s: %w", kind, name, err)
	}
	return o, true, nil
}

func (s *session) exists(ctx context.Context, kind, name string) (bool, error) {
	q := "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?"
	if kind == "user" {
		// A user of that name at any host is someone's: never ours to take.
		q = "SELECT COUNT(*) FROM mysql.user WHERE `User` = ?"
	}
	var n int
	if err := s.c.QueryRowContext(ctx, q, name).Scan(&n); err != nil {
		return false, fmt.Errorf("mysql: look for %s %s: %w", kind, name, err)
	}
	return n > 0, nil
}

// claim makes sure the object is marked as the slice's, writing the mark
// if there is none and nothing of that name exists. inserted reports a
// mark written now (undone if a later step finds the slice taken).
func (s *session) claim(ctx context.Context, kind, name string, sl adapters.Slice) (inserted bool, err error) {
	o, marked, err := s.mark(ctx, kind, name)
	if err != nil {
		return false, err
	}
	if marked {
		if !o.Is(sl.Owner()) {
			return false, fmt.Errorf("mysql %s %s: %w", kind, name, adapters.ErrTaken)
		}
		return false, nil
	}
	there, err := s.exists(ctx, kind, name)
	if err != nil {
		return false, err
	}
	if there {
		return false, fmt.Errorf("mysql %s %s exists and binky did not make it: %w", kind, name, adapters.ErrTaken)
	}
	err = s.insertMark(ctx, kind, name, sl.Name, sl.Owner())
	if errNumber(err) == errDupKey {
		// Another world claimed it between our read and our write.
		return false, fmt.Errorf("mysql %s %s: %w", kind, name, adapters.ErrTaken)
	}
	if err != nil {
		return false, fmt.Errorf("mysql: mark %s %s: %w", kind, name, err)
	}
	return true, nil
}

// insertMark writes a mark naming o as the owner of the object, which
// belongs to slice (what Teardown is called with to drop it).
func (s *session) insertMark(ctx context.Context, kind, name, slice string, o adapters.Owner) error {
	_, err := s.c.ExecContext(ctx, "INSERT INTO "+ident(markSchema)+".`marks` (`kind`, `name`, `slice`, `world`, `home`) VALUES (?, ?, ?, ?, ?)",
		kind, name, slice, o.World, o.Home)
	return err
}

func (s *session) unmark(ctx context.Context, kind, name string) error {
	return s.exec(ctx, "DELETE FROM "+ident(markSchema)+".`marks` WHERE `kind` = ? AND `name` = ?", kind, name)
}

// Provision creates the world's database and user, each marked first, and
// grants the user everything on its database and nothing else.
func (m *MySQL) Provision(ctx context.Context, s adapters.Slice) error {
	c, err := connect(ctx, s.AdminURL)
	if err != nil {
		return err
	}
	defer c.Close()
	return m.provision(ctx, c, s)
}

func (m *MySQL) provision(ctx context.Context, c *session, s adapters.Slice) error {
	db := DBName(s.Name)
	if reserved[db] || s.Name == "" {
		return fmt.Errorf("mysql database %q is not a name a slice may take: %w", db, adapters.ErrTaken)
	}
	pw, err := literal(s.Password)
	if err != nil {
		return err
	}
	if err := c.ensureMarks(ctx); err != nil {
		return err
	}
	user := UserName(s.Name)
	dbNew, err := c.claim(ctx, "database", db, s)
	if err != nil {
		return err
	}
	if _, err := c.claim(ctx, "user", user, s); err != nil {
		if dbNew {
			// The database was claimed a moment ago and never made: the
			// daemon moves to a salted name, and leaves no mark behind.
			_ = c.unmark(ctx, "database", db)
		}
		return err
	}
	if err := adapters.Step(ctx, "mysql.marked"); err != nil {
		return err
	}
	if err := c.exec(ctx, "CREATE DATABASE IF NOT EXISTS "+ident(db)+" CHARACTER SET utf8mb4"); err != nil {
		return fmt.Errorf("provision %s: %w", s.Name, err)
	}
	if err := adapters.Step(ctx, "mysql.database_created"); err != nil {
		return err
	}
	limit, err := c.connectionLimit(ctx, s)
	if err != nil {
		return err
	}
	for _, stmt := range []string{
		"CREATE USER IF NOT EXISTS " + account(user) + " IDENTIFIED BY " + pw,
		// Again for a user that existed: its password is derived, and the
		// secret it is derived from may have been replaced. Unlocked, in
		// case a teardown died after locking it.
		"ALTER USER " + account(user) + " IDENTIFIED BY " + pw + " WITH MAX_USER_CONNECTIONS " + strconv.Itoa(limit) + " ACCOUNT UNLOCK",
		"GRANT ALL PRIVILEGES ON " + grantDB(db) + ".* TO " + account(user),
	} {
		if err := c.exec(ctx, stmt); err != nil {
			return fmt.Errorf("provision %s: %w", s.Name, err)
		}
	}
	return adapters.Step(ctx, "mysql.user_granted")
}

// maxConnections caches each server's max_connections, by admin URL: it
// changes only with a restart (or SET GLOBAL), and a stale value moves a
// world's cap only.
var maxConnections sync.Map

// connectionLimit is how many connections the slice's user may hold at
// once: its options' connection_limit (0: no cap of its own), else a third
// of the server's max_connections (at least 10). A world leaking
// connections, or opening all it can, then runs out of its own, not
// everyone's.
func (c *session) connectionLimit(ctx context.Context, s adapters.Slice) (int, error) {
	if v, ok := s.Config["connection_limit"]; ok {
		n, err := adapters.OptionInt(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("mysql slice %s: options.connection_limit = %v: want a whole number of connections (0 for no cap)", s.Name, v)
		}
		return n, nil
	}
	if mc, ok := maxConnections.Load(s.AdminURL); ok {
		return max(10, mc.(int)/3), nil
	}
	var n int
	if err := c.c.QueryRowContext(ctx, "SELECT @@max_connections").Scan(&n); err != nil {
		return 0, err
	}
	maxConnections.Store(s.AdminURL, n)
	return max(10, n/3), nil
}

// Resolve returns the world's address: its own user, never the admin.
func (m *MySQL) Resolve(ctx context.Context, s adapters.Slice) (adapters.Address, error) {
	cfg, err := Config(s.AdminURL)
	if err != nil {
		return nil, err
	}
	host, port := "127.0.0.1", "3306"
	if cfg.Net == "tcp" {
		host, port, _ = net.SplitHostPort(cfg.Addr)
	}
	user, db := UserName(s.Name), DBName(s.Name)
	u := url.URL{Scheme: "mysql", User: url.UserPassword(user, s.Password), Host: net.JoinHostPort(host, port), Path: "/" + db}
	dsn := driver.NewConfig()
	dsn.User, dsn.Passwd, dsn.Net, dsn.Addr, dsn.DBName = user, s.Password, "tcp", net.JoinHostPort(host, port), db
	if cfg.TLSConfig != "" {
		u.RawQuery = url.Values{"tls": {cfg.TLSConfig}}.Encode()
		dsn.TLSConfig = cfg.TLSConfig
	}
	return adapters.Address{"url": u.String(), "host": host, "port": port, "name": db, "database": db,
		"user": user, "password": s.Password, "dsn": dsn.FormatDSN()}, nil
}

// Teardown kills the slice's connections and drops its database and user,
// each only if marked as s.World's of s.Home. An object of that name that
// binky did not mark, or another's, is left alone (ErrNotOurs).
func (m *MySQL) Teardown(ctx context.Context, s adapters.Slice) error {
	c, err := connect(ctx, s.AdminURL)
	if err != nil {
		return err
	}
	defer c.Close()
	return m.teardown(ctx, c, s)
}

func (m *MySQL) teardown(ctx context.Context, c *session, s adapters.Slice) error {
	user, db := UserName(s.Name), DBName(s.Name)
	if spareOf(db) != "" {
		// A template's spare first, under the lock that making and taking
		// it hold (spare.go): a spare being made meanwhile waits for it,
		// then finds its template gone.
		unlock, err := c.lockSpare(ctx, db)
		if err != nil {
			return err
		}
		defer unlock()
		if err := c.dropSpare(ctx, db, s.Owner()); err != nil {
			return err
		}
	}
	var errs []error
	ours := map[string]bool{}
	for _, obj := range []struct{ kind, name string }{{"database", db}, {"user", user}} {
		o, marked, err := c.mark(ctx, obj.kind, obj.name)
		if err != nil {
			return err
		}
		switch {
		case marked && o.Is(s.Owner()):
			ours[obj.kind] = true
		case marked:
			errs = append(errs, fmt.Errorf("mysql %s %s: %w", obj.kind, obj.name, adapters.ErrNotOurs))
		default:
			if there, err := c.exists(ctx, obj.kind, obj.name); err != nil {
				return err
			} else if there {
				errs = append(errs, fmt.Errorf("mysql %s %s: %w", obj.kind, obj.name, adapters.ErrNotOurs))
			}
		}
	}
	if ours["user"] {
		there, err := c.exists(ctx, "user", user)
		if err != nil {
			return err
		}
		if there {
			// Locked first, so no new session opens between the kills and
			// the drop (DROP USER leaves open sessions running).
			if err := c.exec(ctx, "ALTER USER "+account(user)+" ACCOUNT LOCK"); err != nil {
				return err
			}
			if err := c.killSessions(ctx, user); err != nil {
				return err
			}
			if err := c.exec(ctx, "DROP USER IF EXISTS "+account(user)); err != nil {
				return err
			}
		}
		if err := c.unmark(ctx, "user", user); err != nil {
			return err
		}
		if err := adapters.Step(ctx, "mysql.teardown.user_dropped"); err != nil {
			return err
		}
	}
	if ours["database"] {
		if err := c.dropDatabase(ctx, db); err != nil {
			return fmt.Errorf("drop database %s: %w", db, err)
		}
		if err := c.unmark(ctx, "database", db); err != nil {
			return err
		}
		if err := adapters.Step(ctx, "mysql.teardown.database_dropped"); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// killSessions ends every connection of user.
func (c *session) killSessions(ctx context.Context, user string) error {
	rows, err := c.c.QueryContext(ctx, "SELECT `ID` FROM information_schema.PROCESSLIST WHERE `USER` = ?", user)
	if err != nil {
		return fmt.Errorf("mysql: list the sessions of %s: %w", user, err)
	}
	var ids []uint64
	for rows.Next() {
		var id uint64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := c.c.ExecContext(ctx, fmt.Sprintf("KILL CONNECTION %d", id)); err != nil && errNumber(err) != errNoSuchThread {
			return fmt.Errorf("mysql: end session %d of %s: %w", id, user, err)
		}
	}
	return nil
}

// List returns every database and user binky marked on the server,
// including those a crash left marked but never made, and templates'
// spares (listed under their template's slice, which drops them).
func (m *MySQL) List(ctx context.Context, adminURL string) ([]adapters.Owned, error) {
	c, err := connect(ctx, adminURL)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// A spare's mark of completeness names no object of its own.
	rows, err := c.c.QueryContext(ctx, "SELECT `kind`, `name`, `slice`, `world`, `home` FROM "+ident(markSchema)+".`marks` WHERE `kind` <> ? ORDER BY `slice`, `kind`", spareReady)
	if n := errNumber(err); n == errNoSuchTable || n == errBadDB {
		return nil, nil // binky never marked anything here
	}
	if err != nil {
		return nil, fmt.Errorf("mysql: list marks: %w", err)
	}
	defer rows.Close()
	var out []adapters.Owned
	for rows.Next() {
		var o adapters.Owned
		if err := rows.Scan(&o.Kind, &o.Name, &o.Slice, &o.Owner.World, &o.Owner.Home); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// Exists reports whether a database of that name exists (for golden
// templates).
func (m *MySQL) Exists(ctx context.Context, adminURL, name string) (bool, error) {
	c, err := connect(ctx, adminURL)
	if err != nil {
		return false, err
	}
	defer c.Close()
	return c.exists(ctx, "database", DBName(name))
}

// PrepareTemplate locks a built golden template's user and ends its
// sessions: its password was given to the migrate and seed that built it
// (a branch's code), which could otherwise change what every later world
// starts from. A rebuild provisions it again, which unlocks it. A
// template that a prepared XA transaction still holds rows of is refused
// (xa.go): locking its user does not end that transaction.
func (m *MySQL) PrepareTemplate(ctx context.Context, adminURL, name string) error {
	c, err := connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer c.Close()
	user := UserName(name)
	if err := c.exec(ctx, "ALTER USER IF EXISTS "+account(user)+" ACCOUNT LOCK"); err != nil {
		return fmt.Errorf("template %s: lock its user: %w", name, err)
	}
	if err := c.killSessions(ctx, user); err != nil {
		return err
	}
	if err := c.checkNoPending(ctx, DBName(name)); err != nil {
		return fmt.Errorf("template %s: %w", name, err)
	}
	return nil
}

// Capabilities says MySQL clones server-side and lists its slices.
func (m *MySQL) Capabilities() adapters.Capabilities {
	return adapters.Capabilities{Clone: true, List: true}
}

var (
	_ adapters.Adapter = (*MySQL)(nil)
	_ adapters.Cloner  = (*MySQL)(nil)
	_ adapters.Lister  = (*MySQL)(nil)
)
