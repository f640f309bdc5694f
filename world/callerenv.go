package world

import (
	"os"
	"strings"
)

// WithoutGitExecPath is env as the user's shell had it when git ran binky
// (`git binky up`, a hook): git puts its exec path (/usr/lib/git-core)
// first on PATH and in GIT_EXEC_PATH for every command it runs. Left in,
// a service's PATH would start with git's helper programs, and `git binky
// up` and `binky up` would hand services different environments. A
// GIT_EXEC_PATH that is not PATH's first entry was the user's own and is
// kept.
func WithoutGitExecPath(env []string) []string {
	var exec string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_EXEC_PATH="); ok {
			exec = v
		}
	}
	if exec == "" {
		return env
	}
	pathAt := -1
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			if v != exec && !strings.HasPrefix(v, exec+string(os.PathListSeparator)) {
				return env
			}
			pathAt = i
		}
	}
	if pathAt < 0 {
		return env
	}
	out := make([]string, 0, len(env))
	for i, kv := range env {
		switch {
		case strings.HasPrefix(kv, "GIT_EXEC_PATH="):
			continue
		case i == pathAt:
			kv = "PATH=" + strings.TrimPrefix(strings.TrimPrefix(kv, "PATH="+exec), string(os.PathListSeparator))
		}
		out = append(out, kv)
	}
	return out
}
