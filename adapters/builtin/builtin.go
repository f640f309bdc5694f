// Package builtin is the table of adapters binky can drive: the ones
// compiled in (postgres, redis and their aliases) and, for any other name,
// the external binky-adapter-<name> on PATH. It is an explicit table, not
// init() registration.
package builtin

import (
	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/external"
	"github.com/git-binky/git-binky/adapters/managed"
	"github.com/git-binky/git-binky/adapters/postgres"
	"github.com/git-binky/git-binky/adapters/redis"
)

// Lookup returns the adapter for a name from binky.toml.
func Lookup(name string) (adapters.Adapter, error) {
	switch adapters.Canonical(name) {
	case "postgres":
		return postgres.New(), nil
	case "redis":
		return redis.New(), nil
	}
	return external.Find(name)
}

// ManagedKind is the managed server that can stand in for a missing
// admin_url, if binky runs one for this adapter.
func ManagedKind(name string) (string, bool) {
	switch adapters.Canonical(name) {
	case "postgres":
		return managed.Postgres, true
	case "redis":
		return managed.Redis, true
	}
	return "", false
}

// External reports whether name is driven by a binky-adapter-<name>.
func External(name string) bool {
	switch adapters.Canonical(name) {
	case "postgres", "redis":
		return false
	}
	return true
}
