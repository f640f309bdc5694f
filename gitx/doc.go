// Package gitx answers questions about git repositories and their worktrees:
// where the common directory and a worktree's admin directory are, which
// worktrees exist, what a worktree has checked out and whether it is dirty.
//
// Repository metadata is read with go-git where it can answer; the on-disk
// worktree layout (gitrepository-layout(5)) is read directly because go-git v5
// has no API for linked worktrees, and the git binary is used for what only
// git itself knows (hook path resolution, porcelain status, worktree add/remove).
package gitx
