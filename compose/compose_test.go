package compose

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/world"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestConvertMatchesGoldenAndIsAValidConfig(t *testing.T) {
	for _, name := range []string{"webapp", "profiles"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", name)
			path, err := Find(dir)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Convert(path)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join(dir, "binky.toml.golden")
			if *update {
				os.WriteFile(golden, []byte(res.TOML), 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if res.TOML != string(want) {
				t.Errorf("output differs from %s (run go test ./compose -update after checking it):\n%s", golden, res.TOML)
			}
			cfg, diags := world.ParseConfig("binky.toml", []byte(res.TOML))
			for _, d := range diags {
				t.Errorf("the written config does not parse: %s", d)
			}
			if cfg == nil {
				return
			}
			for _, d := range world.Check(cfg, func(string) (bool, bool) { return true, true }) {
				if strings.Contains(d.Message, "credential") || strings.Contains(d.Message, "password") {
					t.Errorf("a credential was written inline: %s", d)
				}
			}
			if src, _ := os.ReadFile(filepath.Join(dir, ".env")); len(src) > 0 && strings.Contains(res.TOML, "supersecret") {
				t.Error("a secret from .env was copied into binky.toml")
			}
		})
	}
}

func TestMalformedComposeGivesLineAndColumn(t *testing.T) {
	_, err := Convert(filepath.Join("testdata", "malformed", "docker-compose.yml"))
	if err == nil || !strings.Contains(err.Error(), "docker-compose.yml:5:3: ") {
		t.Fatalf("err = %v, want file:line:column", err)
	}
}
