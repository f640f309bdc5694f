package compose

import "strings"

// A compose value is text with variable references: $NAME, ${NAME},
// ${NAME:-default}, ${NAME-default}, ${NAME:?err}, ${NAME:+alt}, and $$
// for a literal dollar. part is one piece of it.
type part struct {
	text string // literal text (when name == "")
	name string // variable name
	op   string // "", ":-", "-", ":?", "?", ":+", "+"
	arg  []part // the default, error or alternative, itself a value
	raw  string // the reference as written
}

// parseVars splits a compose value into literal text and variable
// references. It never fails: what is not a well-formed reference is text,
// as compose's own interpolation leaves it.
func parseVars(s string) []part {
	var out []part
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, part{text: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		if s[i] != '$' {
			lit.WriteByte(s[i])
			i++
			continue
		}
		if i+1 < len(s) && s[i+1] == '$' {
			// A literal dollar. Kept as "$$" so the writer can tell it from
			// a reference.
			flush()
			out = append(out, part{text: "$$", raw: "$$"})
			i += 2
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			end := matchBrace(s, i+1)
			if end < 0 {
				lit.WriteString(s[i:])
				break
			}
			inner := s[i+2 : end]
			n := 0
			for n < len(inner) && isNameByte(inner[n], n == 0) {
				n++
			}
			if n == 0 {
				lit.WriteString(s[i : end+1])
				i = end + 1
				continue
			}
			p := part{name: inner[:n], raw: s[i : end+1]}
			rest := inner[n:]
			for _, op := range []string{":-", ":?", ":+", "-", "?", "+"} {
				if strings.HasPrefix(rest, op) {
					p.op, p.arg = op, parseVars(rest[len(op):])
					rest = ""
					break
				}
			}
			if rest != "" {
				lit.WriteString(s[i : end+1])
				i = end + 1
				continue
			}
			flush()
			out = append(out, p)
			i = end + 1
			continue
		}
		n := 1
		for i+n < len(s) && isNameByte(s[i+n], n == 1) {
			n++
		}
		if n == 1 {
			lit.WriteByte('$')
			i++
			continue
		}
		flush()
		out = append(out, part{name: s[i+1 : i+n], raw: s[i : i+n]})
		i += n
	}
	flush()
	return out
}

// matchBrace returns the index of the '}' closing the '{' at open.
func matchBrace(s string, open int) int {
	depth := 0
	for j := open; j < len(s); j++ {
		switch s[j] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || !first && c >= '0' && c <= '9'
}

// literal is the text of parts with every reference resolved by lookup,
// as compose would (lookup reports whether the variable is set).
func literal(parts []part, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for _, p := range parts {
		if p.name == "" {
			if p.text == "$$" {
				b.WriteByte('$')
			} else {
				b.WriteString(p.text)
			}
			continue
		}
		v, ok := lookup(p.name)
		switch p.op {
		case ":-":
			if !ok || v == "" {
				v = literal(p.arg, lookup)
			}
		case "-":
			if !ok {
				v = literal(p.arg, lookup)
			}
		case ":+":
			if ok && v != "" {
				v = literal(p.arg, lookup)
			} else {
				v = ""
			}
		case "+":
			if ok {
				v = literal(p.arg, lookup)
			} else {
				v = ""
			}
		}
		b.WriteString(v)
	}
	return b.String()
}
