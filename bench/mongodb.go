//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/git-binky/git-binky/adapters"
)

// benchMongoDB compares, for 8 worlds of 200,000 documents each, a MongoDB
// server per world against binky's one shared server. There is no mongod
// here: the MongoDB binky runs is FerretDB on PostgreSQL, so "a server
// each" is what a compose file of FerretDB would start per worktree, a
// PostgreSQL cluster and a FerretDB process per world, loaded with the
// documents; binky is `git binky up` per world on its managed default (one
// FerretDB on the one shared postgres), the documents loaded once into the
// golden template by the seed command and copied server-side per world.
func benchMongoDB(b *bench) error {
	initdb, pgctl := findPG("initdb"), findPG("pg_ctl")
	ferret := adapters.FindServerBinary("ferretdb")
	if initdb == "" || pgctl == "" || ferret == "" {
		fmt.Println("skipped: needs PostgreSQL server binaries (apt-get install postgresql) and ferretdb (make ferretdb)")
		return nil
	}
	cred, err := pgUser()
	if err != nil {
		return err
	}
	docs, worlds := 200000, 8
	if v, err := strconv.Atoi(os.Getenv("BENCH_DOCS")); err == nil && v > 0 {
		docs = v
	}
	if v, err := strconv.Atoi(os.Getenv("BENCH_MONGO_WORLDS")); err == nil && v > 0 {
		worlds = v
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir := filepath.Join(b.tmp, "mongodb")
	os.MkdirAll(dir, 0o711)
	os.Chmod(b.tmp, 0o711)

	// A server each: initdb, start, a FerretDB in front, load.
	var perRSS, perPSS uint64
	settle()
	start := time.Now()
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	for i := 0; i < worlds; i++ {
		data := filepath.Join(dir, fmt.Sprintf("pg-%d", i))
		pgPort, fPort := freePort(), freePort()
		os.MkdirAll(data, 0o700)
		chown(data, cred)
		if err := runAs(cred, initdb, "-D", data, "-U", "bench", "--auth", "trust", "--no-instructions"); err != nil {
			return err
		}
		if err := runAs(cred, pgctl, "-D", data, "-l", filepath.Join(data, "log"), "-w", "-o",
			fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s", pgPort, data), "start"); err != nil {
			return err
		}
		stops = append(stops, func() { runAs(cred, pgctl, "-D", data, "-m", "fast", "stop"); removeAll(data) })
		cmd := exec.Command(ferret, fmt.Sprintf("--postgresql-url=postgres://bench@127.0.0.1:%d/postgres?sslmode=disable", pgPort),
			fmt.Sprintf("--listen-addr=127.0.0.1:%d", fPort), "--debug-addr=-", "--telemetry=disable", "--state-dir="+data, "--log-level=error")
		if err := cmd.Start(); err != nil {
			return err
		}
		stops = append(stops, func() { cmd.Process.Kill(); cmd.Wait() })
		waitPort(fPort)
		if err := loadDocs(fmt.Sprintf("mongodb://bench:x@127.0.0.1:%d/bench?authMechanism=PLAIN", fPort), docs); err != nil {
			return err
		}
		rss, pss := clusterMemory(data)
		frss, fpss := memOf(cmd.Process.Pid)
		perRSS, perPSS = perRSS+rss+frss, perPSS+pss+fpss
	}
	perTime := time.Since(start)
	for _, stop := range stops {
		stop()
	}
	stops = nil

	// binky: its managed default, golden template, a clone per world.
	home, repo := filepath.Join(dir, "binky-home"), filepath.Join(dir, "repo")
	run, err := binkyRepo(home, repo, fmt.Sprintf(`[project]
name = "bench"
[services.docs]
adapter = "mongodb"
seed = "%s -load-mongo \"$DOCS_URL\" -load-docs %d"
clone_from = "golden"
`, self, docs), nil)
	if err != nil {
		return err
	}
	gb := filepath.Join(b.bin, "git-binky")
	defer func() {
		for i := 0; i < worlds; i++ {
			run(repo, gb, "remove", fmt.Sprintf("w%d", i), "--force")
		}
		run(repo, gb, "daemon", "stop")
		stopBinkyServers(home, pgctl)
	}()
	settle()
	start = time.Now()
	for i := 0; i < worlds; i++ {
		if _, err := run(repo, gb, "up", fmt.Sprintf("w%d", i)); err != nil {
			return err
		}
	}
	binkyTime := time.Since(start)
	// Every world really holds the documents.
	out, err := run(repo, gb, "env", fmt.Sprintf("w%d", worlds-1), "--json")
	if err != nil {
		return err
	}
	var e struct {
		Env map[string]string `json:"env"`
	}
	json.Unmarshal([]byte(out), &e)
	if n, err := countDocs(e.Env["DOCS_URL"]); err != nil || n != int64(docs) {
		return fmt.Errorf("the last world holds %d documents (%v), want %d", n, err, docs)
	}
	data := filepath.Join(home, "servers", "postgres", "data")
	if target, err := os.Readlink(data); err == nil {
		data = target
	}
	binkyRSS, binkyPSS := clusterMemory(data)
	pidb, _ := os.ReadFile(filepath.Join(home, "servers", "mongodb", "ferretdb.pid"))
	if pid, err := strconv.Atoi(strings.TrimSpace(string(pidb))); err == nil {
		r, p := memOf(pid)
		binkyRSS, binkyPSS = binkyRSS+r, binkyPSS+p
	}
	clone, _ := cloneTimes(filepath.Join(home, "daemon.log"))

	mib := func(v uint64) string { return fmt.Sprintf("%.0f MiB", float64(v)/(1<<20)) }
	sec := func(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
	fmt.Printf("MongoDB wire protocol (FerretDB v1.24.2 on PostgreSQL), %d worlds of %d documents; a server each = a PostgreSQL + a FerretDB per world\n\n", worlds, docs)
	table([]string{"", "RSS", "PSS", "time to all worlds loaded", "clone per world"}, [][]string{
		{"a server each", mib(perRSS), mib(perPSS), sec(perTime), "-"},
		{"binky", mib(binkyRSS), mib(binkyPSS), sec(binkyTime), fmt.Sprintf("%.0f ms", float64(clone)/float64(time.Millisecond))},
	})
	fmt.Printf("\nbinky needs %.0f%% of the RAM (RSS; %.0f%% PSS) and %.0f%% of the time of a server per world\n",
		100*float64(binkyRSS)/float64(perRSS), 100*float64(binkyPSS)/float64(perPSS), 100*binkyTime.Seconds()/perTime.Seconds())
	return nil
}

// stopBinkyServers stops the managed FerretDB and postgres of a bench home.
func stopBinkyServers(home, pgctl string) {
	if b, err := os.ReadFile(filepath.Join(home, "servers", "mongodb", "ferretdb.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			if p, err := os.FindProcess(pid); err == nil {
				p.Kill()
			}
		}
	}
	data := filepath.Join(home, "servers", "postgres", "data")
	target, linked := os.Readlink(data)
	if linked == nil {
		data = target
	}
	pc, _ := pgUser()
	runAs(pc, pgctl, "-D", data, "-m", "fast", "stop")
	if linked == nil {
		removeAll(filepath.Dir(filepath.Dir(target)))
	}
}

// loadDocs inserts n documents into the collection "docs" of the URL's
// database, in batches.
func loadDocs(uri string, n int) error {
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return err
	}
	defer c.Disconnect(ctx)
	cs, err := connDB(uri)
	if err != nil {
		return err
	}
	coll := c.Database(cs).Collection("docs")
	const batch = 1000
	for i := 0; i < n; i += batch {
		var docs []any
		for j := i; j < min(n, i+batch); j++ {
			docs = append(docs, bson.D{{Key: "n", Value: j}, {Key: "name", Value: "doc " + strconv.Itoa(j)}, {Key: "price", Value: float64(j) * 0.01}})
		}
		if _, err := coll.InsertMany(ctx, docs); err != nil {
			return fmt.Errorf("load documents: %w", err)
		}
	}
	return nil
}

func countDocs(uri string) (int64, error) {
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return 0, err
	}
	defer c.Disconnect(ctx)
	db, err := connDB(uri)
	if err != nil {
		return 0, err
	}
	return c.Database(db).Collection("docs").CountDocuments(ctx, bson.D{})
}

// connDB is the database a mongodb:// URL names.
func connDB(uri string) (string, error) {
	rest := uri[strings.Index(uri, "://")+3:]
	_, path, ok := strings.Cut(rest, "/")
	db, _, _ := strings.Cut(path, "?")
	if !ok || db == "" {
		return "", fmt.Errorf("%s names no database", adapters.Redact(uri))
	}
	return db, nil
}
