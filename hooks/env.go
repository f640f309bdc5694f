package hooks

import (
	"strings"

	"github.com/git-binky/git-binky/world"
)

// CallerEnv is the environment the post-checkout hook hands the daemon for
// the world it starts: the shell's that ran `git worktree add`, as an
// explicit `git binky up` gets, without the variables git sets for a hook
// to locate this repository (GIT_DIR, GIT_WORK_TREE, GIT_PREFIX...):
// inherited by services, they would point every git command a service runs
// at this worktree's admin folder. Git's exec path goes off PATH too
// (world.WithoutGitExecPath).
func CallerEnv(env []string) []string {
	env = world.WithoutGitExecPath(env)
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX",
			"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_QUARANTINE_PATH":
			continue
		}
		out = append(out, kv)
	}
	return out
}
