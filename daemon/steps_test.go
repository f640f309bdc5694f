package daemon

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/world"
)

func TestPrependPathPutsTheFolderFirstAndLeavesTheCallersEnvAlone(t *testing.T) {
	sep := string(filepath.ListSeparator)
	env := []string{"HOME=/h", "PATH=/usr/bin" + sep + "/bin", "LANG=C"}
	orig := slices.Clone(env)
	got := prependPath(env, "/opt/pg/bin")
	if want := "PATH=/opt/pg/bin" + sep + "/usr/bin" + sep + "/bin"; got[1] != want {
		t.Fatalf("PATH = %q, want %q", got[1], want)
	}
	if !slices.Equal(env, orig) {
		t.Fatalf("the caller's environment changed: %q", env)
	}
	if again := prependPath(got, "/opt/pg/bin"); !slices.Equal(again, got) {
		t.Fatalf("a folder already first was added again: %q", again)
	}
	if runtime.GOOS != "windows" {
		lower := []string{"path=/mine", "PATH=/usr/bin"}
		if got := prependPath(lower, "/opt/pg/bin"); got[0] != "path=/mine" || got[1] != "PATH=/opt/pg/bin"+sep+"/usr/bin" {
			t.Fatalf("a variable named path was taken for PATH: %q", got)
		}
	}
	noPath := []string{"HOME=/h"}
	if got := prependPath(noPath, "/opt/pg/bin"); !slices.Equal(got, noPath) {
		t.Fatalf("an environment without PATH got one: %q (a PATH of one folder would hide every other program)", got)
	}
	if got := prependPath(env, ""); !slices.Equal(got, env) {
		t.Fatalf("no folder changed the environment: %q", got)
	}
}

func TestOnlySlicesOnAServerBinkyRunsGetItsClientsFirst(t *testing.T) {
	env := []string{"PATH=/usr/bin"}
	for _, ref := range []string{"postgres://binky@127.0.0.1:5432/postgres", "${env.PG_ADMIN}", "managed:redis", "managed:nosuchkind", ""} {
		if got := stepCallerEnv(ref, env); !slices.Equal(got, env) {
			t.Errorf("ref %q changed PATH: %q", ref, got)
		}
	}
}

// A failed migrate whose error line is above its last 20 lines (a Node
// stack trace of 30) is quoted with that line: the last lines alone were
// the stack's, and the error itself was not shown.
func TestAFailedStepQuotesItsFirstErrorLine(t *testing.T) {
	home := world.Home{Dir: filepath.Join(t.TempDir(), "home")}
	d := New(home, "test", slog.New(slog.NewTextHandler(io.Discard, nil)))
	dir := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "db.log")
	cmd := `echo starting; echo 'error: relation "nope" does not exist'; i=0; while [ $i -lt 30 ]; do echo "    at frame $i"; i=$((i+1)); done; exit 1`
	err := d.runStep(context.Background(), dir, []string{"PATH=/usr/bin:/bin"}, cmd, "migrate", logPath)
	if err == nil || !strings.Contains(err.Error(), "its first error line:\n    error: relation \"nope\" does not exist") || !strings.Contains(err.Error(), "at frame 29") {
		t.Fatalf("the step's error: %v", err)
	}
	// An error line among the last ones is not quoted twice.
	err = d.runStep(context.Background(), dir, []string{"PATH=/usr/bin:/bin"}, `echo 'fatal: no'; exit 1`, "migrate", logPath)
	if err == nil || strings.Contains(err.Error(), "first error line") || !strings.Contains(err.Error(), "fatal: no") {
		t.Errorf("a short failure: %v", err)
	}
}
