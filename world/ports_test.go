package world

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func newTestHome(t *testing.T) Home {
	t.Helper()
	h := Home{Dir: t.TempDir()}
	if err := h.Ensure(); err != nil {
		t.Fatal(err)
	}
	return h
}

// saveWorld writes a bare record so that leases naming it are not stale.
func saveWorld(t *testing.T, h Home, id string) *Record {
	t.Helper()
	r := &Record{ID: id, Ports: map[string]int{}, AdminDir: filepath.Join(h.Dir, "no-admin")}
	if err := h.SaveRecord(r); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAllocatorIsStableAndKeepsPorts(t *testing.T) {
	h := newTestHome(t)
	a := &Allocator{Home: h, Range: PortRange{Min: 20000, Max: 20999}, Bindable: Bindable}
	ctx := context.Background()
	rec := saveWorld(t, h, "w1")
	if _, err := a.Ensure(ctx, rec, []string{"api", "web", "api.metrics"}); err != nil {
		t.Fatal(err)
	}
	first := fmt.Sprint(rec.Ports)
	changed, err := a.Ensure(ctx, rec, []string{"api", "web", "api.metrics"})
	if err != nil || changed {
		t.Fatalf("second Ensure changed=%v err=%v", changed, err)
	}
	if got := fmt.Sprint(rec.Ports); got != first {
		t.Errorf("ports moved: %s -> %s", first, got)
	}
	// A port in use by our own running service stays ours: no bind check
	// for ports the world already holds.
	l, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(rec.Ports["api"]))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if changed, _ := a.Ensure(ctx, rec, []string{"api", "web", "api.metrics"}); changed {
		t.Error("a port our own service listens on was reallocated")
	}
	// Dropping a service releases its lease.
	web := rec.Ports["web"]
	if _, err := a.Ensure(ctx, rec, []string{"api", "api.metrics"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a.leasePath(web)); !os.IsNotExist(err) {
		t.Errorf("lease of dropped service still there: %v", err)
	}
	a.Release(rec)
	leases, _ := h.Leases()
	if len(leases) != 0 {
		t.Errorf("leases after Release: %+v", leases)
	}
}

func TestAllocatorSkipsPortHeldFromOutside(t *testing.T) {
	h := newTestHome(t)
	a := &Allocator{Home: h, Range: PortRange{Min: 21000, Max: 21999}, Bindable: Bindable}
	want := a.first("w1", "api")
	l, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(want))
	if err != nil {
		t.Skipf("cannot hold port %d for the test: %v", want, err)
	}
	defer l.Close()
	rec := saveWorld(t, h, "w1")
	if _, err := a.Ensure(context.Background(), rec, []string{"api"}); err != nil {
		t.Fatal(err)
	}
	if got := rec.Ports["api"]; got == want {
		t.Fatalf("allocated %d, which another program listens on", got)
	}
	if _, err := os.Stat(a.leasePath(want)); !os.IsNotExist(err) {
		t.Error("a lease was left behind on the port held from outside")
	}
}

// A garbled lease of a port the record holds is the record's again: the
// port moved under a running service, whose URL then led nowhere. Another
// world's real lease is never taken.
func TestAGarbledLeaseOfARecordsPortIsRetaken(t *testing.T) {
	h := newTestHome(t)
	a := &Allocator{Home: h, Range: PortRange{Min: 22100, Max: 22199}, Bindable: func(int) bool { return true }}
	ctx := context.Background()
	rec := saveWorld(t, h, "w1")
	if _, err := a.Ensure(ctx, rec, []string{"web"}); err != nil {
		t.Fatal(err)
	}
	port := rec.Ports["web"]
	for _, garbage := range []string{"xx", "", "[]", `{"port": 1}`} {
		if err := os.WriteFile(a.leasePath(port), []byte(garbage), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Ensure(ctx, rec, []string{"web"}); err != nil {
			t.Fatal(err)
		}
		if rec.Ports["web"] != port || !a.owned(port, "w1", "web") {
			t.Fatalf("lease %q: web moved from %d to %d (owned %v)", garbage, port, rec.Ports["web"], a.owned(port, "w1", "web"))
		}
	}
	other := saveWorld(t, h, "w2")
	if _, err := a.Ensure(ctx, other, []string{"api"}); err != nil {
		t.Fatal(err)
	}
	rec.Ports["web"] = other.Ports["api"] // a record claiming another's port
	if _, err := a.Ensure(ctx, rec, []string{"web"}); err != nil {
		t.Fatal(err)
	}
	if !a.owned(other.Ports["api"], "w2", "api") || rec.Ports["web"] == other.Ports["api"] {
		t.Errorf("w1 took w2's leased port %d", other.Ports["api"])
	}
}

func TestAllocatorReclaimsStaleLeases(t *testing.T) {
	h := newTestHome(t)
	a := &Allocator{Home: h, Range: PortRange{Min: 22000, Max: 22000}, Bindable: func(int) bool { return true }}
	ctx := context.Background()
	gone := saveWorld(t, h, "gone")
	if _, err := a.Ensure(ctx, gone, []string{"api"}); err != nil {
		t.Fatal(err)
	}
	rec := saveWorld(t, h, "w2")
	if _, err := a.Ensure(ctx, rec, []string{"api"}); err == nil {
		t.Fatal("allocated from a full range while the lease's world still exists")
	}
	if err := h.DeleteRecord(gone); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Ensure(ctx, rec, []string{"api"}); err != nil {
		t.Fatalf("stale lease not reclaimed: %v", err)
	}
	if rec.Ports["api"] != 22000 {
		t.Errorf("got %v", rec.Ports)
	}
}

func TestAllocatorConcurrentWorldsGetDistinctPorts(t *testing.T) {
	h := newTestHome(t)
	// A narrow range forces collisions on the first choice.
	rng := PortRange{Min: 23000, Max: 23063}
	const worlds = 16
	recs := make([]*Record, worlds)
	for i := range recs {
		recs[i] = saveWorld(t, h, fmt.Sprintf("w%02d", i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, worlds)
	for i := range recs {
		wg.Add(1)
		go func(r *Record) {
			defer wg.Done()
			a := &Allocator{Home: h, Range: rng, Bindable: Bindable}
			_, err := a.Ensure(context.Background(), r, []string{"api", "web", "api.admin"})
			errs <- err
		}(recs[i])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int]string{}
	for _, r := range recs {
		for k, p := range r.Ports {
			if other, dup := seen[p]; dup {
				t.Errorf("port %d given to %s/%s and %s", p, r.ID, k, other)
			}
			seen[p] = r.ID + "/" + k
		}
	}
	if len(seen) != worlds*3 {
		t.Errorf("%d ports for %d keys", len(seen), worlds*3)
	}
}

func TestRecordsSurviveAPartialWrite(t *testing.T) {
	h := newTestHome(t)
	r := saveWorld(t, h, "w1")
	r.Ports["api"] = 4000
	if err := h.SaveRecord(r); err != nil {
		t.Fatal(err)
	}
	// A crash mid-write leaves only a temp file beside the record.
	if err := os.WriteFile(filepath.Join(h.WorldsDir(), ".w1.json.tmp123"), []byte(`{"id": "w1", "po`), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, err := h.Records()
	if err != nil || len(recs) != 1 || recs[0].Ports["api"] != 4000 {
		t.Fatalf("Records = %+v, %v", recs, err)
	}
}

// One corrupt record is named, and the others are still listed: it stopped
// status, adoption and every new world's label.
func TestACorruptRecordIsReportedBesideTheOthers(t *testing.T) {
	h := newTestHome(t)
	saveWorld(t, h, "w1")
	saveWorld(t, h, "w2")
	if err := os.WriteFile(filepath.Join(h.WorldsDir(), "w2.json"), []byte(`{"id": "w2", "po`), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, err := h.Records()
	if len(recs) != 1 || recs[0].ID != "w1" {
		t.Errorf("Records = %+v, want w1 alone", recs)
	}
	if !OnlyUnreadable(err) || err == nil || !strings.Contains(err.Error(), "w2.json is corrupt") {
		t.Errorf("err = %v, want w2.json named as corrupt", err)
	}
}

// One config may not ask for more than its share of the machine's range:
// a branch asking for a thousand ports took them all before.
func TestAConfigAskingForMorePortsThanAWorldMayHoldIsRefused(t *testing.T) {
	cfgWith := func(n int) string {
		var b strings.Builder
		b.WriteString("[project]\nname = \"acme\"\n[services.api]\ncmd = \"sleep 1\"\nurl = \"api\"\nports = [")
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "\"p%d\"", i)
		}
		b.WriteString("]\n[services.zz]\ncmd = \"sleep 1\"\nurl = \"zz\"\n")
		return b.String()
	}
	// api holds 1 + n ports, zz one more.
	if _, diags := ParseConfig("binky.toml", []byte(cfgWith(MaxPortsPerWorld-2))); hasErrors(diags) {
		t.Fatalf("%d ports refused: %v", MaxPortsPerWorld, diags)
	}
	_, diags := ParseConfig("binky.toml", []byte(cfgWith(MaxPortsPerWorld-1)))
	if !hasErrors(diags) {
		t.Fatalf("%d ports accepted", MaxPortsPerWorld+1)
	}
	if d := diags[0]; d.Line != 7 || !strings.Contains(d.Message, `up to "zz"`) || !strings.Contains(d.Message, fmt.Sprint(MaxPortsPerWorld+1)) {
		t.Errorf("diagnostic %s: want it at [services.zz] (line 7), naming the count", d)
	}
}

// A managed server's second port (RabbitMQ's management API, MinIO's
// console) is leased as "<kind>-<role>": it read as stale, since no folder
// has that name, and was reclaimed and given to a world.
func TestAServersSecondPortIsNotStale(t *testing.T) {
	h := newTestHome(t)
	if err := os.MkdirAll(filepath.Join(h.ServersDir(), "rabbitmq"), 0o700); err != nil {
		t.Fatal(err)
	}
	a := &Allocator{Home: h, Range: PortRange{Min: 22300, Max: 22300}, Bindable: func(int) bool { return true }}
	if _, err := a.Server("rabbitmq-management"); err != nil {
		t.Fatal(err)
	}
	leases, err := h.Leases()
	if err != nil || len(leases) != 1 || leases[0].Stale {
		t.Fatalf("leases = %+v, %v: want the management port's, not stale", leases, err)
	}
	rec := saveWorld(t, h, "w1")
	if _, err := a.Ensure(context.Background(), rec, []string{"web"}); err == nil {
		t.Errorf("a world took the management port: %v", rec.Ports)
	}
	// Gone with its server's folder, it is stale again.
	os.RemoveAll(filepath.Join(h.ServersDir(), "rabbitmq"))
	if leases, _ := h.Leases(); len(leases) != 1 || !leases[0].Stale {
		t.Errorf("leases = %+v: want the lease of a server with no folder stale", leases)
	}
}

// A port refused for an instant is free to start on; one another program
// holds throughout is not.
func TestFreeToStartAsksAgainBeforeSayingNo(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if FreeToStart(port) {
		t.Fatal("a port held throughout was called free")
	}
	go func() { time.Sleep(25 * time.Millisecond); l.Close() }()
	if !Bindable(port) && !FreeToStart(port) {
		t.Error("a port let go of 25 ms later was called taken")
	}
}
