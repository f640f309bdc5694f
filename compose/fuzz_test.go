package compose

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/git-binky/git-binky/world"
)

// FuzzConvert holds init to its property: any compose file the YAML
// library accepts gives a binky.toml that parses and checks, or an error
// that names the file, never a panic and never a config init would write
// but cannot read back. The seeds are the corpus of real compose files.
func FuzzConvert(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "corpus", "*", "*compose*.y*ml"))
	more, _ := filepath.Glob(filepath.Join("testdata", "*", "*compose*.y*ml"))
	for _, p := range append(seeds, more...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("services:\n  Web_App:\n    build: .\n    environment:\n      discovery.type: x\n      \"a b\": \"\\a\\x01\"\n  web-app:\n    build: .\n"))
	f.Add([]byte("services:\n  a:\n    image: postgres\n  b:\n    build: .\n    command: [\"$$\", \"${X:-${Y:-z}}\", \"}{\"]\n    profiles: [\"p q\"]\n"))
	dir := f.TempDir()
	path := filepath.Join(dir, "docker-compose.yml")
	f.Fuzz(func(t *testing.T, src []byte) {
		res, err := ConvertBytes(context.Background(), path, src, nil, "fuzz")
		if err != nil {
			if errors.Is(err, ErrInvalidOutput) {
				var doc any
				if yaml.Unmarshal(src, &doc) == nil {
					t.Fatalf("init wrote a config it cannot read back: %v\ninput:\n%s", err, src)
				}
			}
			if !strings.HasPrefix(err.Error(), path) {
				t.Errorf("the error does not name the file: %v", err)
			}
			return
		}
		cfg, diags := world.ParseConfig("binky.toml", []byte(res.TOML))
		if cfg == nil {
			t.Fatalf("the result does not parse: %v\n%s", diags, res.TOML)
		}
		for _, d := range diags {
			if d.Severity == world.SeverityError {
				t.Fatalf("the result does not load: %s\n%s", d, res.TOML)
			}
		}
	})
}
