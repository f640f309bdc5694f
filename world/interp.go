package world

import (
	"strings"
	"unicode/utf8"
)

// Lookup resolves the inside of a ${...} token ("api.port", "env.HOME"). It
// reports false for a token it does not know, which Interpolate then leaves
// untouched: a literal ${self.port} reaching a shell fails loudly, where a
// blank would fail in some confusing way later.
type Lookup func(ref string) (string, bool)

// Interpolate replaces every ${ref} in s that lookup knows. "$${" writes a
// literal "${". It never fails: malformed or unknown tokens stay as written.
func Interpolate(s string, lookup Lookup) string {
	return interpolate(s, lookup, nil)
}

// InterpolateShell is Interpolate for a command that /bin/sh runs: every
// value but ${env.*}'s reaches the shell as the literal text it is,
// quoted for where the token stands (bare, in '...' or in "..."). A
// branch named 'x$(touch${IFS}pwned)' is a legal git ref, and a
// worktree's path may hold spaces or quotes: pasted raw, they would run
// as shell code through an approved, unchanged binky.toml. Values of only
// plain characters (ports, slice names, most URLs and branches) are
// written as they are. ${env.NAME} is the caller's own environment and
// stays raw, so that a variable of flags still splits into words.
func InterpolateShell(s string, lookup Lookup) string {
	var q shellQuoter
	return interpolate(s, lookup, &q)
}

func interpolate(s string, lookup Lookup, q *shellQuoter) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	literal := func(t string) {
		b.WriteString(t)
		if q != nil {
			q.scan(t)
		}
	}
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			literal(s)
			return b.String()
		}
		if i > 0 && s[i-1] == '$' {
			// "$${" is an escaped "${".
			literal(s[:i-1])
			literal("${")
			s = s[i+2:]
			continue
		}
		literal(s[:i])
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			literal(s[i:])
			return b.String()
		}
		ref := s[i+2 : i+2+end]
		if v, ok := lookup(ref); !ok {
			literal(s[i : i+3+end])
		} else if q != nil && !strings.HasPrefix(ref, "env.") {
			b.WriteString(q.quote(v))
		} else {
			literal(v)
		}
		s = s[i+3+end:]
	}
}

// shellQuoter follows a POSIX shell command's quoting as it is written,
// so that a value put in at any point can be quoted for that point.
// Command substitutions are not followed: a value inside one is quoted
// for the quotes around it, which still never lets it run.
type shellQuoter struct {
	state   byte // 0 bare, '\'' or '"'
	escaped bool // the previous character was a backslash outside '...'
}

func (q *shellQuoter) scan(t string) {
	for i := 0; i < len(t); i++ {
		c := t[i]
		if q.escaped {
			q.escaped = false
			continue
		}
		switch q.state {
		case 0:
			switch c {
			case '\\':
				q.escaped = true
			case '\'', '"':
				q.state = c
			}
		case '\'':
			if c == '\'' {
				q.state = 0
			}
		case '"':
			switch c {
			case '\\':
				q.escaped = true
			case '"':
				q.state = 0
			}
		}
	}
}

// quote is v as a literal where the command now stands.
func (q *shellQuoter) quote(v string) string {
	escaped := q.escaped
	q.escaped = false // a backslash just before the token escapes the value's first character
	if plain(v) {
		return v
	}
	switch q.state {
	case '\'':
		return strings.ReplaceAll(v, "'", `'\''`)
	case '"':
		var b strings.Builder
		if escaped && strings.IndexByte("\\$`\"", v[0]) >= 0 {
			// The backslash before the token already escapes this one.
			b.WriteByte(v[0])
			v = v[1:]
		}
		for i := 0; i < len(v); i++ { // bytes: a path need not be UTF-8
			if c := v[i]; c == '\\' || c == '$' || c == '`' || c == '"' {
				b.WriteByte('\\')
			}
			b.WriteByte(v[i])
		}
		return b.String()
	}
	if escaped {
		_, n := utf8.DecodeRuneInString(v)
		return v[:n] + "'" + strings.ReplaceAll(v[n:], "'", `'\''`) + "'"
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// plain reports whether v means the same to a shell in every position:
// no character a shell treats specially.
func plain(v string) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("_./:@%+=,-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// Tokens returns the refs of every ${...} token in s, in order, skipping
// escaped ones.
func Tokens(s string) []string {
	var refs []string
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return refs
		}
		if i > 0 && s[i-1] == '$' {
			s = s[i+2:]
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return refs
		}
		refs = append(refs, s[i+2:i+2+end])
		s = s[i+3+end:]
	}
}
