package world

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/dotenv"
)

// What `git binky env --dotenv` writes, an env_file and compose read back
// as it was: a branch or a path can hold anything.
func TestDotenvValuesReadBackAsWritten(t *testing.T) {
	values := []string{
		"plain", "", "two words", `x$(touch /tmp/p)` + "`id`" + `'";|&<>!{}#é`,
		"line\nbreak", "carriage\rreturn", "tab\there", `back\slash`, `C:\new\table`,
		`"quoted"`, "ends with a backslash\\", "$HOME ${HOME}", "#not a comment",
	}
	var file strings.Builder
	for i, v := range values {
		file.WriteString("V" + string(rune('A'+i)) + "=" + DotenvQuote(v) + "\n")
	}
	path := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(path, []byte(file.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ours, err := ReadEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	compose, err := dotenv.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range values {
		k := "V" + string(rune('A'+i))
		if ours[k] != v {
			t.Errorf("binky read %s back as %q, want %q (written %s)", k, ours[k], v, DotenvQuote(v))
		}
		if compose[k] != v {
			t.Errorf("compose read %s back as %q, want %q (written %s)", k, compose[k], v, DotenvQuote(v))
		}
	}
}
