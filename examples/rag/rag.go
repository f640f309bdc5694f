// Package rag is the vector search of examples/rag: each worktree indexes
// its own corpus into its own Postgres slice, so that one agent
// re-indexing (TRUNCATE, then insert) never changes what another agent's
// searches return. The embedding is computed locally and needs no model:
// hashed character trigrams folded into a fixed-size float vector, which
// is deterministic and good enough to rank texts by shared vocabulary.
// Similarity is cosine, computed in Go over the world's rows.
package rag

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"
)

// Dims is the embedding's size.
const Dims = 256

// Embed returns text's embedding: every character trigram of every word
// (padded with spaces, lowercased) hashed into one of Dims buckets with a
// hashed sign, then scaled to unit length, so that a dot product is the
// cosine similarity.
func Embed(text string) []float64 {
	v := make([]float64, Dims)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for _, w := range words {
		rs := []rune(" " + w + " ")
		for i := 0; i+3 <= len(rs); i++ {
			h := fnv.New32a()
			h.Write([]byte(string(rs[i : i+3])))
			sum := h.Sum32()
			sign := 1.0
			if sum&(1<<31) != 0 {
				sign = -1
			}
			v[sum%Dims] += sign
		}
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	if norm == 0 {
		return v
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] /= norm
	}
	return v
}

// Cosine is the cosine similarity of two unit vectors.
func Cosine(a, b []float64) float64 {
	var s float64
	for i := range a {
		if i < len(b) {
			s += a[i] * b[i]
		}
	}
	return s
}

// Migrate creates the chunks table if it is missing.
func Migrate(ctx context.Context, c *pgx.Conn) error {
	_, err := c.Exec(ctx, `CREATE TABLE IF NOT EXISTS chunks (
		id        bigserial PRIMARY KEY,
		doc       text NOT NULL,
		body      text NOT NULL,
		embedding float8[] NOT NULL)`)
	return err
}

// Index replaces the world's corpus with every paragraph of the *.txt and
// *.md files in dir: TRUNCATE, then one row per paragraph, in one
// transaction. On a shared database this is the TRUNCATE that empties
// every other agent's index; on a slice it is this world's alone.
func Index(ctx context.Context, c *pgx.Conn, dir string) (int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		return 0, err
	}
	sort.Strings(files)
	n := 0
	err = pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "TRUNCATE chunks"); err != nil {
			return err
		}
		for _, f := range files {
			if ext := filepath.Ext(f); ext != ".txt" && ext != ".md" {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			for _, para := range strings.Split(string(b), "\n\n") {
				para = strings.TrimSpace(para)
				if para == "" {
					continue
				}
				if _, err := tx.Exec(ctx, "INSERT INTO chunks (doc, body, embedding) VALUES ($1, $2, $3)",
					filepath.Base(f), para, Embed(para)); err != nil {
					return err
				}
				n++
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("index %s: %w", dir, err)
	}
	return n, nil
}

// Hit is one search result.
type Hit struct {
	Doc   string
	Body  string
	Score float64
}

// Search returns the k chunks most similar to query, best first.
func Search(ctx context.Context, c *pgx.Conn, query string, k int) ([]Hit, error) {
	q := Embed(query)
	rows, err := c.Query(ctx, "SELECT doc, body, embedding FROM chunks")
	if err != nil {
		return nil, err
	}
	var hits []Hit
	for rows.Next() {
		var h Hit
		var emb []float64
		if err := rows.Scan(&h.Doc, &h.Body, &emb); err != nil {
			return nil, err
		}
		h.Score = Cosine(q, emb)
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits, nil
}
