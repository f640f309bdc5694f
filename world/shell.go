package world

import "strings"

// ShellQuote quotes v so that POSIX shells (sh, dash, bash, zsh) and fish
// all read it back as v: what `env --shell` prints for eval or source.
// Runs of plain characters are single-quoted; a single quote is written
// "'" and a backslash "\\", since fish reads \' and \\ as escapes inside
// single quotes where POSIX shells read them as they are (the usual POSIX
// form, which closes, escapes and reopens, let a value end fish's quoted
// string early, and run what followed).
func ShellQuote(v string) string {
	var b strings.Builder
	open := false
	// Byte by byte: ' and \ are ASCII, and bytes that are not UTF-8 pass
	// through as they are.
	for i := 0; i < len(v); i++ {
		r := v[i]
		switch r {
		case '\'', '\\':
			if open {
				b.WriteByte('\'')
				open = false
			}
			if r == '\'' {
				b.WriteString(`"'"`)
			} else {
				b.WriteString(`"\\"`)
			}
		default:
			if !open {
				b.WriteByte('\'')
				open = true
			}
			b.WriteByte(r)
		}
	}
	if open {
		b.WriteByte('\'')
	}
	if b.Len() == 0 {
		return "''"
	}
	return b.String()
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
