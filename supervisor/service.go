package supervisor

import (
	"context"
	"fmt"
)

// StopService stops one service of the group, leaving the others (its
// dependents too) running: an agent restarting its API must not take the
// database down with it.
func (g *Group) StopService(ctx context.Context, name string) error {
	p, ok := g.get(name)
	if !ok {
		return fmt.Errorf("service %q is not in this world (its services: %v)", name, g.names())
	}
	return p.stop(ctx)
}

// StartService starts one service of the group that is not running, once
// its dependencies are ready, and waits until it is ready itself. A service
// already running is left as it is.
func (g *Group) StartService(ctx context.Context, name string) error {
	p, ok := g.get(name)
	if !ok {
		return fmt.Errorf("service %q is not in this world (its services: %v)", name, g.names())
	}
	var deps []*proc
	var fells []chan struct{}
	for _, d := range p.spec.DependsOn {
		dp, _ := g.get(d)
		// The state and the channel its failure closes, read together: a
		// failure between the two would leave this start waiting on the
		// next failure's channel.
		dp.mu.Lock()
		st, fell := dp.st.State, dp.fellOver
		dp.mu.Unlock()
		if st != Healthy && st != Running && st != Starting && st != Done {
			return fmt.Errorf("service %s depends on %s, which is %s: start it first", name, d, st)
		}
		deps, fells = append(deps, dp), append(fells, fell)
	}
	g.startRotation()
	p.mu.Lock()
	if p.running && p.st.State == Crashed {
		// Its loop waits out a restart's backoff: the readiness of its
		// first start would answer at once, for a service that is down.
		msg := p.st.Message
		p.mu.Unlock()
		return fmt.Errorf("service %s is crashed and waiting to restart (%s): 'git binky service restart %s' restarts it now", name, msg, name)
	}
	// This run's readiness, not the last one's: the first start closed
	// ready, and a restarted service is not ready until probed again.
	p.freshLocked()
	p.mu.Unlock()
	return p.start(ctx, deps, fells)
}

// RestartService stops one service and starts it again, on the same port.
func (g *Group) RestartService(ctx context.Context, name string) error {
	if err := g.StopService(ctx, name); err != nil {
		return err
	}
	return g.StartService(ctx, name)
}
