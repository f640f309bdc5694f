package world

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNoFreePort is returned when every port in the range is leased or bound.
var ErrNoFreePort = errors.New("no free port")

// Lease is the content of a lease file $BINKY_HOME/ports/<port>: which
// world's which port key holds the port.
type Lease struct {
	Port  int    `json:"port"`
	World string `json:"world"`
	Key   string `json:"key"`
}

// Allocator hands out ports machine-wide. A lease is a file created
// atomically (hard link of a complete temp file, which fails if the name
// exists, like O_EXCL but never visible half-written), so any number of
// processes can allocate at once without a global lock.
type Allocator struct {
	Home  Home
	Range PortRange
	// Bindable reports whether the OS lets us bind port; tests replace it.
	Bindable func(port int) bool
	// Claims is the folder of machine-wide claims (claims.go) other homes
	// of this user see; "" for none.
	Claims string

	realOnce  sync.Once
	realPorts string // the ports folder's real path (claimTarget)
}

// NewAllocator returns the machine allocator for the settings' range.
func (h Home) NewAllocator(s Settings) *Allocator {
	return &Allocator{Home: h, Range: s.Ports, Bindable: Bindable, Claims: machineClaims()}
}

var machineClaims = sync.OnceValue(MachineClaims)

// Bindable reports whether a listener could be opened on port on loopback
// right now, for IPv4 and (where the machine has it) IPv6. A port some other
// program listens on, on any address, fails this.
func Bindable(port int) bool {
	l, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	l6, err := net.Listen("tcp6", net.JoinHostPort("::1", strconv.Itoa(port)))
	if err == nil {
		l6.Close()
		return true
	}
	// No IPv6 on this machine is fine; an IPv6 listener on the port is not.
	return !addrInUse(err)
}

// FreeToStart reports whether a service may start on port: Bindable,
// asked again over ~150 ms before it says no. Eight ups at once saw a
// world's own port, which nothing listened on, refuse a bind for an
// instant (its old connections in TIME_WAIT, a moment after its down),
// and the whole up failed as if another program held the port. A program
// that does hold it holds it throughout.
func FreeToStart(port int) bool {
	for i := 1; ; i++ {
		if Bindable(port) {
			return true
		}
		if i == 5 {
			return false
		}
		time.Sleep(time.Duration(10*i) * time.Millisecond)
	}
}

func (a *Allocator) leasePath(port int) string {
	return filepath.Join(a.Home.PortsDir(), strconv.Itoa(port))
}

// first is the stable first choice for (world, key): the same world asks for
// the same port every time, and different worlds spread over the range.
func (a *Allocator) first(world, key string) int {
	h := fnv.New32a()
	h.Write([]byte(world + "\x00" + key))
	n := a.Range.Max - a.Range.Min + 1
	return a.Range.Min + int(h.Sum32()%uint32(n))
}

// Ensure gives rec a leased port for every key, keeping the ports it already
// holds, and releases ports for keys no longer wanted. It reports whether
// rec.Ports changed. The record must already be saved (a lease whose world
// has no record is stale and may be reclaimed by anyone) and locked.
func (a *Allocator) Ensure(ctx context.Context, rec *Record, keys []string) (bool, error) {
	if err := a.Home.Ensure(); err != nil {
		return false, err
	}
	if rec.Ports == nil {
		rec.Ports = map[string]int{}
	}
	changed := false
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	for k, p := range rec.Ports {
		if !want[k] {
			a.release(p, rec.ID, k)
			delete(rec.Ports, k)
			changed = true
		}
	}
	sorted := append([]string(nil), keys...)
	sort.Strings(sorted)
	for _, k := range sorted {
		if err := ctx.Err(); err != nil {
			return changed, err
		}
		if p, ok := rec.Ports[k]; ok {
			held := a.owned(p, rec.ID, k)
			if !held {
				// Our lease vanished (deleted by hand?): take the same port
				// back if nobody else has; our own service may be listening
				// on it, so no bind check.
				held, _ = a.tryLease(p, rec.ID, k)
			}
			if !held {
				// Or it is there but garbled: the record says the port is
				// ours, and a garbled lease is nobody's (binky links leases
				// in whole), so it is ours again, where the port moved
				// under a running service and its URL led nowhere.
				held = a.retakeGarbled(p, rec.ID, k)
			}
			if held {
				if a.ensureClaimed(p) || serviceRecorded(rec, k) || !a.Bindable(p) {
					continue
				}
				// Another home claimed the port while no claim of ours named
				// it (ours removed by hand, a lease from before claims), and
				// nothing of ours runs on it: that home's service will bind
				// it, so ours moves rather than meet EADDRINUSE. A port a
				// service of ours may hold is never moved.
				a.release(p, rec.ID, k)
				delete(rec.Ports, k)
				changed = true
			}
		}
		p, err := a.allocate(rec.ID, k)
		if err != nil {
			return changed, err
		}
		rec.Ports[k] = p
		changed = true
	}
	return changed, nil
}

// serviceRecorded reports whether the record names a process of the
// service the port key k belongs to ("api" of "api.metrics"): one that may
// be listening on the port now.
func serviceRecorded(rec *Record, k string) bool {
	svc, _, _ := strings.Cut(k, ".")
	st := rec.Services[svc]
	return st != nil && st.PID != 0
}

func (a *Allocator) allocate(world, key string) (int, error) {
	n := a.Range.Max - a.Range.Min + 1
	start := a.first(world, key) - a.Range.Min
	for i := 0; i < n; i++ {
		p := a.Range.Min + (start+i)%n
		for attempt := 0; attempt < 2; attempt++ {
			ok, l := a.tryLease(p, world, key)
			if ok {
				// Another home's, or held from outside binky: give the lease
				// back, move on.
				if a.claim(p) && a.Bindable(p) {
					return p, nil
				}
				a.release(p, world, key)
				break
			}
			if l != nil && l.World == world && l.Key == key {
				// Ours from an earlier run that crashed before saving.
				if a.claim(p) {
					return p, nil
				}
				a.release(p, world, key)
				break
			}
			if !a.stale(p) || !a.reclaim(p) {
				break
			}
		}
	}
	return 0, fmt.Errorf("%w in %d-%d for %s: free some worlds ('git binky status'), or widen the range in %s", ErrNoFreePort, a.Range.Min, a.Range.Max, key, a.Home.SettingsPath())
}

// tryLease creates the lease for port atomically. It returns the existing
// lease (or nil if unreadable) when the port is already leased.
func (a *Allocator) tryLease(port int, world, key string) (bool, *Lease) {
	b, _ := json.Marshal(Lease{Port: port, World: world, Key: key})
	tmp, err := os.CreateTemp(a.Home.PortsDir(), ".lease*")
	if err != nil {
		return false, nil
	}
	_, werr := tmp.Write(b)
	tmp.Close()
	defer os.Remove(tmp.Name())
	if werr != nil {
		return false, nil
	}
	if err := os.Link(tmp.Name(), a.leasePath(port)); err == nil {
		return true, nil
	}
	l, _ := a.readLease(port)
	return false, l
}

func (a *Allocator) readLease(port int) (*Lease, error) {
	b, err := os.ReadFile(a.leasePath(port))
	if err != nil {
		return nil, err
	}
	var l Lease
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

func (a *Allocator) owned(port int, world, key string) bool {
	l, err := a.readLease(port)
	return err == nil && l.World == world && l.Key == key
}

// reclaim removes the lease on port if it is stale: its world has no record,
// or the file is garbage old enough not to be a lease being written. The
// check and the removal happen under one lock so that two reclaimers cannot
// both act on the same stale lease and delete a fresh one in between.
func (a *Allocator) reclaim(port int) bool {
	return a.reclaiming(func() bool {
		return a.stale(port) && os.Remove(a.leasePath(port)) == nil
	})
}

// reclaiming runs fn under the lock every remover of a lease it did not
// write takes, and returns what fn does (false when the lock is not had).
func (a *Allocator) reclaiming(fn func() bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	unlock, err := Lock(ctx, filepath.Join(a.Home.PortsDir(), ".reclaim.lock"))
	if err != nil {
		return false
	}
	defer unlock()
	return fn()
}

// retakeGarbled replaces a lease on port that is not a lease at all
// (unreadable JSON) with world's, under the reclaimers' lock.
func (a *Allocator) retakeGarbled(port int, world, key string) bool {
	return a.reclaiming(func() bool {
		b, err := os.ReadFile(a.leasePath(port))
		if err != nil {
			return false // no file to judge
		}
		var l Lease
		if json.Unmarshal(b, &l) == nil && l.World != "" {
			return false // a real lease: another's
		}
		if os.Remove(a.leasePath(port)) != nil {
			return false
		}
		ok, _ := a.tryLease(port, world, key)
		return ok
	})
}

func (a *Allocator) stale(port int) bool {
	l, err := a.readLease(port)
	if err != nil {
		fi, serr := os.Stat(a.leasePath(port))
		return serr == nil && time.Since(fi.ModTime()) > time.Minute
	}
	return !a.Home.leaseOwnerExists(l.World)
}

// serverLease is the lease owner of a managed server's port.
const serverLease = "server-"

// leaseOwnerExists: a world's record, or a managed server's folder. A
// server's second port is leased as "<kind>-<role>" (rabbitmq-management,
// s3-console): its folder is the kind's. (They read as stale, were
// reclaimed and given to worlds, and the server could not start.)
func (h Home) leaseOwnerExists(owner string) bool {
	if kind, ok := strings.CutPrefix(owner, serverLease); ok {
		if _, err := os.Stat(filepath.Join(h.ServersDir(), kind)); err == nil {
			return true
		}
		base, _, second := strings.Cut(kind, "-")
		_, err := os.Stat(filepath.Join(h.ServersDir(), base))
		return second && err == nil
	}
	return h.HasRecord(owner)
}

// Server leases a port for the managed server of kind (its folder under
// servers/ must exist: it is what keeps the lease from being stale).
func (a *Allocator) Server(kind string) (int, error) {
	if err := a.Home.Ensure(); err != nil {
		return 0, err
	}
	return a.allocate(serverLease+kind, kind)
}

// release removes the lease on port if world still holds it under key.
func (a *Allocator) release(port int, world, key string) {
	if a.owned(port, world, key) {
		os.Remove(a.leasePath(port))
		a.unclaim(port)
	}
}

// Release gives back every port rec holds.
func (a *Allocator) Release(rec *Record) {
	for k, p := range rec.Ports {
		a.release(p, rec.ID, k)
	}
	rec.Ports = map[string]int{}
}

// Leases lists every lease file, with Stale set for those whose world is gone.
func (h Home) Leases() ([]LeaseInfo, error) {
	entries, err := os.ReadDir(h.PortsDir())
	if isNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	a := &Allocator{Home: h}
	var out []LeaseInfo
	for _, e := range entries {
		port, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		l, err := a.readLease(port)
		if err != nil {
			out = append(out, LeaseInfo{Lease: Lease{Port: port}, Stale: a.stale(port)})
			continue
		}
		out = append(out, LeaseInfo{Lease: *l, Stale: !h.leaseOwnerExists(l.World)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out, nil
}

// LeaseInfo is a lease as `doctor` and `metrics` see it.
type LeaseInfo struct {
	Lease
	Stale bool `json:"stale"`
}
