//go:build unix

package world

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/git-binky/git-binky/gitx/gittest"
)

// The id binky keeps in a repository is read as the repository's other
// files are: a pipe put there made a trust check (the hook's, the
// watcher's) wait for good.
func TestARepositorysIdThatIsAPipeHoldsNoCheck(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": webConfig})
	if err := syscall.Mkfifo(filepath.Join(repo, ".git", repoIDFile), 0o600); err != nil {
		t.Fatal(err)
	}
	home := Home{Dir: filepath.Join(tmp, "home")}
	done := make(chan bool, 1)
	go func() {
		home.Trust([]byte(webConfig), filepath.Join(repo, ConfigFile))
		done <- home.TrustedHere([]byte(webConfig), filepath.Join(repo, ConfigFile))
	}()
	select {
	case ok := <-done:
		if !ok {
			t.Error("approved in a repository whose id cannot be read, it is not approved there")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a pipe at the repository's id held the trust check")
	}
}
