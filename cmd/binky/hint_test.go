package main

import (
	"testing"

	"github.com/git-binky/git-binky/api"
)

// Outside any repository, up said to look at 'git worktree list', a hint
// for a worktree that is not found, not for no repository at all.
func TestNoWorktreeHintOutsideARepository(t *testing.T) {
	outside := &api.Error{Code: api.CodeNotFound, Message: "/tmp: not inside a git repository: run git binky inside a repository that has a binky.toml"}
	if h := hint(outside); h != "" {
		t.Errorf("outside a repository: hint %q, want none", h)
	}
	missing := &api.Error{Code: api.CodeNotFound, Message: `no worktree "feat" in /src/app`}
	if h := hint(missing); h == "" {
		t.Error("a worktree not found: no hint")
	}
}
