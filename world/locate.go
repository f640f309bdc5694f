package world

import (
	"bytes"
	"sort"
	"strings"
	"sync"
)

// locator maps TOML key paths to the line and column where each is written.
// BurntSushi/toml reports positions for syntax errors but keeps key positions
// private, so diagnostics about well-formed files (unknown keys, broken
// references) find their place with this small scanner. It understands
// tables, dotted keys, inline tables and strings; anything else it skips.
// It is only ever a best effort and never fails: an unknown path maps to the
// nearest known parent, or to 1:1.
type locator struct {
	src   []byte
	lines []int // byte offset of each line start
	pos   map[string][2]int
}

// lazyLocator scans on the first diagnostic that needs a position: a file
// without any (every env on a shell prompt) never pays for the scan, a
// sixth of what parsing binky.toml allocates.
type lazyLocator struct {
	src  []byte
	once sync.Once
	l    *locator
}

func (z *lazyLocator) find(key []string) (int, int) {
	if z == nil {
		return 1, 1
	}
	z.once.Do(func() { z.l = newLocator(z.src) })
	return z.l.find(key)
}

func newLocator(src []byte) *locator {
	l := &locator{src: src, pos: map[string][2]int{}, lines: []int{0}}
	for i, c := range src {
		if c == '\n' {
			l.lines = append(l.lines, i+1)
		}
	}
	l.scan()
	return l
}

func (l *locator) lineCol(off int) (int, int) {
	n := sort.Search(len(l.lines), func(i int) bool { return l.lines[i] > off }) - 1
	if n < 0 {
		n = 0
	}
	return n + 1, off - l.lines[n] + 1
}

func (l *locator) record(path []string, off int) {
	k := strings.Join(path, "\x00")
	if _, ok := l.pos[k]; !ok {
		line, col := l.lineCol(off)
		l.pos[k] = [2]int{line, col}
	}
}

// find returns the position of key, or of its closest recorded ancestor.
func (l *locator) find(key []string) (int, int) {
	if l == nil {
		return 1, 1
	}
	for n := len(key); n > 0; n-- {
		if p, ok := l.pos[strings.Join(key[:n], "\x00")]; ok {
			return p[0], p[1]
		}
	}
	return 1, 1
}

// columnOn returns the column of the dotted key on line, or 1.
func (l *locator) columnOn(line int, dotted string) int {
	if p, ok := l.pos[strings.ReplaceAll(dotted, ".", "\x00")]; ok && p[0] == line {
		return p[1]
	}
	return 1
}

func (l *locator) scan() {
	var table []string
	i := 0
	n := len(l.src)
	for i < n {
		i = l.skipSpace(i, true)
		if i >= n {
			return
		}
		switch c := l.src[i]; {
		case c == '[':
			// A table header: [a.b] or [[a.b]].
			j := i + 1
			if j < n && l.src[j] == '[' {
				j++
			}
			parts, offs, end := l.key(j)
			table = parts
			for k := range parts {
				l.record(parts[:k+1], offs[k])
			}
			i = l.toEOL(end)
		case c == '\n':
			i++
		default:
			i = l.keyValue(i, table)
			i = l.toEOL(i)
		}
	}
}

// keyValue reads `key = value` at i under prefix and returns where it ended.
func (l *locator) keyValue(i int, prefix []string) int {
	parts, offs, j := l.key(i)
	if len(parts) == 0 {
		return l.toEOL(i)
	}
	full := append(append([]string{}, prefix...), parts...)
	for k := range parts {
		l.record(full[:len(prefix)+k+1], offs[k])
	}
	j = l.skipSpace(j, false)
	if j >= len(l.src) || l.src[j] != '=' {
		return j
	}
	return l.value(l.skipSpace(j+1, false), full)
}

// value skips one value, recording keys inside inline tables.
func (l *locator) value(i int, path []string) int {
	n := len(l.src)
	if i >= n {
		return i
	}
	switch l.src[i] {
	case '{':
		i++
		for i < n {
			i = l.skipSpace(i, true)
			if i >= n {
				return i
			}
			switch l.src[i] {
			case '}':
				return i + 1
			case ',', '\n':
				i++
			default:
				j := l.keyValue(i, path)
				if j <= i {
					j = i + 1
				}
				i = j
			}
		}
		return i
	case '[':
		depth := 0
		for i < n {
			switch c := l.src[i]; c {
			case '[':
				depth++
				i++
			case ']':
				depth--
				i++
				if depth == 0 {
					return i
				}
			case '"', '\'':
				i = l.str(i)
			case '#':
				i = l.toEOL(i)
			default:
				i++
			}
		}
		return i
	case '"', '\'':
		return l.str(i)
	}
	for i < n && l.src[i] != ',' && l.src[i] != '}' && l.src[i] != '\n' && l.src[i] != '#' {
		i++
	}
	return i
}

// key reads a possibly dotted, possibly quoted key at i.
func (l *locator) key(i int) (parts []string, offs []int, end int) {
	n := len(l.src)
	for {
		i = l.skipSpace(i, false)
		if i >= n {
			return parts, offs, i
		}
		start := i
		switch c := l.src[i]; {
		case c == '"' || c == '\'':
			j := l.str(i)
			if j-1 <= i+1 {
				parts = append(parts, "")
			} else {
				parts = append(parts, string(l.src[i+1:j-1]))
			}
			offs = append(offs, start)
			i = j
		case isBareKey(c):
			for i < n && isBareKey(l.src[i]) {
				i++
			}
			parts = append(parts, string(l.src[start:i]))
			offs = append(offs, start)
		default:
			return parts, offs, i
		}
		i = l.skipSpace(i, false)
		if i < n && l.src[i] == '.' {
			i++
			continue
		}
		return parts, offs, i
	}
}

func isBareKey(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// str skips a basic, literal or multi-line string starting at i.
func (l *locator) str(i int) int {
	n := len(l.src)
	q := l.src[i]
	if i+2 < n && l.src[i+1] == q && l.src[i+2] == q {
		// No copy of the rest of the file: a config holding many quotes
		// (a comment of 262,000 of them) made this quadratic (4 s, 5.6 GB).
		end := bytes.Index(l.src[i+3:], []byte{q, q, q})
		if end < 0 {
			return n
		}
		return i + 3 + end + 3
	}
	for j := i + 1; j < n; j++ {
		switch l.src[j] {
		case '\\':
			if q == '"' {
				j++
			}
		case q:
			return j + 1
		case '\n':
			return j
		}
	}
	return n
}

func (l *locator) skipSpace(i int, comments bool) int {
	for i < len(l.src) {
		switch l.src[i] {
		case ' ', '\t', '\r':
			i++
		case '#':
			if !comments {
				return i
			}
			i = l.toEOL(i)
		default:
			return i
		}
	}
	return i
}

// toEOL returns the offset of the next newline at or after i (skipping
// strings, so a '#' or newline escape inside one is not mistaken).
func (l *locator) toEOL(i int) int {
	for i < len(l.src) && l.src[i] != '\n' {
		if c := l.src[i]; c == '"' || c == '\'' {
			j := l.str(i)
			if j <= i {
				j = i + 1
			}
			i = j
			continue
		}
		i++
	}
	return i
}
