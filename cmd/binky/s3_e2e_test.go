package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/s3"
)

// s3Client is what an app of the world builds from its environment.
func s3Client(t *testing.T, env map[string]string) *minio.Client {
	t.Helper()
	u, err := url.Parse(env["STORE_URL"])
	if err != nil || u.Host == "" {
		t.Fatalf("STORE_URL %q: %v", env["STORE_URL"], err)
	}
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(env["STORE_ACCESS_KEY"], env["STORE_SECRET_KEY"], ""),
		Region: env["STORE_REGION"], BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTwoWorldsGetTheirOwnBucketOnTheManagedMinIO(t *testing.T) {
	if adapters.FindServerBinary("minio") == "" {
		t.Skip("no minio binary on PATH or in BINKY_SERVER_BIN (make test builds one with go install)")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl to seed the golden bucket with (apt-get install curl)")
	}
	f := newFixture(t, `[project]
name = "bucketshop"
[services.store]
adapter = "minio"
clone_from = "golden"
seed = "printf seeded > $GC_DIR/seed.txt && curl -sf --aws-sigv4 aws:amz:us-east-1:s3 --user \"$STORE_ACCESS_KEY:$STORE_SECRET_KEY\" -T $GC_DIR/seed.txt \"$STORE_URL/$STORE_BUCKET/seed.txt\" && echo seeded >> $GC_DIR/seeded"
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["store"]
env = { S3_ENDPOINT = "${store.url}", S3_BUCKET = "${store.bucket}", AWS_ACCESS_KEY_ID = "${store.access_key}", AWS_SECRET_ACCESS_KEY = "${store.secret_key}" }
`)
	// The shared MinIO outlives the daemon: end it with the test.
	t.Cleanup(func() {
		b, err := os.ReadFile(filepath.Join(f.home, "servers", "s3", "minio.pid"))
		var pid int
		if fmt.Sscanf(string(b), "%d", &pid); err == nil && pid > 1 {
			signalPID(pid, syscall.SIGTERM)
		}
	})
	start := time.Now()
	for _, n := range []string{"one", "two"} {
		if _, stderr, err := f.binky(f.repo, "up", n); err != nil {
			t.Fatalf("up %s: %v\n%s", n, err, stderr)
		}
		t.Logf("up %s: %s", n, time.Since(start).Round(time.Millisecond))
		start = time.Now()
	}
	t.Cleanup(func() {
		f.binky(f.repo, "remove", "one", "--force")
		f.binky(f.repo, "remove", "two", "--force")
	})
	// Both buckets were made by server-side copy of the golden one.
	if log, _ := os.ReadFile(filepath.Join(f.home, "daemon.log")); strings.Count(string(log), `"msg":"slice cloned"`) != 2 {
		t.Errorf("the daemon log does not show two clones:\n%s", log)
	}
	if n := seeded(f); n != 1 {
		t.Errorf("seed ran %d times for two worlds, want once (the golden bucket)", n)
	}
	one, two := f.envOf("one"), f.envOf("two")
	rootPW, err := os.ReadFile(filepath.Join(f.home, "servers", "s3", "admin.password"))
	if fi, _ := os.Stat(filepath.Join(f.home, "servers", "s3", "admin.password")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the root secret file: %v %v", fi, err)
	}
	for name, env := range map[string]map[string]string{"one": one, "two": two} {
		if env["STORE_BUCKET"] == "" || env["STORE_ACCESS_KEY"] == "" || env["STORE_SECRET_KEY"] == "" || !strings.HasPrefix(env["STORE_URL"], "http://127.0.0.1:") {
			t.Fatalf("%s's env lacks the store's address: %v", name, env)
		}
		for k, v := range env {
			if strings.Contains(v, strings.TrimSpace(string(rootPW))) || strings.Contains(v, "binky-root") {
				t.Errorf("%s's %s carries the root credentials", name, k)
			}
		}
	}
	if one["STORE_BUCKET"] == two["STORE_BUCKET"] || one["STORE_ACCESS_KEY"] == two["STORE_ACCESS_KEY"] {
		t.Fatalf("both worlds share a bucket or a key: %s %s", one["STORE_BUCKET"], one["STORE_ACCESS_KEY"])
	}
	ctx := context.Background()
	a, b := s3Client(t, one), s3Client(t, two)
	for c, env := range map[*minio.Client]map[string]string{a: one, b: two} {
		body := "written by " + env["STORE_BUCKET"]
		if _, err := c.PutObject(ctx, env["STORE_BUCKET"], "upload.txt", strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("a world cannot write its own bucket %s: %v", env["STORE_BUCKET"], err)
		}
	}
	read := func(c *minio.Client, bucket string) (string, error) {
		o, err := c.GetObject(ctx, bucket, "upload.txt", minio.GetObjectOptions{})
		if err != nil {
			return "", err
		}
		defer o.Close()
		got, err := io.ReadAll(o)
		return string(got), err
	}
	for c, env := range map[*minio.Client]map[string]string{a: one, b: two} {
		o, err := c.GetObject(ctx, env["STORE_BUCKET"], "seed.txt", minio.GetObjectOptions{})
		var got []byte
		if err == nil {
			got, err = io.ReadAll(o)
			o.Close()
		}
		if err != nil || string(got) != "seeded" {
			t.Errorf("%s has no copy of the golden bucket's seed.txt: %q %v", env["STORE_BUCKET"], got, err)
		}
	}
	if got, err := read(a, one["STORE_BUCKET"]); err != nil || got != "written by "+one["STORE_BUCKET"] {
		t.Errorf("one reads its own object: %q %v", got, err)
	}
	if _, err := read(a, two["STORE_BUCKET"]); minio.ToErrorResponse(err).Code != "AccessDenied" {
		t.Errorf("one reads two's object: %v, want AccessDenied", err)
	}
	if _, err := read(b, one["STORE_BUCKET"]); minio.ToErrorResponse(err).Code != "AccessDenied" {
		t.Errorf("two reads one's object: %v, want AccessDenied", err)
	}
	// The shared MinIO outlives the daemon.
	f.mustBinky(f.repo, "daemon", "stop")
	if got, err := read(b, two["STORE_BUCKET"]); err != nil || got != "written by "+two["STORE_BUCKET"] {
		t.Errorf("two's object once the daemon stopped: %q %v", got, err)
	}

	f.mustBinky(f.repo, "remove", "one", "--force")
	port, _ := os.ReadFile(filepath.Join(f.home, "servers", "s3", "port"))
	admin := (&url.URL{Scheme: "s3", User: url.UserPassword("binky-root", strings.TrimSpace(string(rootPW))), Host: "127.0.0.1:" + strings.TrimSpace(string(port))}).String()
	left, err := s3.New().List(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	var twos int
	for _, o := range left {
		if o.Name == one["STORE_BUCKET"] || o.Name == one["STORE_ACCESS_KEY"] || o.Name == "binky-"+one["STORE_BUCKET"] {
			t.Errorf("remove left one's %s %s", o.Kind, o.Name)
		}
		if o.Slice == strings.ReplaceAll(two["STORE_BUCKET"], "-", "_") {
			twos++
		}
	}
	if twos != 3 {
		t.Errorf("two's bucket, user and policy: %d of 3 listed after one's remove: %v", twos, left)
	}
	if _, err := a.PutObject(ctx, one["STORE_BUCKET"], "again.txt", strings.NewReader("x"), 1, minio.PutObjectOptions{}); err == nil {
		t.Error("one's keys still write after remove")
	}
	if got, err := read(b, two["STORE_BUCKET"]); err != nil || got != "written by "+two["STORE_BUCKET"] {
		t.Errorf("two's object after one's remove: %q %v", got, err)
	}
}
