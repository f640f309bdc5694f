package main

import "testing"

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
