package world

import (
	"fmt"
	"strings"
	"unicode"
)

// Inert escapes the control characters of s (\x1b...) for a terminal. A
// worktree's path and name are anyone's choice (git worktree add takes any
// folder name), and a service's message quotes its output: one holding a
// terminal's escape sequences would retitle, clear or rewrite the terminal
// of whoever reads it.
func Inert(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			fmt.Fprintf(&b, "\\x%02x", r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
