package adapters

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the adapter table in README.md from adapters.Kinds")

const (
	tableStart = "<!-- adapter table: written from adapters.Kinds by go test ./adapters -run README -update-readme -->"
	tableEnd   = "<!-- end of the adapter table -->"
)

// readmeTable renders the adapter table as the README shows it, so that
// what the README says each adapter enforces and was tested against is the
// table's own words.
func readmeTable() string {
	var b strings.Builder
	b.WriteString("| adapter | each world gets | shared server when there is no `admin_url` | enforced | tested here against |\n")
	b.WriteString("| --- | --- | --- | --- | --- |\n")
	for _, k := range Kinds {
		name := "`" + k.Name + "`"
		for _, a := range k.Aliases {
			name += ", `" + a + "`"
		}
		if _, err := os.Stat("../docs/adapters/" + k.Name + ".md"); err == nil {
			name = fmt.Sprintf("[%s](docs/adapters/%s.md)", name, k.Name)
		}
		server := "none: set `admin_url`"
		if k.Server != nil {
			server = "`" + strings.Join(k.Server.Binaries, "`, `") + "` (" + k.Server.Install + ")"
		}
		enforced := k.Enforced
		if k.Caveat != "" {
			enforced += "; caveat: " + k.Caveat
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, k.Slice, server, cell(enforced), cell(k.Tested))
	}
	return b.String()
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

func TestREADMEAdapterTableIsTheTable(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	i, j := strings.Index(readme, tableStart), strings.Index(readme, tableEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no adapter table between %q and %q", tableStart, tableEnd)
	}
	want := tableStart + "\n" + readmeTable() + tableEnd
	if got := readme[i : j+len(tableEnd)]; got != want {
		if *updateReadme {
			if err := os.WriteFile("../README.md", []byte(readme[:i]+want+readme[j+len(tableEnd):]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("README.md's adapter table differs from adapters.Kinds: run go test ./adapters -run README -update-readme")
	}
}
