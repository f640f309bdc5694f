package world

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// EnvName turns a service or port name into the stem of an environment
// variable: "web-ui" → "WEB_UI".
func EnvName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// DNSLabel turns any name into one DNS label: lowercase letters, digits and
// '-', at most 63 bytes. A name cut to fit keeps a short hash of the whole,
// so two long names with one prefix stay apart.
func DNSLabel(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if out != "" && len(out) <= 63 {
		return out
	}
	h := ShortHash(s)
	if out == "" {
		return "w" + h
	}
	return strings.TrimRight(out[:63-len(h)-1], "-") + "-" + h
}

// ShortHash is an 8-hex-digit digest of s, for suffixes that keep folded
// names distinct.
func ShortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:4])
}
