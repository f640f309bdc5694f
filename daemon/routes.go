package daemon

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/git-binky/git-binky/proxy"
	"github.com/git-binky/git-binky/supervisor"
	"github.com/git-binky/git-binky/world"
)

// startProxy serves the URL proxy on loopback. A port that cannot be had
// (another program holds it; settings.toml is broken and has no good copy)
// is logged and reported by doctor, and tried again every proxyRetry: the
// proxy comes back once the port is free or the file fixed, with no
// daemon restart. The daemon does everything else meanwhile.
func (d *Daemon) startProxy(ctx context.Context) {
	d.proxy = proxy.New()
	d.routesDirty = make(chan struct{}, 1)
	if !d.listenProxy(ctx, true) {
		go func() {
			t := time.NewTicker(proxyRetry)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					if d.listenProxy(ctx, false) {
						return
					}
				}
			}
		}()
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-d.routesDirty:
				d.refreshRoutes()
			}
		}
	}()
	// The first table before the daemon answers anyone: a curl right
	// after the hello that started it found no route (404).
	d.refreshRoutes()
}

// proxyRetry is how often a proxy that could not listen tries again.
var proxyRetry = 2 * time.Second

// listenProxy starts serving the proxy on the settings' port, and reports
// whether the caller is done with it: it serves, or the daemon is
// stopping. first says this is the daemon's start: a failure is logged
// then, and again only when its reason changes.
func (d *Daemon) listenProxy(ctx context.Context, first bool) bool {
	if ctx.Err() != nil || homeFate(d.gone.Load()) == homeDeleted {
		return true // stopping, or its home is gone: nothing to serve or to note
	}
	// A settings file that does not load comes with the last good copy:
	// the proxy serves on that, as the error promises, rather than not at
	// all.
	settings, err := d.home.LoadSettings()
	if err != nil && first {
		d.log.Error("proxy: settings", "err", err, "proxy_port", settings.ProxyPort)
	}
	var ls []net.Listener
	if err == nil || world.UsingLastGood(err) {
		ls, err = proxy.Listen(settings.ProxyPort)
	}
	// else no good copy to go on with: the defaults' port may be another
	// home's, so none is taken; doctor and status say why.
	if err == nil && ctx.Err() != nil {
		for _, l := range ls {
			l.Close()
		}
		return true
	}
	d.listenMu.Lock()
	was := d.proxyErr
	d.proxyErr = err
	d.listenMu.Unlock()
	if err != nil {
		if first || was == nil || was.Error() != err.Error() {
			d.log.Error("proxy not started", "err", err, "retry_every", proxyRetry.String())
		}
		d.noteProxyDown(err.Error())
		return false
	}
	d.noteProxyDown("")
	go proxy.Serve(ctx, d.proxy, ls)
	d.log.Info("proxy listening", "port", settings.ProxyPort)
	d.startHTTPS(ctx, settings)
	return true
}

// noteProxyDown writes why the proxy is down (proxy.down, which env and
// every world's URLs read), or removes it, when that is not what the file
// says already: a write that failed is tried again at the next retry.
func (d *Daemon) noteProxyDown(why string) {
	d.listenMu.Lock()
	defer d.listenMu.Unlock()
	if d.downNoted != nil && *d.downNoted == why {
		return
	}
	if err := d.home.SetProxyDown(why); err != nil {
		d.log.Error("proxy: note its state", "err", err)
		return
	}
	d.downNoted = &why
}

// routesChanged asks for the route table to be rebuilt; bursts of changes
// coalesce into one rebuild.
func (d *Daemon) routesChanged() {
	if d.routesDirty == nil {
		return
	}
	select {
	case d.routesDirty <- struct{}{}:
	default:
	}
}

// refreshRoutes rebuilds the proxy's routes from the world records, which
// every change of a service's state is saved to first.
func (d *Daemon) refreshRoutes() {
	recs, err := d.home.Records()
	if err != nil {
		d.log.Error("proxy: read records", "err", err)
		if !world.OnlyUnreadable(err) {
			return
		}
	}
	var routes []proxy.Route
	claimed := map[string]string{} // host → the world id that claims it
	clash := map[string]bool{}
	for _, rec := range recs {
		for _, rt := range routesOf(rec) {
			h := strings.ToLower(rt.Host)
			if id, ok := claimed[h]; ok && id != rec.ID {
				clash[h] = true
			}
			claimed[h] = rec.ID
			routes = append(routes, rt)
		}
	}
	// A URL must never reach another world's service: a host two worlds
	// claim (records written before URL labels were kept unique could)
	// reaches neither until 'git binky up' gives them distinct labels.
	out := routes[:0]
	for _, rt := range routes {
		if clash[strings.ToLower(rt.Host)] {
			d.log.Warn("proxy: host claimed by two worlds; routing it to neither", "host", rt.Host, "world", rt.World)
			continue
		}
		out = append(out, rt)
	}
	d.proxy.SetRoutes(out)
}

func routesOf(rec *world.Record) []proxy.Route {
	var out []proxy.Route
	for svc, host := range rec.Hosts {
		group, listed := rec.Groups[svc]
		rt := proxy.Route{Host: host, Project: rec.Project, World: rec.Worktree, Service: svc, Group: group, Ungrouped: listed && group == "", Port: rec.Ports[svc], State: string(supervisor.Stopped)}
		if s := rec.Services[svc]; s != nil {
			rt.State = s.State
			// Its first line only: binky's own sentence, not the log
			// tail a crash report carries below it.
			if reason, _, _ := strings.Cut(s.Message, "\n"); len(reason) <= 300 {
				rt.Reason = strings.TrimSuffix(strings.TrimSpace(reason), "; last output:")
			}
			switch supervisor.State(s.State) {
			case supervisor.Healthy, supervisor.Running, supervisor.Unhealthy, supervisor.Starting:
				rt.Up = s.PID != 0
			}
		}
		out = append(out, rt)
	}
	return out
}
