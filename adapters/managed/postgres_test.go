package managed

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestInitdbIsToldTheSystemsTimeZoneInsteadOfSearchingForIt(t *testing.T) {
	dir := t.TempDir()
	zone := filepath.Join(dir, "usr", "share", "zoneinfo", "Europe", "Paris")
	right := filepath.Join(dir, "usr", "share", "zoneinfo", "right", "Europe", "Paris")
	for _, f := range []string{zone, right} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("TZif"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := filepath.Join(dir, "copied")
	if err := os.WriteFile(plain, []byte("TZif"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := []string{"PATH=/usr/bin", "HOME=/root"}
	for _, c := range []struct {
		name      string
		env       []string
		localtime string
		wantTZ    string // "" when initdb is left to find the zone itself
	}{
		{"an absolute link", base, link("abs", zone), "Europe/Paris"},
		{"a relative link", base, link("rel", "usr/share/zoneinfo/Europe/Paris"), "Europe/Paris"},
		{"TZ already set is kept", append(base, "TZ=Asia/Tokyo"), link("set", zone), "Asia/Tokyo"},
		{"a copied file names no zone", base, plain, ""},
		{"a dangling link", base, link("gone", filepath.Join(dir, "usr", "share", "zoneinfo", "Mars", "Base")), ""},
		{"a leap-second zone", base, link("right", right), ""},
		{"no localtime at all", base, filepath.Join(dir, "missing"), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := initdbEnv(slices.Clone(c.env), c.localtime)
			var tz string
			for _, kv := range got {
				if len(kv) > 3 && kv[:3] == "TZ=" {
					if tz != "" {
						t.Fatalf("TZ set twice: %q", got)
					}
					tz = kv[3:]
				}
			}
			if tz != c.wantTZ {
				t.Fatalf("TZ = %q, want %q (env %q)", tz, c.wantTZ, got)
			}
			if !slices.Equal(got[:len(c.env)], c.env) {
				t.Fatalf("the rest of the environment changed: %q", got)
			}
		})
	}
}
