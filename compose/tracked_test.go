package compose

import (
	"context"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/gitx/gittest"
)

// gitTracked is the real dotenvTracked, which asks git.
var gitTracked = dotenvTracked

func init() {
	// The conversion's tests read compose projects inside this repository,
	// which commits their .env files: as a user's project, they have none.
	dotenvTracked = func(context.Context, string) bool { return false }
}

// A committed .env is in every worktree: init does not ask to copy it.
func TestACommittedDotenvNeedsNoCopy(t *testing.T) {
	was := dotenvTracked
	t.Cleanup(func() { dotenvTracked = was })
	files := map[string]string{
		"docker-compose.yml": "services:\n  app:\n    build: .\n    command: ./app\n    environment:\n      LEVEL: ${LEVEL}\n",
		".env":               "LEVEL=debug\n",
	}
	dir := t.TempDir()
	repo := gittest.NewRepo(t, dir, "app", files)
	path, err := Find(repo)
	if err != nil {
		t.Fatal(err)
	}
	dotenvTracked = gitTracked
	res, err := Convert(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.TOML, "copy it there") || strings.Contains(strings.Join(res.Left, "\n"), ".env must exist") {
		t.Errorf("a committed .env is asked to be copied:\n%s", res.TOML)
	}
	// Untracked, the same project is asked to copy it.
	dotenvTracked = func(context.Context, string) bool { return false }
	if res, _ := Convert(context.Background(), path); !strings.Contains(res.TOML, ".env must exist in every worktree") {
		t.Errorf("an uncommitted .env is not asked to be copied:\n%s", res.TOML)
	}
}
