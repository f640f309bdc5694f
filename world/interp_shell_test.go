//go:build unix

package world

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A worktree's name, branch or path is chosen outside the approved
// binky.toml. One a shell would read as code is refused wherever its
// token stands, in the shapes where quoting it would still have let it
// run (a comment's apostrophe, a heredoc, "$(...)", backquotes, sh -c
// '...'); the shell's own variable, which the error names, carries it
// safely in every one of them.
func TestANameAShellWouldRunIsNeverPastedIntoACommand(t *testing.T) {
	dir := t.TempDir()
	branch := "x$(touch${IFS}PWNED)`touch${IFS}PWNED2`;touch PWNED3"
	coords := map[string]string{"worktree.branch": branch, "worktree.name": "plain", "worktree.path": "/w/plain",
		"env.BINKY_BRANCH": branch, "env.SLUG": "feat-" + branch, "env.HOME": "/root"}
	lookup := func(ref string) (string, bool) { v, ok := coords[ref]; return v, ok }
	shapes := []string{
		"echo ${worktree.branch}",
		"echo \"${worktree.branch}\"",
		"echo '${worktree.branch}'",
		"# don't forget\necho ${worktree.branch}",
		"cat <<EOF\n${worktree.branch}\nEOF",
		"cat <<EOF\n('${worktree.branch}')\nEOF",
		"N=\"$(echo \"${worktree.branch}\" | tr / -)\"; echo \"$N\"",
		"N=\"$(echo ${worktree.branch})\"",
		"N=\"`echo ${worktree.branch}`\"",
		"sh -c 'echo ${worktree.branch}'",
		"echo ${env.SLUG}",
	}
	for _, shape := range shapes {
		_, err := InterpolateShell(shape, lookup)
		var ue *UnsafeTokenError
		if !errors.As(err, &ue) {
			t.Errorf("%q: %v, want it refused", shape, err)
			continue
		}
		if !strings.Contains(err.Error(), `"$BINKY_BRANCH"`) && !strings.Contains(err.Error(), `"$SLUG"`) {
			t.Errorf("%q: %v, want the error to name the variable to use", shape, err)
		}
		// What the error says to write instead runs the name as text.
		safe := strings.NewReplacer("${worktree.branch}", "$BINKY_BRANCH", "${env.SLUG}", "$SLUG").Replace(shape)
		cmd := exec.Command("/bin/sh", "-c", safe)
		cmd.Dir, cmd.Env = dir, append(os.Environ(), "BINKY_BRANCH="+branch, "SLUG=feat-"+branch)
		cmd.CombinedOutput()
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "PWNED*")); len(m) > 0 {
		t.Errorf("the shell's variable ran the name as code: %v", m)
	}
}

// Real names (plain characters, spaces, non-ASCII letters) are written as
// they are, as Interpolate writes them; so is every other token, and
// ${env.NAME} of the caller's own environment.
func TestAShellCommandWritesRealNamesAsTheyAre(t *testing.T) {
	vars := map[string]string{"worktree.branch": "feat/login-fix_2.1", "worktree.name": "réunion été", "worktree.path": "/home/me/My Projects/x",
		"env.FLAGS": "--a --b; echo $(date)", "self.port": "4100", "db.url": "postgres://u:p@127.0.0.1:5432/acme_main?sslmode=disable&x=y"}
	lookup := func(ref string) (string, bool) { v, ok := vars[ref]; return v, ok }
	for _, in := range []string{
		"node ${env.FLAGS} server.js --port ${self.port}",
		`psql "${db.url}" -c 'select 1' # ${worktree.branch}`,
		"cd '${worktree.path}' && echo ${worktree.name}",
		"$${HOME} ${unknown.x}",
	} {
		got, err := InterpolateShell(in, lookup)
		if err != nil || got != Interpolate(in, lookup) {
			t.Errorf("InterpolateShell(%q) = %q, %v; want %q", in, got, err, Interpolate(in, lookup))
		}
	}
}
