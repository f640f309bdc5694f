package world

import (
	"slices"
	"testing"
)

func TestWithoutGitExecPathGivesBackTheShellsPath(t *testing.T) {
	byGit := []string{"HOME=/root", "PATH=/usr/lib/git-core:/usr/local/bin:/usr/bin", "GIT_EXEC_PATH=/usr/lib/git-core", "FOO=1"}
	want := []string{"HOME=/root", "PATH=/usr/local/bin:/usr/bin", "FOO=1"}
	if got := WithoutGitExecPath(byGit); !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if byGit[1] != "PATH=/usr/lib/git-core:/usr/local/bin:/usr/bin" {
		t.Fatalf("the caller's slice was changed: %q", byGit)
	}
}

func TestWithoutGitExecPathKeepsAUsersOwnExecPath(t *testing.T) {
	// Set by the user and not put on PATH by git: not git's doing.
	own := []string{"PATH=/usr/bin:/opt/git/libexec", "GIT_EXEC_PATH=/opt/git/libexec"}
	if got := WithoutGitExecPath(own); !slices.Equal(got, own) {
		t.Fatalf("got %q, want it unchanged", got)
	}
	plain := []string{"PATH=/usr/bin"}
	if got := WithoutGitExecPath(plain); !slices.Equal(got, plain) {
		t.Fatalf("got %q, want it unchanged", got)
	}
	// A prefix of the first entry's name is not the entry.
	near := []string{"PATH=/usr/lib/git-core2:/usr/bin", "GIT_EXEC_PATH=/usr/lib/git-core"}
	if got := WithoutGitExecPath(near); !slices.Equal(got, near) {
		t.Fatalf("got %q, want it unchanged", got)
	}
}
