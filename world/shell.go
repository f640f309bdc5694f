package world

import "strings"

// ShellQuote single-quotes v for POSIX shells, embedded single quotes
// closed, escaped and reopened: what `env --shell` prints for eval.
func ShellQuote(v string) string {
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// ShellArg is v as a shell argument in a hint a person may paste: a plain
// word (letters, digits, - _ . / : = @ + ,) as it is, anything else
// quoted, so that a pasted hint never runs what a name holds.
func ShellArg(v string) string {
	if v != "" && strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,") == "" {
		return v
	}
	return ShellQuote(v)
}
