package daemon

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/git-binky/git-binky/api"
)

// Metrics gathers point-in-time figures for `git binky metrics`.
func (d *Daemon) Metrics(ctx context.Context) (api.Metrics, error) {
	st, err := d.Status(ctx, api.Request{})
	if err != nil {
		return api.Metrics{}, err
	}
	m := api.Metrics{Schema: 1, WorldsByState: map[string]int{}, ServicesByState: map[string]int{}, SlicesByAdapter: map[string]int{}}
	for _, w := range st.Worlds {
		m.WorldsByState[string(w.State)]++
		for _, s := range w.Services {
			m.ServicesByState[s.State]++
			m.Restarts += s.Restarts
		}
		for _, sl := range w.Slices {
			m.SlicesByAdapter[sl.Adapter]++
		}
	}
	m.QueueLength = d.admission.QueueLength()
	leases, _ := d.home.Leases()
	for _, l := range leases {
		if l.Stale {
			m.StaleLeases++
		} else {
			m.PortsLeased++
		}
	}
	m.Daemon = api.DaemonMetrics{PID: os.Getpid(), Version: d.version, RSSBytes: rss(), Goroutines: runtime.NumGoroutine(),
		UptimeSeconds: time.Since(d.started).Seconds()}
	if d.proxy != nil {
		m.Daemon.ProxyRoutes = len(d.proxy.Routes())
	}
	return m, nil
}

// rss is this process's resident memory, from /proc/self/status.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				kb, _ := strconv.ParseUint(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}
