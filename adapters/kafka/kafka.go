// Package kafka is the Kafka adapter (redpanda is an alias): per world a
// topic prefix "<slice>.", a SCRAM user of the slice's name, and prefixed
// ACLs that let that user do everything on topics, consumer groups and
// transactional ids under its prefix, and nothing else. Kafka objects carry
// no comments, so the ownership marks live in a topic binky owns,
// __binky_marks: one compacted record per slice, keyed by the slice's name,
// whose value is the mark. No slice prefix can reach that topic (slice names
// never start with '_'), so a world's own credentials cannot forge a mark.
// It is the only importer of franz-go.
package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/git-binky/git-binky/adapters"
)

// MarksTopic holds binky's ownership marks: key = slice name, value =
// adapters.Mark of its owner; once torn down, retiredPrefix and the mark
// (an older binky wrote a tombstone).
const MarksTopic = "__binky_marks"

// retiredPrefix starts the mark of a slice that was torn down. Kafka ends
// no session when its user is deleted (only connections.max.reauth.ms
// makes a broker check a login again), so a process of the removed world
// that outlived it stays logged in as User:<slice>; whoever gets that name
// next gets that principal's ACLs. Another home therefore never takes a
// name this one retired (its worlds get a salted one); this home may, with
// the same derived password.
const retiredPrefix = "retired:"

// DefaultMechanism is the SASL mechanism of the admin and the worlds' users
// when the admin URL names none.
const DefaultMechanism = "SCRAM-SHA-256"

// scramIterations is what a world user's salted password is derived with:
// 4096, the default of Kafka's own tools (it accepts 4096 to 16384). kfake
// always tells clients 4096, whatever a credential was salted with.
const scramIterations = 4096

// Kafka implements adapters.Adapter and Lister.
type Kafka struct{}

// New returns the adapter.
func New() *Kafka { return &Kafka{} }

// Admin is a parsed admin URL:
// kafka://user:pw@host:port[,host:port]?mechanism=SCRAM-SHA-256.
type Admin struct {
	Brokers   []string
	User      string
	Password  string
	Mechanism string
}

// ParseAdminURL reads an admin URL. The broker list is comma-separated,
// which net/url does not parse as a host, so the authority is split here.
// mechanism is SCRAM-SHA-256 (the default), SCRAM-SHA-512 or PLAIN.
func ParseAdminURL(raw string) (Admin, error) {
	bad := func(why string) (Admin, error) {
		return Admin{}, fmt.Errorf("kafka admin_url %s: %s (want kafka://user:password@host:port[,host:port]?mechanism=SCRAM-SHA-256)",
			adapters.Redact(raw), why)
	}
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || (scheme != "kafka" && scheme != "redpanda") {
		return bad("the scheme must be kafka://")
	}
	authority, query, _ := strings.Cut(rest, "?")
	authority = strings.TrimSuffix(authority, "/")
	if strings.Contains(authority, "/") {
		return bad("it has a path; a broker list has none")
	}
	at := strings.LastIndex(authority, "@")
	if at < 0 {
		return bad("it names no SASL user; binky needs one allowed to create users and ACLs")
	}
	var a Admin
	userinfo, hosts := authority[:at], authority[at+1:]
	u, p, _ := strings.Cut(userinfo, ":")
	var err error
	if a.User, err = url.PathUnescape(u); err != nil {
		return bad("the user is not URL-encoded")
	}
	if a.Password, err = url.PathUnescape(p); err != nil {
		return bad("the password is not URL-encoded")
	}
	if a.User == "" {
		return bad("the SASL user is empty")
	}
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(h); err != nil || port == "" {
			h = net.JoinHostPort(strings.Trim(h, "[]"), "9092")
		}
		a.Brokers = append(a.Brokers, h)
	}
	if len(a.Brokers) == 0 {
		return bad("it names no broker")
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return bad("its query does not parse")
	}
	a.Mechanism = strings.ToUpper(q.Get("mechanism"))
	if a.Mechanism == "" {
		a.Mechanism = DefaultMechanism
	}
	if _, err := a.sasl(); err != nil {
		return bad(err.Error())
	}
	return a, nil
}

func (a Admin) sasl() (sasl.Mechanism, error) {
	switch a.Mechanism {
	case "SCRAM-SHA-256":
		return scram.Auth{User: a.User, Pass: a.Password}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512":
		return scram.Auth{User: a.User, Pass: a.Password}.AsSha512Mechanism(), nil
	case "PLAIN":
		return plain.Auth{User: a.User, Pass: a.Password}.AsMechanism(), nil
	}
	return nil, fmt.Errorf("mechanism %q is not one of SCRAM-SHA-256, SCRAM-SHA-512, PLAIN", a.Mechanism)
}

// worldMechanism is the SCRAM mechanism a world's user gets: the admin's
// when it is a SCRAM one, else SCRAM-SHA-256 (a PLAIN user cannot be made
// through the protocol).
func (a Admin) worldMechanism() (string, kadm.ScramMechanism) {
	if a.Mechanism == "SCRAM-SHA-512" {
		return a.Mechanism, kadm.ScramSha512
	}
	return "SCRAM-SHA-256", kadm.ScramSha256
}

// Client connects as the admin URL's user; extra options are added (a
// consumer's partitions).
func (a Admin) Client(extra ...kgo.Opt) (*kgo.Client, error) {
	mech, err := a.sasl()
	if err != nil {
		return nil, err
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(a.Brokers...), kgo.SASL(mech), kgo.DialTimeout(10 * time.Second)}, extra...)
	return kgo.NewClient(opts...)
}

func (a Admin) where() string { return strings.Join(a.Brokers, ",") }

// Prefix is the topic, group and transactional id prefix of a slice.
func Prefix(name string) string { return name + "." }

// Principal is the ACL principal of a slice's user.
func Principal(name string) string { return "User:" + name }

// session is one admin connection.
type session struct {
	admin Admin
	cl    *kgo.Client
	adm   *kadm.Client
}

func open(adminURL string) (*session, error) {
	a, err := ParseAdminURL(adminURL)
	if err != nil {
		return nil, err
	}
	cl, err := a.Client()
	if err != nil {
		return nil, fmt.Errorf("kafka at %s: %w", a.where(), err)
	}
	return &session{admin: a, cl: cl, adm: kadm.NewClient(cl)}, nil
}

func (s *session) close() { s.cl.Close() }

func (s *session) fail(what string, err error) error {
	return fmt.Errorf("kafka at %s: %s: %w", s.admin.where(), what, err)
}

// ensureMarks creates the marks topic once: one partition (one order for
// every mark), compacted (only the newest mark per slice is kept). It
// carries an ACL of its own, the admin's: a broker that lets everyone at a
// resource no ACL names (allow.everyone.if.no.acl.found=true, a common
// dev setting) then denies every world's user there, so no world can
// forge or tombstone another's mark.
func (s *session) ensureMarks(ctx context.Context) error {
	compact := "compact"
	resp, err := s.adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, MarksTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return s.fail("create the marks topic "+MarksTopic, err)
	}
	res, err := s.adm.CreateACLs(ctx, marksACL(s.admin.User))
	if err == nil {
		for _, r := range res {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		return s.fail("give the marks topic "+MarksTopic+" its ACL", err)
	}
	return nil
}

// marksACL lets the admin, alone by name, do everything on the marks topic.
func marksACL(admin string) *kadm.ACLBuilder {
	return kadm.NewACLs().Allow(Principal(admin)).AllowHosts("*").Topics(MarksTopic).
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpAll)
}

// marks reads every live mark: the newest record of each slice, tombstones
// and retirements dropping it. An absent marks topic means none.
func (s *session) marks(ctx context.Context) (map[string]adapters.Owner, error) {
	live, _, err := s.allMarks(ctx)
	return live, err
}

// allMarks reads the live marks, and the owners of slices torn down
// (retired) whose name nobody has taken since.
func (s *session) allMarks(ctx context.Context) (live, retired map[string]adapters.Owner, err error) {
	out, retired := map[string]adapters.Owner{}, map[string]adapters.Owner{}
	ends, err := s.adm.ListEndOffsets(ctx, MarksTopic)
	if err != nil {
		return nil, nil, s.fail("read the end of "+MarksTopic, err)
	}
	end, ok := ends.Lookup(MarksTopic, 0)
	if !ok || errors.Is(end.Err, kerr.UnknownTopicOrPartition) {
		return out, retired, nil
	}
	if end.Err != nil {
		return nil, nil, s.fail("read the end of "+MarksTopic, end.Err)
	}
	if end.Offset <= 0 {
		return out, retired, nil
	}
	consumer, err := s.admin.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		MarksTopic: {0: kgo.NewOffset().AtStart()},
	}), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, nil, s.fail("read "+MarksTopic, err)
	}
	defer consumer.Close()
	// Compaction can remove the records just below the end (a tombstone
	// past delete.retention.ms), so the last offset may never come: once
	// records have come, a fetch that stays empty for a second is the end.
	seen := false
	for {
		wait := 30 * time.Second
		if seen {
			wait = time.Second
		}
		pctx, cancel := context.WithTimeout(ctx, wait)
		fs := consumer.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, nil, s.fail("read "+MarksTopic, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				ferr = err
			}
		})
		if ferr != nil {
			return nil, nil, s.fail("read "+MarksTopic, ferr)
		}
		done, got := false, false
		fs.EachRecord(func(r *kgo.Record) {
			got = true
			key := string(r.Key)
			if rest, ok := strings.CutPrefix(string(r.Value), retiredPrefix); ok {
				delete(out, key)
				if o, ok := adapters.ParseMark(rest); ok {
					retired[key] = o
				}
			} else if r.Value == nil {
				delete(out, key)
			} else if o, ok := adapters.ParseMark(string(r.Value)); ok {
				out[key] = o
				delete(retired, key)
			}
			if r.Offset >= end.Offset-1 {
				done = true
			}
		})
		switch {
		case done, seen && !got:
			return out, retired, nil
		case !seen && !got:
			return nil, nil, s.fail("read "+MarksTopic, fmt.Errorf("no record came within %s though its end offset is %d", wait, end.Offset))
		}
		seen = true
	}
}

// setMark writes the slice's mark, or its retirement when retired.
func (s *session) setMark(ctx context.Context, slice string, o adapters.Owner, retired bool) error {
	rec := &kgo.Record{Topic: MarksTopic, Partition: 0, Key: []byte(slice), Value: []byte(adapters.Mark(o))}
	if retired {
		rec.Value = append([]byte(retiredPrefix), rec.Value...)
	}
	if err := s.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return s.fail("write the mark of "+slice+" to "+MarksTopic, err)
	}
	return nil
}

// prefixed lists the topics under a slice's prefix, exactly.
func (s *session) topics(ctx context.Context, prefix string) ([]string, error) {
	all, err := s.adm.ListTopics(ctx)
	if err != nil {
		return nil, s.fail("list topics", err)
	}
	var out []string
	for _, t := range all.Names() {
		if strings.HasPrefix(t, prefix) {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (s *session) groups(ctx context.Context, prefix string) ([]string, error) {
	all, err := s.adm.ListGroups(ctx)
	if err != nil {
		return nil, s.fail("list consumer groups", err)
	}
	var out []string
	for _, g := range all.Groups() {
		if strings.HasPrefix(g, prefix) {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out, nil
}

// users returns the SCRAM users that exist, with their mechanisms.
func (s *session) users(ctx context.Context) (map[string][]kadm.ScramMechanism, error) {
	d, err := s.adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		return nil, s.fail("describe SCRAM users", err)
	}
	out := map[string][]kadm.ScramMechanism{}
	for _, u := range d {
		if u.Err != nil {
			continue
		}
		for _, c := range u.CredInfos {
			out[u.User] = append(out[u.User], c.Mechanism)
		}
	}
	return out, nil
}

// worldACLs are the ACLs of a slice: its user may do everything on topics,
// groups and transactional ids under its prefix. Kafka 3.0+ (KIP-679) lets
// a producer with Write on a topic be idempotent, so no cluster ACL is
// needed.
func worldACLs(name string) *kadm.ACLBuilder {
	p := Prefix(name)
	return kadm.NewACLs().Allow(Principal(name)).AllowHosts("*").
		Topics(p).Groups(p).TransactionalIDs(p).
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpAll)
}

// principalACLs counts the ACLs naming a slice's principal, whatever they
// are on.
func (s *session) principalACLs(ctx context.Context, name string) (int, error) {
	b := kadm.NewACLs().Allow(Principal(name)).AllowHosts().Deny(Principal(name)).DenyHosts().
		AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny)
	res, err := s.adm.DescribeACLs(ctx, b)
	if err != nil {
		return 0, s.fail("describe the ACLs of "+Principal(name), err)
	}
	n := 0
	for _, r := range res {
		if r.Err != nil {
			return 0, s.fail("describe the ACLs of "+Principal(name), r.Err)
		}
		n += len(r.Described)
	}
	return n, nil
}

// foreign says why a name binky has no mark for is in use anyway: a user,
// topics, groups or ACLs made by someone else. Empty when it is free.
func (s *session) foreign(ctx context.Context, name string) (string, error) {
	users, err := s.users(ctx)
	if err != nil {
		return "", err
	}
	if _, ok := users[name]; ok {
		return "a SCRAM user " + name + " exists", nil
	}
	topics, err := s.topics(ctx, Prefix(name))
	if err != nil {
		return "", err
	}
	if len(topics) > 0 {
		return fmt.Sprintf("%d topics under %s exist", len(topics), Prefix(name)), nil
	}
	groups, err := s.groups(ctx, Prefix(name))
	if err != nil {
		return "", err
	}
	if len(groups) > 0 {
		return fmt.Sprintf("%d consumer groups under %s exist", len(groups), Prefix(name)), nil
	}
	n, err := s.principalACLs(ctx, name)
	if err != nil {
		return "", err
	}
	if n > 0 {
		return fmt.Sprintf("%d ACLs of %s exist", n, Principal(name)), nil
	}
	return "", nil
}

// Provision records the intended slice in the marks topic first, so that a
// crash afterwards leaves something gc finds, then creates the world's SCRAM
// user and its prefixed ACLs. A name in use that binky did not mark, or
// marked for another world or home, is ErrTaken.
func (k *Kafka) Provision(ctx context.Context, s adapters.Slice) error {
	ss, err := open(s.AdminURL)
	if err != nil {
		return err
	}
	defer ss.close()
	if err := ss.ensureMarks(ctx); err != nil {
		return err
	}
	marks, retired, err := ss.allMarks(ctx)
	if err != nil {
		return err
	}
	owner := s.Owner()
	if o, ok := marks[s.Name]; ok {
		if !o.Is(owner) {
			return fmt.Errorf("kafka prefix %s: %w", Prefix(s.Name), adapters.ErrTaken)
		}
	} else {
		if o, ok := retired[s.Name]; ok && o.Home != s.Home {
			return fmt.Errorf("kafka prefix %s: another home's world had this name, and a session it kept would reach this one's topics: %w", Prefix(s.Name), adapters.ErrTaken)
		}
		why, err := ss.foreign(ctx, s.Name)
		if err != nil {
			return err
		}
		if why != "" {
			return fmt.Errorf("kafka prefix %s (%s, not made by binky): %w", Prefix(s.Name), why, adapters.ErrTaken)
		}
		if err := ss.setMark(ctx, s.Name, owner, false); err != nil {
			return err
		}
		// Two homes racing for one name both wrote: the newest mark is the
		// one that stays, so read it back before making anything.
		if marks, err = ss.marks(ctx); err != nil {
			return err
		}
		if o := marks[s.Name]; !o.Is(owner) {
			return fmt.Errorf("kafka prefix %s: %w", Prefix(s.Name), adapters.ErrTaken)
		}
	}
	_, mech := ss.admin.worldMechanism()
	altered, err := ss.adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{
		User: s.Name, Mechanism: mech, Iterations: scramIterations, Password: s.Password,
	}})
	if err == nil {
		err = altered.Error()
	}
	if err != nil {
		return ss.fail("create the SCRAM user "+s.Name, err)
	}
	res, err := ss.adm.CreateACLs(ctx, worldACLs(s.Name))
	if err == nil {
		for _, r := range res {
			if r.Err != nil {
				err = r.Err
				break
			}
		}
	}
	if err != nil {
		return ss.fail("create the ACLs of "+Principal(s.Name), err)
	}
	// The user must be held to its ACLs. A broker's super.users names
	// principals whatever they log in with (PLAIN, mTLS, OAuth: no SCRAM
	// credential foreign() could see), so a world named like one became a
	// superuser; and a broker that allows everyone where no ACL names a
	// resource (allow.everyone.if.no.acl.found=true) lets every world at
	// the cluster: grant itself any topic, change any user's password.
	free, err := ss.confined(ctx, s.Name, s.Password)
	if err != nil {
		return err
	}
	if free {
		open, perr := ss.brokerOpen(ctx)
		if terr := k.Teardown(ctx, s); terr != nil {
			return fmt.Errorf("kafka user %s may act on the whole cluster, and undoing it failed: %w", s.Name, terr)
		}
		switch {
		case perr != nil:
			return perr
		case open:
			return fmt.Errorf("kafka at %s lets any user act on the cluster where no ACL names it (allow.everyone.if.no.acl.found=true?): "+
				"a world could grant itself every topic; set it to false, or give worlds a broker of their own", ss.admin.where())
		}
		return fmt.Errorf("kafka principal %s is a superuser on this broker (super.users): %w", Principal(s.Name), adapters.ErrTaken)
	}
	return nil
}

// confined reports whether the SCRAM user is refused what only the
// cluster's admins may do (describing every ACL), logging in as it.
func (s *session) confined(ctx context.Context, user, password string) (free bool, err error) {
	a := s.admin
	a.Mechanism, _ = s.admin.worldMechanism()
	a.User, a.Password = user, password
	cl, err := a.Client(kgo.RequestRetries(1), kgo.RetryTimeout(10*time.Second))
	if err != nil {
		return false, s.fail("log in as "+user, err)
	}
	defer cl.Close()
	describe := func() error {
		res, err := kadm.NewClient(cl).DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().
			ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
		if err == nil {
			for _, r := range res {
				if r.Err != nil {
					err = r.Err
				}
			}
		}
		return err
	}
	// A new SCRAM credential reaches a cluster's other brokers a moment
	// later: a login refused right after it was made is asked again.
	err = describe()
	for deadline := time.Now().Add(5 * time.Second); errors.Is(err, kerr.SaslAuthenticationFailed) && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		err = describe()
	}
	var ae *kadm.AuthError
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, kerr.ClusterAuthorizationFailed), errors.As(err, &ae):
		return false, nil
	}
	return false, s.fail("check what "+user+" may do", err)
}

// brokerOpen reports whether a user that no ACL names may act on the
// cluster: a throwaway SCRAM user is made, asked, and dropped.
func (s *session) brokerOpen(ctx context.Context) (bool, error) {
	var b [8]byte
	rand.Read(b[:])
	user, pw := "binky_probe_"+hex.EncodeToString(b[:4]), hex.EncodeToString(b[:])+"-probe"
	_, mech := s.admin.worldMechanism()
	res, err := s.adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: mech, Iterations: scramIterations, Password: pw}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return false, s.fail("make a throwaway user to ask the broker", err)
	}
	defer s.adm.AlterUserSCRAMs(context.WithoutCancel(ctx), []kadm.DeleteSCRAM{{User: user, Mechanism: mech}}, nil)
	return s.confined(ctx, user, pw)
}

// Resolve returns the world's address: its brokers, prefix and SCRAM user.
func (k *Kafka) Resolve(ctx context.Context, s adapters.Slice) (adapters.Address, error) {
	a, err := ParseAdminURL(s.AdminURL)
	if err != nil {
		return nil, err
	}
	mech, _ := a.worldMechanism()
	host, port, _ := net.SplitHostPort(a.Brokers[0])
	brokers := strings.Join(a.Brokers, ",")
	u := "kafka://" + url.UserPassword(s.Name, s.Password).String() + "@" + brokers + "?mechanism=" + mech
	return adapters.Address{
		"url": u, "brokers": brokers, "host": host, "port": port, "prefix": Prefix(s.Name),
		"user": s.Name, "password": s.Password, "mechanism": mech,
	}, nil
}

// Teardown deletes, only when the mark names s.World and s.Home, every
// topic and consumer group under the slice's prefix (matched on that
// prefix only), the slice's ACLs and its SCRAM user, and last the mark, so
// that a teardown cut short is found again by gc.
func (k *Kafka) Teardown(ctx context.Context, s adapters.Slice) error {
	ss, err := open(s.AdminURL)
	if err != nil {
		return err
	}
	defer ss.close()
	marks, err := ss.marks(ctx)
	if err != nil {
		return err
	}
	if o, ok := marks[s.Name]; !ok || !o.Is(s.Owner()) {
		return fmt.Errorf("kafka prefix %s: %w", Prefix(s.Name), adapters.ErrNotOurs)
	}
	prefix := Prefix(s.Name)
	// The user and its rights go first: nothing can write a new topic
	// while its siblings are deleted.
	users, err := ss.users(ctx)
	if err != nil {
		return err
	}
	var del []kadm.DeleteSCRAM
	for _, m := range users[s.Name] {
		del = append(del, kadm.DeleteSCRAM{User: s.Name, Mechanism: m})
	}
	if len(del) > 0 {
		altered, err := ss.adm.AlterUserSCRAMs(ctx, del, nil)
		if err == nil {
			err = altered.Error()
		}
		if err != nil {
			return ss.fail("delete the SCRAM user "+s.Name, err)
		}
	}
	res, err := ss.adm.DeleteACLs(ctx, worldACLs(s.Name))
	if err == nil {
		for _, r := range res {
			if r.Err != nil {
				err = r.Err
				break
			}
		}
	}
	if err != nil {
		return ss.fail("delete the ACLs of "+Principal(s.Name), err)
	}
	topics, err := ss.topics(ctx, prefix)
	if err != nil {
		return err
	}
	if len(topics) > 0 {
		resp, err := ss.adm.DeleteTopics(ctx, topics...)
		if err == nil {
			err = resp.Error()
		}
		if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return ss.fail("delete the topics under "+prefix, err)
		}
	}
	groups, err := ss.groups(ctx, prefix)
	if err != nil {
		return err
	}
	if len(groups) > 0 {
		resp, err := ss.adm.DeleteGroups(ctx, groups...)
		if err == nil {
			err = resp.Error()
		}
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return ss.fail("delete the consumer groups under "+prefix, err)
		}
	}
	return ss.setMark(ctx, s.Name, s.Owner(), true)
}

// List returns, for every slice binky marked, its prefix, and its SCRAM
// user and ACLs where they exist.
func (k *Kafka) List(ctx context.Context, adminURL string) ([]adapters.Owned, error) {
	ss, err := open(adminURL)
	if err != nil {
		return nil, err
	}
	defer ss.close()
	marks, err := ss.marks(ctx)
	if err != nil {
		return nil, err
	}
	if len(marks) == 0 {
		return nil, nil
	}
	users, err := ss.users(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(marks))
	for n := range marks {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []adapters.Owned
	for _, n := range names {
		o := marks[n]
		out = append(out, adapters.Owned{Slice: n, Kind: "prefix", Name: Prefix(n), Owner: o})
		if _, ok := users[n]; ok {
			out = append(out, adapters.Owned{Slice: n, Kind: "user", Name: n, Owner: o})
		}
		acls, err := ss.principalACLs(ctx, n)
		if err != nil {
			return nil, err
		}
		if acls > 0 {
			out = append(out, adapters.Owned{Slice: n, Kind: "acls", Name: Principal(n), Owner: o})
		}
	}
	return out, nil
}

// Capabilities: no server-side clone; lists its slices.
func (k *Kafka) Capabilities() adapters.Capabilities { return adapters.Capabilities{List: true} }

var (
	_ adapters.Adapter = (*Kafka)(nil)
	_ adapters.Lister  = (*Kafka)(nil)
)
