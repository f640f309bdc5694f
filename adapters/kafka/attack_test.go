package kafka

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/git-binky/git-binky/adapters"
)

// world is one world's slice and a client logged in as its own user.
type world struct {
	s   adapters.Slice
	cl  *kgo.Client
	adm *kadm.Client
}

func worldClient(t *testing.T, s adapters.Slice, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	addr, err := New().Resolve(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if addr["mechanism"] != "SCRAM-SHA-256" {
		t.Fatalf("mechanism %q", addr["mechanism"])
	}
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(strings.Split(addr["brokers"], ",")...),
		kgo.SASL(scram.Auth{User: addr["user"], Pass: addr["password"]}.AsSha256Mechanism()),
		kgo.RequestRetries(0), kgo.RetryTimeout(2 * time.Second),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// eachBroker runs an attack against every broker of brokers(t): kfake, and
// the real one of BINKY_TEST_KAFKA when it is set.
func eachBroker(t *testing.T, attack func(t *testing.T, adminURL string)) {
	for name, u := range brokers(t) {
		t.Run(name, func(t *testing.T) { attack(t, u) })
	}
}

// twoWorlds provisions A and B (named afresh for each run, so a real broker
// can be used again); B has a topic with a record in it and a consumer group
// that committed an offset. Both are torn down after the test.
func twoWorlds(t *testing.T, adminURL string) (a, b world, pa, pb string) {
	ctx := context.Background()
	run := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	for i, name := range []string{"atk_a_" + run, "atk_b_" + run} {
		s := adapters.Slice{Name: name, World: "w-" + name, Home: "h", AdminURL: adminURL, Password: "pw-" + name}
		if err := New().Provision(ctx, s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { New().Teardown(context.Background(), s) })
		cl := worldClient(t, s)
		w := world{s: s, cl: cl, adm: kadm.NewClient(cl)}
		if i == 0 {
			a = w
		} else {
			b = w
		}
	}
	pa, pb = Prefix(a.s.Name), Prefix(b.s.Name)
	if _, err := b.adm.CreateTopic(ctx, 1, -1, nil, pb+"events"); err != nil {
		t.Fatalf("B cannot create a topic under its own prefix: %v", err)
	}
	if err := b.cl.ProduceSync(ctx, &kgo.Record{Topic: pb + "events", Value: []byte("b's secret")}).FirstErr(); err != nil {
		t.Fatalf("B cannot produce to its own topic: %v", err)
	}
	if err := b.adm.CommitAllOffsets(ctx, pb+"workers", kadm.OffsetsFromRecords(kgo.Record{Topic: pb + "events", Partition: 0, Offset: 0})); err != nil {
		t.Fatalf("B cannot commit in its own group: %v", err)
	}
	return a, b, pa, pb
}

func denied(err error) bool {
	for _, e := range []error{kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed,
		kerr.TransactionalIDAuthorizationFailed} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ae *kadm.AuthError
	return errors.As(err, &ae)
}

func TestAWorldCannotProduceToOrConsumeFromAnotherWorldsTopics(t *testing.T) {
	eachBroker(t, func(t *testing.T, adminURL string) {
		a, _, pa, pb := twoWorlds(t, adminURL)
		ctx := context.Background()
		err := a.cl.ProduceSync(ctx, &kgo.Record{Topic: pb + "events", Value: []byte("a's")}).FirstErr()
		if !denied(err) {
			t.Errorf("A producing to B's topic: %v, want an authorization error", err)
		}
		consumer := worldClient(t, a.s, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{pb + "events": {0: kgo.NewOffset().AtStart()}}))
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		fs := consumer.PollFetches(pctx)
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if ferr == nil || !errors.Is(ferr, context.DeadlineExceeded) {
				ferr = err
			}
		})
		fs.EachRecord(func(r *kgo.Record) { t.Errorf("A read B's record %q", r.Value) })
		if !denied(ferr) && !errors.Is(ferr, context.DeadlineExceeded) {
			t.Errorf("A consuming B's topic: %v, want an authorization error or nothing", ferr)
		}
		// A listing topics does not see B's.
		topics, err := a.adm.ListTopics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range topics.Names() {
			if !strings.HasPrefix(name, pa) {
				t.Errorf("A sees the topic %s", name)
			}
		}
	})
}

func TestAWorldCannotJoinOrReadAnotherWorldsGroups(t *testing.T) {
	eachBroker(t, func(t *testing.T, adminURL string) {
		a, _, pa, pb := twoWorlds(t, adminURL)
		ctx := context.Background()
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = pb+"workers", "consumer", 10000, 10000
		proto := kmsg.NewJoinGroupRequestProtocol()
		proto.Name = "range"
		join.Protocols = append(join.Protocols, proto)
		resp, err := join.RequestWith(ctx, a.cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if !denied(err) {
			t.Errorf("A joining B's group: %v, want GROUP_AUTHORIZATION_FAILED", err)
		}
		if _, err := a.adm.FetchOffsets(ctx, pb+"workers"); !denied(err) {
			t.Errorf("A reading B's group offsets: %v, want an authorization error", err)
		}
		// On a topic of its own, so that only the group is B's.
		if _, err := a.adm.CreateTopic(ctx, 1, -1, nil, pa+"events"); err != nil {
			t.Fatal(err)
		}
		err = a.adm.CommitAllOffsets(ctx, pb+"workers", kadm.OffsetsFromRecords(kgo.Record{Topic: pa + "events", Partition: 0, Offset: 0}))
		if !denied(err) {
			t.Errorf("A committing in B's group: %v, want an authorization error", err)
		}
		if _, err := a.adm.DeleteGroup(ctx, pb+"workers"); !denied(err) {
			t.Errorf("A deleting B's group: %v, want an authorization error", err)
		}
		// Its own group is fine: the refusals are about B's.
		if err := a.adm.CommitAllOffsets(ctx, pa+"workers", kadm.OffsetsFromRecords(kgo.Record{Topic: pa + "events", Partition: 0, Offset: 0})); err != nil {
			t.Errorf("A cannot commit in its own group: %v", err)
		}
	})
}

func TestAWorldCannotCreateTopicsOutsideItsPrefix(t *testing.T) {
	eachBroker(t, func(t *testing.T, adminURL string) {
		a, _, pa, pb := twoWorlds(t, adminURL)
		ctx := context.Background()
		for _, topic := range []string{"global", pb + "new", a.s.Name, a.s.Name + "b.x", MarksTopic + "2"} {
			resp, err := a.adm.CreateTopic(ctx, 1, -1, nil, topic)
			if err == nil {
				err = resp.Err
			}
			if !denied(err) {
				t.Errorf("A creating topic %q: %v, want an authorization error", topic, err)
			}
		}
		if resp, err := a.adm.CreateTopic(ctx, 1, -1, nil, pa+"mine"); err != nil || resp.Err != nil {
			t.Errorf("A cannot create a topic under its own prefix: %v %v", err, resp.Err)
		}
		if resp, err := a.adm.DeleteTopic(ctx, pb+"events"); !denied(err) && !denied(resp.Err) {
			t.Errorf("A deleting B's topic: %v %v, want an authorization error", err, resp.Err)
		}
	})
}

func TestAWorldCannotDescribeOrChangeACLsUsersOrMarks(t *testing.T) {
	eachBroker(t, func(t *testing.T, adminURL string) {
		a, b, _, pb := twoWorlds(t, adminURL)
		ctx := context.Background()
		described, err := a.adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
		if err == nil {
			for _, d := range described {
				if err = d.Err; err == nil && len(d.Described) > 0 {
					t.Errorf("A sees %d ACLs", len(d.Described))
				}
			}
		}
		if !denied(err) {
			t.Errorf("A describing ACLs: %v, want an authorization error", err)
		}
		grab := kadm.NewACLs().Allow(Principal(a.s.Name)).Topics(Prefix(b.s.Name)).ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpAll)
		res, err := a.adm.CreateACLs(ctx, grab)
		if err == nil && (len(res) == 0 || res[0].Err == nil) {
			t.Error("A granted itself B's prefix")
		} else if err == nil && !denied(res[0].Err) {
			t.Errorf("A granting itself B's prefix: %v, want an authorization error", res[0].Err)
		}
		dres, err := a.adm.DeleteACLs(ctx, worldACLs(b.s.Name))
		if err == nil {
			for _, r := range dres {
				if r.Err == nil && len(r.Deleted) > 0 {
					t.Error("A deleted B's ACLs")
				}
			}
		}
		altered, err := a.adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: b.s.Name, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "stolen"}})
		if err == nil {
			err = altered.Error()
		}
		if !denied(err) {
			t.Errorf("A changing B's password: %v, want an authorization error", err)
		}
		if _, err := a.adm.DescribeUserSCRAMs(ctx); !denied(err) {
			t.Errorf("A listing SCRAM users: %v, want an authorization error", err)
		}
		// A cannot forge a mark for B's slice, nor read the marks.
		forged := adapters.Mark(a.s.Owner())
		err = a.cl.ProduceSync(ctx, &kgo.Record{Topic: MarksTopic, Key: []byte(b.s.Name), Value: []byte(forged)}).FirstErr()
		if !denied(err) {
			t.Errorf("A writing to %s: %v, want an authorization error", MarksTopic, err)
		}
		marks := worldClient(t, a.s, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{MarksTopic: {0: kgo.NewOffset().AtStart()}}))
		mctx, mcancel := context.WithTimeout(ctx, 3*time.Second)
		defer mcancel()
		mfs := marks.PollFetches(mctx)
		mfs.EachRecord(func(r *kgo.Record) { t.Errorf("A read the mark of %s", r.Key) })
		for _, fe := range mfs.Errors() {
			if !denied(fe.Err) && !errors.Is(fe.Err, context.DeadlineExceeded) {
				t.Errorf("A reading %s: %v, want an authorization error or nothing", MarksTopic, fe.Err)
			}
		}
		// Everything of B's is still B's: its mark, its user (it still logs
		// in with its own password) and its record.
		imposter := b.s
		imposter.World = a.s.World
		if err := New().Teardown(ctx, imposter); !errors.Is(err, adapters.ErrNotOurs) {
			t.Errorf("B's slice torn down in A's name: %v", err)
		}
		reader := worldClient(t, b.s, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{pb + "events": {0: kgo.NewOffset().AtStart()}}))
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		fs := reader.PollFetches(pctx)
		if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "b's secret" {
			t.Errorf("B reads %d records (errors %v), want its one", len(recs), fs.Errors())
		}
	})
}

// Teardown drops the world's topics, groups, ACLs, user and mark, and
// nothing of another world's.
func TestTeardownDropsEverythingOfTheWorldAndNothingElse(t *testing.T) {
	eachBroker(t, func(t *testing.T, adminURL string) {
		a, b, pa, pb := twoWorlds(t, adminURL)
		ctx := context.Background()
		if _, err := a.adm.CreateTopic(ctx, 1, -1, nil, pa+"jobs"); err != nil {
			t.Fatal(err)
		}
		if err := a.adm.CommitAllOffsets(ctx, pa+"g", kadm.OffsetsFromRecords(kgo.Record{Topic: pa + "jobs", Partition: 0, Offset: 0})); err != nil {
			t.Fatal(err)
		}
		if err := New().Teardown(ctx, a.s); err != nil {
			t.Fatal(err)
		}
		ss, err := open(adminURL)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.close()
		if ts, _ := ss.topics(ctx, pa); len(ts) != 0 {
			t.Errorf("A's topics left: %v", ts)
		}
		if gs, _ := ss.groups(ctx, pa); len(gs) != 0 {
			t.Errorf("A's groups left: %v", gs)
		}
		if n, _ := ss.principalACLs(ctx, a.s.Name); n != 0 {
			t.Errorf("%d ACLs of A left", n)
		}
		users, _ := ss.users(ctx)
		if _, ok := users[a.s.Name]; ok {
			t.Error("A's user left")
		}
		if _, ok := users[b.s.Name]; !ok {
			t.Error("B's user dropped")
		}
		if ts, _ := ss.topics(ctx, pb); len(ts) != 1 {
			t.Errorf("B's topics: %v", ts)
		}
		found, err := New().List(ctx, adminURL)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]bool{}
		for _, o := range found {
			if o.Slice == a.s.Name {
				t.Errorf("%s %s of A still listed", o.Kind, o.Name)
			}
			if o.Slice == b.s.Name {
				kinds[o.Kind] = true
			}
		}
		if !kinds["prefix"] || !kinds["user"] || !kinds["acls"] {
			t.Errorf("B listed as %v, want its prefix, user and ACLs", kinds)
		}
	})
}

// The marks topic names its admin in an ACL of its own: on a broker that
// lets everyone at a resource no ACL names (allow.everyone.if.no.acl.found),
// that ACL is what keeps every world's user out of it.
func TestTheMarksTopicCarriesTheAdminsACL(t *testing.T) {
	eachBroker(t, func(t *testing.T, adminURL string) {
		twoWorlds(t, adminURL)
		ss, err := open(adminURL)
		if err != nil {
			t.Fatal(err)
		}
		defer ss.close()
		res, err := ss.adm.DescribeACLs(context.Background(), marksACL(ss.admin.User))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			n += len(r.Described)
		}
		if n == 0 {
			t.Fatalf("no ACL names %s on %s", Principal(ss.admin.User), MarksTopic)
		}
	})
}

// Kafka ends no session when its user is deleted: a process of a removed
// world that outlived it stays User:<slice>. Another home must not then
// get that name (and that principal's ACLs) for a world of its own; the
// daemon gives that world a salted name. The same home may take it back.
func TestAnotherHomeNeverTakesANameARemovedWorldHeld(t *testing.T) {
	eachBroker(t, func(t *testing.T, u string) {
		ctx := context.Background()
		name := "retired_" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
		mine := adapters.Slice{Name: name, World: "w-1", Home: "home-a", AdminURL: u, Password: "pw-a"}
		if err := New().Provision(ctx, mine); err != nil {
			t.Fatal(err)
		}
		kept := worldClient(t, mine) // the session that outlives the world
		if err := kept.ProduceSync(ctx, &kgo.Record{Topic: Prefix(name) + "x", Value: []byte("a")}).FirstErr(); err != nil &&
			!errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Logf("first produce: %v", err)
		}
		if err := New().Teardown(ctx, mine); err != nil {
			t.Fatal(err)
		}
		theirs := adapters.Slice{Name: name, World: "w-2", Home: "home-b", AdminURL: u, Password: "pw-b"}
		if err := New().Provision(ctx, theirs); !errors.Is(err, adapters.ErrTaken) {
			if err == nil {
				New().Teardown(context.Background(), theirs)
			}
			t.Fatalf("another home provisioned a name a removed world held: %v, want ErrTaken", err)
		}
		again := adapters.Slice{Name: name, World: "w-3", Home: "home-a", AdminURL: u, Password: "pw-a"}
		if err := New().Provision(ctx, again); err != nil {
			t.Fatalf("the same home taking its retired name back: %v", err)
		}
		if err := New().Teardown(ctx, again); err != nil {
			t.Fatal(err)
		}
	})
}

// A broker's superusers are principals, whatever they log in with: a
// world named like one (here a PLAIN superuser, which has no SCRAM
// credential binky could see) was a superuser. Its name is now refused
// (the daemon salts it) and nothing of it is left; another name works.
func TestANameTheBrokerTreatsAsASuperuserIsNeverAWorlds(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin-secret"), kfake.Superuser("PLAIN", "acme_ops", "ops-secret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	u := "kafka://admin:admin-secret@" + strings.Join(c.ListenAddrs(), ",") + "?mechanism=SCRAM-SHA-256"
	ctx := context.Background()
	s := adapters.Slice{Name: "acme_ops", World: "w-ops", Home: "h", AdminURL: u, Password: "pw-ops"}
	if err := New().Provision(ctx, s); !errors.Is(err, adapters.ErrTaken) {
		t.Fatalf("provision of a superuser's name: %v, want ErrTaken", err)
	}
	ss, err := open(u)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.close()
	if users, err := ss.users(ctx); err != nil || users["acme_ops"] != nil {
		t.Errorf("the SCRAM user binky made is still there (%v)", err)
	}
	if n, err := ss.principalACLs(ctx, "acme_ops"); err != nil || n != 0 {
		t.Errorf("%d ACLs of the superuser's principal left (%v)", n, err)
	}
	ok := adapters.Slice{Name: "acme_w1", World: "w-1", Home: "h", AdminURL: u, Password: "pw-1"}
	if err := New().Provision(ctx, ok); err != nil {
		t.Fatalf("an ordinary name beside it: %v", err)
	}
	New().Teardown(ctx, ok)
}
