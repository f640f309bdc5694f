package world

import (
	"strings"
)

// Lookup resolves the inside of a ${...} token ("api.port", "env.HOME"). It
// reports false for a token it does not know, which Interpolate then leaves
// untouched: a literal ${self.port} reaching a shell fails loudly, where a
// blank would fail in some confusing way later.
type Lookup func(ref string) (string, bool)

// Interpolate replaces every ${ref} in s that lookup knows. "$${" writes a
// literal "${". It never fails: malformed or unknown tokens stay as written.
func Interpolate(s string, lookup Lookup) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		if i > 0 && s[i-1] == '$' {
			// "$${" is an escaped "${".
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			b.WriteString(s[i:])
			return b.String()
		}
		ref := s[i+2 : i+2+end]
		if v, ok := lookup(ref); ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+3+end])
		}
		s = s[i+3+end:]
	}
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
