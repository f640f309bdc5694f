package s3

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/tags"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/adapterstest"
)

func adminURL(t *testing.T) string {
	u := os.Getenv("BINKY_TEST_S3")
	if u == "" {
		t.Skip("BINKY_TEST_S3 is unset (make test builds and starts a throwaway MinIO and sets it: s3://KEY:SECRET@127.0.0.1:PORT)")
	}
	return u
}

func adminServer(t *testing.T) *server {
	v, err := dial(adminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// clientFor is an S3 client with a world's keys, as its app would make one.
func clientFor(t *testing.T, addr adapters.Address) *minio.Client {
	u, err := url.Parse(addr["url"])
	if err != nil {
		t.Fatal(err)
	}
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(addr["access_key"], addr["secret_key"], ""),
		Region: addr["region"], BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func put(ctx context.Context, c *minio.Client, bucket, key, body string) error {
	_, err := c.PutObject(ctx, bucket, key, strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{})
	return err
}

func get(ctx context.Context, c *minio.Client, bucket, key string) (string, error) {
	o, err := c.GetObject(ctx, bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return "", err
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	return string(b), err
}

func TestConformance(t *testing.T) { conformance(t, adminURL(t), nil) }

// conformance runs the suite, with a bucket made by hand as the object
// binky did not make.
func conformance(t *testing.T, admin string, options map[string]any) {
	v, err := dial(admin)
	if err != nil {
		t.Fatal(err)
	}
	adapterstest.RunServer(t, New(), adapterstest.Server{
		AdminURL: admin,
		Config:   options,
		// A bucket an admin made by hand, with an object in it.
		Foreign: func(ctx context.Context, slice string) error {
			if err := v.client.MakeBucket(ctx, Bucket(slice), minio.MakeBucketOptions{}); err != nil {
				return err
			}
			t.Cleanup(func() {
				ctx := context.Background()
				_ = v.client.RemoveObject(ctx, Bucket(slice), "precious", minio.RemoveObjectOptions{})
				_ = v.client.RemoveBucket(ctx, Bucket(slice))
			})
			return put(ctx, v.client, Bucket(slice), "precious", "not binky's")
		},
		Intact: func(ctx context.Context, slice string) (bool, error) {
			body, err := get(ctx, v.client, Bucket(slice), "precious")
			if err != nil {
				return false, err
			}
			_, _, exists, marked, err := v.mark(ctx, Bucket(slice))
			return body == "not binky's" && exists && !marked, err
		},
	})
}

// provision makes a slice for the test and drops it when the test ends.
func provision(t *testing.T, name string) (adapters.Slice, adapters.Address) {
	t.Helper()
	ctx := context.Background()
	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	s := adapters.Slice{Name: name + "_" + run, World: "w-" + name + "-" + run, Home: "h-test", AdminURL: adminURL(t),
		Password: adapters.Password([]byte("s3-test-secret"), "s3", name+run)}
	if err := New().Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = New().Teardown(context.Background(), s) })
	addr, err := New().Resolve(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	return s, addr
}

func refused(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s with A's keys: allowed, want refused", what)
		return
	}
	if c := minio.ToErrorResponse(err).Code; c != "AccessDenied" {
		t.Errorf("%s with A's keys: %v (code %q), want AccessDenied", what, err, c)
	}
}

func TestAWorldsKeysReachOnlyItsOwnBucket(t *testing.T) {
	ctx := context.Background()
	sa, ra := provision(t, "iso_a")
	_, rb := provision(t, "iso_b")
	if ra["access_key"] == rb["access_key"] || ra["bucket"] == rb["bucket"] {
		t.Fatalf("both worlds share keys or bucket: %s/%s", ra["access_key"], ra["bucket"])
	}
	v := adminServer(t)
	if ra["access_key"] == v.admin.key || ra["secret_key"] == v.admin.secret {
		t.Fatal("the world's address carries the admin's keys")
	}
	a, b := clientFor(t, ra), clientFor(t, rb)
	if err := put(ctx, a, ra["bucket"], "mine.txt", "a's"); err != nil {
		t.Fatalf("A cannot write its own bucket: %v", err)
	}
	if got, err := get(ctx, a, ra["bucket"], "mine.txt"); err != nil || got != "a's" {
		t.Fatalf("A cannot read its own bucket: %q %v", got, err)
	}
	if err := put(ctx, b, rb["bucket"], "secret.txt", "b's"); err != nil {
		t.Fatalf("B cannot write its own bucket: %v", err)
	}

	_, err := get(ctx, a, rb["bucket"], "secret.txt")
	refused(t, "reading B's object", err)
	refused(t, "writing into B's bucket", put(ctx, a, rb["bucket"], "planted.txt", "x"))
	refused(t, "deleting B's object", a.RemoveObject(ctx, rb["bucket"], "secret.txt", minio.RemoveObjectOptions{}))
	for o := range a.ListObjects(ctx, rb["bucket"], minio.ListObjectsOptions{Recursive: true}) {
		refused(t, "listing B's bucket", o.Err)
		break
	}
	// MinIO answers a user's ListBuckets with the buckets it may reach.
	if bs, err := a.ListBuckets(ctx); err == nil {
		for _, x := range bs {
			if x.Name != ra["bucket"] {
				t.Errorf("listing buckets with A's keys shows %s", x.Name)
			}
		}
	} else {
		refused(t, "listing buckets", err)
	}
	refused(t, "creating a bucket", a.MakeBucket(ctx, "binky-test-made-by-a", minio.MakeBucketOptions{}))
	refused(t, "deleting its own bucket", a.RemoveBucket(ctx, ra["bucket"]))
	forged, _ := tags.MapToBucketTags(map[string]string{tagWorld: "w-someone-else", tagHome: "h-test", tagSlice: sa.Name})
	refused(t, "retagging its own bucket", a.SetBucketTagging(ctx, ra["bucket"], forged))
	refused(t, "deleting its own bucket's tags", a.RemoveBucketTagging(ctx, ra["bucket"]))
	refused(t, "setting its bucket's policy", a.SetBucketPolicy(ctx, ra["bucket"], `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::`+ra["bucket"]+`/*"]}]}`))

	if got, err := get(ctx, b, rb["bucket"], "secret.txt"); err != nil || got != "b's" {
		t.Errorf("B's object changed: %q %v", got, err)
	}
	if owner, _, _, marked, err := v.mark(ctx, ra["bucket"]); err != nil || !marked || !owner.Is(sa.Owner()) {
		t.Errorf("A's mark is no longer A's: %+v marked=%v %v", owner, marked, err)
	}
	if bs, err := v.client.ListBuckets(ctx); err == nil {
		for _, x := range bs {
			if x.Name == "binky-test-made-by-a" {
				t.Error("A made a bucket")
			}
		}
	}
}

func TestAWorldsKeysCannotCallTheAdminAPI(t *testing.T) {
	ctx := context.Background()
	sa, ra := provision(t, "adm_a")
	_, rb := provision(t, "adm_b")
	v := adminServer(t)
	as := &admin{endpoint: v.endpoint, key: ra["access_key"], secret: ra["secret_key"], region: ra["region"], http: http.DefaultClient}
	for what, call := range map[string]func() error{
		"reading B's user": func() error {
			_, err := as.do(ctx, http.MethodGet, "/user-info", url.Values{"accessKey": {rb["access_key"]}}, nil)
			return err
		},
		"removing B's user":      func() error { return as.removeUser(ctx, rb["access_key"]) },
		"attaching consoleAdmin": func() error { return as.attach(ctx, "consoleAdmin", ra["access_key"]) },
		"listing users":          func() error { _, err := as.do(ctx, http.MethodGet, "/list-users", nil, nil); return err },
		"creating a user":        func() error { return as.addUser(ctx, "evil-user", "evil-secret-123") },
		"widening its policy": func() error {
			return as.addPolicy(ctx, Policy(sa.Name), []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::*"]}]}`))
		},
		"reading server info": func() error { _, err := as.do(ctx, http.MethodGet, "/info", nil, nil); return err },
	} {
		err := call()
		if err == nil || !isCode(err, "AccessDenied") && !strings.Contains(err.Error(), "Access Denied") {
			t.Errorf("%s with A's keys: %v, want AccessDenied", what, err)
		}
	}
	if u, err := v.admin.user(ctx, "evil-user"); err != nil || u != nil {
		t.Errorf("A made a user: %+v %v", u, err)
	}
	if u, err := v.admin.user(ctx, rb["access_key"]); err != nil || u == nil {
		t.Errorf("B's user is gone: %v", err)
	}
	if u, err := v.admin.user(ctx, ra["access_key"]); err != nil || u == nil || u.PolicyName != Policy(sa.Name) {
		t.Errorf("A's user changed: %+v %v", u, err)
	}
}

func TestTeardownDropsEveryVersionTheUserAndThePolicy(t *testing.T) {
	ctx := context.Background()
	s, ra := provision(t, "td")
	a := clientFor(t, ra)
	if err := a.EnableVersioning(ctx, ra["bucket"]); err != nil {
		t.Fatalf("the world cannot version its own bucket: %v", err)
	}
	for i := 0; i < 3; i++ {
		if err := put(ctx, a, ra["bucket"], "doc.txt", fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.RemoveObject(ctx, ra["bucket"], "doc.txt", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err) // leaves a delete marker over three versions
	}
	if _, err := a.PutObject(ctx, ra["bucket"], "big/part", bytes.NewReader(make([]byte, 1<<20)), 1<<20, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	v := adminServer(t)
	found, err := New().List(ctx, adminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, o := range found {
		if o.Slice == s.Name {
			kinds[o.Kind] = o.Owner.Is(s.Owner())
		}
	}
	if !kinds["bucket"] || !kinds["user"] || !kinds["policy"] {
		t.Errorf("List found %v of %s, want its bucket, user and policy, each marked as the world's", kinds, s.Name)
	}
	if err := New().Teardown(ctx, s); err != nil {
		t.Fatal(err)
	}
	if ok, _ := v.client.BucketExists(ctx, ra["bucket"]); ok {
		t.Error("the bucket is still there")
	}
	if u, err := v.admin.user(ctx, ra["access_key"]); err != nil || u != nil {
		t.Errorf("the user is still there: %+v %v", u, err)
	}
	if p, err := v.admin.policy(ctx, Policy(s.Name)); err != nil || p != nil {
		t.Errorf("the policy is still there: %s %v", p, err)
	}
	if err := put(ctx, a, ra["bucket"], "after", "x"); err == nil {
		t.Error("the world's keys still write after teardown")
	}
}

func TestCloneCopiesTheTemplatesObjects(t *testing.T) {
	ctx := context.Background()
	golden, rg := provision(t, "golden")
	g := clientFor(t, rg)
	for _, k := range []string{"seed/a.json", "seed/b.json", "top"} {
		if err := put(ctx, g, rg["bucket"], k, "content of "+k); err != nil {
			t.Fatal(err)
		}
	}
	s := adapters.Slice{Name: "clone_" + golden.Name[len("golden_"):], World: "w-clone", Home: golden.Home, AdminURL: golden.AdminURL, Password: "clone-password-1"}
	t.Cleanup(func() { _ = New().Teardown(context.Background(), s) })
	if err := New().Clone(ctx, golden.Name, s); err != nil {
		t.Fatal(err)
	}
	addr, err := New().Resolve(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	c := clientFor(t, addr)
	for _, k := range []string{"seed/a.json", "seed/b.json", "top"} {
		if got, err := get(ctx, c, addr["bucket"], k); err != nil || got != "content of "+k {
			t.Errorf("clone's %s = %q, %v", k, got, err)
		}
	}
	// The clone is its own: writing it leaves the template alone.
	if err := put(ctx, c, addr["bucket"], "top", "changed"); err != nil {
		t.Fatal(err)
	}
	if got, _ := get(ctx, g, rg["bucket"], "top"); got != "content of top" {
		t.Errorf("the template changed: %q", got)
	}
	other := s
	other.Name, other.Home = "clone_other_home", "h-other"
	if err := New().Clone(ctx, golden.Name, other); err == nil {
		_ = New().Teardown(ctx, other)
		t.Error("cloned a template of another home")
	}
}

// A built golden template's keys are turned off: they were given to the
// migrate and seed that built it (a branch's code), which could otherwise
// change what every later world starts from. Clones still copy it with
// the admin's keys; a rebuild's provision turns them back on.
func TestABuiltTemplatesKeysCannotChangeItAnyMore(t *testing.T) {
	ctx := context.Background()
	golden, rg := provision(t, "golden")
	g := clientFor(t, rg)
	if err := put(ctx, g, rg["bucket"], "seed.json", "seed"); err != nil {
		t.Fatal(err)
	}
	if err := New().PrepareTemplate(ctx, golden.AdminURL, golden.Name); err != nil {
		t.Fatal(err)
	}
	if err := put(ctx, g, rg["bucket"], "seed.json", "poison"); err == nil {
		t.Error("the template's keys still write into it after it was built")
	}
	if _, err := get(ctx, g, rg["bucket"], "seed.json"); err == nil {
		t.Error("the template's keys still read it after it was built")
	}
	if err := New().PrepareTemplate(ctx, golden.AdminURL, golden.Name); err != nil {
		t.Fatalf("prepared again (every up that copies it does): %v", err)
	}
	s := adapters.Slice{Name: "clone_" + golden.Name[len("golden_"):], World: "w-clone", Home: golden.Home, AdminURL: golden.AdminURL, Password: "clone-password-2"}
	t.Cleanup(func() { _ = New().Teardown(context.Background(), s) })
	if err := New().Clone(ctx, golden.Name, s); err != nil {
		t.Fatalf("clone the prepared template: %v", err)
	}
	addr, err := New().Resolve(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := get(ctx, clientFor(t, addr), addr["bucket"], "seed.json"); err != nil || got != "seed" {
		t.Errorf("the clone's seed.json = %q, %v", got, err)
	}
	if err := New().Provision(ctx, golden); err != nil {
		t.Fatal(err)
	}
	if got, err := get(ctx, g, rg["bucket"], "seed.json"); err != nil || got != "seed" {
		t.Errorf("after provisioning again, the template's keys read %q, %v", got, err)
	}
}

func TestWrongAdminKeysAreAnErrorNotAPlainEndpoint(t *testing.T) {
	u, _ := url.Parse(adminURL(t))
	u.User = url.UserPassword(u.User.Username(), "not-the-secret")
	s := adapters.Slice{Name: "wrongkeys", World: "w", Home: "h", AdminURL: u.String(), Password: "pppppppp",
		Config: map[string]any{"access_key": "shared", "secret_key": "shared-secret"}}
	err := New().Provision(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "refused the admin_url's keys") {
		t.Errorf("provision with a wrong admin secret: %v, want the keys refused", err)
	}
	if strings.Contains(fmt.Sprint(err), "not-the-secret") {
		t.Error("the error carries the secret")
	}
}

func TestAUserOrPolicyBinkyDidNotMakeIsNeverTakenOver(t *testing.T) {
	ctx := context.Background()
	v := adminServer(t)
	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	for _, what := range []string{"user", "policy"} {
		s := adapters.Slice{Name: "foreign_" + what + "_" + run, World: "w-f", Home: "h-test", AdminURL: adminURL(t), Password: "the-worlds-pw-1"}
		switch what {
		case "user":
			if err := v.admin.addUser(ctx, AccessKey(s.Name), "someone-elses-secret"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = v.admin.removeUser(context.Background(), AccessKey(s.Name)) })
		case "policy":
			if err := v.admin.addPolicy(ctx, Policy(s.Name), []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::elsewhere/*"]}]}`)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = v.admin.removePolicy(context.Background(), Policy(s.Name)) })
		}
		if err := New().Provision(ctx, s); !errors.Is(err, adapters.ErrTaken) {
			t.Errorf("provision over a %s binky did not make: %v, want ErrTaken", what, err)
		}
		if ok, _ := v.client.BucketExists(ctx, Bucket(s.Name)); ok {
			t.Errorf("a bucket was made beside a foreign %s", what)
		}
		if what == "user" {
			// Its secret is still the one its maker set.
			c, _ := minio.New(v.endpoint.Host, &minio.Options{Creds: credentials.NewStaticV4(AccessKey(s.Name), "someone-elses-secret", "")})
			// It has no policy: AccessDenied says the secret was taken.
			if _, err := c.ListBuckets(ctx); err == nil || minio.ToErrorResponse(err).Code != "AccessDenied" {
				t.Errorf("the foreign user's own secret no longer signs in: %v", err)
			}
		} else if p, err := v.admin.policy(ctx, Policy(s.Name)); err != nil || !strings.Contains(string(p), "elsewhere") {
			t.Errorf("the foreign policy changed: %s %v", p, err)
		}
	}
}

// plainURL is an S3 endpoint without MinIO's admin API (make test runs
// versitygw for it), and keys for the worlds to share there.
func plainURL(t *testing.T) (string, map[string]any) {
	u := os.Getenv("BINKY_TEST_S3_PLAIN")
	if u == "" {
		t.Skip("BINKY_TEST_S3_PLAIN is unset (make test builds and starts a throwaway versitygw and sets it: s3://KEY:SECRET@127.0.0.1:PORT)")
	}
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	// The gateway runs with one account: the worlds share it here.
	secret, _ := p.User.Password()
	return u, map[string]any{"access_key": p.User.Username(), "secret_key": secret}
}

func TestConformanceOnAPlainS3Endpoint(t *testing.T) {
	admin, options := plainURL(t)
	conformance(t, admin, options)
}

func TestAPlainS3EndpointGivesWorldsTheOptionsKeys(t *testing.T) {
	ctx := context.Background()
	admin, options := plainURL(t)
	s := adapters.Slice{Name: "plain_" + fmt.Sprintf("%x", time.Now().UnixNano())[8:], World: "w-plain", Home: "h-test", AdminURL: admin, Password: "unused-here"}
	if err := New().Provision(ctx, s); err == nil || !strings.Contains(err.Error(), "by convention only") {
		_ = New().Teardown(ctx, s)
		t.Fatalf("provision on a plain endpoint with no keys in the options: %v, want it to say what to add", err)
	}
	s.Config = options
	if err := New().Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = New().Teardown(context.Background(), s) })
	addr, err := New().Resolve(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if addr["access_key"] != options["access_key"] || addr["secret_key"] != options["secret_key"] || addr["bucket"] != Bucket(s.Name) {
		t.Fatalf("address %v: want the options' keys and the slice's bucket", addr["bucket"])
	}
	c := clientFor(t, addr)
	if err := put(ctx, c, addr["bucket"], "k", "v"); err != nil {
		t.Fatal(err)
	}
	found, err := New().List(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	var listed bool
	for _, o := range found {
		if o.Slice == s.Name {
			listed = o.Kind == "bucket" && o.Owner.Is(s.Owner())
		}
	}
	if !listed {
		t.Errorf("List does not find the marked bucket: %v", found)
	}
	if err := New().Teardown(ctx, s); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.BucketExists(ctx, addr["bucket"]); ok {
		t.Error("teardown left the bucket")
	}
}

// addServiceAccount asks, with a's keys, for a service account of
// targetUser ("" for a's own user) whose access key is accessKey.
func (a *admin) addServiceAccount(ctx context.Context, targetUser, accessKey, secretKey string) error {
	req := map[string]string{"accessKey": accessKey, "secretKey": secretKey}
	if targetUser != "" {
		req["targetUser"] = targetUser
	}
	body, _ := json.Marshal(req)
	sealed, err := encryptData(a.secret, body)
	if err != nil {
		return err
	}
	_, err = a.do(ctx, http.MethodPut, "/add-service-account", nil, sealed)
	return err
}

// Access keys are named after slices, so a world that could make service
// accounts could take a later world's key before its up (which then
// failed outright). A world's keys may not make them; a key some service
// account holds anyway (the admin made it) gives the later world a salted
// name, as any name binky did not make does.
func TestAWorldCannotTakeTheAccessKeyOfALaterWorld(t *testing.T) {
	ctx := context.Background()
	_, ra := provision(t, "sq_a")
	v := adminServer(t)
	run := fmt.Sprintf("%x", time.Now().UnixNano())[8:]
	later := adapters.Slice{Name: "sq_later_" + run, World: "w-sq-later-" + run, Home: "h-test", AdminURL: adminURL(t),
		Password: adapters.Password([]byte("s3-test-secret"), "s3", "later"+run)}
	as := &admin{endpoint: v.endpoint, key: ra["access_key"], secret: ra["secret_key"], region: ra["region"], http: http.DefaultClient}
	err := as.addServiceAccount(ctx, "", AccessKey(later.Name), "squatter-secret-123")
	if err == nil || !isCode(err, "AccessDenied") && !strings.Contains(err.Error(), "Access Denied") {
		t.Errorf("a service account made with A's keys: %v, want AccessDenied", err)
	}
	if err := as.addServiceAccount(ctx, "", "", ""); err == nil || !isCode(err, "AccessDenied") && !strings.Contains(err.Error(), "Access Denied") {
		t.Errorf("a service account of MinIO's naming made with A's keys: %v, want AccessDenied", err)
	}
	// The admin may: the key is then a service account's, never binky's.
	if err := v.admin.addServiceAccount(ctx, ra["access_key"], AccessKey(later.Name), "squatter-secret-123"); err != nil {
		t.Fatal(err)
	}
	err = New().Provision(ctx, later)
	if err == nil {
		New().Teardown(context.Background(), later)
		t.Fatal("provisioned a slice whose access key a service account holds")
	}
	if !errors.Is(err, adapters.ErrTaken) {
		t.Errorf("provision of a slice whose access key a service account holds: %v, want ErrTaken (the daemon then salts the name)", err)
	}
	if _, _, exists, _, err := v.mark(ctx, Bucket(later.Name)); err != nil || exists {
		t.Errorf("the refused slice left its bucket: %v %v", exists, err)
	}
}

// stsClient mints temporary credentials with a world's own keys (MinIO's
// AssumeRole checks no policy action, so no world policy can refuse it)
// and returns a client signing with them.
func stsClient(t *testing.T, addr adapters.Address) *minio.Client {
	t.Helper()
	u, err := url.Parse(addr["url"])
	if err != nil {
		t.Fatal(err)
	}
	creds, err := credentials.NewSTSAssumeRole("http://"+u.Host, credentials.STSAssumeRoleOptions{
		AccessKey: addr["access_key"], SecretKey: addr["secret_key"], Location: addr["region"], DurationSeconds: 7 * 24 * 3600})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := creds.GetWithContext(&credentials.CredContext{Client: http.DefaultClient}); err != nil {
		t.Fatalf("the world could not mint temporary credentials: %v", err)
	}
	c, err := minio.New(u.Host, &minio.Options{Creds: creds, Region: addr["region"], BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Temporary credentials a world minted with its keys outlived its
// teardown (MinIO's remove-user leaves them) and came back to life with the
// next user of the same access key: the same name's next world, or a world
// whose folded key collides. Teardown revokes them, and so does a new
// user's provisioning, for tokens an older binky left.
func TestAWorldsTemporaryCredentialsDieWithIt(t *testing.T) {
	ctx := context.Background()
	admin := adminURL(t)
	name := fmt.Sprintf("sts_%x", time.Now().UnixNano())[:16]
	s := adapters.Slice{Name: name, World: "w-sts-1", Home: "h-test", AdminURL: admin,
		Password: adapters.Password([]byte("s3-test-secret"), "s3", name)}
	if err := New().Provision(ctx, s); err != nil {
		t.Fatal(err)
	}
	addr, err := New().Resolve(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	old := stsClient(t, addr)
	if err := put(ctx, old, addr["bucket"], "mine", "x"); err != nil {
		t.Fatalf("the temporary credentials do not work for the world itself: %v", err)
	}
	if err := New().Teardown(ctx, s); err != nil {
		t.Fatal(err)
	}
	// The same slice's next world, with a password of its own.
	next := s
	next.World, next.Password = "w-sts-2", adapters.Password([]byte("another-secret"), "s3", name)
	if err := New().Provision(ctx, next); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = New().Teardown(context.Background(), next) })
	if err := put(ctx, old, addr["bucket"], "planted", "x"); err == nil {
		t.Fatal("the removed world's temporary credentials write into the next world's bucket")
	}
	if _, err := old.ListBuckets(ctx); err == nil {
		t.Fatal("the removed world's temporary credentials still list buckets")
	}
}

// An older binky's teardown removed the user and left its temporary
// credentials: the next world of that access key revokes them before its
// policy makes them worth anything.
func TestANewUserRevokesTheTemporaryCredentialsAnEarlierUserLeft(t *testing.T) {
	ctx := context.Background()
	s, addr := provision(t, "stsold")
	old := stsClient(t, addr)
	v := adminServer(t)
	// Teardown as binky did before it revoked: user, policy, bucket.
	if err := v.admin.removeUser(ctx, addr["access_key"]); err != nil {
		t.Fatal(err)
	}
	if err := v.admin.removePolicy(ctx, Policy(s.Name)); err != nil {
		t.Fatal(err)
	}
	if err := v.empty(ctx, addr["bucket"]); err != nil {
		t.Fatal(err)
	}
	if err := v.client.RemoveBucket(ctx, addr["bucket"]); err != nil {
		t.Fatal(err)
	}
	next := s
	next.World = s.World + "-next"
	if err := New().Provision(ctx, next); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = New().Teardown(context.Background(), next) })
	if err := put(ctx, old, addr["bucket"], "planted", "x"); err == nil {
		t.Fatal("the earlier user's temporary credentials write into the new world's bucket")
	}
}
