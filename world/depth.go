package world

import "fmt"

// maxDepth bounds how deeply a binky.toml may nest inline tables and
// arrays, and maxPath how long a key's whole path may be: its table
// header's parts, the keys of the inline tables it sits in, and its own
// dotted parts. BurntSushi/toml takes time and memory quadratic in both:
// 4,000 nested inline tables (16 KB) took 4.6 s to decode here, 20,000
// (80 KB) grew the daemon past 17 GB; a 4,000-part dotted key took 0.8 s;
// 32-part keys in 31 nested inline tables, repeated over 1 MB, 57 s and
// 24 GB. A branch's binky.toml is read before anyone approved it (to know
// whether it is approved), so it is measured first. Real configs use a
// handful of each.
const (
	maxDepth = 6
	maxPath  = 10
)

// frame is an open inline table or array: its bracket, and the length of
// the key path it is the value of.
type frame struct {
	open byte
	path int
}

// shapeProblem scans src, outside strings and comments, for nesting past
// maxDepth or a key path past maxPath, and returns where (1-based line and
// column) with what, or ok when there is none. It reads each byte once.
func shapeProblem(src []byte) (line, col int, msg string, ok bool) {
	line, lineAt := 1, 0
	var stack []frame
	inKey := true   // reading a key: at a line's start (top level), after '{' or ','
	header := false // inside a [table] or [[array]] header
	headerPath := 0 // the parts of the table header the lines below belong to
	lineStart := true
	parts := 1 // the parts of the key being read
	base := func() int {
		if len(stack) == 0 {
			return headerPath
		}
		return stack[len(stack)-1].path
	}
	at := func(i int) (int, int) { return line, i - lineAt + 1 }
	tooLong := func(i int) (int, int, string, bool) {
		l, cl := at(i)
		return l, cl, fmt.Sprintf("a key path of more than %d parts (its table's, the inline tables' it is in, its own dotted ones): binky reads no longer ones", maxPath), false
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		if lineStart && c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			lineStart = false
			if c == '[' && len(stack) == 0 {
				header, headerPath, parts = true, 1, 1
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
			// An inline table or array is the value of the key just read,
			// or an element of the array it is in.
			path := base() + parts
			if len(stack) > 0 && stack[len(stack)-1].open == '[' {
				path = base() + 1
			}
			stack = append(stack, frame{c, path})
			if len(stack) > maxDepth {
				l, cl := at(i)
				return l, cl, fmt.Sprintf("tables and arrays nested more than %d deep: binky reads no deeper", maxDepth), false
			}
			if path+1 > maxPath {
				return tooLong(i)
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
			if len(stack) > 0 && stack[len(stack)-1].open == '{' {
				inKey, parts = true, 1
			}
		case '=':
			if !header {
				inKey = false
			}
		case '.':
			switch {
			case header:
				headerPath++
				if headerPath > maxPath {
					return tooLong(i)
				}
			case inKey:
				parts++
				if base()+parts > maxPath {
					return tooLong(i)
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
