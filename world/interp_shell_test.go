//go:build unix

package world

import (
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
)

// Whatever a branch, worktree name or path holds, a command's token gives
// the shell that text, literally, wherever the token stands: bare, inside
// '...' or "...", glued to other words, or after a backslash. Checked with
// /bin/sh itself, on values made of everything a shell treats specially.
func TestAValueInACommandReachesTheShellAsItsLiteralText(t *testing.T) {
	values := []string{
		"feat$(touch${IFS}PWNED)", "x`id`y", "a'b", `a"b`, `back\slash`, "semi;colon && or || pipe | amp &",
		"sp ace\ttab", "glob*?[a]", "~tilde", "#hash", "$HOME", "${HOME}", "<in >out", "new\nline", "ünï €", "'", `"`, `\`, "$",
		"'$(touch PWNED)'", `"$(touch PWNED)"`, "plain-branch/name_1.2",
	}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "ab '\"\\$`()|&;<>*?[]{}~#!=%\t\n é"
	for range 40 {
		var b strings.Builder
		for range 1 + r.IntN(12) {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		values = append(values, b.String())
	}
	type form struct {
		cmd  string
		want func(v string) string
	}
	same := func(v string) string { return v }
	forms := []form{
		{`printf '[%s]' ${worktree.branch}`, same},
		{`printf '[%s]' "${worktree.branch}"`, same},
		{`printf '[%s]' '${worktree.branch}'`, same},
		{`printf '[%s]' "a ${worktree.branch} b"`, func(v string) string { return "a " + v + " b" }},
		{`printf '[%s]' 'a ${worktree.branch} b'`, func(v string) string { return "a " + v + " b" }},
		{`printf '[%s]' pre${worktree.branch}post`, func(v string) string { return "pre" + v + "post" }},
		{`printf '[%s]' "it's" ${worktree.branch}`, func(v string) string { return "it's][" + v }},
		{`printf '[%s]' \${worktree.branch}`, func(v string) string {
			if strings.HasPrefix(v, "\n") { // backslash-newline is a line continuation
				return v[1:]
			}
			return v
		}},
		{`printf '[%s]' "\${worktree.branch}"`, func(v string) string {
			switch {
			case strings.HasPrefix(v, "\n"):
				return v[1:]
			case strings.ContainsAny(v[:1], "$`\"\\"):
				return v
			}
			return `\` + v
		}},
	}
	for _, f := range forms {
		for _, v := range values {
			lookup := func(ref string) (string, bool) { return v, ref == "worktree.branch" }
			cmd := InterpolateShell(f.cmd, lookup)
			out, err := exec.Command("/bin/sh", "-c", cmd).CombinedOutput()
			want := "[" + f.want(v) + "]"
			if err != nil || string(out) != want {
				t.Errorf("%s with %q ran as %q: printed %q (%v), want %q", f.cmd, v, cmd, out, err, want)
			}
		}
	}
}

// ${env.NAME} is the caller's own environment: raw, so a variable of
// flags still splits into words. Plain values are written as they are.
func TestAShellCommandKeepsEnvTokensRawAndPlainValuesAsTheyAre(t *testing.T) {
	vars := map[string]string{"env.FLAGS": "--a --b", "self.port": "4100", "db.url": "postgres://u:p@127.0.0.1:5432/acme_main", "worktree.path": "/home/me/My Projects/x"}
	lookup := func(ref string) (string, bool) { v, ok := vars[ref]; return v, ok }
	for in, want := range map[string]string{
		"node ${env.FLAGS} server.js --port ${self.port}": "node --a --b server.js --port 4100",
		`psql "${db.url}" -c 'select 1'`:                  `psql "postgres://u:p@127.0.0.1:5432/acme_main" -c 'select 1'`,
		"cd ${worktree.path} && make":                     "cd '/home/me/My Projects/x' && make",
		"$${HOME} ${unknown.x}":                           "${HOME} ${unknown.x}",
	} {
		if got := InterpolateShell(in, lookup); got != want {
			t.Errorf("InterpolateShell(%q) = %q, want %q", in, got, want)
		}
	}
}
