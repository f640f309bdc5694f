package world

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
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

// EnvStem is the stem of a service's variables (<STEM>_URL, ...): its
// EnvName, with '_' before a leading digit, since no shell or env file
// reads a variable named 9WEB_URL ("9web" → "_9WEB").
func EnvStem(service string) string {
	stem := EnvName(service)
	if stem != "" && stem[0] >= '0' && stem[0] <= '9' {
		return "_" + stem
	}
	return stem
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

// chooseLabel gives rec its URL label the first time: the worktree name
// folded to a DNS label, with a short hash of the world's id when another
// world of the project already has that label (Foo_Bar and foo-bar both
// fold to foo-bar; two clones of a repository both have a worktree "main").
// Hosts are <service>.<label>.<project>.localhost, so the project is what
// must not repeat a label, in any repository. The record is saved under a
// lock per project, so two first ups at once choose in turn.
func (w *World) chooseLabel(ctx context.Context, rec *Record) error {
	base := DNSLabel(w.Worktree.Name)
	unlock, err := Lock(ctx, filepath.Join(w.Home.WorldsDir(), "labels-"+ShortHash(w.Project)+".lock"))
	if err != nil {
		return err
	}
	defer unlock()
	// A corrupt record's label is not known, and must not stop every
	// world's first up: the proxy routes a host two worlds claim to neither.
	recs, err := w.Home.Records()
	if !OnlyUnreadable(err) {
		return err
	}
	rec.Label = base
	for _, r := range recs {
		if r.ID == w.ID || r.Project != w.Project {
			continue
		}
		// A record from before labels were kept used the folded name.
		l := r.Label
		if l == "" {
			l = DNSLabel(r.Worktree)
		}
		if l == base {
			h := ShortHash(w.ID)
			if len(base) > 63-len(h)-1 {
				base = strings.TrimRight(base[:63-len(h)-1], "-")
			}
			rec.Label = base + "-" + h
			break
		}
	}
	return w.Home.SaveRecord(rec)
}
