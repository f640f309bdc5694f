package adapters

import (
	"slices"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/world"
)

// binky.toml's structural check finds two services writing one variable
// knowing only the fields every slice has: every kind must have them.
func TestEveryKindHasTheFieldsEverySliceHas(t *testing.T) {
	for _, k := range Kinds {
		for _, f := range world.EverySliceHas() {
			if !slices.Contains(k.Fields, f) {
				t.Errorf("%s has no field %q", k.Name, f)
			}
		}
	}
}

func TestForImage(t *testing.T) {
	for _, tc := range []struct{ image, kind string }{
		{"postgres:16-alpine", "postgres"},
		{"docker.io/library/postgres@sha256:abcd", "postgres"},
		{"public.ecr.aws/docker/library/postgres:15", "postgres"},
		{"bitnami/postgresql:latest", "postgres"},
		{"pgvector/pgvector:pg16", "postgres"},
		{"ghcr.io/someorg/postgres:1", "postgres"},
		{"localhost:5000/redis", "redis"},
		{"valkey/valkey:8", "redis"},
		{"redis/redis-stack:latest", "redis"},
		{"rabbitmq:3-management", "rabbitmq"},
		{"bitnami/rabbitmq:3.13", "rabbitmq"},
		{"confluentinc/cp-kafka:7.6.0", "kafka"},
		{"docker.redpanda.com/redpandadata/redpanda:v24.1.1", "kafka"},
		{"mysql:8.0", "mysql"},
		{"mariadb:10.11", "mysql"},
		{"bitnami/mariadb:latest", "mysql"},
		{"percona/percona-server:8.0", "mysql"},
		{"container-registry.oracle.com/mysql/mysql-server:8.0", "mysql"},
		{"nginx:1.25", ""},
		{"", ""},
		{"myorg/postgres-exporter", ""},
		{"clickhouse/clickhouse-server:24.3", "clickhouse"},
		{"yandex/clickhouse-server:20.3", "clickhouse"},
		{"qdrant/qdrant:v1.9.0", "qdrant"},
		{"docker.elastic.co/elasticsearch/elasticsearch:8.13.0", "elasticsearch"},
		{"elasticsearch:8.13.0", "elasticsearch"},
		{"bitnami/elasticsearch", "elasticsearch"},
		{"opensearchproject/opensearch:2", "elasticsearch"},
		{"opensearchproject/opensearch-dashboards:2", ""},
		{"docker.elastic.co/kibana/kibana:8.13.0", ""},
	} {
		k, ok := ForImage(tc.image)
		if got := map[bool]string{true: k.Name}[ok]; got != tc.kind {
			t.Errorf("ForImage(%q) = %q, want %q", tc.image, got, tc.kind)
		}
	}
}

func TestMarksRoundTripAndReadTheOldForm(t *testing.T) {
	o := Owner{World: "d89b0c1e2f3a4b5c", Home: "0123abcd"}
	got, ok := ParseMark(Mark(o))
	if !ok || !got.Is(o) {
		t.Fatalf("ParseMark(Mark(%v)) = %v, %v", o, got, ok)
	}
	old, ok := ParseMark("binky:world=d89b0c1e2f3a4b5c")
	if !ok || old.World != "d89b0c1e2f3a4b5c" || !old.Legacy() {
		t.Errorf("old mark read as %v, %v", old, ok)
	}
	for _, s := range []string{"", "hello", "binky:world=", "binky:world=;home=x"} {
		if o, ok := ParseMark(s); ok {
			t.Errorf("ParseMark(%q) = %v, want not a mark", s, o)
		}
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{"valkey": "redis", "postgresql": "postgres", "mariadb": "mysql", "percona": "mysql", "filestore": "filestore", "opensearch": "elasticsearch"} {
		if got := Canonical(in); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
}

// Messages and logs show where a server is, never how to log in to it.
func TestRedactHidesEveryCredentialAURLCarries(t *testing.T) {
	for raw, want := range map[string]string{
		"postgres://binky:s3cret@127.0.0.1:5432/postgres?sslmode=disable":                               "postgres://binky:xxxxx@127.0.0.1:5432/postgres?sslmode=disable",
		"qdrant://127.0.0.1:6333?api_key=s3cret":                                                        "qdrant://127.0.0.1:6333?api_key=xxxxx",
		"mongodb://root:s3cret@127.0.0.1:27017/?authSource=admin&postgres=postgres://u:s3cret@h:5432/d": "mongodb://root:xxxxx@127.0.0.1:27017/?authSource=admin&postgres=postgres%3A%2F%2Fu%3Axxxxx%40h%3A5432%2Fd",
		"http://127.0.0.1:9200?token=s3cret&x=1":                                                        "http://127.0.0.1:9200?token=xxxxx&x=1",
		"kafka://u:s3cret@h:9092?mechanism=SCRAM-SHA-256":                                               "kafka://u:xxxxx@h:9092?mechanism=SCRAM-SHA-256",
		"%zz://s3cret": "(unparseable URL)",
	} {
		got := Redact(raw)
		if strings.Contains(got, "s3cret") || got != want {
			t.Errorf("Redact(%q) = %q, want %q", raw, got, want)
		}
	}
}
