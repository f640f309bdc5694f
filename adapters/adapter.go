package adapters

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Slice is one world's share of a server: a database, a key prefix, ...
type Slice struct {
	// Name is the slice's identifier on the server: lowercase letters,
	// digits and '_', at most 63 bytes (SliceName makes one).
	Name string
	// World is the id of the world it belongs to; it is written into the
	// ownership mark, and only a slice marked with it is ever dropped.
	World string
	// AdminURL reaches the server with rights to create and drop slices.
	AdminURL string
	// Password is the slice's own credential, derived by binky from a
	// machine secret so that it can be derived again, never stored.
	Password string
	// Config is the service's [options] table, for the adapter.
	Config map[string]any
}

// Address is how a world reaches its slice: url, host, port, name, user,
// password, prefix... whichever the adapter has. It becomes ${svc.url} etc.
type Address map[string]string

// Capabilities are what an adapter can do beyond the four verbs.
type Capabilities struct {
	Clone bool `json:"clone"`
	List  bool `json:"list"`
}

// Adapter carves slices out of one kind of server.
type Adapter interface {
	// Provision creates the slice. It is idempotent for a slice that is
	// already the world's; it fails with ErrTaken for a name that exists
	// and is not.
	Provision(ctx context.Context, s Slice) error
	Resolve(ctx context.Context, s Slice) (Address, error)
	// Teardown destroys the slice, only if its mark says binky made it for
	// s.World; an unmarked slice is left alone (ErrNotOurs).
	Teardown(ctx context.Context, s Slice) error
	Capabilities() Capabilities
}

// Cloner is an adapter that can create a slice as a copy of another
// (a golden template), server-side.
type Cloner interface {
	Clone(ctx context.Context, template string, s Slice) error
}

// Lister is an adapter that can list the slices binky marked on a server,
// for gc: name → world id.
type Lister interface {
	List(ctx context.Context, adminURL string) (map[string]string, error)
}

// Sentinel errors.
var (
	ErrTaken   = errors.New("a slice of that name exists and belongs to another world")
	ErrNotOurs = errors.New("not marked as binky's: left alone")
)

// Mark is what an ownership mark holds.
func Mark(world string) string { return "binky:world=" + world }

// ParseMark returns the world id of a mark, or "" if it is not binky's.
func ParseMark(s string) string {
	w, ok := strings.CutPrefix(strings.TrimSpace(s), "binky:world=")
	if !ok {
		return ""
	}
	return w
}

// SliceName makes the slice name of a world: <project>_<worktree>, folded to
// [a-z0-9_] and at most 63 bytes. A name that had to be cut gets a short
// hash of the world, so two long names with one prefix stay apart; salt > 0
// (after ErrTaken: another world's name folded to the same) adds it too.
func SliceName(project, worktree, world string, salt int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(project + "_" + worktree) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := strings.Trim(b.String(), "_")
	for strings.Contains(name, "__") {
		name = strings.ReplaceAll(name, "__", "_")
	}
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		name = "w_" + name
	}
	if len(name) > 63 || salt > 0 {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d", world, salt)))
		suffix := "_" + hex.EncodeToString(sum[:4])
		if len(name) > 63-len(suffix) {
			name = strings.TrimRight(name[:63-len(suffix)], "_")
		}
		name += suffix
	}
	return name
}

// Password derives a slice's password from the machine secret: the same
// slice always gets the same one, and nothing else can compute it.
func Password(secret []byte, kind, slice string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(kind + "\x00" + slice))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// Redact hides the password of a URL, for messages and logs.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}
