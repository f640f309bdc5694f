package s3

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/minio/minio-go/v7/pkg/signer"
)

// admin speaks the few calls of MinIO's admin API (/minio/admin/v3) that a
// slice needs: users, canned policies, and attaching one to the other. It
// is written here over HTTP, signed with SigV4, rather than linked from
// MinIO's admin library, which is AGPL-3.0.
type admin struct {
	endpoint *url.URL // scheme://host:port
	key      string
	secret   string
	region   string
	http     *http.Client
}

const adminPrefix = "/minio/admin/v3"

// adminError is an error the admin API answered, with MinIO's code
// (XMinioAdminNoSuchUser, ...).
type adminError struct {
	Status int
	// JSON is whether the answer was MinIO's JSON rather than an S3
	// server's XML.
	JSON    bool   `json:"-"`
	Code    string `json:"Code"`
	Message string `json:"Message"`
}

func (e *adminError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("admin API answered HTTP %d", e.Status)
	}
	return fmt.Sprintf("admin API: %s: %s", e.Code, e.Message)
}

// errNoAdminAPI says the endpoint is an S3 server without MinIO's admin
// API: it cannot make users, so worlds share the keys the options name.
var errNoAdminAPI = errors.New("the endpoint has no MinIO admin API")

// notInitializedWait bounds how long do waits for a MinIO that answers
// XMinioServerNotInitialized. MinIO's readiness probe says 200 before its
// IAM subsystem has loaded; a shared server binky has just started (or a
// user's, restarted) refuses user and policy calls for a second or more.
var notInitializedWait = 60 * time.Second

// do calls the admin API, waiting (bounded by notInitializedWait and ctx)
// while the server says it is not initialized yet.
func (a *admin) do(ctx context.Context, method, path string, query url.Values, body []byte) ([]byte, error) {
	deadline := time.Now().Add(notInitializedWait)
	pause := 50 * time.Millisecond
	for {
		out, err := a.once(ctx, method, path, query, body)
		if !isCode(err, "XMinioServerNotInitialized") {
			return out, err
		}
		if time.Now().Add(pause).After(deadline) {
			return nil, fmt.Errorf("MinIO at %s still was not initialized after %s: see its log (binky's own: servers/s3/minio.log in BINKY_HOME), then run the command again: %w",
				a.endpoint.Host, notInitializedWait, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (waiting for MinIO to initialize: %w)", ctx.Err(), err)
		case <-time.After(pause):
		}
		pause = min(2*pause, time.Second)
	}
}

func (a *admin) once(ctx context.Context, method, path string, query url.Values, body []byte) ([]byte, error) {
	u := *a.endpoint
	u.Path = adminPrefix + path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.ContentLength = int64(len(body))
	sum := sha256.Sum256(body)
	req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
	req = signer.SignV4(*req, a.key, a.secret, "", a.region)
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("admin API at %s: %w", a.endpoint.Host, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		e := &adminError{Status: resp.StatusCode}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			e.JSON = json.Unmarshal(out, e) == nil
		}
		return nil, e
	}
	return out, nil
}

// probe tells a MinIO (its admin API answers, in JSON) from a plain S3
// endpoint (the path reads as an object of a bucket "minio", and the
// answer is an S3 error in XML). MinIO refusing the admin keys is an error,
// not a plain endpoint: falling back would hand worlds shared keys because
// of a typo.
func (a *admin) probe(ctx context.Context) error {
	_, err := a.do(ctx, http.MethodGet, "/accountinfo", nil, nil)
	var ae *adminError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae) && ae.JSON:
		return fmt.Errorf("the admin API at %s refused the admin_url's keys (check them): %w", a.endpoint.Host, err)
	case errors.As(err, &ae):
		return errNoAdminAPI
	default:
		return err
	}
}

// userInfo is the part of MinIO's answer to user-info that binky reads.
type userInfo struct {
	PolicyName string `json:"policyName"`
	Status     string `json:"status"`
	// notUser: the access key is taken, but not by a user: a service
	// account or temporary credentials (MinIO answers user-info for those
	// with XMinioIAMActionNotAllowed). Any user may make service accounts
	// of its own with access keys it chooses, so a world could take the
	// key a later world's user would get.
	notUser bool
}

// ours reports whether the user is one binky made with policy pol (or
// one whose policy a crash kept it from attaching).
func (u *userInfo) ours(pol string) bool {
	return !u.notUser && (u.PolicyName == "" || u.PolicyName == pol)
}

// user returns the user of that access key, or nil when the key is free.
func (a *admin) user(ctx context.Context, accessKey string) (*userInfo, error) {
	out, err := a.do(ctx, http.MethodGet, "/user-info", url.Values{"accessKey": {accessKey}}, nil)
	if isCode(err, "XMinioAdminNoSuchUser") {
		return nil, nil
	}
	if isCode(err, "XMinioIAMActionNotAllowed") {
		return &userInfo{notUser: true}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up user %s: %w", accessKey, err)
	}
	var u userInfo
	if err := json.Unmarshal(out, &u); err != nil {
		return nil, fmt.Errorf("look up user %s: %w", accessKey, err)
	}
	return &u, nil
}

// addUser creates (or updates) a user. MinIO wants the request body
// encrypted with the admin's secret key.
func (a *admin) addUser(ctx context.Context, accessKey, secretKey string) error {
	body, _ := json.Marshal(map[string]string{"secretKey": secretKey, "status": "enabled"})
	sealed, err := encryptData(a.secret, body)
	if err != nil {
		return err
	}
	if _, err := a.do(ctx, http.MethodPut, "/add-user", url.Values{"accessKey": {accessKey}}, sealed); err != nil {
		return fmt.Errorf("create user %s: %w", accessKey, err)
	}
	return nil
}

// disableUser turns a user's keys off, keeping the user: a request signed
// with them is refused from then on.
func (a *admin) disableUser(ctx context.Context, accessKey string) error {
	q := url.Values{"accessKey": {accessKey}, "status": {"disabled"}}
	if _, err := a.do(ctx, http.MethodPut, "/set-user-status", q, nil); err != nil {
		return fmt.Errorf("disable user %s: %w", accessKey, err)
	}
	return nil
}

func (a *admin) removeUser(ctx context.Context, accessKey string) error {
	_, err := a.do(ctx, http.MethodDelete, "/remove-user", url.Values{"accessKey": {accessKey}}, nil)
	if err != nil && !isCode(err, "XMinioAdminNoSuchUser") {
		return fmt.Errorf("remove user %s: %w", accessKey, err)
	}
	return nil
}

// revokeTokens revokes every temporary credential (STS) minted with a
// user's keys. MinIO's remove-user leaves them, and they work again for
// the next user of that access key; no policy can stop a user minting them
// (AssumeRole checks no action). A MinIO without the call (older than its
// revoke-tokens API) cannot revoke them: errNoRevoke says so.
func (a *admin) revokeTokens(ctx context.Context, accessKey string) error {
	_, err := a.do(ctx, http.MethodPost, "/revoke-tokens/builtin", url.Values{"user": {accessKey}, "fullRevoke": {"true"}}, nil)
	var ae *adminError
	// A MinIO that does not know the route answers 426 with
	// XMinioAdminVersionMismatch (its router's catch-all for admin paths);
	// the rest are what other servers say of a call they lack.
	if errors.As(err, &ae) && (ae.Status == http.StatusUpgradeRequired || ae.Code == "XMinioAdminVersionMismatch" ||
		ae.Status == http.StatusNotFound || ae.Status == http.StatusMethodNotAllowed || ae.Status == http.StatusNotImplemented ||
		ae.Code == "XMinioUnknownAPIRequest" || ae.Code == "NotImplemented") {
		return errNoRevoke
	}
	if err != nil {
		return fmt.Errorf("revoke the temporary credentials of user %s: %w", accessKey, err)
	}
	return nil
}

// errNoRevoke is revokeTokens' answer from a MinIO that has no such call.
var errNoRevoke = errors.New("this MinIO cannot revoke temporary credentials (no revoke-tokens admin API)")

// policy returns a canned policy's document, or nil when there is none.
func (a *admin) policy(ctx context.Context, name string) ([]byte, error) {
	out, err := a.do(ctx, http.MethodGet, "/info-canned-policy", url.Values{"name": {name}, "v": {"2"}}, nil)
	if isCode(err, "XMinioAdminNoSuchPolicy") {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up policy %s: %w", name, err)
	}
	return out, nil
}

func (a *admin) addPolicy(ctx context.Context, name string, doc []byte) error {
	if _, err := a.do(ctx, http.MethodPut, "/add-canned-policy", url.Values{"name": {name}}, doc); err != nil {
		return fmt.Errorf("create policy %s: %w", name, err)
	}
	return nil
}

func (a *admin) removePolicy(ctx context.Context, name string) error {
	_, err := a.do(ctx, http.MethodDelete, "/remove-canned-policy", url.Values{"name": {name}}, nil)
	if err != nil && !isCode(err, "XMinioAdminNoSuchPolicy") {
		return fmt.Errorf("remove policy %s: %w", name, err)
	}
	return nil
}

// attach makes policy the user's only policy.
func (a *admin) attach(ctx context.Context, policy, accessKey string) error {
	q := url.Values{"policyName": {policy}, "userOrGroup": {accessKey}, "isGroup": {"false"}}
	if _, err := a.do(ctx, http.MethodPut, "/set-user-or-group-policy", q, nil); err != nil {
		return fmt.Errorf("attach policy %s to user %s: %w", policy, accessKey, err)
	}
	return nil
}

func isCode(err error, code string) bool {
	var ae *adminError
	return errors.As(err, &ae) && ae.Code == code
}

// The admin API's encrypted bodies: salt (32) | algorithm (1) | nonce (8) |
// ciphertext, the key derived from the admin's secret key. Of the
// algorithms the server accepts, binky writes PBKDF2-SHA256 (8192 rounds)
// with AES-256-GCM, the one the standard library has. The ciphertext is a
// stream of AEAD fragments of at most 16 KiB of plaintext, each sealed
// under the nonce with a 32-bit little-endian fragment number appended and
// with associated data of a flag (0x80 on the last fragment) and the tag
// of an empty fragment 0.
const (
	algPBKDF2AESGCM = 0x02
	pbkdf2Rounds    = 8192
	fragmentSize    = 1 << 14
)

func encryptData(password string, data []byte) ([]byte, error) {
	var salt [32]byte
	var nonce [8]byte
	if _, err := rand.Read(salt[:]); err != nil {
		return nil, err
	}
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, err
	}
	aead, err := streamCipher(password, salt[:])
	if err != nil {
		return nil, err
	}
	out := append(append(append([]byte{}, salt[:]...), algPBKDF2AESGCM), nonce[:]...)
	return append(out, sealStream(aead, nonce[:], data)...), nil
}

func streamCipher(password string, salt []byte) (cipher.AEAD, error) {
	key, err := pbkdf2.Key(sha256.New, password, salt, pbkdf2Rounds, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func fragmentNonce(nonce []byte, seq uint32) []byte {
	n := make([]byte, 12)
	copy(n, nonce)
	binary.LittleEndian.PutUint32(n[8:], seq)
	return n
}

func sealStream(aead cipher.AEAD, nonce, data []byte) []byte {
	ad := append([]byte{0x00}, aead.Seal(nil, fragmentNonce(nonce, 0), nil, nil)...)
	var out []byte
	seq := uint32(1)
	for len(data) > fragmentSize {
		out = aead.Seal(out, fragmentNonce(nonce, seq), data[:fragmentSize], ad)
		data, seq = data[fragmentSize:], seq+1
	}
	ad[0] = 0x80
	return aead.Seal(out, fragmentNonce(nonce, seq), data, ad)
}
