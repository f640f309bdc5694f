package gitx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/git-binky/git-binky/smallfile"
)

// ErrNotRepository is returned when a directory is not inside a git repository.
var ErrNotRepository = errors.New("not inside a git repository")

// ErrNotWorktree is returned when a directory is inside a repository but not
// inside any of its worktrees (the inside of a bare repository, say).
var ErrNotWorktree = errors.New("not inside a git worktree")

// ErrNoSuchWorktree is returned when a worktree name matches none of the
// repository's worktrees.
var ErrNoSuchWorktree = errors.New("no such worktree")

// ErrDubiousOwnership is returned for a worktree another user owns, which
// git itself refuses (safe.directory): binky would otherwise run commands
// from a stranger's binky.toml, and write into their repository, as you.
var ErrDubiousOwnership = errors.New("repository owned by someone else")

// Repo is a repository, identified by its common directory: the one that
// holds objects, refs and the worktrees/ admin folders shared by every worktree.
type Repo struct {
	CommonDir string // absolute, symlinks resolved
	Bare      bool   // no main worktree
	MainPath  string // the main worktree's root; "" for a bare repository
}

// Worktree is one checkout of a repository.
type Worktree struct {
	// Name identifies the worktree within its repository. For a linked
	// worktree it is the name of its admin folder (what git itself calls the
	// worktree); for the main worktree it is the base name of its path.
	Name string
	Path string // root of the checkout
	// AdminDir is the worktree's private git dir: the common dir for the main
	// worktree, <common>/worktrees/<name> for a linked one.
	AdminDir string
	Main     bool
	Branch   string // short branch name; "" when HEAD is detached
	Head     string // commit hash HEAD points at; "" in an empty repository
	Locked   bool   // `git worktree lock`
	// Missing reports that the checkout folder is gone while git still has
	// its admin folder (it would be pruned by `git worktree prune`).
	Missing bool
	// NoCheckout reports a worktree whose files were never checked out
	// (`git worktree add --no-checkout`): it has no index yet.
	NoCheckout bool
}

// Discover finds the repository and worktree containing dir. It returns
// ErrNotRepository outside any repository, and ErrNotWorktree (with a
// non-nil Repo) inside a repository's git dir rather than a checkout.
func Discover(dir string) (*Repo, *Worktree, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("resolve %s: %w", dir, err)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	for d := abs; ; d = filepath.Dir(d) {
		dotgit := filepath.Join(d, ".git")
		if fi, err := os.Stat(dotgit); err == nil {
			if err := checkOwner(d, fi); err != nil {
				return nil, nil, err
			}
			gitDir := dotgit
			if !fi.IsDir() {
				if gitDir, err = readGitFile(dotgit); err != nil {
					return nil, nil, err
				}
			}
			repo, err := openCommon(gitDir)
			if err != nil {
				return nil, nil, err
			}
			wt, err := repo.worktreeFor(d, gitDir)
			if err != nil {
				return repo, nil, err
			}
			return repo, wt, nil
		}
		// A bare repository (or the inside of a git dir) has HEAD and objects
		// at its top; we are in the repository but in no worktree.
		if isGitDir(d) {
			repo, err := openCommon(d)
			if err != nil {
				return nil, nil, err
			}
			return repo, nil, fmt.Errorf("%s: %w", abs, ErrNotWorktree)
		}
		if filepath.Dir(d) == d {
			return nil, nil, fmt.Errorf("%s: %w", abs, ErrNotRepository)
		}
	}
}

// checkOwner refuses the worktree at top (whose .git is dotgit) when
// another user owns it and git refuses it too: git decides, since it knows
// safe.directory and sudo. Asking it costs a process, so only an owner
// other than this process's is asked about.
func checkOwner(top string, dotgit os.FileInfo) error {
	other := ownedByOther(dotgit)
	if !other {
		if fi, err := os.Stat(top); err == nil {
			other = ownedByOther(fi)
		}
	}
	if !other {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// In C: git translates the message this looks for.
	if _, err := git(ctx, top, []string{"LC_ALL=C", "LANGUAGE=C"}, "rev-parse", "--git-dir"); err != nil && strings.Contains(err.Error(), "dubious ownership") {
		return fmt.Errorf("%s: %w, and git refuses it too: if you trust it, add it with 'git config --global --add safe.directory %s'", top, ErrDubiousOwnership, top)
	}
	return nil
}

// Open returns the repository whose common dir (or any git dir) is gitDir.
func Open(gitDir string) (*Repo, error) { return openCommon(gitDir) }

func isGitDir(d string) bool {
	if _, err := os.Stat(filepath.Join(d, "HEAD")); err != nil {
		return false
	}
	if _, err := os.Stat(filepath.Join(d, "objects")); err == nil {
		return true
	}
	_, err := os.Stat(filepath.Join(d, "commondir"))
	return err == nil
}

// Bounds on what binky reads of git's files (read with smallfile, so that
// a pipe or a device at one of their paths cannot block or exhaust a
// reader): HEAD, config, refs and the like are lines; packed-refs lists
// every ref of a repository, tens of MiB in the largest.
const (
	maxGitFile    = 16 << 20
	maxPackedRefs = 1 << 30
)

// readGitFile reads a ".git" file ("gitdir: <path>") as linked worktrees and
// submodules have.
func readGitFile(path string) (string, error) {
	b, err := smallfile.Read(path, maxGitFile)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	line := strings.TrimSpace(string(b))
	target, ok := strings.CutPrefix(line, "gitdir:")
	if !ok {
		return "", fmt.Errorf("%s: not a gitdir file", path)
	}
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(path), target)
	}
	return resolve(target), nil
}

func resolve(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// commonDirOf follows a git dir's "commondir" file, present in linked
// worktrees' admin folders.
func commonDirOf(gitDir string) string {
	b, err := smallfile.Read(filepath.Join(gitDir, "commondir"), maxGitFile)
	if err != nil {
		return gitDir
	}
	c := strings.TrimSpace(string(b))
	if !filepath.IsAbs(c) {
		c = filepath.Join(gitDir, c)
	}
	return resolve(c)
}

func openCommon(gitDir string) (*Repo, error) {
	common := commonDirOf(resolve(gitDir))
	repo := &Repo{CommonDir: common}
	bare, worktree, err := coreConfig(common)
	if err != nil {
		return nil, err
	}
	repo.Bare = strings.EqualFold(bare, "true")
	if !repo.Bare {
		switch wt := worktree; {
		case wt != "":
			if !filepath.IsAbs(wt) {
				wt = filepath.Join(common, wt)
			}
			repo.MainPath = resolve(wt)
		case filepath.Base(common) == ".git":
			repo.MainPath = filepath.Dir(common)
		default:
			// A git dir that is not named .git and has no core.worktree
			// (GIT_DIR layouts): no main checkout we can locate.
			repo.Bare = true
		}
	}
	return repo, nil
}

// coreConfig reads core.bare and core.worktree from <common>/config, the
// two keys binky needs, as git does: section and key names in any case,
// the last value wins, a key alone means true, values may be quoted and
// escaped, # and ; start comments. (go-git's decoder did this; linking it
// cost every `git binky env` the start-up of gcfg and encoding/gob.)
func coreConfig(common string) (bare, worktree string, err error) {
	b, err := smallfile.Read(filepath.Join(common, "config"), maxGitFile)
	if err != nil {
		return "", "", fmt.Errorf("open repository %s: %w", common, err)
	}
	inCore := false
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return "", "", fmt.Errorf("read config of %s: line %d: a section header with no ]", common, n+1)
			}
			inCore = strings.EqualFold(strings.TrimSpace(line[1:end]), "core")
			line = strings.TrimSpace(line[end+1:]) // "[core] bare = true" is one line
		}
		if !inCore || line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		key, value, hasValue := strings.Cut(line, "=")
		v := "true"
		if hasValue {
			v = configValue(value)
		}
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "bare":
			bare = v
		case "worktree":
			worktree = v
		}
	}
	return bare, worktree, nil
}

// configValue is a git config value as git reads it.
func configValue(s string) string {
	var b strings.Builder
	quoted, keep := false, 0 // keep: what trailing-space trimming must not cut
	s = strings.TrimSpace(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted
			keep = b.Len()
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			default:
				b.WriteByte(s[i])
			}
			keep = b.Len()
		case !quoted && (c == '#' || c == ';'):
			i = len(s)
		default:
			b.WriteByte(c)
			if quoted {
				keep = b.Len()
			}
		}
	}
	v := b.String()
	return v[:keep] + strings.TrimRight(v[keep:], " \t")
}

// worktreeFor builds the Worktree whose root is root and whose git dir is gitDir.
func (r *Repo) worktreeFor(root, gitDir string) (*Worktree, error) {
	if gitDir == r.CommonDir {
		if r.MainPath == "" {
			return nil, fmt.Errorf("%s: %w", root, ErrNotWorktree)
		}
		return r.mainWorktree()
	}
	return r.linkedWorktree(filepath.Base(gitDir))
}

func (r *Repo) mainWorktree() (*Worktree, error) {
	wt := &Worktree{
		Name:     filepath.Base(r.MainPath),
		Path:     r.MainPath,
		AdminDir: r.CommonDir,
		Main:     true,
	}
	wt.Branch, wt.Head = readHead(r.CommonDir, r.CommonDir)
	if _, err := os.Stat(r.MainPath); err != nil {
		wt.Missing = true
	}
	return wt, nil
}

func (r *Repo) linkedWorktree(name string) (*Worktree, error) {
	admin := filepath.Join(r.CommonDir, "worktrees", name)
	b, err := smallfile.Read(filepath.Join(admin, "gitdir"), maxGitFile)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("worktree %q: %w", name, ErrNoSuchWorktree)
		}
		return nil, fmt.Errorf("read worktree %q: %w", name, err)
	}
	dotgit := strings.TrimSpace(string(b))
	if !filepath.IsAbs(dotgit) {
		dotgit = filepath.Join(admin, dotgit)
	}
	wt := &Worktree{
		Name:     name,
		Path:     resolve(filepath.Dir(dotgit)),
		AdminDir: admin,
	}
	wt.Branch, wt.Head = readHead(admin, r.CommonDir)
	if _, err := os.Stat(filepath.Join(admin, "index")); err != nil {
		wt.NoCheckout = true
	}
	if _, err := os.Stat(filepath.Join(admin, "locked")); err == nil {
		wt.Locked = true
	}
	if _, err := os.Stat(dotgit); err != nil || !pointsAt(dotgit, admin) {
		wt.Missing = true
	}
	return wt, nil
}

// pointsAt reports whether the worktree's .git file at dotgit names admin
// as its git folder. A worktree folder deleted and replaced by a link to
// another worktree has a .git, the other's: taken for present, its
// remove removed the other worktree (an attack).
func pointsAt(dotgit, admin string) bool {
	b, err := smallfile.Read(dotgit, maxGitFile)
	if err != nil {
		return false
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return false
	}
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(dotgit), target)
	}
	return resolve(target) == resolve(admin)
}

// readHead returns the branch and commit of the HEAD in gitDir. go-git
// resolves the reference (loose or packed) from the common dir.
func readHead(gitDir, common string) (branch, hash string) {
	b, err := smallfile.Read(filepath.Join(gitDir, "HEAD"), maxGitFile)
	if err != nil {
		return "", ""
	}
	head := strings.TrimSpace(string(b))
	ref, ok := strings.CutPrefix(head, "ref: ")
	if !ok {
		return "", head
	}
	branch = strings.TrimPrefix(ref, "refs/heads/")
	return branch, resolveRef(common, ref)
}

// HeadBranch is the branch checked out in the worktree whose git folder
// (its admin folder, or the common folder for the main worktree) is
// gitDir, read now: "" when its HEAD is detached; ok is false when HEAD
// cannot be read (the worktree is gone).
func HeadBranch(gitDir string) (branch string, ok bool) {
	b, err := smallfile.Read(filepath.Join(gitDir, "HEAD"), maxGitFile)
	if err != nil {
		return "", false
	}
	ref, isRef := strings.CutPrefix(strings.TrimSpace(string(b)), "ref: ")
	if !isRef {
		return "", true
	}
	return strings.TrimPrefix(ref, "refs/heads/"), true
}

// resolveRef returns the object a reference names, or "": the loose ref
// under common, else its line in packed-refs, following symbolic refs as
// git does. (go-git's dotgit did this; linking it cost every `git binky
// env` the start-up of its pack, URL and SHA-1 packages.)
func resolveRef(common, ref string) string {
	for range 5 {
		if !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "..") {
			return ""
		}
		b, err := smallfile.Read(filepath.Join(common, filepath.FromSlash(ref)), maxGitFile)
		if err != nil {
			return packedRef(common, ref)
		}
		v := strings.TrimSpace(string(b))
		next, symbolic := strings.CutPrefix(v, "ref: ")
		if !symbolic {
			if isObjectName(v) {
				return v
			}
			return ""
		}
		ref = next
	}
	return ""
}

func packedRef(common, ref string) string {
	b, err := smallfile.Read(filepath.Join(common, "packed-refs"), maxPackedRefs)
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		h, name, ok := strings.Cut(strings.TrimRight(line, "\r\n"), " ")
		if ok && name == ref && isObjectName(h) {
			return h
		}
	}
	return ""
}

// isObjectName reports whether s is a SHA-1 or SHA-256 object name.
func isObjectName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Worktrees lists the main worktree (unless the repository is bare) and every
// linked worktree git has an admin folder for, sorted by name with main first.
func (r *Repo) Worktrees() ([]Worktree, error) {
	var out []Worktree
	if !r.Bare && r.MainPath != "" {
		wt, err := r.mainWorktree()
		if err != nil {
			return nil, err
		}
		out = append(out, *wt)
	}
	entries, err := os.ReadDir(filepath.Join(r.CommonDir, "worktrees"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("list worktrees of %s: %w", r.CommonDir, err)
	}
	var linked []Worktree
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		wt, err := r.linkedWorktree(e.Name())
		if err != nil {
			continue // a half-written admin folder (git worktree add in progress)
		}
		linked = append(linked, *wt)
	}
	sort.Slice(linked, func(i, j int) bool { return linked[i].Name < linked[j].Name })
	return append(out, linked...), nil
}

// Find returns the worktree called name: its git name first, then the base
// name of its path, then its branch.
func (r *Repo) Find(name string) (*Worktree, error) {
	wts, err := r.Worktrees()
	if err != nil {
		return nil, err
	}
	for _, match := range []func(Worktree) bool{
		func(w Worktree) bool { return w.Name == name },
		func(w Worktree) bool { return filepath.Base(w.Path) == name },
		func(w Worktree) bool { return w.Branch != "" && w.Branch == name },
	} {
		for i := range wts {
			if match(wts[i]) {
				return &wts[i], nil
			}
		}
	}
	return nil, fmt.Errorf("%q in %s: %w", name, r.CommonDir, ErrNoSuchWorktree)
}

// Git runs the git binary in dir and returns its trimmed stdout; stderr is
// folded into the error so the user sees what git said.
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	return git(ctx, dir, nil, args...)
}

// git is Git with extra variables in git's environment.
func git(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(cleanGitEnv(os.Environ()), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return strings.TrimRight(stdout.String(), "\n"), nil
}

// cleanGitEnv drops the variables git exports to hooks (GIT_DIR, GIT_INDEX_FILE,
// ...) so that a git command run for another worktree is not pointed back at
// the one whose hook is running.
func cleanGitEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// Dirty reports whether the worktree at path has uncommitted changes or
// untracked files. It asks git itself: go-git's status is slow on large trees
// and does not honour every ignore rule git does.
//
// Like every status binky runs, it takes no optional lock: a status that
// refreshes the index writes it under index.lock, and a git command the
// user runs meanwhile would fail on that lock.
func Dirty(ctx context.Context, path string) (bool, error) {
	_, clean, err := Snapshot(ctx, path)
	return !clean, err
}

// Snapshot reads, in one git status, the commit HEAD is at ("" in an
// empty repository) and whether the worktree at path matches it: no
// changes, staged or not, and no untracked files that are not ignored.
func Snapshot(ctx context.Context, path string) (head string, clean bool, err error) {
	// --no-ahead-behind: --branch would otherwise count the commits
	// between HEAD and its upstream, a walk of history.
	out, err := Git(ctx, path, "--no-optional-locks", "status", "--porcelain=v2", "--branch", "--no-ahead-behind", "--untracked-files=normal")
	if err != nil {
		return "", false, err
	}
	clean = true
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "# branch.oid "):
			if oid := strings.TrimPrefix(l, "# branch.oid "); oid != "(initial)" {
				head = oid
			}
		case l != "" && !strings.HasPrefix(l, "#"):
			clean = false
		}
	}
	return head, clean, nil
}

// HooksDir returns the folder git really runs hooks from, honouring
// core.hooksPath. Only git resolves this faithfully (relative paths, per
// worktree config), so it asks git.
func HooksDir(ctx context.Context, dir string) (string, error) {
	p, err := Git(ctx, dir, "rev-parse", "--path-format=absolute", "--git-path", "hooks")
	if err != nil {
		return "", err
	}
	return filepath.Clean(p), nil
}

// BranchExists reports whether refs/heads/<branch> exists.
func (r *Repo) BranchExists(branch string) bool {
	return resolveRef(r.CommonDir, "refs/heads/"+branch) != ""
}

// AddingEnv is set to 1 in the environment of the `git worktree add` that
// AddWorktree runs, and so of the hooks git runs for it: binky's
// post-checkout hook then leaves the new worktree to whoever asked for it.
const AddingEnv = "GIT_BINKY_ADDING"

// AddWorktree creates a linked worktree at path on branch: the existing branch
// when there is one, otherwise a new branch from the HEAD of the worktree
// holding the folder from (the repository's HEAD when from is ""). go-git
// cannot create linked worktrees, so this runs `git worktree add`.
func (r *Repo) AddWorktree(ctx context.Context, path, branch, from string) (*Worktree, error) {
	if strings.HasPrefix(branch, "-") || strings.HasPrefix(path, "-") {
		return nil, fmt.Errorf("add worktree %q on branch %q: a name beginning with '-' would be read as an option", path, branch)
	}
	dir := r.CommonDir
	args := []string{"worktree", "add"}
	if r.BranchExists(branch) {
		args = append(args, path, branch)
	} else {
		args = append(args, "-b", branch, path)
		if from != "" {
			// Run there, git starts the branch at that worktree's HEAD,
			// as 'git worktree add -b' typed in it does.
			dir = from
		}
	}
	if _, err := git(ctx, dir, []string{AddingEnv + "=1"}, args...); err != nil {
		return nil, err
	}
	_, wt, err := Discover(path)
	if err != nil {
		return nil, err
	}
	return wt, nil
}

// RemoveWorktree runs `git worktree remove` (with --force when force is set).
func (r *Repo) RemoveWorktree(ctx context.Context, wt *Worktree, force bool) error {
	if wt.Missing {
		// Its folder is gone, or is not its own (a link to another
		// worktree, which git would remove instead): only git's entry for
		// it goes, as `git worktree prune` drops it.
		if wt.Locked {
			return fmt.Errorf("worktree %s is locked ('git worktree unlock' it first)", wt.Name)
		}
		if err := os.RemoveAll(wt.AdminDir); err != nil {
			return fmt.Errorf("forget worktree %s: %w", wt.Name, err)
		}
		return nil
	}
	args := []string{"worktree", "remove"}
	if force {
		args = append(args, "--force")
	}
	args = append(args, wt.Path)
	_, err := Git(ctx, r.CommonDir, args...)
	return err
}

// ShowFile returns the content of path at rev (as `git show rev:path`), for
// reading a committed file from a worktree that has none checked out.
func ShowFile(ctx context.Context, dir, rev, path string) ([]byte, error) {
	out, err := Git(ctx, dir, "show", rev+":"+path)
	if err != nil {
		return nil, err
	}
	return []byte(out + "\n"), nil
}
