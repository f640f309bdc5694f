package world

import (
	"strings"
	"testing"
)

func TestInterpolate(t *testing.T) {
	vars := map[string]string{"self.port": "4100", "api.url": "http://127.0.0.1:4200", "env.EMPTY": ""}
	lookup := func(ref string) (string, bool) { v, ok := vars[ref]; return v, ok }
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"--port ${self.port}", "--port 4100"},
		{"${api.url}/x ${self.port}", "http://127.0.0.1:4200/x 4100"},
		{"${unknown.thing} stays", "${unknown.thing} stays"},
		{"empty=${env.EMPTY}!", "empty=!"},
		{"$${self.port} is escaped", "${self.port} is escaped"},
		{"unterminated ${self.port", "unterminated ${self.port"},
		{"${}", "${}"},
		{"$$ and $x", "$$ and $x"},
	}
	for _, tt := range tests {
		if got := Interpolate(tt.in, lookup); got != tt.want {
			t.Errorf("Interpolate(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := strings.Join(Tokens("a ${x.y} $${no} ${z}"), ","); got != "x.y,z" {
		t.Errorf("Tokens = %s", got)
	}
}

func FuzzInterpolate(f *testing.F) {
	for _, s := range []string{"${self.port}", "$${x}", "${", "}${a.b}${", "${${a}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		known := func(ref string) (string, bool) { return "V", ref == "a.b" }
		none := func(string) (string, bool) { return "", false }
		out := Interpolate(s, known)
		// With nothing known, only escapes change the string.
		if !strings.Contains(s, "$${") && Interpolate(s, none) != s {
			t.Fatalf("unknown tokens changed %q", s)
		}
		_ = Tokens(s)
		_ = out
		// A shell command: never a panic, and either refused or what
		// Interpolate writes.
		odd := func(ref string) (string, bool) { return `'"\$` + "`" + s, ref == "a.b" || ref == "worktree.name" }
		if got, err := InterpolateShell(s, odd); err == nil && got != Interpolate(s, odd) {
			t.Fatalf("InterpolateShell(%q) = %q, not refused nor as Interpolate", s, got)
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("[services.api]\ncmd = \"x ${self.port}\"\nurl = \"api\"\n"))
	f.Add([]byte("[project]\nname=\"a\"\n[services.a]\ncmd='''\nx\n'''\nhealth = { http = \"/\" }\n"))
	f.Add([]byte("[[services]]\n\"quoted.key\" = 1\na.b.c = { d = [1, {e = 2}] }\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		cfg, diags := ParseConfig("binky.toml", src)
		for _, d := range diags {
			if d.Line < 1 || d.Column < 1 {
				t.Fatalf("diagnostic without a position: %+v", d)
			}
		}
		if cfg != nil && !hasErrors(diags) {
			Check(cfg, func(string) Adapter { return Adapter{Known: true, Managed: true} })
			_, _ = cfg.Order(nil)
		}
	})
}
