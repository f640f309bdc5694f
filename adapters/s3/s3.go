// Package s3 is the S3 adapter (minio is an alias): a bucket per world and,
// where the server is a MinIO with its admin API, a user per world (an
// access key and a secret key of its own) whose only policy reaches that
// bucket and nothing else, not even the bucket's ownership tags. On a
// plain S3 endpoint, which cannot make users, the world gets the keys the
// service's options name, and isolation between worlds is then a
// convention only. It is the only importer of minio-go (Apache-2.0); it
// speaks MinIO's admin API itself (admin.go), since MinIO's admin library
// is AGPL-3.0 and binky is not.
package s3

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/tags"

	"github.com/git-binky/git-binky/adapters"
)

// S3 implements adapters.Adapter, Cloner and Lister.
type S3 struct{}

// New returns the adapter.
func New() *S3 { return &S3{} }

// The bucket tags that mark a bucket as binky's. Only the admin's keys can
// write them: the world's policy denies s3:PutBucketTagging (which in
// MinIO covers deleting the tags too).
const (
	tagWorld = "binky-world"
	tagHome  = "binky-home"
	tagSlice = "binky-slice"
)

const defaultRegion = "us-east-1"

// server is one S3 endpoint reached with the admin's keys.
type server struct {
	endpoint *url.URL
	region   string
	client   *minio.Client
	admin    *admin
}

// dial reads an admin_url: s3://KEY:SECRET@host:port (plain HTTP, as a
// loopback server speaks), or http(s)://KEY:SECRET@host:port; ?region=
// names the region (default us-east-1).
func dial(adminURL string) (*server, error) {
	u, err := adapters.ParseURL(adminURL)
	if err != nil {
		return nil, fmt.Errorf("s3 admin_url %s: %w", adapters.Redact(adminURL), err)
	}
	secure := false
	switch u.Scheme {
	case "s3", "http":
	case "https":
		secure = true
	default:
		return nil, fmt.Errorf("s3 admin_url %s: scheme %q: write s3://KEY:SECRET@host:port (or http:// or https://)", adapters.Redact(adminURL), u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("s3 admin_url %s names no host: write s3://KEY:SECRET@host:port", adapters.Redact(adminURL))
	}
	key := u.User.Username()
	secret, _ := u.User.Password()
	if key == "" || secret == "" {
		return nil, fmt.Errorf("s3 admin_url %s has no keys: write s3://ACCESS_KEY:SECRET_KEY@host:port", adapters.Redact(adminURL))
	}
	region := u.Query().Get("region")
	if region == "" {
		region = defaultRegion
	}
	endpoint := &url.URL{Scheme: "http", Host: u.Host}
	if secure {
		endpoint.Scheme = "https"
	}
	c, err := minio.New(u.Host, &minio.Options{
		Creds: credentials.NewStaticV4(key, secret, ""), Secure: secure, Region: region,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 admin_url %s: %w", adapters.Redact(adminURL), err)
	}
	return &server{endpoint: endpoint, region: region, client: c,
		admin: &admin{endpoint: endpoint, key: key, secret: secret, region: region, http: &http.Client{Timeout: 30 * time.Second}}}, nil
}

// hasAdmin reports whether the endpoint is a MinIO whose admin API takes
// the admin's keys (false: a plain S3 endpoint).
func (v *server) hasAdmin(ctx context.Context) (bool, error) {
	err := v.admin.probe(ctx)
	if errors.Is(err, errNoAdminAPI) {
		return false, nil
	}
	return err == nil, err
}

// mark reads a bucket's ownership tags: exists is false when there is no
// such bucket, ok false when it exists and is not binky's.
func (v *server) mark(ctx context.Context, bucket string) (o adapters.Owner, slice string, exists, ok bool, err error) {
	t, err := v.client.GetBucketTagging(ctx, bucket)
	switch code(err) {
	case "":
	case "NoSuchBucket":
		return o, "", false, false, nil
	case "NoSuchTagSet", "NoSuchTagSetError":
		// MinIO answers this for a bucket that does not exist too.
		there, err := v.client.BucketExists(ctx, bucket)
		if err != nil {
			return o, "", false, false, fmt.Errorf("look up bucket %s: %w", bucket, err)
		}
		return o, "", there, false, nil
	default:
		return o, "", false, false, fmt.Errorf("read the tags of bucket %s: %w", bucket, err)
	}
	m := t.ToMap()
	w, found := m[tagWorld]
	if !found || w == "" {
		return o, "", true, false, nil
	}
	return adapters.Owner{World: w, Home: m[tagHome]}, m[tagSlice], true, true, nil
}

func code(err error) string {
	if err == nil {
		return ""
	}
	if c := minio.ToErrorResponse(err).Code; c != "" {
		return c
	}
	return "error"
}

// worldPolicy lets a world's user do anything to its bucket and its
// objects, except what would let it forge or erase binky's mark (the
// bucket's tags, the bucket itself), hand the bucket to others (its
// policy), or keep teardown from emptying it (object locks, retention).
// Everything else (other buckets, listing buckets, creating them, the
// admin API) is denied because nothing allows it, but a user's own
// service accounts, which MinIO allows unless denied (below).
func worldPolicy(bucket string) []byte {
	res := []string{"arn:aws:s3:::" + bucket, "arn:aws:s3:::" + bucket + "/*"}
	doc := map[string]any{
		"Version": "2012-10-17",
		"Statement": []map[string]any{
			{"Effect": "Allow", "Action": []string{"s3:*"}, "Resource": res},
			{"Effect": "Deny", "Action": []string{
				"s3:PutBucketTagging", "s3:DeleteBucket", "s3:ForceDeleteBucket",
				"s3:PutBucketPolicy", "s3:DeleteBucketPolicy",
				"s3:PutBucketObjectLockConfiguration", "s3:PutObjectRetention", "s3:PutObjectLegalHold",
				"s3:BypassGovernanceRetention", "s3:PutReplicationConfiguration", "s3:PutBucketNotification",
			}, "Resource": res},
			// MinIO lets every user manage service accounts of its own
			// unless a policy denies it (nothing allowing it is not
			// enough): a world could otherwise take, as a service
			// account's access key, the key binky will give a later
			// world's user (keys are named after slices), and keep keys
			// of its own choosing.
			{"Effect": "Deny", "Action": []string{
				"admin:CreateServiceAccount", "admin:UpdateServiceAccount", "admin:RemoveServiceAccount",
			}},
		},
	}
	b, _ := json.Marshal(doc)
	return b
}

// sharedKeys are the keys a world uses on a plain S3 endpoint: the
// options' access_key and secret_key.
func sharedKeys(s adapters.Slice) (key, secret string, err error) {
	key, _ = s.Config["access_key"].(string)
	secret, _ = s.Config["secret_key"].(string)
	if key == "" || secret == "" || strings.Contains(key+secret, "${") {
		return "", "", fmt.Errorf("the S3 endpoint has no MinIO admin API, so binky cannot make a user per world: " +
			"give the service options = { access_key = \"${env.NAME}\", secret_key = \"${env.NAME}\" } (keys the worlds share; " +
			"isolation between worlds is then by convention only), or point admin_url at a MinIO")
	}
	return key, secret, nil
}

// Provision makes the world's bucket, marks it, and, on a MinIO, its user
// and policy.
func (a *S3) Provision(ctx context.Context, s adapters.Slice) error {
	v, err := dial(s.AdminURL)
	if err != nil {
		return err
	}
	bucket, key, pol := Bucket(s.Name), AccessKey(s.Name), Policy(s.Name)
	withAdmin, err := v.hasAdmin(ctx)
	if err != nil {
		return err
	}
	if withAdmin && s.Password == "" {
		return fmt.Errorf("s3 slice %s has no password to give its user", s.Name)
	}
	if !withAdmin {
		if _, _, err := sharedKeys(s); err != nil {
			return err
		}
	}
	owner, _, exists, marked, err := v.mark(ctx, bucket)
	if err != nil {
		return err
	}
	if exists && (!marked || !owner.Is(s.Owner())) {
		return fmt.Errorf("s3 bucket %s: %w", bucket, adapters.ErrTaken)
	}
	if !exists {
		if withAdmin {
			// A user or policy of those names that binky's bucket does not
			// account for is someone else's: never overwrite it.
			if u, err := v.admin.user(ctx, key); err != nil {
				return err
			} else if u != nil && u.notUser {
				return fmt.Errorf("s3 access key %s belongs to a service account or temporary credentials, not to a user binky made: %w", key, adapters.ErrTaken)
			} else if u != nil {
				return fmt.Errorf("s3 user %s exists without its bucket: %w", key, adapters.ErrTaken)
			}
			if p, err := v.admin.policy(ctx, pol); err != nil {
				return err
			} else if p != nil {
				return fmt.Errorf("s3 policy %s exists without its bucket: %w", pol, adapters.ErrTaken)
			}
		}
		if err := v.create(ctx, bucket, s); err != nil {
			return err
		}
	}
	if !withAdmin {
		return nil
	}
	u, err := v.admin.user(ctx, key)
	if err != nil {
		return err
	} else if u != nil && !u.ours(pol) {
		return fmt.Errorf("s3 access key %s is not the user binky made (policy %q): %w", key, u.PolicyName, adapters.ErrTaken)
	}
	if err := v.admin.addPolicy(ctx, pol, worldPolicy(bucket)); err != nil {
		return err
	}
	if err := v.admin.addUser(ctx, key, s.Password); err != nil {
		return err
	}
	if u == nil || u.PolicyName == "" {
		// A new user (or one a crash left before its policy): temporary credentials an earlier user of this
		// access key minted (an older binky's world, which teardown did
		// not revoke) would be this one's from the moment its policy is.
		// Revoked before the policy is attached. (The user's own, on a
		// later up, are the world's and stay.)
		if err := v.admin.revokeTokens(ctx, key); err != nil && !errors.Is(err, errNoRevoke) {
			return err
		}
	}
	return v.admin.attach(ctx, pol, key)
}

// create makes the bucket and tags it; a bucket left untagged (the tag
// refused) is removed again, empty as it is, rather than left unmarked.
func (v *server) create(ctx context.Context, bucket string, s adapters.Slice) error {
	err := v.client.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: v.region})
	switch code(err) {
	case "":
	case "BucketAlreadyOwnedByYou", "BucketAlreadyExists":
		return fmt.Errorf("s3 bucket %s: %w", bucket, adapters.ErrTaken)
	default:
		return fmt.Errorf("create s3 bucket %s: %w", bucket, err)
	}
	t, err := tags.MapToBucketTags(map[string]string{tagWorld: s.World, tagHome: s.Home, tagSlice: s.Name})
	if err == nil {
		err = v.client.SetBucketTagging(ctx, bucket, t)
	}
	if err != nil {
		_ = v.client.RemoveBucket(context.WithoutCancel(ctx), bucket)
		return fmt.Errorf("mark s3 bucket %s (the server must support bucket tagging): %w", bucket, err)
	}
	return nil
}

// Resolve returns the world's endpoint, bucket and keys: its own user's on
// a MinIO, the options' shared keys on a plain S3 endpoint.
func (a *S3) Resolve(ctx context.Context, s adapters.Slice) (adapters.Address, error) {
	v, err := dial(s.AdminURL)
	if err != nil {
		return nil, err
	}
	withAdmin, err := v.hasAdmin(ctx)
	if err != nil {
		return nil, err
	}
	key, secret := AccessKey(s.Name), s.Password
	if !withAdmin {
		if key, secret, err = sharedKeys(s); err != nil {
			return nil, err
		}
	}
	host, port, _ := net.SplitHostPort(v.endpoint.Host)
	if port == "" {
		host, port = v.endpoint.Host, "443"
		if v.endpoint.Scheme == "http" {
			port = "80"
		}
	}
	addr := adapters.Address{
		"url": v.endpoint.String(), "host": host, "port": port, "region": v.region,
		"bucket": Bucket(s.Name), "access_key": key, "secret_key": secret, "user": key, "password": secret,
	}
	if !withAdmin {
		// The options' keys, shared by every world: a convention, which
		// status and the world's env say.
		addr["isolation"] = adapters.IsolationNone
	}
	return addr, nil
}

// Teardown drops the world's user and policy, every object and version in
// its bucket, and the bucket, only if the bucket's tags name the world
// and home. The bucket goes last: while anything of the slice is left,
// its mark is too, and gc finds it.
func (a *S3) Teardown(ctx context.Context, s adapters.Slice) error {
	v, err := dial(s.AdminURL)
	if err != nil {
		return err
	}
	bucket := Bucket(s.Name)
	owner, _, exists, marked, err := v.mark(ctx, bucket)
	if err != nil {
		return err
	}
	if !exists {
		return nil // nothing of ours left: a user and policy are made after the bucket and dropped before it
	}
	if !marked || !owner.Is(s.Owner()) {
		return fmt.Errorf("s3 bucket %s: %w", bucket, adapters.ErrNotOurs)
	}
	withAdmin, err := v.hasAdmin(ctx)
	if err != nil {
		return err
	}
	if withAdmin {
		key, pol := AccessKey(s.Name), Policy(s.Name)
		u, err := v.admin.user(ctx, key)
		if err != nil {
			return err
		}
		// A user of that name under another policy is not the one binky
		// made for this bucket: leave it.
		// Its temporary credentials first: removing the user leaves them,
		// alive again for the next user of the access key.
		if u == nil || u.ours(pol) {
			if err := v.admin.revokeTokens(ctx, key); err != nil && !errors.Is(err, errNoRevoke) {
				return err
			}
		}
		if u != nil && u.ours(pol) {
			if err := v.admin.removeUser(ctx, key); err != nil {
				return err
			}
		}
		if err := v.admin.removePolicy(ctx, pol); err != nil {
			return err
		}
	}
	if err := v.empty(ctx, bucket); err != nil {
		return err
	}
	if err := v.client.RemoveBucket(ctx, bucket); err != nil && code(err) != "NoSuchBucket" {
		return fmt.Errorf("remove s3 bucket %s: %w", bucket, err)
	}
	return nil
}

// empty removes every object, every version and delete marker, and every
// unfinished upload from a bucket.
func (v *server) empty(ctx context.Context, bucket string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var listErr error
	objects := make(chan minio.ObjectInfo)
	go func() {
		defer close(objects)
		for o := range v.client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true, WithVersions: true}) {
			if o.Err != nil {
				listErr = o.Err
				return
			}
			select {
			case objects <- o:
			case <-ctx.Done():
				return
			}
		}
	}()
	for e := range v.client.RemoveObjects(ctx, bucket, objects, minio.RemoveObjectsOptions{GovernanceBypass: true}) {
		if e.Err != nil {
			cancel()
			for range objects { // let the lister finish
			}
			return fmt.Errorf("empty s3 bucket %s: remove %s: %w", bucket, e.ObjectName, e.Err)
		}
	}
	if listErr != nil {
		return fmt.Errorf("empty s3 bucket %s: list: %w", bucket, listErr)
	}
	for u := range v.client.ListIncompleteUploads(ctx, bucket, "", true) {
		if u.Err != nil {
			return fmt.Errorf("empty s3 bucket %s: list uploads: %w", bucket, u.Err)
		}
		if err := v.client.RemoveIncompleteUpload(ctx, bucket, u.Key); err != nil {
			return fmt.Errorf("empty s3 bucket %s: abort upload of %s: %w", bucket, u.Key, err)
		}
	}
	return nil
}

// Clone makes the world's slice and copies every object of the template's
// bucket into it, server-side. The template must be a bucket binky marked
// from the same home.
func (a *S3) Clone(ctx context.Context, template string, s adapters.Slice) error {
	v, err := dial(s.AdminURL)
	if err != nil {
		return err
	}
	src := Bucket(template)
	owner, _, exists, marked, err := v.mark(ctx, src)
	if err != nil {
		return err
	}
	if !exists || !marked || owner.Home != s.Home {
		return fmt.Errorf("s3 template bucket %s is missing or not binky's of this home", src)
	}
	if err := a.Provision(ctx, s); err != nil {
		return err
	}
	dst := Bucket(s.Name)
	for o := range v.client.ListObjects(ctx, src, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			return fmt.Errorf("clone s3 bucket %s: list: %w", src, o.Err)
		}
		_, err := v.client.CopyObject(ctx, minio.CopyDestOptions{Bucket: dst, Object: o.Key}, minio.CopySrcOptions{Bucket: src, Object: o.Key})
		if err != nil {
			return fmt.Errorf("clone s3 bucket %s into %s: copy %s: %w", src, dst, o.Key, err)
		}
	}
	return nil
}

// PrepareTemplate turns a built golden template's keys off, on a MinIO:
// they were given to the migrate and seed that built it (a branch's
// code), which could otherwise change what every later world starts from.
// Clones copy it with the admin's keys; a rebuild provisions it again,
// which turns them back on. On a plain S3 endpoint every world has the
// options' keys anyway.
func (a *S3) PrepareTemplate(ctx context.Context, adminURL, name string) error {
	v, err := dial(adminURL)
	if err != nil {
		return err
	}
	if withAdmin, err := v.hasAdmin(ctx); err != nil || !withAdmin {
		return err
	}
	key := AccessKey(name)
	u, err := v.admin.user(ctx, key)
	if err != nil || u == nil || u.Status == "disabled" {
		return err
	}
	if !u.ours(Policy(name)) {
		return fmt.Errorf("s3 access key %s is not the user binky made (policy %q): %w", key, u.PolicyName, adapters.ErrTaken)
	}
	if err := v.admin.disableUser(ctx, key); err != nil {
		return fmt.Errorf("template %s: %w", name, err)
	}
	// What the seed minted with the template's keys: disabling the user
	// stops it, but not for good (a rebuild enables a user of that key).
	if err := v.admin.revokeTokens(ctx, key); err != nil && !errors.Is(err, errNoRevoke) {
		return fmt.Errorf("template %s: %w", name, err)
	}
	return nil
}

// Exists reports whether a template's bucket is there, for the golden
// template's bookkeeping.
func (a *S3) Exists(ctx context.Context, adminURL, name string) (bool, error) {
	v, err := dial(adminURL)
	if err != nil {
		return false, err
	}
	_, _, exists, marked, err := v.mark(ctx, Bucket(name))
	return exists && marked, err
}

// List returns every bucket binky marked on the server and, on a MinIO,
// the user and policy beside each.
func (a *S3) List(ctx context.Context, adminURL string) ([]adapters.Owned, error) {
	v, err := dial(adminURL)
	if err != nil {
		return nil, err
	}
	withAdmin, err := v.hasAdmin(ctx)
	if err != nil {
		return nil, err
	}
	buckets, err := v.client.ListBuckets(ctx)
	if err != nil {
		return nil, fmt.Errorf("list s3 buckets: %w", err)
	}
	var out []adapters.Owned
	for _, b := range buckets {
		owner, slice, _, marked, err := v.mark(ctx, b.Name)
		if err != nil {
			return nil, err
		}
		if !marked || slice == "" || Bucket(slice) != b.Name {
			continue
		}
		out = append(out, adapters.Owned{Slice: slice, Kind: "bucket", Name: b.Name, Owner: owner})
		if !withAdmin {
			continue
		}
		if u, err := v.admin.user(ctx, AccessKey(slice)); err != nil {
			return nil, err
		} else if u != nil && u.ours(Policy(slice)) {
			out = append(out, adapters.Owned{Slice: slice, Kind: "user", Name: AccessKey(slice), Owner: owner})
		}
		if p, err := v.admin.policy(ctx, Policy(slice)); err != nil {
			return nil, err
		} else if p != nil {
			out = append(out, adapters.Owned{Slice: slice, Kind: "policy", Name: Policy(slice), Owner: owner})
		}
	}
	return out, nil
}

// Capabilities: server-side clone and listing.
func (a *S3) Capabilities() adapters.Capabilities {
	return adapters.Capabilities{Clone: true, List: true}
}

var (
	_ adapters.Adapter = (*S3)(nil)
	_ adapters.Cloner  = (*S3)(nil)
	_ adapters.Lister  = (*S3)(nil)
)
