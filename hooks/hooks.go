// Package hooks installs and removes git-binky's post-checkout hook. It
// writes a marked block into the post-checkout file in the folder git really
// runs hooks from (core.hooksPath honoured), keeping whatever else the file
// holds and how it behaves, and removes only that block. Where git runs
// hooks defined in config (hook.<name>.command), it uses that instead, so no
// file is touched at all. A block an earlier binky wrote is upgraded in
// place. It also holds what the hook commands do beyond the file: the
// install sequence (Setup, Teardown) and the post-checkout entry point
// (PostCheckout), so the commands in cmd/binky only parse and print.
package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/git-binky/git-binky/gitx"
)

// Markers delimit the block binky owns inside a hook file.
const (
	beginMarker = "# >>> git-binky >>>"
	endMarker   = "# <<< git-binky <<<"
	// configName is the name of binky's config-defined hook.
	configName = "git-binky"
)

// Line is the command the hook runs. It never fails the checkout: when
// git-binky is missing it says so and succeeds. When binky itself runs
// `git worktree add` (for `git binky up <new name>`), the up starts the
// world, and a file checkout (`git checkout -- path`: flag 0; git's own
// checkouts of a new worktree or clone pass 1) has nothing for binky
// (PostCheckout): the hook does nothing then, not even start git-binky,
// which is two programs' starts (the launcher execs binky). A missing
// git-binky is said only where a world would have started (a new
// worktree: its previous HEAD is all zeros), not at every branch switch. Every variable
// has a default: a hook running under `sh -u` (`#!/bin/sh -eu`) must not
// abort on an unset one and fail every checkout.
const Line = `if [ -n "${GIT_BINKY_ADDING:-}" ] || [ "${3:-}" = 0 ]; then :; elif command -v git-binky >/dev/null 2>&1; then git-binky hook post-checkout "$@" || true; else case "${1:-}" in *[!0]*) ;; *) echo "git-binky: not on PATH, no world started (install it, or run 'git binky uninstall')" >&2;; esac; fi`

// callsBinky reports whether a hook without binky's block calls it anyway:
// one in another language, where the user added the call by hand
// (subprocess.call(["git-binky", "hook", "post-checkout", ...]), say).
func callsBinky(hook []byte) bool {
	return bytes.Contains(hook, []byte("git-binky")) && bytes.Contains(hook, []byte("post-checkout"))
}

// createdLine follows the shebang of a hook file binky created, so that
// uninstall deletes only such a file: a user's own stub ("#!/bin/sh" and
// nothing else) is kept.
const createdLine = "# this file was created by 'git binky install'; 'git binky uninstall' deletes it"

// configCommand is Line as a config-defined hook (hook.<name>.command):
// git runs it as `sh -c '<command> "$@"' <command> <args>`, and `if ...
// fi "$@"` is a syntax error, which fails every checkout. As a function's
// body, the appended "$@" become the function's arguments.
const configCommand = `binky_post_checkout() { ` + Line + `; }; binky_post_checkout`

func block() string {
	return beginMarker + " managed by 'git binky install'; 'git binky uninstall' removes it\n" + Line + "\n" + endMarker + "\n"
}

// ErrNotShell is returned when the existing hook is not a shell script, so
// it cannot be edited safely.
var ErrNotShell = errors.New("the existing hook is not a shell script")

// Result says what Install or Uninstall did.
type Result struct {
	Path    string // the hook file, or "config" for a config-defined hook
	Changed bool
	// Upgraded is set when a stale binky hook was replaced by the current one.
	Upgraded bool
	Method   string // "config" or "file"
	// NotApproved says why the binky.toml where install ran was not
	// approved: it does not load (the hook would start nothing from it).
	NotApproved string
}

// Install adds binky's post-checkout hook for the repository around dir.
// Installing twice is installing once.
func Install(ctx context.Context, dir string) (Result, error) {
	if ConfigHooksSupported(ctx) {
		return installConfig(ctx, dir)
	}
	hooksDir, err := gitx.HooksDir(ctx, dir)
	if err != nil {
		return Result{}, err
	}
	path := filepath.Join(hooksDir, "post-checkout")
	res := Result{Path: path, Method: "file"}
	if err := checkLeadsOut(ctx, dir, hooksDir, path); err != nil {
		return res, err
	}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(hooksDir, 0o755); err != nil {
			return res, fmt.Errorf("create hooks folder: %w", err)
		}
		res.Changed = true
		return res, writeHook(path, []byte("#!/bin/sh\n"+createdLine+"\n"+block()), 0o755)
	case err != nil:
		return res, fmt.Errorf("read %s: %w", path, err)
	}
	if bytes.Contains(old, []byte(beginMarker)) {
		return upgrade(path, old, res)
	}
	if callsBinky(old) {
		// Someone added the call by hand (as the error below asks, for a
		// hook in another language): that is binky installed.
		res.Method = "by hand"
		return res, nil
	}
	if !isShell(old) {
		return res, fmt.Errorf("%s: %w, so binky leaves it alone: make it run git-binky by hand, with the hook's arguments, ignoring its exit status (in sh:\n  git-binky hook post-checkout \"$@\" || true\n), then install again", path, ErrNotShell)
	}
	// The block goes right after the shebang, so that an `exit` further
	// down the existing hook cannot skip it; the existing lines follow
	// unchanged and still decide the hook's exit status.
	var out []byte
	if bytes.HasPrefix(old, []byte("#!")) {
		nl := bytes.IndexByte(old, '\n')
		if nl < 0 {
			out = append(append(append([]byte{}, old...), '\n'), block()...)
		} else {
			out = append(append(append([]byte{}, old[:nl+1]...), block()...), old[nl+1:]...)
		}
	} else {
		out = append([]byte(block()), old...)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return res, err
	}
	if !executable(fi) {
		// git ignores a hook that is not executable; making it executable
		// would switch on a hook someone switched off.
		return res, fmt.Errorf("%s exists but is not executable, so git does not run it: make it executable (chmod +x) or delete it, then install again", path)
	}
	res.Changed = true
	return res, writeHook(path, out, fi.Mode().Perm())
}

// Uninstall removes binky's block (or config hook) and nothing else: the
// rest of the file is left byte for byte, and a file that held only the
// block binky created is deleted.
func Uninstall(ctx context.Context, dir string) (Result, error) {
	res := Result{Method: "file"}
	if ConfigHooksSupported(ctx) {
		if _, err := gitx.Git(ctx, dir, "config", "--local", "--get", "hook."+configName+".command"); err == nil {
			res.Method, res.Path, res.Changed = "config", "config", true
			if _, err := gitx.Git(ctx, dir, "config", "--local", "--remove-section", "hook."+configName); err != nil {
				return res, err
			}
		}
	}
	hooksDir, err := gitx.HooksDir(ctx, dir)
	if err != nil {
		return res, err
	}
	path := filepath.Join(hooksDir, "post-checkout")
	old, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return res, err
	}
	res.Path = path
	out, found := removeBlock(old)
	if !found {
		return res, nil
	}
	res.Changed = true
	if strings.TrimSpace(string(out)) == "#!/bin/sh\n"+createdLine {
		err := os.Remove(path) // only what binky wrote was there
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		return res, err
	}
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		// Removed under us since it was read: binky's block went with it,
		// and what else it held is not for binky to bring back.
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("uninstall: %w", err)
	}
	return res, writeHook(path, out, fi.Mode().Perm())
}

// upgrade replaces a stale binky block (one an earlier binky wrote) with the
// current one, in place, leaving every other byte of the hook as it is.
// Everything between binky's markers is binky's, so any earlier body is
// recognised by them (git-lfs keeps a list of its old hook bodies instead).
func upgrade(path string, old []byte, res Result) (Result, error) {
	start := bytes.Index(old, []byte(beginMarker))
	rel := bytes.Index(old[start:], []byte(endMarker))
	if rel < 0 {
		return res, fmt.Errorf("%s has git-binky's begin marker but no end marker (%q): fix or delete the block by hand, then install again", path, endMarker)
	}
	end := start + rel + len(endMarker)
	if end < len(old) && old[end] == '\n' {
		end++
	}
	if string(old[start:end]) == block() {
		return res, nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return res, fmt.Errorf("upgrade %s: %w", path, err)
	}
	out := append(append(append([]byte{}, old[:start]...), block()...), old[end:]...)
	res.Changed, res.Upgraded = true, true
	return res, writeHook(path, out, fi.Mode().Perm())
}

// Installed reports whether the repository around dir has binky's hook.
func Installed(ctx context.Context, dir string) (bool, string) {
	if ConfigHooksSupported(ctx) {
		if _, err := gitx.Git(ctx, dir, "config", "--get", "hook."+configName+".command"); err == nil {
			return true, "config"
		}
	}
	hooksDir, err := gitx.HooksDir(ctx, dir)
	if err != nil {
		return false, ""
	}
	path := filepath.Join(hooksDir, "post-checkout")
	b, err := os.ReadFile(path)
	return err == nil && (bytes.Contains(b, []byte(beginMarker)) || callsBinky(b)), path
}

func removeBlock(b []byte) ([]byte, bool) {
	start := bytes.Index(b, []byte(beginMarker))
	if start < 0 {
		return b, false
	}
	rel := bytes.Index(b[start:], []byte(endMarker))
	if rel < 0 {
		return b, false
	}
	end := start + rel + len(endMarker)
	if end < len(b) && b[end] == '\n' {
		end++
	}
	return append(append([]byte{}, b[:start]...), b[end:]...), true
}

// isShell reports whether a hook can be edited as a shell script: a sh-family
// shebang, or no shebang and text (git runs such a file with sh).
func isShell(b []byte) bool {
	if bytes.IndexByte(b, 0) >= 0 {
		return false
	}
	if !bytes.HasPrefix(b, []byte("#!")) {
		return true
	}
	line := string(b)
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(fields) == 0 {
		return false
	}
	interp := filepath.Base(fields[0])
	if interp == "env" && len(fields) > 1 {
		interp = filepath.Base(fields[len(fields)-1])
	}
	switch interp {
	case "sh", "bash", "dash", "zsh", "ksh", "ash":
		return true
	}
	return false
}

// checkLeadsOut refuses a hook file that a symbolic link (the file itself,
// or a folder on its way) leads out of the repository: a repository can
// commit .husky/post-checkout as a link to any file of the user's, set
// core.hooksPath=.husky, and install would write binky's block into that
// file. Where the file really is must lie in the worktree, in the git
// folder, or in the hooks folder, where git's path to that folder is not
// one the worktree holds (a core.hooksPath of ~/.githooks, say: the
// repository does not choose what that folder's links point at). A hook
// that does not exist yet is checked where it would be created.
func checkLeadsOut(ctx context.Context, dir, hooksDir, path string) error {
	real, err := realPath(path)
	if err != nil {
		return nil // nothing binky can write through either
	}
	var roots []string
	top, topErr := gitx.Git(ctx, dir, "rev-parse", "--path-format=absolute", "--show-toplevel")
	common, commonErr := gitx.Git(ctx, dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	for _, r := range []struct {
		dir string
		err error
	}{{top, topErr}, {common, commonErr}} {
		if r.err == nil && r.dir != "" {
			roots = append(roots, filepath.Clean(r.dir))
		}
	}
	userChose, setting := chosen(ctx, dir, top, topErr, common, commonErr)
	if userChose {
		// A folder the repository does not choose (.git/hooks, a global
		// core.hooksPath): its links are the user's own (a dotfiles hook,
		// a stow farm), wherever they lead.
		return nil
	}
	for _, r := range roots {
		if rr, err := realPath(r); err == nil && within(real, rr) {
			return nil
		}
	}
	where := "the worktree"
	if topErr == nil {
		where = top
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		link, _ := os.Readlink(path)
		return fmt.Errorf("%s is a symbolic link to %s (%s), outside the repository (%s) and its hooks folder, so binky will not write its hook into it: replace the link with a file of its own and install again, or add this line to the hook by hand:\n  git-binky hook post-checkout \"$@\" || true", path, link, real, where)
	}
	folder := filepath.Dir(path)
	if setting != "" {
		folder = setting
	}
	return fmt.Errorf("the hooks folder %s (core.hooksPath) leads through a symbolic link to %s, outside the repository (%s), so binky will not write its hook there: make the hooks folder a folder of its own, not a link, and install again, or add this line to the hook by hand:\n  git-binky hook post-checkout \"$@\" || true", folder, filepath.Dir(real), where)
}

// chosen reports whether the hooks folder is one the user chose rather than
// one the repository can lead elsewhere: no core.hooksPath (the git
// folder's hooks), or a core.hooksPath outside the worktree or inside the
// git folder. git answers the hooks folder with its links resolved, so it
// is the setting, as written, that says whether a link the worktree holds
// lies on its way (.husky committed as a link to another folder). setting
// is the setting as a path from the root, "" when it is not set.
func chosen(ctx context.Context, dir, top string, topErr error, common string, commonErr error) (ok bool, setting string) {
	set, err := gitx.Git(ctx, dir, "config", "--type=path", "--get", "core.hooksPath")
	if err != nil || set == "" || topErr != nil || top == "" {
		return true, "" // unset, or a bare repository: no worktree to hold a link
	}
	if r, err := realPath(top); err == nil {
		top = r
	}
	p := filepath.Clean(set)
	if !filepath.IsAbs(p) {
		p = filepath.Join(top, p) // git reads a relative core.hooksPath from the worktree's top
	}
	// Each folder on the way, resolved: a path through a link to the
	// worktree (/src/link/repo/.husky) is in the worktree too.
	for a := filepath.Dir(p); ; a = filepath.Dir(a) {
		if r, err := realPath(a); err == nil {
			if commonErr == nil && within(r, filepath.Clean(common)) {
				return true, p
			}
			if within(r, top) {
				return false, p
			}
		}
		if filepath.Dir(a) == a {
			return true, p
		}
	}
}

// realPath is p with every symbolic link resolved; for a path that does not
// exist (or a dangling link, which writeHook replaces with a file), it is
// where the file would be created: its nearest existing folder, resolved,
// joined with the rest.
func realPath(p string) (string, error) {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	parent := filepath.Dir(p)
	if parent == p {
		return "", os.ErrNotExist
	}
	r, err := realPath(parent)
	if err != nil {
		return "", err
	}
	return filepath.Join(r, filepath.Base(p)), nil
}

// within reports whether p is root or lies under it (both clean).
func within(p, root string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func writeHook(path string, b []byte, mode os.FileMode) error {
	// A hook that is a link (to a script the repository tracks, say) stays
	// one: the file it names is what changes. Install has checked that the
	// link stays in the repository (checkLeadsOut).
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	tmp := path + ".binky-tmp"
	if err := os.WriteFile(tmp, b, mode); err != nil {
		return fmt.Errorf("write hook: %w", err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write hook: %w", err)
	}
	return nil
}

func installConfig(ctx context.Context, dir string) (Result, error) {
	res := Result{Path: "config", Method: "config"}
	cur, err := gitx.Git(ctx, dir, "config", "--local", "--get", "hook."+configName+".command")
	if err == nil && cur == configCommand {
		return res, nil
	}
	res.Upgraded = err == nil // an earlier binky's command, rewritten below
	for _, kv := range [][2]string{{"hook." + configName + ".command", configCommand}, {"hook." + configName + ".event", "post-checkout"}} {
		if _, err := gitx.Git(ctx, dir, "config", "--local", "--replace-all", kv[0], kv[1]); err != nil {
			return res, err
		}
	}
	res.Changed = true
	return res, nil
}

// ConfigHooksSupported reports whether this git runs hooks defined in
// config (hook.<name>.command with hook.<name>.event). It is tried, not
// guessed from a version number: a scratch repository gets a config hook
// and `git hook run` must run it. BINKY_HOOKS=file forces the hook file.
// The answer is kept for the life of the process, for as long as the git
// on PATH is the same file: the try starts four git processes.
func ConfigHooksSupported(ctx context.Context) bool {
	if os.Getenv("BINKY_HOOKS") == "file" {
		return false
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return false
	}
	key := git
	if fi, err := os.Stat(git); err == nil {
		key = fmt.Sprintf("%s\x00%d\x00%d", git, fi.Size(), fi.ModTime().UnixNano())
	}
	probed.Lock()
	defer probed.Unlock()
	if probed.key == key {
		return probed.ok
	}
	ok, sure := probeConfigHooks(ctx)
	if sure {
		probed.key, probed.ok = key, ok
	}
	return ok
}

// probed is ConfigHooksSupported's answer for the git it tried.
var probed struct {
	sync.Mutex
	key string
	ok  bool
}

// probePrefix names the scratch repositories of the try, in the
// temporary folder.
const probePrefix = "binky-hookprobe"

// probeConfigHooks tries a config hook in a scratch repository. sure is
// false when the try itself failed (a full temporary folder, git killed,
// ctx done): that answer is not kept.
func probeConfigHooks(ctx context.Context) (ok, sure bool) {
	sweepProbes(os.TempDir(), time.Now().Add(-10*time.Minute))
	tmp, err := os.MkdirTemp("", probePrefix)
	if err != nil {
		return false, false
	}
	defer os.RemoveAll(tmp)
	marker := filepath.Join(tmp, "ran")
	run := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		return cmd.Run()
	}
	if run("init", "-q") != nil ||
		run("config", "hook.probe.command", "touch "+marker) != nil ||
		run("config", "hook.probe.event", "post-checkout") != nil {
		return false, false
	}
	// A git without config hooks fails here (no `git hook`, or no hook to
	// run): the marker says which.
	_ = run("hook", "run", "post-checkout", "--", "0", "0", "1")
	_, err = os.Stat(marker)
	return err == nil, ctx.Err() == nil
}

// sweepProbes deletes the scratch repositories of tries that a killed
// process left in dir: this user's, untouched since before.
func sweepProbes(dir string, before time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), probePrefix) {
			continue
		}
		fi, err := e.Info()
		if err != nil || !fi.ModTime().Before(before) || !ownedByMe(fi) {
			continue
		}
		os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// IsNullRef reports whether ref is git's null object name (40 zeros, or 64
// in a SHA-256 repository): post-checkout gets it as the previous HEAD when
// `git worktree add` creates a worktree.
func IsNullRef(ref string) bool {
	if len(ref) != 40 && len(ref) != 64 {
		return false
	}
	return strings.Trim(ref, "0") == ""
}
