package main

import (
	"fmt"
	"testing"

	"github.com/git-binky/git-binky/api"
)

// A slice's line says migrated or seeded only when those steps ran: a Redis
// slice said "provisioned, migrated and seeded".
func TestASliceSaysOnlyTheStepsThatRan(t *testing.T) {
	for _, tc := range []struct {
		ran  []string
		want string
	}{
		{nil, "provisioned"},
		{[]string{"migrate"}, "provisioned and migrated"},
		{[]string{"seed"}, "provisioned and seeded"},
		{[]string{"migrate", "seed"}, "provisioned, migrated and seeded"},
	} {
		if got := provisionedWith(tc.ran); got != tc.want {
			t.Errorf("provisionedWith(%v) = %q, want %q", tc.ran, got, tc.want)
		}
	}
}

// An up's last line counts what runs: services outside its group, or
// crashed, are not passed off as up.
func TestUpCountsTheServicesThatRun(t *testing.T) {
	world := func(states ...string) api.World {
		var w api.World
		for i, s := range states {
			w.Services = append(w.Services, api.Service{Name: fmt.Sprint("s", i), State: s})
		}
		return w
	}
	for _, c := range []struct {
		w    api.World
		want string
	}{
		{world("healthy", "running", "done"), "3 services"},
		{world("healthy"), "1 service"},
		{world("healthy", "stopped", "stopped"), "1 of 3 services running"},
		{world("starting", "crashed"), "1 of 2 services running"},
		{world("suspended"), "0 of 1 service running"},
	} {
		if got := servicesCount(c.w); got != c.want {
			t.Errorf("%v: %q, want %q", c.w.Services, got, c.want)
		}
	}
}
