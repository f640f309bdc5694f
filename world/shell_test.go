package world

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// What `env --shell` prints must read back exactly, and run nothing, in
// every shell a person sources it from: fish read the POSIX form's
// \' as an escaped quote, ended the string early and ran what followed.
func TestShellQuoteReadsBackExactlyInEveryShell(t *testing.T) {
	pwned := filepath.Join(t.TempDir(), "pwned")
	values := []string{
		"", "plain", "it's", `back\slash`, `ends with \`, `\'`, `x\';touch ` + pwned + `;#`,
		"$(touch " + pwned + ")", "`touch " + pwned + "`", "two\nlines", `"double"`, "ünï ✓", `\\'\\`, "'", "not UTF-8: a\xffb",
	}
	shells := map[string][]string{
		"sh":   {"-c", `eval "$1"; printf '%s' "$V"`},
		"bash": {"-c", `eval "$1"; printf '%s' "$V"`},
		"zsh":  {"-c", `eval "$1"; printf '%s' "$V"`},
		"fish": {"-c", `eval $argv[1]; printf '%s' "$V"`},
	}
	for shell, args := range shells {
		path, err := exec.LookPath(shell)
		if err != nil {
			t.Logf("%s is not installed here: not checked", shell)
			continue
		}
		for _, v := range values {
			line := "export V=" + ShellQuote(v)
			a := append([]string{}, args...)
			if shell != "fish" {
				a = append(a, "sh") // $0 of the script; the line is $1
			}
			out, err := exec.Command(path, append(a, line)...).Output()
			if err != nil {
				t.Errorf("%s: %s: %v", shell, line, err)
				continue
			}
			if string(out) != v {
				t.Errorf("%s read %q back from %s, want %q", shell, out, line, v)
			}
		}
		if _, err := os.Stat(pwned); err == nil {
			t.Fatalf("%s ran a command a value held", shell)
		}
	}
}
