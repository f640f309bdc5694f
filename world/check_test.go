package world

import (
	"strings"
	"testing"
)

func TestTwoServicesWritingOneVariableIsAnError(t *testing.T) {
	for name, tc := range map[string]struct {
		services string
		want     string
	}{
		"'-' and '_'":                    {"[services.api-admin]\ncmd = \"x\"\nurl = \"a\"\n[services.api_admin]\ncmd = \"x\"\nurl = \"b\"\n", "API_ADMIN_HOST"},
		"a port name joins the stem":     {"[services.api]\ncmd = \"x\"\nports = [\"admin\"]\n[services.api-admin]\ncmd = \"x\"\nurl = \"b\"\n", "API_ADMIN_PORT"},
		"a slice's url and a direct url": {"[services.web]\ncmd = \"x\"\nurl = \"w\"\n[services.web-direct]\nadapter = \"redis\"\n", "WEB_DIRECT_URL"},
	} {
		t.Run(name, func(t *testing.T) {
			_, diags := ParseConfig("binky.toml", []byte("[project]\nname = \"acme\"\n"+tc.services))
			var errs []string
			for _, d := range diags {
				if d.Severity == SeverityError {
					errs = append(errs, d.Message)
				}
			}
			if len(errs) != 1 || !strings.Contains(errs[0], tc.want) {
				t.Errorf("errors %q, want one naming %s", errs, tc.want)
			}
		})
	}
}

func TestAServiceNameStartingWithADigitGetsVariablesAShellReads(t *testing.T) {
	if got := EnvStem("9web"); got != "_9WEB" {
		t.Errorf("EnvStem(9web) = %q", got)
	}
	if got := EnvStem("web-9"); got != "WEB_9" {
		t.Errorf("EnvStem(web-9) = %q", got)
	}
}

// Each adapter's own fields count: postgres sets no DB_MANAGEMENT_URL
// (rabbitmq does), so "db" and "db-management" collide only on rabbitmq.
func TestOnlyAnAdaptersOwnFieldsCollide(t *testing.T) {
	info := func(name string) Adapter {
		fields := map[string][]string{
			"postgres": {"url", "host", "port", "user", "password", "name"},
			"rabbitmq": {"url", "host", "port", "vhost", "user", "password", "management_url"},
		}[name]
		return Adapter{Known: true, Managed: true, Fields: fields}
	}
	for adapter, want := range map[string]bool{"postgres": false, "rabbitmq": true} {
		cfg, diags := ParseConfig("binky.toml", []byte("[project]\nname = \"acme\"\n[services.db]\nadapter = \""+adapter+"\"\n[services.db-management]\ncmd = \"x\"\nurl = \"admin\"\n"))
		for _, d := range diags {
			if d.Severity == SeverityError {
				t.Errorf("%s: structural error: %s", adapter, d.Message)
			}
		}
		collides := false
		for _, d := range Check(cfg, info) {
			collides = collides || d.Severity == SeverityError && strings.Contains(d.Message, "DB_MANAGEMENT_URL")
		}
		if collides != want {
			t.Errorf("%s: check finds DB_MANAGEMENT_URL written twice: %v, want %v", adapter, collides, want)
		}
	}
}

// A slice's depends_on on a process is never waited for (slices are made
// before any process starts): check says so, at the key, rather than let
// a migrate run before the install it needs.
func TestASliceDependingOnAProcessIsWarnedOf(t *testing.T) {
	cfg, diags := ParseConfig("binky.toml", []byte(`[project]
name = "shop"
[services.deps]
cmd = "npm ci"
oneshot = true
[services.cache]
adapter = "redis"
[services.db]
adapter = "postgres"
migrate = "node migrate.js"
depends_on = ["deps", "cache"]
`))
	if len(diags) != 0 {
		t.Fatal(diags)
	}
	var got []Diagnostic
	for _, d := range Check(cfg, nil) {
		if strings.Contains(d.Message, "does not wait for process") {
			got = append(got, d)
		}
	}
	if len(got) != 1 || got[0].Severity != SeverityWarning || !strings.Contains(got[0].Message, `process "deps"`) || got[0].Line != 11 {
		t.Errorf("warnings = %+v, want one at line 11 naming deps (not the slice cache)", got)
	}
}
