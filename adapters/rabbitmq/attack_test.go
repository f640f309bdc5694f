package rabbitmq

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/git-binky/git-binky/adapters"
)

// twoWorlds provisions worlds A and B on the test server and returns their
// slices and addresses.
func twoWorlds(t *testing.T) (sa, sb adapters.Slice, ra, rb adapters.Address) {
	u := adminURL(t)
	ctx := context.Background()
	run := fmt.Sprintf("%x", time.Now().UnixNano())[6:]
	r := New()
	sa = adapters.Slice{Name: "atk_a_" + run, World: "w-a-" + run, Home: "h" + run, AdminURL: u, Password: "apw" + run}
	sb = adapters.Slice{Name: "atk_b_" + run, World: "w-b-" + run, Home: "h" + run, AdminURL: u, Password: "bpw" + run}
	for _, s := range []adapters.Slice{sa, sb} {
		if err := r.Provision(ctx, s); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Teardown(context.Background(), s) })
	}
	return sa, sb, mustResolve(t, sa), mustResolve(t, sb)
}

func dial(t *testing.T, u string) *amqp.Channel {
	t.Helper()
	conn, err := amqp.Dial(u)
	if err != nil {
		t.Fatalf("dial %s: %v", adapters.Redact(u), err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func TestAWorldsUserCannotOpenAnotherWorldsVhost(t *testing.T) {
	sa, sb, ra, _ := twoWorlds(t)
	a := admin(t, sa.AdminURL)
	for _, vhost := range []string{sb.Name, "/"} {
		conn, err := amqp.Dial(amqpURL(a.admin, sa.Name, sa.Password, vhost))
		if err == nil {
			conn.Close()
			t.Errorf("A's user opened vhost %q", vhost)
		} else if !strings.Contains(err.Error(), "access to vhost") {
			t.Errorf("A's user opening vhost %q: %v, want access to the vhost refused", vhost, err)
		}
	}
	// Its own opens: the refusals above are about the vhost, not a typo.
	dial(t, ra["url"])
}

func TestAWorldCannotDeclareOrConsumeAnotherWorldsQueues(t *testing.T) {
	_, _, ra, rb := twoWorlds(t)
	b := dial(t, rb["url"])
	if _, err := b.QueueDeclare("jobs", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.PublishWithContext(context.Background(), "", "jobs", false, false, amqp.Publishing{Body: []byte("b's job")}); err != nil {
		t.Fatal(err)
	}
	// A, in its own vhost, does not see B's queue: a passive declare fails,
	// and what it declares, publishes and consumes under that name is its
	// own queue.
	a := dial(t, ra["url"])
	if _, err := a.QueueDeclarePassive("jobs", true, false, false, false, nil); err == nil || !strings.Contains(err.Error(), "NOT_FOUND") {
		t.Errorf("A's passive declare of B's queue: %v, want NOT_FOUND", err)
	}
	a = dial(t, ra["url"]) // the failed declare closed the channel
	if _, err := a.QueueDeclare("jobs", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	msg, ok, err := a.Get("jobs", true)
	if err != nil || ok {
		t.Errorf("A got %q (ok=%v, err=%v) from a queue named like B's", msg.Body, ok, err)
	}
	if err := a.PublishWithContext(context.Background(), "", "jobs", false, false, amqp.Publishing{Body: []byte("a's")}); err != nil {
		t.Fatal(err)
	}
	// B's queue holds exactly B's message.
	q, err := b.QueueDeclarePassive("jobs", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q.Messages != 1 {
		t.Errorf("B's queue has %d messages, want its 1", q.Messages)
	}
	if m, ok, _ := b.Get("jobs", true); !ok || string(m.Body) != "b's job" {
		t.Errorf("B's queue gave %q (ok=%v)", m.Body, ok)
	}
}

func TestAWorldsUserCannotUseTheManagementAPI(t *testing.T) {
	sa, sb, _, _ := twoWorlds(t)
	as := admin(t, sa.AdminURL)
	as.admin.User, as.admin.Password = sa.Name, sa.Password
	ctx := context.Background()
	for _, tc := range []struct {
		what, method string
		body         any
		path         []string
	}{
		{"list vhosts", http.MethodGet, nil, []string{"vhosts"}},
		{"read B's vhost", http.MethodGet, nil, []string{"vhosts", sb.Name}},
		{"list users", http.MethodGet, nil, []string{"users"}},
		{"list permissions", http.MethodGet, nil, []string{"permissions"}},
		{"rewrite B's mark", http.MethodPut, map[string]any{"description": adapters.Mark(sa.Owner())}, []string{"vhosts", sb.Name}},
		{"grant itself B's vhost", http.MethodPut, map[string]string{"configure": ".*", "write": ".*", "read": ".*"}, []string{"permissions", sb.Name, sa.Name}},
		{"give itself the administrator tag", http.MethodPut, map[string]any{"password": sa.Password, "tags": "administrator"}, []string{"users", sa.Name}},
		{"change B's password", http.MethodPut, map[string]any{"password": "x", "tags": ""}, []string{"users", sb.Name}},
		{"delete B's vhost", http.MethodDelete, nil, []string{"vhosts", sb.Name}},
		{"read the definitions", http.MethodGet, nil, []string{"definitions"}},
	} {
		err := as.do(ctx, tc.method, nil, tc.body, tc.path...)
		if err == nil || !strings.Contains(err.Error(), "refused user") {
			t.Errorf("A's user may %s: %v, want refused", tc.what, err)
		}
	}
	// B's vhost is still B's.
	v, ok, err := admin(t, sb.AdminURL).vhost(ctx, sb.Name)
	if o, marked := v.mark(); err != nil || !ok || !marked || !o.Is(sb.Owner()) {
		t.Errorf("B's vhost changed: %+v %v %v", v, ok, err)
	}
}

func mustResolve(t *testing.T, s adapters.Slice) adapters.Address {
	addr, err := New().Resolve(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}
