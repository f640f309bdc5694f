// Command binky-notes is the demo app of `make demo`: a small notes API
// with its own migrations, reading the names real apps read —
// DATABASE_URL for Postgres, REDIS_URL and REDIS_PREFIX for Redis, PORT —
// so that binky.toml wires nothing by hand for migrate and seed.
//
//	binky-notes serve             listen on 127.0.0.1:$PORT
//	binky-notes migrate           apply ./migrations/*.sql not yet applied
//	binky-notes seed              write the first note
//
// Endpoints: GET /healthz, GET /notes (one note a line), POST /notes with
// the note as the body; each write counts in Redis under REDIS_PREFIX.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "binky-notes:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) != 1 {
		return errors.New("usage: binky-notes serve|migrate|seed")
	}
	dbURL := os.Getenv("DATABASE_URL")
	if dbURL == "" {
		return errors.New("DATABASE_URL is not set")
	}
	switch args[0] {
	case "migrate":
		return migrate(ctx, dbURL, "migrations")
	case "seed":
		c, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "INSERT INTO notes (body) VALUES ('welcome: this note came with the golden template')")
		return err
	case "serve":
		return serve(ctx, dbURL)
	}
	return fmt.Errorf("unknown command %q: serve, migrate or seed", args[0])
}

// migrate applies each dir/*.sql file, in name order, that
// schema_migrations does not list yet: a no-op when none is pending.
func migrate(ctx context.Context, dbURL, dir string) error {
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY)"); err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	applied := 0
	for _, f := range files {
		name := filepath.Base(f)
		var done bool
		if err := c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE name = $1)", name).Scan(&done); err != nil {
			return err
		}
		if done {
			continue
		}
		sql, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		err = pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			_, err := tx.Exec(ctx, "INSERT INTO schema_migrations (name) VALUES ($1)", name)
			return err
		})
		if err != nil {
			return err
		}
		fmt.Println("applied", name)
		applied++
	}
	if applied == 0 {
		fmt.Println("no migration pending")
	}
	return nil
}

func serve(ctx context.Context, dbURL string) error {
	port := os.Getenv("PORT")
	if port == "" {
		return errors.New("PORT is not set")
	}
	// A connection per request: the demo's load is a few calls.
	db := conns(dbURL)
	var rdb *redis.Client
	if u := os.Getenv("REDIS_URL"); u != "" {
		opt, err := redis.ParseURL(u)
		if err != nil {
			return fmt.Errorf("REDIS_URL: %w", err)
		}
		rdb = redis.NewClient(opt)
		defer rdb.Close()
	}
	prefix := os.Getenv("REDIS_PREFIX")
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := db.exec(r.Context(), "SELECT 1"); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /notes", func(w http.ResponseWriter, r *http.Request) {
		bodies, err := db.notes(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writes := int64(0)
		if rdb != nil {
			writes, _ = rdb.Get(r.Context(), prefix+"writes").Int64()
		}
		fmt.Fprintf(w, "%d notes, %d writes counted in this world's redis prefix %q\n", len(bodies), writes, prefix)
		for _, b := range bodies {
			fmt.Fprintln(w, "  -", b)
		}
	})
	mux.HandleFunc("POST /notes", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
		text := strings.TrimSpace(string(body))
		if text == "" {
			http.Error(w, "send the note as the body", http.StatusBadRequest)
			return
		}
		if err := db.exec(r.Context(), "INSERT INTO notes (body) VALUES ($1)", text); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if rdb != nil {
			if err := rdb.Incr(r.Context(), prefix+"writes").Err(); err != nil {
				http.Error(w, "redis: "+err.Error(), http.StatusInternalServerError)
				return
			}
		}
		fmt.Fprintln(w, "saved")
	})
	srv := &http.Server{Addr: "127.0.0.1:" + port, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// conns opens a connection to the world's database for each call.
type conns string

func (c conns) exec(ctx context.Context, sql string, args ...any) error {
	conn, err := pgx.Connect(ctx, string(c))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

func (c conns) notes(ctx context.Context) ([]string, error) {
	conn, err := pgx.Connect(ctx, string(c))
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, "SELECT body FROM notes ORDER BY id")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
