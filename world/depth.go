package world

import "fmt"

// maxDepth bounds how deeply a binky.toml may nest inline tables and
// arrays, and maxKeyParts how many parts a dotted key or table header may
// have. BurntSushi/toml takes time and memory quadratic in either: 4,000
// nested inline tables (16 KB) took 4.6 s to decode here, 20,000 (80 KB)
// grew the daemon past 17 GB; a 4,000-part dotted key took 0.8 s. A
// branch's binky.toml is read before anyone approved it (to know whether
// it is approved), so it is measured first. Real configs use a handful.
const (
	maxDepth    = 32
	maxKeyParts = 32
)

// shapeProblem scans src, outside strings and comments, for nesting past
// maxDepth or a key of more than maxKeyParts parts, and returns where
// (1-based line and column) with what, or ok when there is none. It reads
// each byte once.
func shapeProblem(src []byte) (line, col int, msg string, ok bool) {
	line, lineAt := 1, 0
	var stack []byte // the open '{' and '[' of values
	inKey := true    // reading a key: at a line's start (top level), after '{' or ','
	header := false  // inside a [table] or [[array]] header
	lineStart := true
	parts := 1
	at := func(i int) (int, int) { return line, i - lineAt + 1 }
	for i := 0; i < len(src); i++ {
		c := src[i]
		if lineStart && c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			lineStart = false
			if c == '[' && len(stack) == 0 {
				header, parts = true, 1
				continue
			}
		}
		switch c {
		case '\n':
			line, lineAt, lineStart = line+1, i+1, true
			header = false
			if len(stack) == 0 {
				inKey, parts = true, 1
			}
		case '#':
			for i+1 < len(src) && src[i+1] != '\n' {
				i++
			}
		case '"', '\'':
			end, lines, last := skipString(src, i)
			if lines > 0 {
				line, lineAt = line+lines, last
			}
			i = end
		case '{', '[':
			if header {
				continue
			}
			stack = append(stack, c)
			if len(stack) > maxDepth {
				l, cl := at(i)
				return l, cl, fmt.Sprintf("tables and arrays nested more than %d deep: binky reads no deeper", maxDepth), false
			}
			inKey, parts = c == '{', 1
		case '}', ']':
			if header {
				continue
			}
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			inKey = false
		case ',':
			if len(stack) > 0 && stack[len(stack)-1] == '{' {
				inKey, parts = true, 1
			}
		case '=':
			if !header {
				inKey = false
			}
		case '.':
			if inKey || header {
				parts++
				if parts > maxKeyParts {
					l, cl := at(i)
					return l, cl, fmt.Sprintf("a key of more than %d dotted parts: binky reads no longer keys", maxKeyParts), false
				}
			}
		}
	}
	return 0, 0, "", true
}

// skipString returns the index of the last byte of the string that starts
// at src[i] (a quote), how many newlines it holds, and the index just past
// its last newline. An unterminated string runs to the end (the decoder
// reports it).
func skipString(src []byte, i int) (end, lines, lineAt int) {
	q := src[i]
	multi := i+2 < len(src) && src[i+1] == q && src[i+2] == q
	j := i + 1
	if multi {
		j = i + 3
	}
	for ; j < len(src); j++ {
		switch c := src[j]; {
		case c == '\\' && q == '"':
			j++ // the escaped byte is never the closing quote
			if j < len(src) && src[j] == '\n' {
				lines, lineAt = lines+1, j+1
			}
		case c == '\n':
			if !multi {
				return j - 1, lines, lineAt // a newline ends a one-line string: the decoder says so
			}
			lines, lineAt = lines+1, j+1
		case c == q && !multi:
			return j, lines, lineAt
		case c == q && j+2 < len(src) && src[j+1] == q && src[j+2] == q:
			// Up to two more quotes may close a multi-line string ("""a"""").
			for j+3 < len(src) && src[j+3] == q {
				j++
			}
			return j + 2, lines, lineAt
		}
	}
	return len(src) - 1, lines, lineAt
}
