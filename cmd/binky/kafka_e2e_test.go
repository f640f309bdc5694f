package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/git-binky/git-binky/adapters/kafka"
)

// Kafka has no managed server: the daemon is pointed at a kfake broker
// (franz-go's, in this test process: the real protocol, SASL/SCRAM and ACLs
// on) through admin_url.
func TestKafkaWorldsThroughAdminURLAreIsolatedAndRemoveDropsTheirs(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin-secret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	admin := "kafka://admin:admin-secret@" + strings.Join(c.ListenAddrs(), ",") + "?mechanism=SCRAM-SHA-256"
	f := newFixture(t, `[project]
name = "bus"
[services.events]
adapter = "redpanda"
admin_url = "${env.KAFKA_ADMIN_URL}"
[services.api]
cmd = "testsvc"
url = "api"
depends_on = ["events"]
env = { KAFKA_BROKERS = "${events.brokers}" }
`)
	f.extraEnv = []string{"KAFKA_ADMIN_URL=" + admin}
	f.mustBinky(f.repo, "up")
	f.mustBinky(f.repo, "up", "feat")
	main, feat := f.envOf("acme"), f.envOf("feat")
	if main["EVENTS_PREFIX"] == feat["EVENTS_PREFIX"] || !strings.HasSuffix(feat["EVENTS_PREFIX"], ".") {
		t.Fatalf("prefixes %q and %q", main["EVENTS_PREFIX"], feat["EVENTS_PREFIX"])
	}
	if strings.Contains(feat["EVENTS_URL"], "admin-secret") || feat["EVENTS_MECHANISM"] != "SCRAM-SHA-256" {
		t.Fatalf("feat's address %s", feat["EVENTS_URL"])
	}
	client := func(env map[string]string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(env["EVENTS_BROKERS"], ",")...),
			kgo.SASL(scram.Auth{User: env["EVENTS_USER"], Pass: env["EVENTS_PASSWORD"]}.AsSha256Mechanism()),
			kgo.RequestRetries(0), kgo.RetryTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	ctx := context.Background()
	fc, mc := client(feat), client(main)
	topic := feat["EVENTS_PREFIX"] + "orders"
	if _, err := kadm.NewClient(fc).CreateTopic(ctx, 1, -1, nil, topic); err != nil {
		t.Fatalf("feat cannot create %s: %v", topic, err)
	}
	if err := fc.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("feat's")}).FirstErr(); err != nil {
		t.Fatalf("feat cannot produce to its topic: %v", err)
	}
	if err := mc.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("main's")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("main producing to feat's topic: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	f.mustBinky(f.repo, "remove", "feat", "--force")
	found, err := kafka.New().List(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	var mains int
	for _, o := range found {
		if o.Slice == feat["EVENTS_USER"] {
			t.Errorf("remove left feat's %s %s", o.Kind, o.Name)
		}
		if o.Slice == main["EVENTS_USER"] {
			mains++
		}
	}
	if mains == 0 {
		t.Errorf("main's slice is gone too: %v", found)
	}
	ac, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.SASL(scram.Auth{User: "admin", Pass: "admin-secret"}.AsSha256Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer ac.Close()
	topics, err := kadm.NewClient(ac).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if topics.Has(topic) {
		t.Errorf("remove left feat's topic %s", topic)
	}
	// feat's user is gone: its password no longer logs in.
	if err := client(feat).Ping(ctx); err == nil {
		t.Error("feat's user still logs in after remove")
	}
}
