package daemon

import (
	"path/filepath"
	"runtime"
	"slices"
	"testing"
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
