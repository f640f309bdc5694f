package daemon

import (
	"context"
	"fmt"
	"slices"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/world"
)

// Service stops, starts or restarts one service of a running world, on the
// world's ports, leaving its other services as they are.
func (d *Daemon) Service(ctx context.Context, req api.Request) (api.World, error) {
	// A running world's services are restarted as they run, from the
	// config it was started with, though binky.toml is mid-edit.
	w, _, err := world.OpenApproved(d.home, req.Dir, req.Name)
	if err != nil {
		return api.World{}, classify(err)
	}
	r, err := d.lockRunOf(ctx, w.ID)
	if err != nil {
		return api.World{}, err
	}
	defer r.mu.Unlock()
	if r.group == nil {
		return api.World{}, &api.Error{Code: api.CodeUsage, Message: fmt.Sprintf("%s is not running: start it with: git binky up %s", w.Name, world.ShellArg(w.Name))}
	}
	if !slices.Contains(r.names, req.Service) {
		msg := fmt.Sprintf("%s runs no service %q (it runs %v)", w.Name, req.Service, r.names)
		switch svc := w.Config.Services[req.Service]; {
		case svc != nil && svc.Adapter != "":
			// A slice is data on a shared server: it has no process here.
			msg = fmt.Sprintf("%s: service %q is a %s slice (data on a shared server, no process of this world's): there is nothing to %s ('git binky servers' lists the shared servers; 'servers stop' and 'servers start' act on them)", w.Name, req.Service, svc.Adapter, req.Action)
		case svc != nil:
			msg += fmt.Sprintf("; %q is in binky.toml but not in the group this world was started with: 'git binky up %s --group <its group>' starts it", req.Service, world.ShellArg(w.Name))
		}
		return api.World{}, &api.Error{Code: api.CodeUsage, Message: msg}
	}
	if _, ok := r.group.Spec(req.Service); !ok {
		// The world's, but its process died while no daemon watched.
		return api.World{}, &api.Error{Code: api.CodeUsage, Message: fmt.Sprintf("%s's service %s died while no daemon was watching: 'git binky up %s' starts it again (with --group of its group, if a plain up does not)", w.Name, req.Service, world.ShellArg(w.Name))}
	}
	// A start waits for a oneshot as long as it runs: a down or a remove
	// of the world ends it rather than wait behind it (endStart).
	sctx, end := context.WithCancelCause(ctx)
	r.starting.Store(&end)
	defer func() { r.starting.Store(nil); end(nil) }()
	switch req.Action {
	case api.ServiceStop:
		err = r.group.StopService(ctx, req.Service)
	case api.ServiceStart:
		err = r.group.StartService(sctx, req.Service)
	case api.ServiceRestart:
		err = r.group.RestartService(sctx, req.Service)
	default:
		return api.World{}, &api.Error{Code: api.CodeUsage, Message: fmt.Sprintf("unknown service action %q: stop, start or restart", req.Action)}
	}
	d.routesChanged()
	if cause := context.Cause(sctx); err != nil && cause != nil && ctx.Err() == nil {
		err = cause
	}
	if err != nil {
		return api.World{}, fmt.Errorf("%s %s of %s: %w", req.Action, req.Service, w.Name, err)
	}
	d.log.Info("service "+req.Action, "world", w.Name, "service", req.Service)
	return d.describe(w.ID, r)
}
