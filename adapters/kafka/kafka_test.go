package kafka

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/adapters/adapterstest"
)

// brokers are what the suite runs against: an in-process kfake broker (the
// real Kafka protocol, with SASL/SCRAM and ACLs enforced) always, and the
// real broker of BINKY_TEST_KAFKA when it is set.
func brokers(t *testing.T) map[string]string {
	out := map[string]string{"kfake": startKfake(t)}
	if u := os.Getenv("BINKY_TEST_KAFKA"); u != "" {
		out["BINKY_TEST_KAFKA"] = u
	} else {
		t.Log("BINKY_TEST_KAFKA is unset: tested against kfake only (set it to kafka://admin:pw@host:port?mechanism=SCRAM-SHA-256 for a real broker)")
	}
	return out
}

// startKfake starts a kfake cluster with SASL and ACLs on, and a SCRAM
// superuser, and returns its admin URL.
func startKfake(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin-secret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return "kafka://admin:admin-secret@" + strings.Join(c.ListenAddrs(), ",") + "?mechanism=SCRAM-SHA-256"
}

func TestParseAdminURL(t *testing.T) {
	for _, tc := range []struct {
		raw, brokers, mech string
		bad                bool
	}{
		{raw: "kafka://admin:pw@127.0.0.1:9092", brokers: "127.0.0.1:9092", mech: "SCRAM-SHA-256"},
		{raw: "kafka://admin:p%40w@a:9092,b:9093?mechanism=SCRAM-SHA-512", brokers: "a:9092,b:9093", mech: "SCRAM-SHA-512"},
		{raw: "redpanda://admin:pw@rp?mechanism=plain", brokers: "rp:9092", mech: "PLAIN"},
		{raw: "kafka://127.0.0.1:9092", bad: true},
		{raw: "kafka://admin:pw@127.0.0.1:9092?mechanism=GSSAPI", bad: true},
		{raw: "http://admin:pw@127.0.0.1:9092", bad: true},
		{raw: "kafka://admin:pw@", bad: true},
	} {
		a, err := ParseAdminURL(tc.raw)
		if tc.bad {
			if err == nil {
				t.Errorf("%s: parsed, want an error", tc.raw)
			} else if strings.Contains(err.Error(), ":pw@") {
				t.Errorf("%s: the error shows the password: %v", tc.raw, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.raw, err)
			continue
		}
		if got := strings.Join(a.Brokers, ","); got != tc.brokers || a.Mechanism != tc.mech {
			t.Errorf("%s: brokers %s mechanism %s, want %s %s", tc.raw, got, a.Mechanism, tc.brokers, tc.mech)
		}
	}
	if a, _ := ParseAdminURL("kafka://admin:p%40w@a:9092"); a.Password != "p@w" {
		t.Errorf("password %q, want it unescaped", a.Password)
	}
}

func TestConformance(t *testing.T) {
	for name, u := range brokers(t) {
		t.Run(name, func(t *testing.T) {
			ss, err := open(u)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(ss.close)
			adapterstest.RunServer(t, New(), adapterstest.Server{
				AdminURL: u,
				// A topic under the prefix and a SCRAM user of the slice's
				// name, made by an admin by hand.
				Foreign: func(ctx context.Context, slice string) error {
					t.Cleanup(func() { dropByHand(ss, slice) })
					if _, err := ss.adm.CreateTopic(ctx, 1, -1, nil, Prefix(slice)+"handmade"); err != nil {
						return err
					}
					res, err := ss.adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: slice, Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "theirs"}})
					if err != nil {
						return err
					}
					return res.Error()
				},
				Intact: func(ctx context.Context, slice string) (bool, error) {
					topics, err := ss.topics(ctx, Prefix(slice))
					if err != nil {
						return false, err
					}
					users, err := ss.users(ctx)
					if err != nil {
						return false, err
					}
					_, user := users[slice]
					return len(topics) == 1 && user, nil
				},
			})
		})
	}
}

func dropByHand(ss *session, slice string) {
	ctx := context.Background()
	ss.adm.DeleteTopics(ctx, Prefix(slice)+"handmade")
	ss.adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: slice, Mechanism: kadm.ScramSha256}}, nil)
}

// A topic or a user alone is enough for a name to be someone else's.
func TestEachHandMadeObjectMakesTheNameTaken(t *testing.T) {
	u := startKfake(t)
	ss, err := open(u)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.close()
	ctx := context.Background()
	make := map[string]func(name string) error{
		"a topic": func(name string) error {
			_, err := ss.adm.CreateTopic(ctx, 1, -1, nil, Prefix(name)+"x")
			return err
		},
		"a user": func(name string) error {
			_, err := ss.adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: name, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "x"}})
			return err
		},
		"an ACL": func(name string) error {
			_, err := ss.adm.CreateACLs(ctx, kadm.NewACLs().Allow(Principal(name)).Topics("other").Operations(kadm.OpRead))
			return err
		},
	}
	for what, mk := range make {
		name := "hand_" + strings.ReplaceAll(what, " ", "_")
		if err := mk(name); err != nil {
			t.Fatal(err)
		}
		s := adapters.Slice{Name: name, World: "w", Home: "h", AdminURL: u, Password: "pw"}
		if err := New().Provision(ctx, s); !errors.Is(err, adapters.ErrTaken) {
			t.Errorf("provision over %s made by hand: %v, want ErrTaken", what, err)
		}
	}
}

// The marks topic is compacted: once superseded marks and tombstones are
// gone, every live mark still reads, and the gaps in the offsets do not
// stall the reader.
func TestMarksReadAfterCompaction(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	u := "kafka://admin:admin-secret@" + strings.Join(c.ListenAddrs(), ",")
	ctx := context.Background()
	k := New()
	slice := func(name, world string) adapters.Slice {
		return adapters.Slice{Name: name, World: world, Home: "h", AdminURL: u, Password: "pw-" + name}
	}
	for _, s := range []adapters.Slice{slice("gone", "w1"), slice("kept", "w2"), slice("again", "w3")} {
		if err := k.Provision(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []adapters.Slice{slice("gone", "w1"), slice("again", "w3")} {
		if err := k.Teardown(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.Provision(ctx, slice("again", "w4")); err != nil {
		t.Fatalf("a torn-down name is not free again: %v", err)
	}
	if err := k.Provision(ctx, slice("last", "w5")); err != nil {
		t.Fatal(err)
	}
	ss, err := open(u)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.close()
	zero := "0"
	if _, err := ss.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "delete.retention.ms", Value: &zero}}, MarksTopic); err != nil {
		t.Fatal(err)
	}
	c.Compact()
	// Compaction did remove records: fewer are left than were written.
	consumer, err := ss.admin.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{MarksTopic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var left, last int64
	for pctx.Err() == nil {
		consumer.PollFetches(pctx).EachRecord(func(r *kgo.Record) { left++; last = r.Offset })
	}
	if left >= last+1 || left == 0 {
		t.Fatalf("%d records left of %d written: nothing was compacted", left, last+1)
	}
	marks, err := ss.marks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"kept": "w2", "again": "w4", "last": "w5"}
	if len(marks) != len(want) {
		t.Errorf("marks %v, want %v", marks, want)
	}
	for name, w := range want {
		if marks[name].World != w {
			t.Errorf("%s marked as %+v, want world %s", name, marks[name], w)
		}
	}
}
