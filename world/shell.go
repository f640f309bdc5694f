package world

import "strings"

// ShellQuote quotes v for POSIX shells when it needs it: a plain word
// (letters, digits, - _ . / : = @ + ,) is left as it is, anything else is
// single-quoted with embedded single quotes closed, escaped and reopened.
// Hints that name a worktree use it, so a pasted hint never runs a name.
func ShellQuote(v string) string {
	if v != "" && strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}
