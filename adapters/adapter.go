package adapters

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/git-binky/git-binky/world"
)

// Slice is one world's share of a server: a database, a key prefix, ...
type Slice struct {
	// Name is the slice's identifier on the server: lowercase letters,
	// digits and '_', at most 63 bytes (SliceName makes one). Adapters with
	// stricter rules (S3 buckets, MySQL users) fold it further themselves.
	Name string
	// World is the id of the world it belongs to, and Home the stable id
	// of the BINKY_HOME that made it (world.Home.ID). Both are written into
	// the ownership mark; only a slice marked with both is ever dropped.
	World string
	Home  string
	// AdminURL reaches the server with rights to create and drop slices.
	AdminURL string
	// Password is the slice's own credential, derived by binky from a
	// machine secret so that it can be derived again, never stored.
	Password string
	// Config is the service's [options] table, for the adapter.
	Config map[string]any
	// Template says the slice is a golden template: built once, then
	// copied for every world's slice. An adapter may make it the way that
	// makes those copies cheapest.
	Template bool
}

// Owner returns who the slice's mark must name.
func (s Slice) Owner() Owner { return Owner{World: s.World, Home: s.Home} }

// Address is how a world reaches its slice: url, host, port, name, user,
// password, prefix... whichever the adapter has. It becomes ${svc.url} etc.
type Address map[string]string

// IsolationNone is the value of an address's "isolation" field when the
// server cannot keep worlds apart (no users or access control there), so the
// world reaches its slice with the admin's credentials: status says so, and
// the conformance suite then allows the admin's password in the world's url.
const IsolationNone = "none"

// Capabilities are what an adapter can do beyond the four verbs.
type Capabilities struct {
	Clone bool `json:"clone"`
	List  bool `json:"list"`
}

// Adapter carves slices out of one kind of server.
//
// Every object an adapter creates (database, role, user, bucket, vhost,
// ACL...) carries an ownership mark naming the world and the home, kept
// where the world's own credentials cannot rewrite it; Lister finds every
// one of them, so that gc can drop what a crash left.
type Adapter interface {
	// Provision creates the slice. It is idempotent for a slice that is
	// already the world's; it fails with ErrTaken for a name that exists
	// and is not marked as this world's of this home (an object binky did
	// not create is never taken over).
	Provision(ctx context.Context, s Slice) error
	Resolve(ctx context.Context, s Slice) (Address, error)
	// Teardown destroys the slice, only if its mark names s.World and
	// s.Home; an unmarked slice, or another's, is left alone (ErrNotOurs).
	Teardown(ctx context.Context, s Slice) error
	Capabilities() Capabilities
}

// Cloner is an adapter that can create a slice as a copy of another
// (a golden template), server-side.
type Cloner interface {
	Clone(ctx context.Context, template string, s Slice) error
}

// Owned is one object an adapter made on a server, as List finds it.
type Owned struct {
	// Slice is the slice the object belongs to: what Teardown is called
	// with to drop it.
	Slice string `json:"slice"`
	// Kind and Name say what the object is: "database" "acme_x", "role"
	// "acme_x", "user" ..., for messages.
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Owner Owner  `json:"owner"`
	// Unmarked is an object that may be a slice's whose mark is gone (a
	// Redis user whose marker key a server killed before it saved lost):
	// Owner is empty, and only a CredentialChecker can tell whether it is
	// a home's, by the password that home derives for Slice.
	Unmarked bool `json:"unmarked,omitempty"`
}

// Sparer is a Cloner that copies a template ahead of its next clone (a
// spare, which that clone renames): MakeSpare starts the copy of template
// in the background, unless one is being made or ready. The first clone of
// a template starts one itself; a template built off any up's path asks
// for its first here, so that no up waits for it.
type Sparer interface {
	MakeSpare(adminURL, template string)
	// HasSpare reports whether template has a spare, or one is being
	// made here: whether its next clone would rename one rather than
	// start one and wait for its whole copy.
	HasSpare(ctx context.Context, adminURL, template string) (bool, error)
}

// Lister is an adapter that can list every object binky marked on a
// server, databases and the roles or users beside them, for gc.
type Lister interface {
	List(ctx context.Context, adminURL string) ([]Owned, error)
}

// CredentialChecker is a Lister whose unmarked objects are recognised by
// their credential: HasCredential reports whether slice s's object on the
// server has s.Password, the one its home derives for it.
type CredentialChecker interface {
	HasCredential(ctx context.Context, s Slice) (bool, error)
}

// SpareSuffix ends the name of a template's spare, its next clone made
// ahead (postgres, mysql). A spare carries its template's mark, so gc tells
// it by this name.
const SpareSuffix = "_spare"

// Sentinel errors.
var (
	ErrTaken   = errors.New("a slice of that name exists and belongs to another world")
	ErrNotOurs = errors.New("not marked as this world's: left alone")
	// ErrKept is what a Teardown returns (through Kept) when it dropped
	// the slice but kept an object beside it that binky cannot prove it
	// made: a user of the slice's name with another password, say. The
	// error says what was kept and how to drop it by hand.
	ErrKept = errors.New("dropped, with an object beside it kept")
)

// Kept returns an error that is ErrKept and reads as the message alone,
// which names what was dropped, what was kept, why, and what to do.
func Kept(format string, args ...any) error {
	return keptError(fmt.Sprintf(format, args...))
}

type keptError string

func (e keptError) Error() string        { return string(e) }
func (e keptError) Is(target error) bool { return target == ErrKept }

// Owner is who an ownership mark names: a world of one home. A mark written
// before homes were recorded has an empty Home (Legacy).
type Owner struct {
	World string `json:"world"`
	Home  string `json:"home,omitempty"`
}

// Legacy reports a mark that names no home: written by an older binky.
func (o Owner) Legacy() bool { return o.Home == "" }

// Is reports whether o is exactly the owner want: same world, same home.
func (o Owner) Is(want Owner) bool { return o.World == want.World && o.Home == want.Home }

const markPrefix = "binky:world="

// Mark is the text of an ownership mark: "binky:world=<world>;home=<home>".
// World and home ids are hex (or "golden"), so a mark holds only
// [a-z0-9:=;_-].
func Mark(o Owner) string {
	if o.Home == "" {
		return markPrefix + o.World
	}
	return markPrefix + o.World + ";home=" + o.Home
}

// ParseMark reads a mark; ok is false if the text is not binky's. The older
// form "binky:world=<world>" reads with an empty Home.
func ParseMark(s string) (o Owner, ok bool) {
	rest, found := strings.CutPrefix(strings.TrimSpace(s), markPrefix)
	if !found || rest == "" {
		return Owner{}, false
	}
	w, h, _ := strings.Cut(rest, ";home=")
	if w == "" {
		return Owner{}, false
	}
	return Owner{World: w, Home: h}, true
}

// SliceName makes the slice name of a world: <project>_<worktree>, folded to
// [a-z0-9_] and at most 63 bytes. A name that had to be cut gets a short
// hash of the world, so two long names with one prefix stay apart; salt > 0
// (after ErrTaken: another world's name folded to the same) adds it too.
func SliceName(project, worktree, world string, salt int) string {
	return FoldName(project+"_"+worktree, world, salt, 63)
}

// FoldName folds s to [a-z0-9_], at most max bytes, not starting with a
// digit; a name that had to be cut, or salt > 0, gets a short hash of key
// and salt. Adapters with shorter limits (a MySQL user: 32) use it with
// their own max.
func FoldName(s, key string, salt, max int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
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
	if len(name) > max || salt > 0 {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d", key, salt)))
		suffix := "_" + hex.EncodeToString(sum[:4])
		if len(name) > max-len(suffix) {
			name = strings.TrimRight(name[:max-len(suffix)], "_")
		}
		name += suffix
	}
	return name
}

// Password derives a slice's password from the machine secret: the same
// slice always gets the same one, and nothing else can compute it. Records
// never store it: world.Home.SliceAddress derives it again.
func Password(secret []byte, kind, slice string) string {
	return world.DerivePassword(secret, kind, slice)
}

// ParseURL is url.Parse without the URL in its error: url.Error quotes
// the whole input, password and all, and parse errors reach the user and
// the daemon's log.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	return u, URLError(err)
}

// URLError is err with any *url.Error's quoted URL left out, its reason
// kept.
func URLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// Redact hides what a URL holds of credentials, for messages and logs: the
// password, parameters that name a key, token or password, and any
// credentials of a URL in a parameter.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable URL)"
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k, vs := range q {
			for i, v := range vs {
				switch {
				case secretParam(k):
					vs[i] = "xxxxx"
				case strings.Contains(v, "://"):
					vs[i] = Redact(v) // a URL in a parameter (FerretDB's postgres=)
				case strings.Contains(v, "@"):
					vs[i] = "xxxxx" + v[strings.LastIndex(v, "@"):]
				}
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// secretParam reports whether a URL parameter of this name holds a
// credential (qdrant's api_key, a token, a password).
func secretParam(name string) bool {
	n := strings.ToLower(strings.ReplaceAll(name, "-", "_"))
	if n == "auth" || n == "authorization" {
		return true
	}
	for _, s := range []string{"key", "token", "secret", "password", "passwd", "pwd", "pass", "credential", "signature"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
