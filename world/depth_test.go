package world

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A branch's binky.toml is parsed before anyone approved it: shapes whose
// decoding costs quadratic time and memory are refused first, quickly,
// with where.
func TestConfigsNestedTooDeeplyAreRefusedBeforeDecoding(t *testing.T) {
	head := "[project]\nname = \"acme\"\n[services.api]\ncmd = \"sleep 1\"\n"
	for name, tc := range map[string]struct {
		src        string
		line       int
		mentioning string
	}{
		"inline tables 20,000 deep (took the daemon past 17 GB)": {
			head + "env = { X = " + strings.Repeat("{a=", 20000) + "1" + strings.Repeat("}", 20000) + " }\n", 5, "nested"},
		"arrays 20,000 deep":              {head + "ports = " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n", 5, "nested"},
		"a dotted key of 20,000 parts":    {head + "env" + strings.Repeat(".a", 20000) + " = 1\n", 5, "key path"},
		"a header of 20,000 parts":        {head + "[x" + strings.Repeat(".a", 20000) + "]\n", 5, "key path"},
		"a dotted key in an inline table": {head + "env = { " + strings.Repeat("a.", 40) + "b = 1 }\n", 5, "key path"},
		// A review's bypass of a first scan that counted each key alone:
		// 32-part keys in 31 nested inline tables, 490 lines of them (1 MB),
		// took 57 s and 24 GB to decode.
		"short keys across nested inline tables": {head + "env = { " + strings.Repeat("a.a.a = { ", 5) + "b = 1" + strings.Repeat(" }", 5) + " }\n", 5, "key path"},
		"a table header's parts count too":       {head + "[a.b.c.d.e.f.g]\nh.i.j = { k = 1 }\n", 6, "key path"},
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			cfg, diags := ParseConfig("binky.toml", []byte(tc.src))
			if took := time.Since(start); took > time.Second {
				t.Errorf("took %s", took)
			}
			if cfg != nil || len(diags) != 1 {
				t.Fatalf("parsed: %v %v", cfg != nil, diags)
			}
			d := diags[0]
			if d.Severity != SeverityError || d.Line != tc.line || d.Column < 1 || !strings.Contains(d.Message, tc.mentioning) {
				t.Errorf("diagnostic %s (line %d column %d), want an error on line %d mentioning %q", d, d.Line, d.Column, tc.line, tc.mentioning)
			}
		})
	}
}

// What real configs hold is not miscounted: brackets, dots and '#' in
// strings and comments, multi-line strings, floats in arrays, quoted keys
// with dots, a few levels of inline tables.
func TestConfigShapesRealConfigsUseAreRead(t *testing.T) {
	src := `# a comment with {{{{[[[[ and a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.A.B.C.D.E.F.G
[project]
name = "acme" # trailing {[ comment
[services.api]
cmd = "echo '{[' # not a comment a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.A.B.C.D.E.F.G"
migrate = """
psql -c "select '{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{' "" \"""
"""
seed = '''a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.A.B.C.D.E.F.G [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[['''
env = { "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.A.B.C.D.E.F.G" = "x", LEVEL = "info" }
[services.api.health]
http = "/healthz"
[services.db]
adapter = "postgres"
options = { weights = [1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.5, 9.5, 10.5, 11.5, 12.5, 13.5, 14.5, 15.5, 16.5, 17.5, 18.5, 19.5, 20.5, 21.5, 22.5, 23.5, 24.5, 25.5, 26.5, 27.5, 28.5, 29.5, 30.5, 31.5, 32.5, 33.5, 34.5] }
`
	if line, col, msg, ok := shapeProblem([]byte(src)); !ok {
		t.Fatalf("refused at %d:%d: %s", line, col, msg)
	}
	if cfg, diags := ParseConfig("binky.toml", []byte(src)); cfg == nil {
		t.Fatalf("did not decode: %v", diags)
	}
	for _, ok := range []string{
		"x = { a = { b = { c = [[1]] } } }\n",
		"[services.db.options]\nx = { a = { b = 1 }, c.d = 2, e = [{ f = 1 }, { g = { h = 2 } }] }\n",
		"[a.b.c.d.e]\nf.g.h = { i.j = 1 }\n",
	} {
		if line, col, msg, fine := shapeProblem([]byte(ok)); !fine {
			t.Errorf("%q refused at %d:%d: %s", ok, line, col, msg)
		}
	}
	// And every example config in the repository.
	files, _ := filepath.Glob(filepath.Join("..", "examples", "*", "binky.toml"))
	more, _ := filepath.Glob(filepath.Join("..", "examples", "*", "*", "binky.toml"))
	for _, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if line, col, msg, ok := shapeProblem(b); !ok {
			t.Errorf("%s refused at %d:%d: %s", f, line, col, msg)
		}
	}
	if len(files)+len(more) == 0 {
		t.Error("no example configs found")
	}
}

// A branch's binky.toml names the domain of the URLs 'git binky env'
// exports (an SDK reads ANTHROPIC_BASE_URL, PIP_INDEX_URL...): only names
// of this machine are taken.
func TestTheDomainOfWorldURLsMustNameThisMachine(t *testing.T) {
	cfg := func(domain string) string {
		return "[project]\nname = \"acme\"\ndomain = \"" + domain + "\"\n[services.anthropic_base]\ncmd = \"true\"\nurl = \"x\"\n"
	}
	for _, ok := range []string{"localhost", "dev.localhost", "test", "acme.test"} {
		if _, diags := ParseConfig("binky.toml", []byte(cfg(ok))); hasErrors(diags) {
			t.Errorf("domain %q refused: %v", ok, diags)
		}
	}
	for _, bad := range []string{"evil.example", "com", "evil.example/v1#", "localhost.evil.example", "Localhost", "lvh.me", "a..localhost", "x:80.localhost"} {
		_, diags := ParseConfig("binky.toml", []byte(cfg(bad)))
		if !hasErrors(diags) || diags[0].Line != 3 || !strings.Contains(diags[0].Message, "domain") {
			t.Errorf("domain %q: %v, want an error on line 3 about the domain", bad, diags)
		}
	}
}

// Diagnostics find their position by scanning the file; a file full of
// quotes made that scan copy the rest of the file at each one (4 s and
// 5.6 GB for 256 KiB). The worst shapes a review found now take well
// under a second.
func TestPositionsOfDiagnosticsAreFoundInLinearTime(t *testing.T) {
	fill := func(head string, unit string) []byte {
		return []byte(head + strings.Repeat(unit, (MaxConfigSize-len(head)-1)/len(unit)) + "\n")
	}
	for name, src := range map[string][]byte{
		"a type error, then a comment of quotes":   fill("[project]\nname = 1 #", "'"),
		"an unknown key, then a comment of quotes": fill("zz = 1 #", "'"),
		"empty multi-line strings":                 fill("zz = [''''''", ",''''''"),
	} {
		start := time.Now()
		_, diags := ParseConfig("binky.toml", src)
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: %s (%d diagnostics)", name, took, len(diags))
		}
	}
}
