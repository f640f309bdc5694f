package adapters

import "testing"

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
		{"mysql:8.0", "mysql"},
		{"mariadb:10.11", "mysql"},
		{"bitnami/mariadb:latest", "mysql"},
		{"percona/percona-server:8.0", "mysql"},
		{"container-registry.oracle.com/mysql/mysql-server:8.0", "mysql"},
		{"nginx:1.25", ""},
		{"", ""},
		{"myorg/postgres-exporter", ""},
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
	for in, want := range map[string]string{"valkey": "redis", "postgresql": "postgres", "mariadb": "mysql", "percona": "mysql", "filestore": "filestore"} {
		if got := Canonical(in); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
}
