package world

import (
	"strings"
	"testing"
)

// A kind whose isolation depends on the server (ClickHouse without SQL
// users, Qdrant without jwt_rbac) is warned of on every service using it.
func TestCheckWarnsOfAdapterCaveats(t *testing.T) {
	src := `[services.olap]
adapter = "clickhouse"
[services.cache]
adapter = "redis"
`
	cfg, diags := ParseConfig("binky.toml", []byte(src))
	if hasErrors(diags) {
		t.Fatal(diags)
	}
	known := func(string) Adapter { return Adapter{Known: true, Managed: true} }
	caveat := func(name string) Adapter {
		a := known(name)
		if name == "clickhouse" {
			a.Caveat = "isolation is not enforced on 18.16"
		}
		return a
	}
	var warned []Diagnostic
	for _, d := range Check(cfg, caveat) {
		if strings.Contains(d.Message, "isolation") {
			warned = append(warned, d)
		}
	}
	if len(warned) != 1 || warned[0].Severity != SeverityWarning || warned[0].Line != 2 ||
		!strings.Contains(warned[0].Message, "clickhouse: isolation is not enforced on 18.16") {
		t.Errorf("caveat warnings %v, want one on line 2 for clickhouse", warned)
	}
	if got := Check(cfg, known); len(got) != 0 {
		t.Errorf("without caveats: %v", got)
	}
}
