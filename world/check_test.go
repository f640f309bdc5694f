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
