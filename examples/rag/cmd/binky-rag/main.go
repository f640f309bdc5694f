// Command binky-rag is examples/rag's tool: a vector search over the
// world's own corpus, on the Postgres slice DATABASE_URL names.
//
//	binky-rag migrate            create the chunks table
//	binky-rag index [dir]        re-index dir (default ./corpus): TRUNCATE, then insert
//	binky-rag search <query>     the 3 nearest paragraphs
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/git-binky/git-binky/examples/rag"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "binky-rag:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: binky-rag migrate | index [dir] | search <query>")
	}
	// DATABASE_URL in migrate and seed; DB_URL (the db service's) in
	// verify and in a shell after eval "$(git binky env --shell)".
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		url = os.Getenv("DB_URL")
	}
	if url == "" {
		return errors.New("neither DATABASE_URL nor DB_URL is set: run it through binky (migrate, seed, verify) or after eval \"$(git binky env --shell)\"")
	}
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	switch args[0] {
	case "migrate":
		return rag.Migrate(ctx, c)
	case "index":
		dir := "corpus"
		if len(args) > 1 {
			dir = args[1]
		}
		n, err := rag.Index(ctx, c, dir)
		if err == nil {
			fmt.Printf("indexed %d paragraphs from %s\n", n, dir)
		}
		return err
	case "search":
		hits, err := rag.Search(ctx, c, strings.Join(args[1:], " "), 3)
		if err != nil {
			return err
		}
		for _, h := range hits {
			fmt.Printf("%.3f  %s  %s\n", h.Score, h.Doc, firstLine(h.Body))
		}
		return nil
	}
	return fmt.Errorf("unknown command %q", args[0])
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	if len(l) > 70 {
		l = l[:70] + "..."
	}
	return l
}
