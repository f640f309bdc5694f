// Command mongoseed is the seed command of the mongodb end-to-end tests:
// mongoseed URL N inserts N documents into the collection "pages" of the
// URL's database, with a unique index on "slug", and appends "seeded" to
// $GC_DIR/seeded so the test can count its runs.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func main() {
	if err := seed(); err != nil {
		fmt.Fprintln(os.Stderr, "mongoseed:", err)
		os.Exit(1)
	}
}

func seed() error {
	if len(os.Args) != 3 {
		return fmt.Errorf("usage: mongoseed URL N")
	}
	uri := os.Args[1]
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		return err
	}
	_, path, _ := strings.Cut(strings.SplitN(uri, "://", 2)[1], "/")
	db, _, _ := strings.Cut(path, "?")
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return err
	}
	defer c.Disconnect(ctx)
	pages := c.Database(db).Collection("pages")
	if _, err := pages.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "slug", Value: 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		return err
	}
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "slug", Value: fmt.Sprintf("page-%d", i)}, {Key: "n", Value: i}}
	}
	if _, err := pages.InsertMany(ctx, docs); err != nil {
		return err
	}
	f, err := os.OpenFile(os.Getenv("GC_DIR")+"/seeded", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString("seeded\n")
	return err
}
