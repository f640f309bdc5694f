// Package redis is the Redis adapter (valkey is an alias): a key prefix per
// world, a marker key, and, where the server has ACLs (Redis 6 and later), a
// user per world that may run only the commands an application needs, on
// keys and channels under its prefix (an allow-list: a command a newer Redis
// adds is refused until someone allows it here). It is the only importer of
// go-redis.
package redis

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/git-binky/git-binky/adapters"
)

// Redis implements adapters.Adapter and Lister.
type Redis struct{}

// New returns the adapter.
func New() *Redis { return &Redis{} }

// markerPrefix holds one key per slice, outside every world's prefix (so no
// world's user can write it), whose value is binky's mark and a seal.
const markerPrefix = "binky:slice:"

// categories are the data types an application reads and writes. Each of
// these Redis categories holds only commands that name their keys (KEYS,
// SCAN, RANDOMKEY, DBSIZE, FLUSH*, SELECT... are in @keyspace, @admin or
// @dangerous, none of which is granted).
var categories = []string{"+@string", "+@hash", "+@list", "+@set", "+@sortedset", "+@stream",
	"+@bitmap", "+@hyperloglog", "+@geo"}

// commands are the rest of what an application needs, one by one: the
// keyspace commands that act on named keys, transactions, pub/sub on its
// own channels, and what clients send on connect. Left out on purpose:
// KEYS SCAN RANDOMKEY DBSIZE FLUSHDB FLUSHALL SWAPDB SELECT MOVE COPY (COPY
// ... DB n puts keys in a database teardown does not clean) MIGRATE OBJECT
// WAIT RESTORE, EVAL/SCRIPT/FUNCTION, PUBSUB (lists every channel), INFO
// and MEMORY (server-wide statistics), and every CLIENT subcommand but the
// connection's own (CLIENT TRACKING ... BCAST pushes other worlds' key
// names, CLIENT LIST shows their connections). Commands this server does
// not have (client|setinfo before 7.2, expiretime before 7.0) are dropped
// when the user is made.
var commands = []string{
	"del", "unlink", "exists", "type", "touch", "dump", "rename", "renamenx",
	"expire", "pexpire", "expireat", "pexpireat", "expiretime", "pexpiretime", "ttl", "pttl", "persist",
	"multi", "exec", "discard", "watch", "unwatch",
	"subscribe", "unsubscribe", "psubscribe", "punsubscribe", "publish", "ssubscribe", "sunsubscribe", "spublish",
	"ping", "echo", "auth", "hello", "quit", "reset", "readonly", "readwrite", "asking", "command",
	"client|setname", "client|getname", "client|id", "client|info", "client|setinfo", "client|reply",
}

// allowable are what a slice's options.allow may add to its user, for
// client libraries that need them (BullMQ both): "scripts", Lua through
// EVAL and EVALSHA (each redis.call inside is checked against the user's
// keys and channels, as the command itself would be), never SCRIPT FLUSH
// or KILL (other worlds' scripts) or FUNCTION (a namespace every world
// shares); and "info", the server's INFO, which shows server-wide
// figures (its version, memory, clients, the key count of every world
// together) but no key, value or name of another world.
var allowable = map[string][]string{
	"scripts": {"eval", "evalsha", "eval_ro", "evalsha_ro", "script|load", "script|exists"},
	"info":    {"info"},
}

// allowed reads options.allow: a list of allowable's names.
func allowed(s adapters.Slice) ([]string, error) {
	v, ok := s.Config["allow"]
	if !ok {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("redis slice %s: options.allow = %v: want a list, e.g. allow = [\"scripts\", \"info\"]", s.Name, v)
	}
	var cmds []string
	for _, item := range list {
		name, _ := item.(string)
		extra, ok := allowable[name]
		if !ok {
			return nil, fmt.Errorf("redis slice %s: options.allow: %v is not one of \"scripts\" (EVAL, EVALSHA) or \"info\" (INFO)", s.Name, item)
		}
		cmds = append(cmds, extra...)
	}
	return cmds, nil
}

// denied are taken back after the categories, which hold a few that reach
// past the slice: SORT and SORT_RO (BY and GET read keys by pattern; Redis
// 7 refuses that to a user without ~*, Redis 6 does not), PFSELFTEST and
// PFDEBUG (@admin), and, should a server put them there, WAIT COPY MOVE
// SELECT.
var denied = []string{"-sort", "-sort_ro", "-pfselftest", "-pfdebug", "-wait", "-copy", "-move", "-select"}

func client(adminURL string) (*goredis.Client, error) {
	opt, err := goredis.ParseURL(adminURL)
	if err != nil {
		return nil, fmt.Errorf("redis admin_url %s: %w", adapters.Redact(adminURL), adapters.URLError(err))
	}
	if opt.DB != 0 {
		// A world's user may not SELECT: its URL is database 0, where its
		// keys, marker and teardown must all be.
		return nil, fmt.Errorf("redis admin_url %s names database %d: binky carves worlds out of database 0 (a world's user may not SELECT another); drop the /%d", adapters.Redact(adminURL), opt.DB, opt.DB)
	}
	opt.DisableIdentity = true
	opt.Protocol = 2
	return goredis.NewClient(opt), nil
}

// Prefix is the key prefix of a slice.
func Prefix(name string) string { return name + ":" }

// hasACL reports whether the server has ACLs (Redis 6+). Only the server
// not knowing the command means it has none: any other failure (refused,
// maxclients, a timeout, NOPERM) is an error, never a reason to give a
// world the admin's password.
func hasACL(ctx context.Context, c *goredis.Client) (bool, error) {
	err := c.Do(ctx, "ACL", "WHOAMI").Err()
	var re goredis.Error
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &re) && strings.Contains(strings.ToLower(re.Error()), "unknown command"):
		return false, nil
	}
	return false, fmt.Errorf("ask the redis server whether it has ACLs: %w", err)
}

// openUsers lists the enabled users that need no password (ACL LIST's
// "on" and "nopass"): anyone who reaches the server may become one of
// them, with AUTH <user> <anything>, HELLO's AUTH or RESET (which makes a
// connection "default" again), and a world's processes reach the server.
// A stock Redis without requirepass has one: "default", with every right.
// Where there is any, a world's own user keeps nobody out, and binky says
// so (isolation "none") rather than claim it.
func openUsers(ctx context.Context, c *goredis.Client) ([]string, error) {
	lines, err := c.Do(ctx, "ACL", "LIST").StringSlice()
	if err != nil {
		return nil, fmt.Errorf("redis ACL LIST: %w", err)
	}
	var open []string
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != "user" {
			continue
		}
		if slices.Contains(f[2:], "on") && slices.Contains(f[2:], "nopass") {
			open = append(open, f[1])
		}
	}
	return open, nil
}

// reserved is the one slice name whose prefix would hold every marker
// (binky:slice:<name>): a project "binky" with a worktree whose name
// folds to nothing gets it, and is refused.
const reserved = "binky"

// seal is what makes a marker binky's: an HMAC of the slice and its mark
// under the slice's password. The password is derived from the home's
// secret, so only that home can seal a marker; an admin who writes
// binky:slice:<name> by hand (or copies another slice's marker) cannot,
// and binky then never drops or takes over what the marker names. The
// world itself knows the password but cannot write outside its prefix.
func seal(s adapters.Slice, mark string) string {
	m := hmac.New(sha256.New, []byte(s.Password))
	m.Write([]byte("binky-redis-marker\x00" + s.Name + "\x00" + mark))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

const sealSep = " seal="

// markerValue is the value of the slice's marker key.
func markerValue(s adapters.Slice) string {
	mark := adapters.Mark(s.Owner())
	return mark + sealSep + seal(s, mark)
}

// marker is a marker key as read back.
type marker struct {
	owner adapters.Owner
	// sealed: the seal matches s (only checked when a slice is given).
	sealed bool
	// legacy: written before seals (an older binky): no seal at all.
	legacy bool
}

func readMarker(v string, s *adapters.Slice) marker {
	mark, sl, hasSeal := strings.Cut(v, sealSep)
	o, ok := adapters.ParseMark(mark)
	if !ok {
		o = adapters.Owner{World: strings.TrimSpace(v)} // the oldest form: the bare world id
	}
	m := marker{owner: o, legacy: !hasSeal}
	if hasSeal && s != nil {
		m.sealed = hmac.Equal([]byte(sl), []byte(seal(*s, mark)))
	}
	return m
}

// ours reports whether a marker proves the slice is s's: its mark names
// s's world and home and its seal is s's.
func (m marker) ours(s adapters.Slice) bool { return m.sealed && m.owner.Is(s.Owner()) }

// userPasswordIs reports whether the ACL user name exists with password pw
// among its passwords (Redis keeps their SHA-256): how a marker written by
// an older binky, which had no seal, is proven to be this home's, since its
// password was derived from this home's secret.
func userPasswordIs(ctx context.Context, c *goredis.Client, name, pw string) (exists, match bool, err error) {
	v, err := c.Do(ctx, "ACL", "GETUSER", name).Result()
	if errors.Is(err, goredis.Nil) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	sum := sha256.Sum256([]byte(pw))
	want := hex.EncodeToString(sum[:])
	var fields []any
	switch t := v.(type) {
	case []any:
		fields = t
	case map[any]any:
		for k, x := range t {
			fields = append(fields, k, x)
		}
	}
	for i := 0; i+1 < len(fields); i += 2 {
		if k, _ := fields[i].(string); k == "passwords" {
			list, _ := fields[i+1].([]any)
			for _, p := range list {
				if p == want {
					return true, true, nil
				}
			}
		}
	}
	return true, false, nil
}

// anyKey reports whether a key exists under prefix (SCAN: a new slice's
// check walks the keyspace once).
func anyKey(ctx context.Context, c *goredis.Client, prefix string) (bool, error) {
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			return false, err
		}
		if len(keys) > 0 {
			return true, nil
		}
		if next == 0 {
			return false, nil
		}
		cursor = next
	}
}

// Provision marks the prefix as the world's and, with ACLs, creates its user.
// A name whose marker is not this world's, or that has an ACL user or any
// key without a marker, is refused with ErrTaken: binky never takes over
// what it did not make.
func (r *Redis) Provision(ctx context.Context, s adapters.Slice) error {
	c, err := client(s.AdminURL)
	if err != nil {
		return err
	}
	defer c.Close()
	if s.Name == reserved {
		return fmt.Errorf("redis prefix %s would hold binky's markers: %w", Prefix(s.Name), adapters.ErrTaken)
	}
	acl, err := hasACL(ctx, c)
	if err != nil {
		return fmt.Errorf("redis at %s: %w", adapters.Redact(s.AdminURL), err)
	}
	key := markerPrefix + s.Name
	v, err := c.Get(ctx, key).Result()
	switch {
	case errors.Is(err, goredis.Nil):
		// A user with this slice's password is this home's own: only its
		// secret derives that password for this name. Its marker was lost
		// (a Redis killed before it saved its keys keeps its users in the
		// ACL file, which is saved at once), so it is marked again, with
		// whatever keys its prefix kept.
		mine := false
		if acl {
			exists, match, err := userPasswordIs(ctx, c, s.Name, s.Password)
			if err != nil {
				return fmt.Errorf("redis at %s: %w", adapters.Redact(s.AdminURL), err)
			}
			if exists && !match {
				return fmt.Errorf("redis user %s exists and binky did not make it: %w", s.Name, adapters.ErrTaken)
			}
			mine = exists
		}
		if found, err := anyKey(ctx, c, Prefix(s.Name)); err != nil {
			return fmt.Errorf("redis at %s: %w", adapters.Redact(s.AdminURL), err)
		} else if found && !mine {
			return fmt.Errorf("redis prefix %s holds keys binky did not make: %w", Prefix(s.Name), adapters.ErrTaken)
		}
		ok, err := c.SetNX(ctx, key, markerValue(s), 0).Result()
		if err != nil {
			return fmt.Errorf("redis at %s: %w", adapters.Redact(s.AdminURL), err)
		}
		if !ok {
			return fmt.Errorf("redis prefix %s: marked by another at the same time: %w", Prefix(s.Name), adapters.ErrTaken)
		}
	case err != nil:
		return fmt.Errorf("redis at %s: %w", adapters.Redact(s.AdminURL), err)
	default:
		m := readMarker(v, &s)
		switch {
		case m.ours(s):
		case m.legacy && m.owner.World == s.World && (m.owner.Home == "" || m.owner.Home == s.Home):
			// An older binky's marker for this world: it is this home's
			// only if the user it made has this home's derived password
			// (or, without ACLs, there is no user to prove or take).
			if acl {
				if exists, match, err := userPasswordIs(ctx, c, s.Name, s.Password); err != nil {
					return err
				} else if exists && !match {
					return fmt.Errorf("redis user %s: %w", s.Name, adapters.ErrTaken)
				}
			}
			if err := c.Set(ctx, key, markerValue(s), 0).Err(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("redis prefix %s: %w", Prefix(s.Name), adapters.ErrTaken)
		}
	}
	if err := adapters.Step(ctx, "redis.marked"); err != nil {
		return err
	}
	if !acl {
		return nil // an old server: the prefix is a convention, not enforced
	}
	rules, err := userRules(ctx, c, s)
	if err != nil {
		return err
	}
	if err := c.ACLSetUser(ctx, s.Name, rules...).Err(); err != nil {
		return fmt.Errorf("create redis user %s: %w", s.Name, err)
	}
	return saveACL(ctx, c)
}

// saveACL writes the server's users to its ACL file when the file is the
// one binky's managed Redis keeps (ACLFile): a restart then keeps
// the worlds' users. Another server's ACL file is its administrator's,
// and a server with none keeps users in memory only.
func saveACL(ctx context.Context, c *goredis.Client) error {
	v, err := c.ConfigGet(ctx, "aclfile").Result()
	if err != nil || filepath.Base(v["aclfile"]) != ACLFile {
		return nil
	}
	if err := c.Do(ctx, "ACL", "SAVE").Err(); err != nil {
		return fmt.Errorf("save the redis users to %s: %w", v["aclfile"], err)
	}
	return nil
}

// ACLFile is the name of the ACL file of binky's managed Redis: users are
// saved to a server's ACL file only when it is this one (an
// administrator's own file is theirs to save).
const ACLFile = "binky-users.acl"

// userRules is the world's ACL: nothing (-@all), then the allow-list, with
// the commands this server lacks left out (ACL SETUSER refuses an unknown
// name).
func userRules(ctx context.Context, c *goredis.Client, s adapters.Slice) ([]string, error) {
	p := Prefix(s.Name)
	rules := []string{"reset", "on", ">" + s.Password, "~" + p + "*", "&" + p + "*", "-@all"}
	rules = append(rules, categories...)
	extra, err := allowed(s)
	if err != nil {
		return nil, err
	}
	cmds := append(slices.Clone(commands), extra...)
	args := []any{"COMMAND", "INFO"}
	for _, cmd := range cmds {
		args = append(args, cmd)
	}
	info, err := c.Do(ctx, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("redis COMMAND INFO: %w", err)
	}
	for i, cmd := range cmds {
		if i < len(info) && info[i] != nil {
			rules = append(rules, "+"+cmd)
		}
	}
	return append(rules, denied...), nil
}

// Resolve returns the world's URL (its own user where there are ACLs) and
// prefix.
func (r *Redis) Resolve(ctx context.Context, s adapters.Slice) (adapters.Address, error) {
	admin, err := adapters.ParseURL(s.AdminURL)
	if err != nil {
		return nil, fmt.Errorf("redis admin_url: %w", err)
	}
	host, port := admin.Hostname(), admin.Port()
	if port == "" {
		port = "6379"
	}
	c, err := client(s.AdminURL)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	u := url.URL{Scheme: admin.Scheme, Host: net.JoinHostPort(host, port), Path: "/0"}
	addr := adapters.Address{"host": host, "port": port, "prefix": Prefix(s.Name), "name": s.Name}
	acl, err := hasACL(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("redis at %s: %w", adapters.Redact(s.AdminURL), err)
	}
	if acl {
		u.User = url.UserPassword(s.Name, s.Password)
		addr["user"], addr["password"] = s.Name, s.Password
		// The world still gets its own user: on a server whose open
		// user is closed later, its next up is isolated again.
		open, err := openUsers(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("redis at %s: %w", adapters.Redact(s.AdminURL), err)
		}
		if len(open) > 0 {
			addr["isolation"] = adapters.IsolationNone
		}
	} else {
		// No ACLs (before Redis 6): the server has one password, every
		// world's; the prefix is a convention, which status says.
		u.User = admin.User
		addr["isolation"] = adapters.IsolationNone
	}
	addr["url"] = u.String()
	return addr, nil
}

// Teardown deletes the world's user, disconnects it, and deletes every key
// under its prefix, only if the marker is sealed as this world's of this
// home. The marker goes last, so a teardown cut off anywhere is finished by
// the next one (or by gc).
func (r *Redis) Teardown(ctx context.Context, s adapters.Slice) error {
	c, err := client(s.AdminURL)
	if err != nil {
		return err
	}
	defer c.Close()
	if s.Name == reserved {
		return fmt.Errorf("redis prefix %s holds binky's markers: %w", Prefix(s.Name), adapters.ErrNotOurs)
	}
	key := markerPrefix + s.Name
	acl, err := hasACL(ctx, c)
	if err != nil {
		return err
	}
	v, err := c.Get(ctx, key).Result()
	switch {
	case errors.Is(err, goredis.Nil):
		// Without its marker (lost with the keys a killed Redis had not
		// saved), a user with this slice's password is still this home's.
		if !acl {
			return fmt.Errorf("redis prefix %s: no marker: %w", Prefix(s.Name), adapters.ErrNotOurs)
		}
		if _, match, err := userPasswordIs(ctx, c, s.Name, s.Password); err != nil {
			return err
		} else if !match {
			return fmt.Errorf("redis prefix %s: no marker, and no user of this home: %w", Prefix(s.Name), adapters.ErrNotOurs)
		}
	case err != nil:
		return err
	case !readMarker(v, &s).ours(s):
		return fmt.Errorf("redis prefix %s: %w", Prefix(s.Name), adapters.ErrNotOurs)
	}
	if acl {
		if err := c.ACLDelUser(ctx, s.Name).Err(); err != nil {
			return err
		}
		if err := saveACL(ctx, c); err != nil {
			return err
		}
		_ = c.Do(ctx, "CLIENT", "KILL", "USER", s.Name).Err() // none connected is fine
	}
	if err := adapters.Step(ctx, "redis.teardown.user_dropped"); err != nil {
		return err
	}
	// Slice names are [a-z0-9_], so the prefix holds no glob characters.
	iter := c.Scan(ctx, 0, Prefix(s.Name)+"*", 500).Iterator()
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := c.Unlink(ctx, batch...).Err()
		batch = batch[:0]
		return err
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if err := adapters.Step(ctx, "redis.teardown.keys_deleted"); err != nil {
		return err
	}
	return c.Del(ctx, key).Err()
}

// List returns the slices binky marked on the server. A marker without a
// seal (an older binky's, or one written by hand) is listed with no home:
// gc reports it and never drops it.
func (r *Redis) List(ctx context.Context, adminURL string) ([]adapters.Owned, error) {
	c, err := client(adminURL)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []adapters.Owned
	marked := map[string]bool{}
	iter := c.Scan(ctx, 0, markerPrefix+"*", 500).Iterator()
	for iter.Next(ctx) {
		v, err := c.Get(ctx, iter.Val()).Result()
		if err != nil {
			continue
		}
		name := strings.TrimPrefix(iter.Val(), markerPrefix)
		marked[name] = true
		m := readMarker(v, nil)
		if m.legacy {
			m.owner.Home = ""
		}
		out = append(out, adapters.Owned{Slice: name, Kind: "prefix", Name: Prefix(name), Owner: m.owner})
		// The user is the slice's second object; it goes with the prefix.
		if exists, _, err := userPasswordIs(ctx, c, name, ""); err == nil && exists {
			out = append(out, adapters.Owned{Slice: name, Kind: "user", Name: name, Owner: m.owner})
		}
	}
	if err := iter.Err(); err != nil {
		return out, err
	}
	// Users with no marker, named as slices are: a slice's whose marker a
	// killed server lost, or anyone's. gc asks HasCredential.
	if acl, err := hasACL(ctx, c); err != nil || !acl {
		return out, nil
	}
	users, err := c.Do(ctx, "ACL", "USERS").StringSlice()
	if err != nil {
		return out, fmt.Errorf("redis ACL USERS: %w", err)
	}
	for _, u := range users {
		if !marked[u] && u != "default" && u != reserved && sliceNamed(u) {
			out = append(out, adapters.Owned{Slice: u, Kind: "user", Name: u, Unmarked: true})
		}
	}
	return out, nil
}

// sliceNamed reports whether name could be a slice's: [a-z0-9_], as
// adapters.SliceName makes them.
func sliceNamed(name string) bool {
	if name == "" || len(name) > 63 {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// HasCredential reports whether the ACL user s.Name has s.Password: the
// slice's user even with its marker gone (gc).
func (r *Redis) HasCredential(ctx context.Context, s adapters.Slice) (bool, error) {
	c, err := client(s.AdminURL)
	if err != nil {
		return false, err
	}
	defer c.Close()
	_, match, err := userPasswordIs(ctx, c, s.Name, s.Password)
	return match, err
}

// Capabilities: no server-side clone; lists its slices.
func (r *Redis) Capabilities() adapters.Capabilities { return adapters.Capabilities{List: true} }

var (
	_ adapters.Adapter = (*Redis)(nil)
	_ adapters.Lister  = (*Redis)(nil)
)
