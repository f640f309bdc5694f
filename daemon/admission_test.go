package daemon

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/git-binky/git-binky/world"
)

type fakeMachine struct {
	mu           sync.Mutex
	avail, total uint64
	disk         uint64
}

func (m *fakeMachine) Memory() (uint64, uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.avail, m.total, nil
}
func (m *fakeMachine) DiskFree(string) (uint64, error) { return m.disk, nil }
func (m *fakeMachine) setAvail(v uint64)               { m.mu.Lock(); m.avail = v; m.mu.Unlock() }

// fakeClock fires After channels only when the test advances it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	c.waiters = append(c.waiters, fakeWaiter{c.now.Add(d), ch})
	return ch
}

// awaitWaiter returns once something waits on the clock.
func (c *fakeClock) awaitWaiter() {
	for {
		c.mu.Lock()
		n := len(c.waiters)
		c.mu.Unlock()
		if n > 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if !w.at.After(c.now) {
			w.ch <- c.now
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

const gibi = 1 << 30

func newTestAdmission(max int, m *fakeMachine, c *fakeClock) *Admission {
	s := world.DefaultSettings()
	s.MaxParallel = max
	s.Reserve = world.Reserve{RAMPercent: 20, DiskGB: 1}
	return NewAdmission(m, c, func() world.Settings { return s }, "/", slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func TestAdmissionIsFIFOUnderMaxParallel(t *testing.T) {
	m := &fakeMachine{avail: 16 * gibi, total: 24 * gibi, disk: 100 * gibi}
	a := newTestAdmission(2, m, &fakeClock{})
	ctx := context.Background()
	if err := a.Acquire(ctx, "a", "a", nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Acquire(ctx, "b", "b", nil); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 2)
	queued := map[string]Queued{}
	var mu sync.Mutex
	for _, id := range []string{"c", "d"} {
		go func() {
			a.Acquire(ctx, id, id, func(q Queued) {
				mu.Lock()
				if _, seen := queued[id]; !seen {
					queued[id] = q // the first thing each was told
				}
				mu.Unlock()
			})
			order <- id
		}()
		// c queues before d.
		for a.QueueLength() == 0 || (id == "d" && a.QueueLength() < 2) {
			time.Sleep(time.Millisecond)
		}
	}
	a.Release("a")
	if got := <-order; got != "c" {
		t.Fatalf("%s admitted first, want c (first in the queue)", got)
	}
	a.Release("b")
	if got := <-order; got != "d" {
		t.Fatalf("then %s, want d", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if q := queued["c"]; q.Position != 1 || q.Length != 1 || q.Reason != "waiting for a slot (2 running, max_parallel 2)" {
		t.Errorf("c was told %+v", q)
	}
	if q := queued["d"]; q.Position != 2 || q.Length != 2 || q.Reason != "waiting for the worlds ahead of it" {
		t.Errorf("d was told %+v", q)
	}
}

func TestAdmissionWaitsForRAMAndSaysWhy(t *testing.T) {
	m := &fakeMachine{avail: 4 * gibi, total: 24 * gibi, disk: 100 * gibi} // reserve is 4.8 GiB
	c := &fakeClock{}
	a := newTestAdmission(8, m, c)
	told := make(chan Queued, 4)
	done := make(chan error, 1)
	go func() { done <- a.Acquire(context.Background(), "a", "a", func(q Queued) { told <- q }) }()
	q := <-told
	if q.Reason != "waiting for RAM (4.0 GiB free, 4.8 GiB kept in reserve)" {
		t.Fatalf("reason %q", q.Reason)
	}
	m.setAvail(10 * gibi)
	// Acquire tells the queue before it sets its recheck: advancing the
	// clock before then would wake nothing (a hang under load, seen in CI).
	c.awaitWaiter()
	c.Advance(time.Second) // the periodic recheck sees the RAM come back
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestCancelledQueuedUpLeavesTheQueue(t *testing.T) {
	m := &fakeMachine{avail: 16 * gibi, total: 24 * gibi, disk: 100 * gibi}
	a := newTestAdmission(1, m, &fakeClock{})
	a.Acquire(context.Background(), "a", "a", nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Acquire(ctx, "b", "b", nil) }()
	for a.QueueLength() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("err = %v", err)
	}
	if a.QueueLength() != 0 {
		t.Error("the cancelled world is still queued")
	}
	a.Release("a")
	if err := a.Acquire(context.Background(), "c", "c", nil); err != nil {
		t.Fatal(err)
	}
}

func TestPressureSuspendsTheNewestAndResumesInOrder(t *testing.T) {
	m := &fakeMachine{avail: 16 * gibi, total: 24 * gibi, disk: 100 * gibi}
	a := newTestAdmission(8, m, &fakeClock{})
	var acted []string
	a.suspend = func(id string) error { acted = append(acted, "stop "+id); return nil }
	a.resume = func(id string) error { acted = append(acted, "cont "+id); return nil }
	for _, id := range []string{"a", "b", "c"} {
		a.Acquire(context.Background(), id, id, nil)
	}
	m.setAvail(2 * gibi)
	a.Rebalance()
	a.Rebalance()
	a.Rebalance() // never the last running world
	if !a.Suspended("c") || !a.Suspended("b") || a.Suspended("a") {
		t.Fatalf("suspended: c=%v b=%v a=%v", a.Suspended("c"), a.Suspended("b"), a.Suspended("a"))
	}
	m.setAvail(5 * gibi) // above the reserve but within the margin: no flapping
	a.Rebalance()
	m.setAvail(12 * gibi)
	a.Rebalance()
	a.Rebalance()
	want := "stop c,stop b,cont c,cont b"
	if got := join(acted); got != want {
		t.Errorf("actions %s, want %s", got, want)
	}
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

// A world still in its up has no processes to stop (or is checking their
// health): pressure suspended it all the same, counted it suspended, and
// resumed it first when memory came back. It is skipped for the next one.
func TestPressureSkipsAWorldStillComingUp(t *testing.T) {
	m := &fakeMachine{avail: 16 * gibi, total: 24 * gibi, disk: 100 * gibi}
	a := newTestAdmission(8, m, &fakeClock{})
	var acted []string
	a.suspend = func(id string) error { acted = append(acted, "stop "+id); return nil }
	a.resume = func(id string) error { acted = append(acted, "cont "+id); return nil }
	coming := map[string]bool{"c": true}
	a.suspendable = func(id string) bool { return !coming[id] }
	for _, id := range []string{"a", "b", "c"} {
		a.Acquire(context.Background(), id, id, nil)
	}
	m.setAvail(2 * gibi)
	a.Rebalance()
	if a.Suspended("c") || !a.Suspended("b") {
		t.Fatalf("suspended: c=%v b=%v, want b only (c is still coming up)", a.Suspended("c"), a.Suspended("b"))
	}
	coming["c"] = false
	a.Rebalance()
	if !a.Suspended("c") {
		t.Error("c, up now, was not suspended")
	}
	if got, want := join(acted), "stop b,stop c"; got != want {
		t.Errorf("actions %s, want %s", got, want)
	}
}
