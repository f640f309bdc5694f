package adapters

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/git-binky/git-binky/world"
)

// Kind is one row of the adapter table: everything binky knows about an
// adapter built into it, read by check, init, the daemon, status, doctor
// and gc. Adding an adapter is its package, one row here, and its
// constructor in adapters/builtin (a test there fails when the two
// disagree). The table lives here, apart from the constructors, so that the
// light CLI can read it without linking any database driver.
type Kind struct {
	// Name is the canonical name in binky.toml: adapter = "postgres".
	Name string
	// Aliases are protocol-compatible names served by the same code
	// (valkey → redis).
	Aliases []string
	// Slice says what a world gets, for check, status and the README.
	Slice string
	// Fields are the address fields a slice resolves to: ${svc.<field>}
	// and <SVC>_<FIELD> in the environment.
	Fields []string
	// Env are the environment names apps and their tools read for this
	// kind (DATABASE_URL for a SQL database), with the field each carries:
	// migrate and seed see them, and init wires a dependent's variables of
	// those names to the slice.
	Env []EnvName
	// Server is how binky runs the kind's shared server itself when a
	// service gives no admin_url; nil when it cannot.
	Server *Server
	// AdminURL is the form of the kind's admin_url, for messages that ask
	// for one ("kafka://user:password@host:9092?mechanism=SCRAM-SHA-256").
	AdminURL string
	// Images are the compose images the kind replaces, as repository paths
	// without registry or tag ("postgres", "bitnami/postgresql").
	Images []string
	// Enforced says what isolation the server enforces between worlds.
	Enforced string
	// Tested says what this adapter's tests ran against on binky's CI.
	Tested string
	// Caveat, when set, is what check warns of for every service of the
	// kind: a limit of isolation that depends on the server.
	Caveat string
}

// EnvName is an environment variable an app reads for a kind, and the
// slice field that fills it.
type EnvName struct {
	Name  string
	Field string
}

// Server is the managed shared server of a kind.
type Server struct {
	// Binaries are the programs binky needs to run it, looked up with
	// FindServerBinary.
	Binaries []string
	// Install says how to get them: "apt-get install postgresql".
	Install string
	// Clients are the server's own client programs (psql, pg_dump), of
	// its release, when they sit beside Binaries[0] (ClientDir).
	Clients []string
}

// ClientDir is the folder of the server's own client programs when they
// sit beside its first binary and PATH may find others first: Debian
// keeps PostgreSQL's in /usr/lib/postgresql/<v>/bin, where /usr/bin/psql
// is postgresql-common's Perl wrapper (~50-70 ms a call, and it picks the
// newest client, not the server's). "" when there is none.
func (s *Server) ClientDir() string {
	if s == nil || len(s.Binaries) == 0 || len(s.Clients) == 0 {
		return ""
	}
	bin := FindServerBinary(s.Binaries[0])
	if bin == "" {
		return ""
	}
	// A link on PATH (/usr/local/bin/initdb to
	// /usr/lib/postgresql/15/bin/initdb) names the folder it came from.
	if real, err := filepath.EvalSymlinks(bin); err == nil {
		bin = real
	}
	dir := filepath.Dir(bin)
	fi, err := os.Stat(filepath.Join(dir, s.Clients[0]+exeSuffix))
	if err != nil || !fi.Mode().IsRegular() || !executable(fi) {
		return ""
	}
	return dir
}

// Kinds is the adapter table.
var Kinds = []Kind{
	{
		Name: "postgres", Aliases: []string{"postgresql"},
		Slice:  "a database and a login role",
		Fields: []string{"url", "host", "port", "user", "password", "name"},
		Env:    []EnvName{{"DATABASE_URL", "url"}, {"POSTGRES_URL", "url"}, {"PGHOST", "host"}, {"PGPORT", "port"}, {"PGUSER", "user"}, {"PGPASSWORD", "password"}, {"PGDATABASE", "name"}},
		Server: &Server{Binaries: []string{"initdb", "pg_ctl"}, Install: "apt-get install postgresql", Clients: []string{"psql", "pg_dump", "pg_restore"}},
		Images: []string{"postgres", "postgis/postgis", "timescale/timescaledb", "timescale/timescaledb-ha", "bitnami/postgresql",
			"pgvector/pgvector", "supabase/postgres", "ankane/pgvector", "cimg/postgres", "circleci/postgres"},
		Enforced: "a role per world owns its database; CONNECT is revoked from PUBLIC",
		Tested:   "PostgreSQL 15 (Debian)",
	},
	{
		Name: "redis", Aliases: []string{"valkey"},
		Slice:  "a key prefix and an ACL user",
		Fields: []string{"url", "host", "port", "user", "password", "prefix", "isolation"},
		Env:    []EnvName{{"REDIS_URL", "url"}},
		Server: &Server{Binaries: []string{"redis-server"}, Install: "apt-get install redis-server"},
		Images: []string{"redis", "bitnami/redis", "redis/redis-stack", "redis/redis-stack-server", "redislabs/redismod",
			"redislabs/redisearch", "redislabs/rejson", "valkey/valkey", "bitnami/valkey", "eqalpha/keydb", "docker.dragonflydb.io/dragonflydb/dragonfly"},
		Enforced: "an ACL user per world limited to its key and channel prefix (Redis 6+)",
		Tested:   "Redis 7.0 (Debian), scripts and INFO allowed (options.allow) included",
	},
	{
		Name: "s3", Aliases: []string{"minio"},
		Slice:  "a bucket and, on MinIO, a user (key pair) whose policy reaches only that bucket",
		Fields: []string{"url", "host", "port", "bucket", "access_key", "secret_key", "user", "password", "region", "isolation"},
		Env: []EnvName{{"S3_ENDPOINT", "url"}, {"AWS_ENDPOINT_URL", "url"}, {"AWS_ENDPOINT_URL_S3", "url"}, {"S3_BUCKET", "bucket"},
			{"AWS_ACCESS_KEY_ID", "access_key"}, {"AWS_SECRET_ACCESS_KEY", "secret_key"}, {"AWS_REGION", "region"}},
		Server: &Server{Binaries: []string{"minio"}, Install: "GOBIN=$HOME/.local/bin go install github.com/minio/minio@latest (MinIO is AGPL-3.0; binky runs it, never links it)"},
		// localstack is S3 only here: binky gives its worlds buckets and
		// none of its other services.
		Images:   []string{"minio/minio", "bitnami/minio", "quay.io/minio/minio", "localstack/localstack"},
		Enforced: "a MinIO user per world whose policy allows only its bucket, never the bucket's tags (the mark); on a plain S3 endpoint worlds share the options' keys: by convention only",
		Tested:   "MinIO (github.com/minio/minio 2026-02-12 snapshot, go install); plain S3: versitygw v1.8.0",
	},
	{
		Name:   "clickhouse",
		Slice:  "a database, and a user limited to it where the server has SQL users",
		Fields: []string{"url", "host", "port", "user", "password", "name", "database", "isolation"},
		Env: []EnvName{{"CLICKHOUSE_URL", "url"}, {"CLICKHOUSE_HOST", "host"}, {"CLICKHOUSE_PORT", "port"}, {"CLICKHOUSE_USER", "user"},
			{"CLICKHOUSE_PASSWORD", "password"}, {"CLICKHOUSE_DB", "name"}},
		Server:   &Server{Binaries: []string{"clickhouse-server"}, Install: "apt-get install clickhouse-server"},
		Images:   []string{"clickhouse/clickhouse-server", "yandex/clickhouse-server", "clickhouse", "bitnami/clickhouse"},
		Enforced: "a user per world with all rights on its database only (servers with SQL users, ClickHouse 20.5+); none on older servers such as Debian's 18.16",
		Tested:   "ClickHouse 18.16 (Debian): the database path; the per-world user path was not run here",
		Caveat: "on a server without SQL users (ClickHouse before 20.5, such as Debian's 18.16, which the managed default runs) " +
			"every world uses the admin's credentials and can reach every other world's database: isolation is not enforced",
	},
	{
		Name:     "qdrant",
		Slice:    "a collection-name prefix, and a token limited to its collections where the server has jwt_rbac",
		Fields:   []string{"url", "host", "port", "prefix", "collection", "api_key", "isolation"},
		Env:      []EnvName{{"QDRANT_URL", "url"}, {"QDRANT_API_KEY", "api_key"}},
		Images:   []string{"qdrant/qdrant"},
		Enforced: "a JWT per world naming its collections (Qdrant 1.9+ with an API key and jwt_rbac); none otherwise",
		Tested:   "not tested against a real server here (unit tests of the requests it sends only)",
		Caveat:   "isolation needs a Qdrant 1.9+ with service.api_key and service.jwt_rbac = true; without them every world can reach every collection",
	},
	{
		Name: "elasticsearch", Aliases: []string{"opensearch"},
		Slice:    "an index prefix, and a role and user limited to it where security is on",
		Fields:   []string{"url", "host", "port", "user", "password", "prefix", "isolation"},
		Env:      []EnvName{{"ELASTICSEARCH_URL", "url"}, {"OPENSEARCH_URL", "url"}},
		Images:   []string{"elasticsearch", "elasticsearch/elasticsearch", "opensearchproject/opensearch", "bitnami/elasticsearch", "bitnami/opensearch"},
		Enforced: "a role limited to <slice>-* and a user per world, where the security API is on (Elasticsearch security, OpenSearch security plugin); none otherwise",
		Tested:   "not tested against a real server here (unit tests of the requests it sends only)",
		Caveat:   "isolation needs the security API (xpack.security.enabled, or OpenSearch's security plugin); without it every world can reach every index",
	},
	{
		Name:     "rabbitmq",
		Slice:    "a vhost and a user",
		Fields:   []string{"url", "host", "port", "vhost", "user", "password", "management_url"},
		Env:      []EnvName{{"AMQP_URL", "url"}, {"RABBITMQ_URL", "url"}},
		Server:   &Server{Binaries: []string{"rabbitmq-server"}, Install: "apt-get install rabbitmq-server"},
		AdminURL: "amqp://user:password@host:5672?management=15672",
		Images:   []string{"rabbitmq", "bitnami/rabbitmq"},
		Enforced: "a user per world with permissions on its own vhost only and no management tags",
		Tested:   "RabbitMQ 3.10 (Debian)",
	},
	{
		Name: "kafka", Aliases: []string{"redpanda"},
		Slice:  "a topic prefix, a SCRAM user and prefixed ACLs",
		Fields: []string{"url", "brokers", "host", "port", "prefix", "user", "password", "mechanism"},
		Env:    []EnvName{{"KAFKA_BROKERS", "brokers"}, {"KAFKA_BOOTSTRAP_SERVERS", "brokers"}},
		// No Kafka or Redpanda package exists for Debian: no managed server.
		AdminURL: "kafka://user:password@host:9092?mechanism=SCRAM-SHA-256",
		Images: []string{"bitnami/kafka", "confluentinc/cp-kafka", "confluentinc/confluent-local", "apache/kafka", "apache/kafka-native",
			"redpandadata/redpanda", "vectorized/redpanda"},
		Enforced: "prefixed ACLs: a SCRAM user per world may touch only topics, groups and transactional ids under its prefix",
		Tested:   "kfake (franz-go's in-process broker, SASL/SCRAM and ACLs on), not a real Kafka",
	},
	{
		Name: "mysql", Aliases: []string{"mariadb", "percona"},
		Slice:  "a database and a user",
		Fields: []string{"url", "host", "port", "user", "password", "name", "dsn"},
		Env: []EnvName{{"DATABASE_URL", "url"}, {"MYSQL_URL", "url"}, {"MYSQL_HOST", "host"}, {"MYSQL_PORT", "port"},
			{"MYSQL_USER", "user"}, {"MYSQL_PASSWORD", "password"}, {"MYSQL_DATABASE", "name"}, {"MYSQL_DSN", "dsn"}},
		Server: &Server{Binaries: []string{"mariadbd", "mariadb-install-db"}, Install: "apt-get install mariadb-server"},
		Images: []string{"mysql", "mariadb", "percona", "bitnami/mysql", "bitnami/mariadb", "percona/percona-server",
			"mysql/mysql-server"},
		Enforced: "a user per world granted ALL on its database only (no global privilege, no FILE, no GRANT OPTION); marks in a binky schema no world can read",
		Tested:   "MariaDB 10.11 (Debian); MySQL 8 differences handled in code, not run here",
	},
	{
		Name: "mongodb", Aliases: []string{"mongo", "ferretdb"},
		Slice:  "a database and a user (on FerretDB: a PostgreSQL role that owns the database's schema)",
		Fields: []string{"url", "host", "port", "user", "password", "name"},
		Env:    []EnvName{{"MONGO_URL", "url"}, {"MONGODB_URI", "url"}, {"MONGO_URI", "url"}},
		Server: &Server{Binaries: []string{"ferretdb", "initdb", "pg_ctl"},
			Install: "make ferretdb (builds FerretDB v1.24.2 into ~/.cache/git-binky/bin) and apt-get install postgresql"},
		Images: []string{"mongo", "mongodb/mongodb-community-server", "bitnami/mongodb"},
		Enforced: "mongod --auth: a user per world with readWrite on its database only; FerretDB 1.x: a PostgreSQL role per world " +
			"owning its schema (other worlds' database names hidden, their collection names visible)",
		Caveat: "on FerretDB 1.x (the managed default) other worlds' collection and index names are visible through listCollections; their documents are not",
		Tested: "FerretDB v1.24.2 on PostgreSQL 15 (Debian); not against a real mongod",
	},
}

// Lookup finds the table row for a name or alias.
func Lookup(name string) (Kind, bool) {
	for _, k := range Kinds {
		if k.Name == name {
			return k, true
		}
		for _, a := range k.Aliases {
			if a == name {
				return k, true
			}
		}
	}
	return Kind{}, false
}

// Canonical returns the implementation name behind name (valkey → redis);
// a name not in the table is returned as it is.
func Canonical(name string) string {
	if k, ok := Lookup(name); ok {
		return k.Name
	}
	return name
}

// ForImage returns the kind that replaces a compose image, if any. The
// registry host, tag and digest are ignored, as are Docker Hub's "library/"
// paths; an image of another owner whose last path element is an official
// name ("myorg/postgres") is taken for that kind too.
func ForImage(image string) (Kind, bool) {
	repo := ImageRepo(image)
	if repo == "" {
		return Kind{}, false
	}
	for _, k := range Kinds {
		for _, img := range k.Images {
			if img == repo {
				return k, true
			}
		}
	}
	last := repo[strings.LastIndex(repo, "/")+1:]
	for _, k := range Kinds {
		for _, img := range k.Images {
			if !strings.Contains(img, "/") && img == last {
				return k, true
			}
		}
	}
	return Kind{}, false
}

// ImageRepo is an image reference's repository path, lowercased, without
// registry host, tag or digest: "docker.io/library/postgres:16" → "postgres".
func ImageRepo(image string) string {
	s := strings.ToLower(strings.TrimSpace(image))
	if i := strings.Index(s, "@"); i >= 0 {
		s = s[:i]
	}
	if i := strings.LastIndex(s, ":"); i > strings.LastIndex(s, "/") {
		s = s[:i]
	}
	if first, rest, ok := strings.Cut(s, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		s = rest
	}
	for _, p := range []string{"docker/library/", "library/"} {
		s = strings.TrimPrefix(s, p)
	}
	return s
}

// ExternalCommand is the executable an adapter name not built in is driven
// through.
func ExternalCommand(name string) string { return "binky-adapter-" + name }

// Info describes an adapter name for `check` on this machine: a built-in
// kind, whose admin_url may be left out when its server's binaries are
// installed here; or an external binky-adapter-<name> on PATH, which owns
// its configuration.
func Info(name string) world.Adapter {
	if k, ok := Lookup(name); ok {
		a := TableInfo(name)
		a.Managed, a.Caveat = k.Server.Installed(), k.Caveat
		return a
	}
	if _, err := exec.LookPath(ExternalCommand(name)); err == nil {
		return world.Adapter{Known: true, Managed: true}
	}
	return world.Adapter{}
}

// TableInfo describes an adapter name from the table alone, whatever this
// machine has installed and whatever server admin_url will name: what
// `init` checks the file it writes against (so without the caveats, which
// depend on the server).
func TableInfo(name string) world.Adapter {
	k, ok := Lookup(name)
	if !ok {
		return world.Adapter{}
	}
	return world.Adapter{Known: true, Managed: k.Server != nil, Fields: k.Fields, AdminURL: k.AdminURL}
}

// Installed reports whether every binary the server needs is found.
func (s *Server) Installed() bool {
	if s == nil {
		return false
	}
	for _, b := range s.Binaries {
		if FindServerBinary(b) == "" {
			return false
		}
	}
	return true
}

// FindServerBinary finds a server program on PATH or where distributions
// install it off PATH (Debian keeps initdb under /usr/lib/postgresql/<v>/bin,
// mariadbd under /usr/sbin), or BINKY_SERVER_BIN (a folder binky's own
// builds of server programs are kept in, as make test does).
func FindServerBinary(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	var dirs []string
	if d := os.Getenv("BINKY_SERVER_BIN"); d != "" {
		dirs = append(dirs, filepath.SplitList(d)...)
	}
	if d, err := os.UserCacheDir(); err == nil {
		dirs = append(dirs, filepath.Join(d, "git-binky", "bin")) // make servers builds here
	}
	dirs = append(dirs, serverBinDirs()...)
	for _, dir := range dirs {
		matches, _ := filepath.Glob(filepath.Join(dir, name+exeSuffix))
		for i := len(matches) - 1; i >= 0; i-- { // newest version sorts last
			if fi, err := os.Stat(matches[i]); err == nil && fi.Mode().IsRegular() && executable(fi) {
				return matches[i]
			}
		}
	}
	return ""
}
