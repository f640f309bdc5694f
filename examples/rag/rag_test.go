package rag

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/postgres"
)

func TestEmbeddingRanksSharedVocabularyFirst(t *testing.T) {
	if a, b := Embed("template clone"), Embed("template clone"); Cosine(a, b) < 0.999 {
		t.Fatal("the embedding is not deterministic")
	}
	q := Embed("clone a database from a template")
	pg := Embed("PostgreSQL copies a template database to clone it")
	redis := Embed("keys under a prefix with an ACL user")
	if Cosine(q, pg) <= Cosine(q, redis) {
		t.Errorf("cosine(query, postgres text) %.3f <= cosine(query, redis text) %.3f", Cosine(q, pg), Cosine(q, redis))
	}
}

// worldSlice provisions a Postgres slice as binky does for a worktree, and
// connects to it with the world's own credentials.
func worldSlice(t *testing.T, admin, name string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	p := postgres.New()
	s := adapters.Slice{Name: name, World: name, Home: "rag-test", AdminURL: admin, Password: adapters.Password([]byte("rag-test-secret"), "postgres", name)}
	_ = p.Teardown(ctx, s) // a slice a killed run left
	if err := p.Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Teardown(context.Background(), s); err != nil {
			t.Errorf("teardown %s: %v", name, err)
		}
	})
	addr, err := p.Resolve(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, addr["url"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	if err := Migrate(ctx, c); err != nil {
		t.Fatal(err)
	}
	return c
}

func corpus(t *testing.T, files map[string]string) string {
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Two agents, two worktrees: one re-indexes (TRUNCATE + insert) a new
// corpus; the other's search returns exactly what it returned before.
func TestReindexingOneWorldLeavesTheOthersResultsUnchanged(t *testing.T) {
	admin := os.Getenv("BINKY_TEST_PG")
	if admin == "" {
		t.Skip("BINKY_TEST_PG is unset: make test starts a throwaway Postgres and sets it")
	}
	ctx := context.Background()
	a := worldSlice(t, admin, "rag_agent_a")
	b := worldSlice(t, admin, "rag_agent_b")
	shared := corpus(t, map[string]string{
		"postgres.md": "PostgreSQL clones a database from a template.\n\nA role per world owns its database.",
		"redis.md":    "Redis keeps keys under a prefix.\n\nEviction drops least recently used keys.",
	})
	for _, c := range []*pgx.Conn{a, b} {
		if n, err := Index(ctx, c, shared); err != nil || n != 4 {
			t.Fatalf("index: %d, %v", n, err)
		}
	}
	before, err := Search(ctx, b, "clone a template database", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(before) == 0 || !strings.Contains(before[0].Body, "template") {
		t.Fatalf("agent b's best hit: %+v", before)
	}

	// Agent a re-indexes its worktree's corpus: only a different text.
	other := corpus(t, map[string]string{"kafka.md": "Kafka topics carry a prefix per world, with ACLs on it."})
	if n, err := Index(ctx, a, other); err != nil || n != 1 {
		t.Fatalf("re-index a: %d, %v", n, err)
	}
	if hits, _ := Search(ctx, a, "clone a template database", 3); len(hits) != 1 || hits[0].Doc != "kafka.md" {
		t.Errorf("agent a after re-indexing: %+v", hits)
	}
	after, err := Search(ctx, b, "clone a template database", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("agent b had %d hits, now %d", len(before), len(after))
	}
	for i := range before {
		if before[i] != after[i] {
			t.Errorf("agent b's hit %d changed: %+v -> %+v", i, before[i], after[i])
		}
	}

	// And a cannot reach b's slice with its own credentials.
	var aURL string
	if err := a.QueryRow(ctx, "SELECT current_user").Scan(&aURL); err != nil {
		t.Fatal(err)
	}
	cfg := b.Config().Copy()
	cfg.User = aURL
	cfg.Password = adapters.Password([]byte("rag-test-secret"), "postgres", "rag_agent_a")
	if c, err := pgx.ConnectConfig(ctx, cfg); err == nil {
		c.Close(ctx)
		t.Error("agent a's role opened agent b's database")
	}
}
