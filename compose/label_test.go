package compose

import (
	"strings"
	"testing"
)

func TestLabel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "app"},
		{"---", "app"},
		{"web", "web"},
		{"My App", "my-app"},
		{"a__b--c", "a-b-c"},
		{"ÜBER-app", "ber-app"},
		{"db.primary", "db-primary"},
		{strings.Repeat("a", 63), strings.Repeat("a", 63)},
		// Cut to 63 bytes with a hash of the whole name.
		{strings.Repeat("a", 64), strings.Repeat("a", 54) + "-ffe054fe"},
	} {
		if got := label(tc.in); got != tc.want {
			t.Errorf("label(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
