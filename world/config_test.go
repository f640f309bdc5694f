package world

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseConfigFull(t *testing.T) {
	src, err := os.ReadFile("testdata/full.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, diags := ParseConfig("binky.toml", src)
	if len(diags) != 0 {
		t.Fatalf("diagnostics: %v", diags)
	}
	api := cfg.Services["api"]
	if api.Health.HTTP != "/healthz" || api.Health.Interval.Duration != 500*time.Millisecond || api.StopTimeout.Duration != 3*time.Second {
		t.Errorf("api = %+v, health %+v", api, api.Health)
	}
	if got := api.PortKeys(); strings.Join(got, ",") != "api,api.metrics" {
		t.Errorf("api port keys = %v", got)
	}
	if cfg.Services["worker"].HasPort() || cfg.Services["db"].HasPort() {
		t.Error("worker and db must not get ports")
	}
	if cfg.Services["worker"].Restart != "on-failure" {
		t.Errorf("default restart = %q", cfg.Services["worker"].Restart)
	}
	order, err := cfg.Order(nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, ","); got != "db,api,web,worker" {
		t.Errorf("order = %s", got)
	}
	g, _ := cfg.Group("backend")
	order, _ = cfg.Order(g)
	if got := strings.Join(order, ","); got != "db,api,worker" {
		t.Errorf("group order = %s, want the group plus its dependencies", got)
	}
	if _, err := cfg.Group("nope"); err == nil || !strings.Contains(err.Error(), "backend") {
		t.Errorf("unknown group error = %v, want the known groups listed", err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		wantLine int
		wantCol  int
		want     string
	}{
		{
			name:     "unknown key suggests the nearest",
			src:      "[services.api]\ncmd = \"x\"\ndepend_on = [\"db\"]\n",
			wantLine: 3, wantCol: 1,
			want: `unknown key "depend_on" in [services.api]: did you mean "depends_on"?`,
		},
		{
			name:     "unknown key inside an inline table",
			src:      "[services.api]\ncmd = \"x\"\nurl = \"api\"\nhealth = { http = \"/\", intervall = \"1s\" }\n",
			wantLine: 4, wantCol: 24,
			want: `unknown key "intervall" in [services.api.health]: did you mean "interval"?`,
		},
		{
			name:     "unknown top-level table",
			src:      "[service.api]\ncmd = \"x\"\n",
			wantLine: 1, wantCol: 2,
			want: `did you mean "services"?`,
		},
		{
			name:     "invalid TOML",
			src:      "[services.api]\ncmd = \"x\n",
			wantLine: 2, wantCol: 9,
			want: "strings cannot contain newlines",
		},
		{
			// The key parsed last is on another line: naming it blamed a
			// table that is fine.
			name:     "an unclosed table header names no other key",
			src:      "[services.api]\ncmd = \"x\"\n[services.bad\n",
			wantLine: 3, wantCol: 14,
			want: "expected '.' or ']' to end table name, but got '\\n' instead",
		},
		{
			name:     "an unclosed table header, CRLF lines",
			src:      "[services.api]\r\ncmd = \"x\"\r\n[services.bad\r\n",
			wantLine: 3,
			want:     "to end table name",
		},
		{
			name:     "wrong type",
			src:      "[services.api]\ncmd = 3\n",
			wantLine: 2, wantCol: 1,
			want: `this is a number, but it must be a string (in quotes) (at key "services.api.cmd")`,
		},
		{
			name:     "depends_on names no service",
			src:      "[services.api]\ncmd = \"x\"\ndepends_on = [\"bd\"]\n[services.db]\nadapter = \"postgres\"\n",
			wantLine: 3, wantCol: 1,
			want: `depends_on names "bd", which is not a service: did you mean "db"?`,
		},
		{
			name:     "cycle is printed",
			src:      "[services.a]\ncmd = \"x\"\ndepends_on = [\"b\"]\n[services.b]\ncmd = \"x\"\ndepends_on = [\"a\"]\n",
			wantLine: 3,
			want:     "dependency cycle: a -> b -> a",
		},
		{
			name:     "malformed url",
			src:      "[services.api]\ncmd = \"x\"\nurl = \"Api_Server\"\n",
			wantLine: 3,
			want:     `url = "Api_Server": must be one DNS label`,
		},
		{
			name:     "duplicate url",
			src:      "[services.a]\ncmd = \"x\"\nurl = \"app\"\n[services.b]\ncmd = \"x\"\nurl = \"app\"\n",
			wantLine: 6,
			want:     `url = "app" is already used by service "a"`,
		},
		{
			name:     "neither cmd nor adapter",
			src:      "[services.api]\nurl = \"api\"\n",
			wantLine: 1,
			want:     "has neither cmd nor adapter",
		},
		{
			name:     "bad duration",
			src:      "[services.api]\ncmd = \"x\"\nstop_timeout = \"soon\"\n",
			wantLine: 3,
			want:     "is not a duration",
		},
		{
			name:     "bad restart",
			src:      "[services.api]\ncmd = \"x\"\nrestart = \"sometimes\"\n",
			wantLine: 3,
			want:     `restart = "sometimes"`,
		},
		{
			name:     "a project name too long for a URL label",
			src:      "[project]\nname = \"" + strings.Repeat("p", 80) + "\"\n[services.api]\ncmd = \"x\"\n",
			wantLine: 2,
			want:     "is 80 characters: a project name is one label of every URL, at most 63",
		},
		{
			name:     "a project name too long, with a '-' where a cut at 63 would end",
			src:      "[project]\nname = \"" + strings.Repeat("p", 62) + "-" + strings.Repeat("q", 10) + "\"\n[services.api]\ncmd = \"x\"\n",
			wantLine: 2,
			want:     "is 73 characters: a project name is one label of every URL, at most 63",
		},
		{
			name:     "a url too long for a label",
			src:      "[services.api]\ncmd = \"x\"\nurl = \"" + strings.Repeat("a", 70) + "\"\n",
			wantLine: 3,
			want:     "is 70 characters: it is one label",
		},
		{
			name:     "a oneshot restarted",
			src:      "[services.migrate]\ncmd = \"x\"\noneshot = true\nrestart = \"on-failure\"\n",
			wantLine: 4,
			want:     `a oneshot runs once and is never restarted`,
		},
		{
			name:     "a oneshot with a health check",
			src:      "[services.migrate]\ncmd = \"x\"\noneshot = true\nhealth = { cmd = \"true\" }\n",
			wantLine: 4,
			want:     `a oneshot is ready when it exits 0`,
		},
		{
			name:     "a oneshot slice",
			src:      "[services.db]\nadapter = \"postgres\"\noneshot = true\n",
			wantLine: 3,
			want:     `a slice's own migrate`,
		},
		// What an attack found said in Go's terms, or not at all.
		{
			name:     "a string where a table goes",
			src:      "[services.api]\ncmd = \"x\"\nhealth = \"yes\"\n",
			wantLine: 3,
			want:     `this is a string (in quotes), but it must be a table`,
		},
		{
			name:     "a number where a string goes",
			src:      "[services.api]\ncmd = 5\n",
			wantLine: 2,
			want:     `this is a number, but it must be a string (in quotes)`,
		},
		{
			name:     "a string where a list goes",
			src:      "[services.api]\ncmd = \"x\"\ndepends_on = \"db\"\n",
			wantLine: 3,
			want:     `this is a string (in quotes), but it must be a list`,
		},
		{
			name:     "a duration too long",
			src:      "[services.api]\ncmd = \"x\"\nstop_timeout = \"999999999h\"\n",
			wantLine: 3,
			want:     `is longer than a duration can be`,
		},
		{
			name:     "negative retries",
			src:      "[services.api]\ncmd = \"x\"\nhealth = { cmd = \"true\", retries = -5 }\n",
			wantLine: 3,
			want:     `health.retries = -5`,
		},
		{
			name:     "a NUL in a verify command",
			src:      "[services.api]\ncmd = \"x\"\n[agents]\nverify = [\"a\\u0000b\"]\n",
			wantLine: 4,
			want:     `verify command 1 holds a NUL character`,
		},
		{
			name:     "a NUL in a command",
			src:      "[services.api]\ncmd = \"a\\u0000b\"\n",
			wantLine: 2,
			want:     `cmd holds a NUL character`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := ParseConfig("binky.toml", []byte(tt.src))
			var found *Diagnostic
			for i, d := range diags {
				if d.Severity == SeverityError && strings.Contains(d.Message, tt.want) {
					found = &diags[i]
				}
			}
			if found == nil {
				t.Fatalf("no error containing %q in %v", tt.want, diags)
			}
			if found.Line != tt.wantLine || (tt.wantCol != 0 && found.Column != tt.wantCol) {
				t.Errorf("at %d:%d, want %d:%d (%s)", found.Line, found.Column, tt.wantLine, tt.wantCol, found)
			}
			if found.File != "binky.toml" {
				t.Errorf("file = %q", found.File)
			}
		})
	}
}

func TestCheckWarnings(t *testing.T) {
	src := `[services.worker]
cmd = "./worker --port ${self.port}"
[services.api]
cmd = "./api ${api.nope} ${cache.url} ${self.ports.admin}"
url = "api"
env = { DB_PASSWORD = "hunter2", TOKEN = "${env.TOKEN}", DSN = "postgres://u:secret@h/db" }
[services.cache]
adapter = "redis"
[services.legacy]
adapter = "mysql"
`
	cfg, diags := ParseConfig("binky.toml", []byte(src))
	if hasErrors(diags) {
		t.Fatal(diags)
	}
	adapters := func(name string) Adapter {
		return Adapter{Known: name == "redis" || name == "mysql", Managed: name == "redis"}
	}
	got := Check(cfg, adapters)
	want := []struct {
		sev, text string
		line      int
	}{
		{SeverityWarning, `${self.port} but service "worker" asks for no port`, 2},
		{SeverityWarning, "unknown token ${api.nope}", 4},
		{SeverityWarning, `declares no port named "admin"`, 4},
		{SeverityWarning, "DB_PASSWORD looks like a credential written inline", 6},
		{SeverityWarning, "a password is written inline in env.DSN", 6},
		{SeverityError, `adapter "mysql" needs admin_url`, 9},
	}
	for _, w := range want {
		ok := false
		for _, d := range got {
			if d.Severity == w.sev && strings.Contains(d.Message, w.text) && d.Line == w.line {
				ok = true
			}
		}
		if !ok {
			t.Errorf("missing %s at line %d: %q\ngot: %v", w.sev, w.line, w.text, got)
		}
	}
	for _, d := range got {
		if strings.Contains(d.Message, "TOKEN looks like") || strings.Contains(d.Message, "${cache.url}") {
			t.Errorf("false positive: %s", d)
		}
	}
}

func TestLoadConfigMissing(t *testing.T) {
	_, err := LoadConfig(t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "no binky.toml") {
		t.Fatalf("err = %v", err)
	}
}

// A oneshot with several keys it cannot have is told of each at once, not
// of one per fix; and a oneshot that reads its own port is told to ask for
// ports, never for the url it may not have.
func TestAOneshotIsToldOfEveryKeyItCannotHaveAndOfPortsNotURL(t *testing.T) {
	src := `[services.migrate]
cmd = "./migrate --port ${self.port}"
oneshot = true
restart = "always"
url = "migrate"
health = { cmd = "true" }
[services.seed]
cmd = "./seed --port ${self.port}"
oneshot = true
`
	_, diags := ParseConfig("binky.toml", []byte(src))
	for _, want := range []string{"a oneshot runs once", "nothing could reach it by URL", "a oneshot is ready when it exits 0"} {
		found := false
		for _, d := range diags {
			found = found || d.Severity == SeverityError && strings.Contains(d.Message, want)
		}
		if !found {
			t.Errorf("no error containing %q in %v", want, diags)
		}
	}
	_, seedOnly, _ := strings.Cut(src, "[services.seed]")
	cfg, diags := ParseConfig("binky.toml", []byte("[services.seed]"+seedOnly))
	if hasErrors(diags) {
		t.Fatal(diags)
	}
	var warned bool
	for _, d := range Check(cfg, nil) {
		if strings.Contains(d.Message, `${self.port} but service "seed" asks for no port`) {
			warned = true
			if strings.Contains(d.Message, "url =") || !strings.Contains(d.Message, "ports = [...]") {
				t.Errorf("a oneshot is told to add a url it may not have: %s", d.Message)
			}
		}
	}
	if !warned {
		t.Errorf("no warning of ${self.port} in a oneshot with no port: %v", Check(cfg, nil))
	}
}

// A service a plain up leaves out names the group that starts it, for the
// proxy's 503; the default group's services, and what they depend on, do
// not. Without a default group a plain up starts them all.
func TestHostGroupsNamesTheGroupThatStartsAService(t *testing.T) {
	src := []byte(`[project]
name = "acme"
[services.db]
cmd = "db"
url = "db"
[services.api]
cmd = "api"
url = "api"
depends_on = ["db"]
[services.admin]
cmd = "admin"
url = "admin"
[services.worker]
cmd = "worker"
[services.docs]
cmd = "docs"
url = "docs"
[groups]
default = ["api"]
ops = ["admin", "worker"]
all = ["admin", "api"]
`)
	cfg, diags := ParseConfig("binky.toml", src)
	if len(diags) != 0 {
		t.Fatal(diags)
	}
	got := cfg.HostGroups()
	if docs, listed := got["docs"]; len(got) != 2 || got["admin"] != "all" || !listed || docs != "" {
		t.Errorf("HostGroups = %v, want admin started by all (the first group by name), docs by none", got)
	}
	delete(cfg.Groups, "default")
	if got := cfg.HostGroups(); got != nil {
		t.Errorf("without a default group HostGroups = %v, want none", got)
	}
}
