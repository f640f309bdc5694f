package world

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/git-binky/git-binky/smallfile"
)

// GoldenKeyHash hashes the files the service's golden_key globs match in
// the worktree (their paths and contents, in order), for the golden
// template's key: a branch that edits a migration gets a template built at
// its migrations. "" when the service has no golden_key. A glob that
// matches nothing is not an error (the hash says so), since a fresh branch
// may not have the folder yet.
func (w *World) GoldenKeyHash(service string) (string, error) {
	s := w.Config.Services[service]
	if s == nil || len(s.GoldenKey) == 0 {
		return "", nil
	}
	root := w.Worktree.Path
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: not part of the key
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		for _, g := range s.GoldenKey {
			if MatchGlob(g, rel) {
				files = append(files, rel)
				break
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("service %s: golden_key: %w", service, err)
	}
	sort.Strings(files)
	h := sha256.New()
	for _, f := range files {
		// Files a branch commits: only regular ones, streamed (a link to
		// /dev/zero would never end; migrations may be large).
		if err := hashFile(h, f, filepath.Join(root, filepath.FromSlash(f))); err != nil {
			return "", fmt.Errorf("service %s: golden_key: %w", service, err)
		}
	}
	return "\x00files:" + hex.EncodeToString(h.Sum(nil)), nil
}

// MatchGlob reports whether the slash-separated relative path name matches
// pattern: path.Match per segment, where a "**" segment matches any number
// of segments (none included).
func MatchGlob(pattern, name string) bool {
	return matchSegs(strings.Split(pattern, "/"), strings.Split(name, "/"))
}

func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchSegs(pat[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// globProblem says what is wrong with a golden_key glob, or "".
func globProblem(g string) string {
	switch {
	case g == "":
		return "an empty glob matches nothing"
	case strings.HasPrefix(g, "/") || filepath.IsAbs(g):
		return fmt.Sprintf("%q is absolute: write it relative to the worktree, like \"migrations/**\"", g)
	}
	for _, seg := range strings.Split(g, "/") {
		if seg == ".." {
			return fmt.Sprintf("%q leaves the worktree: golden_key names files inside it", g)
		}
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Sprintf("%q is not a valid glob (%v): use *, ?, [a-z] and ** for any depth", g, err)
		}
	}
	return ""
}

// hashFile writes name, the size of the regular file at path and its
// bytes into h.
func hashFile(h io.Writer, name, path string) error {
	file, fi, err := smallfile.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	fmt.Fprintf(h, "%s\x00%d\x00", name, fi.Size())
	if _, err := io.CopyN(h, file, fi.Size()); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}
