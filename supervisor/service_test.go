package supervisor

import (
	"context"
	"strings"
	"testing"
)

func TestOneServiceStopsStartsAndRestartsAlone(t *testing.T) {
	api, _ := httpSpec(t, "api")
	web, _ := httpSpec(t, "web", "api")
	g, err := NewGroup([]Spec{web, api}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := g.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop(context.Background()) })
	before, _ := g.Status("web")

	if err := g.RestartService(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	after, _ := g.Status("web")
	if after.State != Healthy || after.PID == before.PID || after.PID == 0 {
		t.Errorf("web after restart: %+v (before pid %d): want a new, healthy process", after, before.PID)
	}
	if st, _ := g.Status("api"); st.State != Healthy {
		t.Errorf("restarting web touched api: %+v", st)
	}

	if err := g.StopService(ctx, "api"); err != nil {
		t.Fatal(err)
	}
	if st, _ := g.Status("api"); st.State != Stopped {
		t.Errorf("api after StopService: %s", st.State)
	}
	if st, _ := g.Status("web"); st.State != Healthy {
		t.Errorf("stopping api stopped web too: %s", st.State)
	}
	if err := g.RestartService(ctx, "web"); err == nil || !strings.Contains(err.Error(), "depends on api") {
		t.Errorf("starting web while api is stopped: %v, want an error naming api", err)
	}
	if err := g.StartService(ctx, "api"); err != nil {
		t.Fatal(err)
	}
	if err := g.StartService(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	for _, st := range g.Statuses() {
		if st.State != Healthy {
			t.Errorf("%s: %s after starting both again", st.Name, st.State)
		}
	}
	if err := g.StartService(ctx, "nope"); err == nil || !strings.Contains(err.Error(), "not in this world") {
		t.Errorf("unknown service: %v", err)
	}
}
