package world

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// twoHomes are two homes of one user sharing one claims folder, with one
// port range; neither's bind check sees anything (no service listens yet).
func twoHomes(t *testing.T, min, max int) (claims string, a, b *Allocator) {
	t.Helper()
	claims = t.TempDir()
	alloc := func() *Allocator {
		return &Allocator{Home: newTestHome(t), Range: PortRange{Min: min, Max: max}, Bindable: func(int) bool { return true }, Claims: claims}
	}
	return claims, alloc(), alloc()
}

func TestTwoHomesNeverLeaseTheSamePort(t *testing.T) {
	_, a, b := twoHomes(t, 24100, 24101)
	ctx := context.Background()
	// The same world name and key: both homes' first choice is one port.
	ra, rb := saveWorld(t, a.Home, "w"), saveWorld(t, b.Home, "w")
	if _, err := a.Ensure(ctx, ra, []string{"api"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Ensure(ctx, rb, []string{"api"}); err != nil {
		t.Fatal(err)
	}
	if ra.Ports["api"] == rb.Ports["api"] {
		t.Fatalf("both homes leased port %d", ra.Ports["api"])
	}
	// The range is full across both homes.
	rc := saveWorld(t, b.Home, "other")
	if _, err := b.Ensure(ctx, rc, []string{"api"}); err == nil {
		t.Fatalf("a third port from a two-port range: %v", rc.Ports)
	}
	if _, err := os.Stat(b.leasePath(ra.Ports["api"])); !os.IsNotExist(err) {
		t.Error("home b kept a lease on home a's port")
	}
}

func TestAClaimOfAGoneHomeIsTaken(t *testing.T) {
	_, a, b := twoHomes(t, 24110, 24110)
	ctx := context.Background()
	ra := saveWorld(t, a.Home, "w")
	if _, err := a.Ensure(ctx, ra, []string{"api"}); err != nil {
		t.Fatal(err)
	}
	rb := saveWorld(t, b.Home, "w")
	if _, err := b.Ensure(ctx, rb, []string{"api"}); err == nil {
		t.Fatal("home b took the port home a holds")
	}
	// Home a is deleted wholesale (a test's temp home, a reset): its claim
	// points at nothing and blocks nobody.
	if err := os.RemoveAll(a.Home.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Ensure(ctx, rb, []string{"api"}); err != nil {
		t.Fatalf("the claim of a deleted home still blocks its port: %v", err)
	}
	// Releasing the port leaves a claim nobody honours.
	b.Release(rb)
	rc := saveWorld(t, a.Home, "again")
	if _, err := a.Ensure(ctx, rc, []string{"api"}); err != nil {
		t.Fatalf("a released port stays claimed: %v", err)
	}
}

func TestAClaimThatIsNotASymlinkIsNeverReplaced(t *testing.T) {
	claims, a, _ := twoHomes(t, 24120, 24120)
	if err := os.WriteFile(filepath.Join(claims, "24120"), []byte("someone's"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := saveWorld(t, a.Home, "w")
	if _, err := a.Ensure(context.Background(), r, []string{"api"}); err == nil {
		t.Fatalf("leased a port whose claim is a file binky did not make: %v", r.Ports)
	}
	if b, _ := os.ReadFile(filepath.Join(claims, "24120")); string(b) != "someone's" {
		t.Errorf("the file was replaced: %q", b)
	}
}

func TestALeaseFromBeforeClaimsIsClaimedOnTheNextEnsure(t *testing.T) {
	claims, a, _ := twoHomes(t, 24130, 24130)
	r := saveWorld(t, a.Home, "w")
	ctx := context.Background()
	if _, err := a.Ensure(ctx, r, []string{"api"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(claims, strconv.Itoa(r.Ports["api"]))
	os.Remove(path)
	if changed, err := a.Ensure(ctx, r, []string{"api"}); err != nil || changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	if target, err := os.Readlink(path); err != nil || target != a.claimTarget(r.Ports["api"]) {
		t.Errorf("claim not made again: %q %v", target, err)
	}
}

func TestManyHomesAtOnceGetDistinctPorts(t *testing.T) {
	claims := t.TempDir()
	const homes, worlds = 6, 5
	rng := PortRange{Min: 24200, Max: 24200 + homes*worlds - 1} // exactly enough
	var mu sync.Mutex
	seen := map[int]string{}
	var wg sync.WaitGroup
	for h := 0; h < homes; h++ {
		a := &Allocator{Home: newTestHome(t), Range: rng, Bindable: func(int) bool { return true }, Claims: claims}
		for w := 0; w < worlds; w++ {
			r := saveWorld(t, a.Home, "w"+strconv.Itoa(w))
			wg.Add(1)
			go func(h int) {
				defer wg.Done()
				if _, err := a.Ensure(context.Background(), r, []string{"api"}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				p := r.Ports["api"]
				who := strconv.Itoa(h) + "/" + r.ID
				if prev, ok := seen[p]; ok {
					t.Errorf("port %d leased by %s and %s", p, prev, who)
				}
				seen[p] = who
			}(h)
		}
	}
	wg.Wait()
}

// One home reached by two paths (a symlink, /tmp vs /private/tmp, a
// relative BINKY_HOME resolved from two cwds) refuses its own claim.
func TestAHomeReachedThroughASymlinkKnowsItsOwnClaim(t *testing.T) {
	claims := t.TempDir()
	h := newTestHome(t)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(h.Dir, link); err != nil {
		t.Fatal(err)
	}
	rng := PortRange{Min: 24300, Max: 24300}
	a1 := &Allocator{Home: h, Range: rng, Bindable: func(int) bool { return true }, Claims: claims}
	a2 := &Allocator{Home: Home{Dir: link}, Range: rng, Bindable: func(int) bool { return true }, Claims: claims}
	ctx := context.Background()
	r1 := saveWorld(t, h, "w1")
	if _, err := a1.Ensure(ctx, r1, []string{"api"}); err != nil {
		t.Fatal(err)
	}
	a1.Release(r1) // the port is free again; its claim is stale
	r2 := saveWorld(t, h, "w2")
	if _, err := a2.Ensure(ctx, r2, []string{"api"}); err != nil {
		t.Errorf("the same home, by a symlink, cannot lease its free port: %v", err)
	}
}

// A claim pointing at a home's own lease, stale until that lease is made
// again, is settled under the lock: another home replacing it as stale at
// that moment must not leave both holding the port (a review found both
// did, about one round in 50).
func TestAStaleClaimOfOnesOwnIsNotTakenByTwoHomes(t *testing.T) {
	claims := t.TempDir()
	const port = 24310
	rng := PortRange{Min: port, Max: port}
	a := &Allocator{Home: newTestHome(t), Range: rng, Bindable: func(int) bool { return true }, Claims: claims}
	b := &Allocator{Home: newTestHome(t), Range: rng, Bindable: func(int) bool { return true }, Claims: claims}
	path := filepath.Join(claims, strconv.Itoa(port))
	both := 0
	for i := 0; i < 2000 && both == 0; i++ {
		os.Remove(a.leasePath(port))
		os.Remove(b.leasePath(port))
		os.Remove(path)
		os.Symlink(a.claimTarget(port), path) // a's, stale: a released it
		var wg sync.WaitGroup
		var okA, okB bool
		wg.Add(2)
		go func() { defer wg.Done(); a.tryLease(port, "w", "api"); okA = a.claim(port) }()
		go func() { defer wg.Done(); b.tryLease(port, "w", "api"); okB = b.claim(port) }()
		wg.Wait()
		if okA && okB {
			both++
			t.Errorf("iteration %d: both homes hold port %d (claim -> %s)", i, port, func() string { s, _ := os.Readlink(path); return s }())
		}
	}
}

// A port whose claim was removed by hand, then claimed by another home:
// ensureClaimed failed silently and both homes' worlds used the port, the
// second to start meeting EADDRINUSE. A world with nothing on the port
// moves; one whose service may be listening on it keeps it.
func TestAPortAnotherHomeClaimedWhileOursWasMissingMoves(t *testing.T) {
	claims, a, b := twoHomes(t, 24140, 24141)
	ctx := context.Background()
	ra := saveWorld(t, a.Home, "w")
	if _, err := a.Ensure(ctx, ra, []string{"api"}); err != nil {
		t.Fatal(err)
	}
	port := ra.Ports["api"]
	os.Remove(filepath.Join(claims, strconv.Itoa(port)))
	// Home b's world wants the same port first (same name and key): it
	// takes it, since no claim names it and nothing listens.
	rb := saveWorld(t, b.Home, "w")
	if _, err := b.Ensure(ctx, rb, []string{"api"}); err != nil {
		t.Fatal(err)
	}
	if rb.Ports["api"] != port {
		t.Skipf("home b chose port %d, not the contested %d", rb.Ports["api"], port)
	}
	running := *ra
	running.Ports = map[string]int{"api": port}
	running.Services = map[string]*ServiceState{"api": {PID: 4242, State: "healthy"}}
	if changed, err := a.Ensure(ctx, &running, []string{"api"}); err != nil || changed || running.Ports["api"] != port {
		t.Errorf("a world whose service may hold the port: changed=%v err=%v port %d, want it kept", changed, err, running.Ports["api"])
	}
	if changed, err := a.Ensure(ctx, ra, []string{"api"}); err != nil || !changed || ra.Ports["api"] == port {
		t.Fatalf("a stopped world on a port another home claimed: changed=%v err=%v port %d, want another", changed, err, ra.Ports["api"])
	}
	if a.owned(port, ra.ID, "api") {
		t.Error("the moved world kept its lease on the old port")
	}
}

// A released port's claim goes with its lease: each one stayed behind, and
// thousands piled up in the claims folder; another home's claim on the
// port, made since, is not touched.
func TestAReleasedPortsClaimIsRemoved(t *testing.T) {
	claims, a, b := twoHomes(t, 24120, 24121)
	ctx := context.Background()
	ra := saveWorld(t, a.Home, "w")
	if _, err := a.Ensure(ctx, ra, []string{"api"}); err != nil {
		t.Fatal(err)
	}
	port := ra.Ports["api"]
	claim := filepath.Join(claims, strconv.Itoa(port))
	if _, err := os.Readlink(claim); err != nil {
		t.Fatalf("no claim for the leased port: %v", err)
	}
	a.Release(ra)
	if _, err := os.Lstat(claim); !os.IsNotExist(err) {
		t.Errorf("the released port's claim is still there: %v", err)
	}
	// Home b's claim on the port is b's, whatever a releases.
	rb := saveWorld(t, b.Home, "w")
	if _, err := b.Ensure(ctx, rb, []string{"api"}); err != nil {
		t.Fatal(err)
	}
	ra.Ports = map[string]int{"api": rb.Ports["api"]}
	a.Release(ra)
	if target, err := os.Readlink(filepath.Join(claims, strconv.Itoa(rb.Ports["api"]))); err != nil || target != b.claimTarget(rb.Ports["api"]) {
		t.Errorf("home a's release took home b's claim: %q, %v", target, err)
	}
}
