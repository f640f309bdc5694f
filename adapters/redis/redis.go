// Package redis is the Redis adapter (valkey is an alias): a key prefix per
// world, a marker key, and, where the server has ACLs (Redis 6 and later), a
// user per world that can touch only keys and channels under its prefix and
// none of the commands that ignore key patterns. It is the only importer of
// go-redis.
package redis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/git-binky/git-binky/adapters"
)

// Redis implements adapters.Adapter and Lister.
type Redis struct{}

// New returns the adapter.
func New() *Redis { return &Redis{} }

// markerPrefix holds one key per slice, outside every world's prefix, whose
// value is the world that owns it.
const markerPrefix = "binky:slice:"

// denied are the commands a world's user may not run: they read or change
// keys regardless of the prefix (KEYS, SCAN, RANDOMKEY, FLUSHDB, ...), or
// the server itself.
var denied = []string{"-@dangerous", "-@admin", "-keys", "-scan", "-randomkey", "-flushdb", "-flushall",
	"-swapdb", "-select", "-move", "-dbsize", "-migrate", "-object", "-wait", "-script", "-eval", "-evalsha",
	"-eval_ro", "-evalsha_ro", "-fcall", "-fcall_ro", "-function", "-pubsub"}

// denied6 is denied for servers that lack the Redis 7 commands above.
var denied6 = []string{"-@dangerous", "-@admin", "-keys", "-scan", "-randomkey", "-flushdb", "-flushall",
	"-swapdb", "-select", "-move", "-dbsize", "-migrate", "-object", "-wait", "-script", "-eval", "-evalsha", "-pubsub"}

func client(adminURL string) (*goredis.Client, error) {
	opt, err := goredis.ParseURL(adminURL)
	if err != nil {
		return nil, fmt.Errorf("redis admin_url %s: %w", adapters.Redact(adminURL), err)
	}
	opt.DisableIdentity = true
	opt.Protocol = 2
	return goredis.NewClient(opt), nil
}

// Prefix is the key prefix of a slice.
func Prefix(name string) string { return name + ":" }

func hasACL(ctx context.Context, c *goredis.Client) bool {
	return c.Do(ctx, "ACL", "WHOAMI").Err() == nil
}

// Provision marks the prefix as the world's and, with ACLs, creates its user.
func (r *Redis) Provision(ctx context.Context, s adapters.Slice) error {
	c, err := client(s.AdminURL)
	if err != nil {
		return err
	}
	defer c.Close()
	marker := markerPrefix + s.Name
	ok, err := c.SetNX(ctx, marker, adapters.Mark(s.Owner()), 0).Result()
	if err != nil {
		return fmt.Errorf("redis at %s: %w", adapters.Redact(s.AdminURL), err)
	}
	if !ok {
		mark, err := c.Get(ctx, marker).Result()
		if err != nil {
			return err
		}
		if !ownerOf(mark).Is(s.Owner()) {
			return fmt.Errorf("redis prefix %s: %w", Prefix(s.Name), adapters.ErrTaken)
		}
	}
	if !hasACL(ctx, c) {
		return nil // an old server: the prefix is a convention, not enforced
	}
	base := []string{"reset", "on", ">" + s.Password, "~" + Prefix(s.Name) + "*", "&" + Prefix(s.Name) + "*", "+@all"}
	err = c.ACLSetUser(ctx, s.Name, append(base, denied...)...).Err()
	if err != nil && strings.Contains(strings.ToLower(err.Error()), "unknown command") {
		// A server older than some of the commands named: deny the ones
		// Redis 6.0 has; the categories cover the rest.
		err = c.ACLSetUser(ctx, s.Name, append(base, denied6...)...).Err()
	}
	if err != nil {
		return fmt.Errorf("create redis user %s: %w", s.Name, err)
	}
	return nil
}

// Resolve returns the world's URL (its own user where there are ACLs) and
// prefix.
func (r *Redis) Resolve(ctx context.Context, s adapters.Slice) (adapters.Address, error) {
	admin, err := url.Parse(s.AdminURL)
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
	if hasACL(ctx, c) {
		u.User = url.UserPassword(s.Name, s.Password)
		addr["user"], addr["password"] = s.Name, s.Password
	} else if admin.User != nil {
		u.User = admin.User // no ACLs: the server has one password
	}
	addr["url"] = u.String()
	return addr, nil
}

// Teardown deletes the world's user, disconnects it, and deletes every key
// under its prefix, only if the marker says the prefix is the world's.
func (r *Redis) Teardown(ctx context.Context, s adapters.Slice) error {
	c, err := client(s.AdminURL)
	if err != nil {
		return err
	}
	defer c.Close()
	marker := markerPrefix + s.Name
	mark, err := c.Get(ctx, marker).Result()
	if errors.Is(err, goredis.Nil) {
		return fmt.Errorf("redis prefix %s: %w", Prefix(s.Name), adapters.ErrNotOurs)
	}
	if err != nil {
		return err
	}
	if !ownerOf(mark).Is(s.Owner()) {
		return fmt.Errorf("redis prefix %s: %w", Prefix(s.Name), adapters.ErrNotOurs)
	}
	if hasACL(ctx, c) {
		if err := c.ACLDelUser(ctx, s.Name).Err(); err != nil {
			return err
		}
		_ = c.Do(ctx, "CLIENT", "KILL", "USER", s.Name).Err() // none connected is fine
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
	return c.Del(ctx, marker).Err()
}

// ownerOf reads a marker key's value: a mark, or (as binky wrote it
// before homes) the bare world id.
func ownerOf(v string) adapters.Owner {
	if o, ok := adapters.ParseMark(v); ok {
		return o
	}
	return adapters.Owner{World: v}
}

// List returns the slices binky marked on the server.
func (r *Redis) List(ctx context.Context, adminURL string) ([]adapters.Owned, error) {
	c, err := client(adminURL)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var out []adapters.Owned
	iter := c.Scan(ctx, 0, markerPrefix+"*", 500).Iterator()
	for iter.Next(ctx) {
		v, err := c.Get(ctx, iter.Val()).Result()
		if err == nil {
			name := strings.TrimPrefix(iter.Val(), markerPrefix)
			out = append(out, adapters.Owned{Slice: name, Kind: "prefix", Name: Prefix(name), Owner: ownerOf(v)})
		}
	}
	return out, iter.Err()
}

// Capabilities: no server-side clone; lists its slices.
func (r *Redis) Capabilities() adapters.Capabilities { return adapters.Capabilities{List: true} }

var (
	_ adapters.Adapter = (*Redis)(nil)
	_ adapters.Lister  = (*Redis)(nil)
)
