package hooks

import (
	"slices"
	"testing"
)

func TestCallerEnvDropsOnlyWhatGitSetsToLocateTheRepository(t *testing.T) {
	got := CallerEnv([]string{"HOME=/home/me", "GIT_DIR=/r/.git/worktrees/feat", "GIT_WORK_TREE=/feat", "GIT_PREFIX=",
		"GIT_AUTHOR_NAME=Me", "GIT_SSH_COMMAND=ssh -i k", "MF_ADMIN_PASSWORD=pw"})
	want := []string{"HOME=/home/me", "GIT_AUTHOR_NAME=Me", "GIT_SSH_COMMAND=ssh -i k", "MF_ADMIN_PASSWORD=pw"}
	if !slices.Equal(got, want) {
		t.Errorf("CallerEnv = %q, want %q", got, want)
	}
}
