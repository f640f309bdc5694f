// Package builtin maps the adapter table's names (adapters.Kinds) to the
// code that drives them: a constructor per built-in kind and, for any other
// name, the external binky-adapter-<name> on PATH. It is an explicit table,
// not init() registration; a test fails when a row of adapters.Kinds has no
// constructor here, or a constructor no row.
package builtin

import (
	"fmt"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/clickhouse"
	"github.com/git-binky/git-binky/adapters/elasticsearch"
	"github.com/git-binky/git-binky/adapters/external"
	"github.com/git-binky/git-binky/adapters/kafka"
	"github.com/git-binky/git-binky/adapters/mongodb"
	"github.com/git-binky/git-binky/adapters/mysql"
	"github.com/git-binky/git-binky/adapters/postgres"
	"github.com/git-binky/git-binky/adapters/qdrant"
	"github.com/git-binky/git-binky/adapters/rabbitmq"
	"github.com/git-binky/git-binky/adapters/redis"
	"github.com/git-binky/git-binky/adapters/s3"
)

// constructors builds the adapter of each built-in kind, by canonical name.
var constructors = map[string]func() adapters.Adapter{
	"postgres":      func() adapters.Adapter { return postgres.New() },
	"redis":         func() adapters.Adapter { return redis.New() },
	"s3":            func() adapters.Adapter { return s3.New() },
	"clickhouse":    func() adapters.Adapter { return clickhouse.New() },
	"qdrant":        func() adapters.Adapter { return qdrant.New() },
	"elasticsearch": func() adapters.Adapter { return elasticsearch.New() },
	"rabbitmq":      func() adapters.Adapter { return rabbitmq.New() },
	"kafka":         func() adapters.Adapter { return kafka.New() },
	"mysql":         func() adapters.Adapter { return mysql.New() },
	"mongodb":       func() adapters.Adapter { return mongodb.New() },
}

// Lookup returns the adapter for a name from binky.toml: built in, or an
// external binky-adapter-<name>.
func Lookup(name string) (adapters.Adapter, error) {
	k, ok := adapters.Lookup(name)
	if !ok {
		return external.Find(name)
	}
	c, ok := constructors[k.Name]
	if !ok {
		return nil, fmt.Errorf("adapter %q is in the table but not built into this binary (a bug: add it to adapters/builtin)", name)
	}
	return c(), nil
}

// Managed reports whether binky runs a shared server for the kind itself
// when a service gives no admin_url, and the kind's canonical name.
func Managed(name string) (kind string, ok bool) {
	k, found := adapters.Lookup(name)
	if !found || k.Server == nil {
		return "", false
	}
	return k.Name, true
}

// External reports whether name is driven by a binky-adapter-<name>.
func External(name string) bool {
	_, ok := adapters.Lookup(name)
	return !ok
}
