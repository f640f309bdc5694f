package hooks

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/gitx/gittest"
)

func TestInstallKeepsAnExistingHookAndUninstallRestoresItExactly(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	repo := gittest.NewRepo(t, t.TempDir(), "acme", nil)
	ctx := context.Background()
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	marker := filepath.Join(t.TempDir(), "ran")
	original := "#!/usr/bin/env bash\nset -e\n# husky-like hook\necho ran >> " + marker + "\nexit 0\n"
	if err := os.WriteFile(hook, []byte(original), 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(ctx, repo); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(hook)
	if !strings.HasPrefix(string(b), "#!/usr/bin/env bash\n"+beginMarker) || !strings.HasSuffix(string(b), "\nexit 0\n") {
		t.Fatalf("hook after install:\n%s", b)
	}
	// Installing twice is installing once.
	res, err := Install(ctx, repo)
	if err != nil || res.Changed {
		t.Fatalf("second install changed=%v err=%v", res.Changed, err)
	}
	if b2, _ := os.ReadFile(hook); string(b2) != string(b) {
		t.Fatal("second install changed the file")
	}
	// The old hook still runs, and the checkout still succeeds, with
	// git-binky absent from PATH.
	cmd := exec.Command("git", "checkout", "-q", "-b", "other")
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "PATH=/usr/bin:/bin")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("checkout with the hook installed: %v\n%s", err, out)
	}
	if ran, _ := os.ReadFile(marker); string(ran) != "ran\n" {
		t.Errorf("the existing hook did not run: %q", ran)
	}
	if _, err := Uninstall(ctx, repo); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(hook)
	if string(after) != original {
		t.Errorf("uninstall did not restore the hook byte for byte:\n%q\nwant\n%q", after, original)
	}
	if fi, _ := os.Stat(hook); fi.Mode().Perm() != 0o750 {
		t.Errorf("mode %v, want the hook's own 0750", fi.Mode().Perm())
	}
}

func TestInstallCreatesTheHookAndUninstallDeletesIt(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	repo := gittest.NewRepo(t, t.TempDir(), "acme", nil)
	ctx := context.Background()
	res, err := Install(ctx, repo)
	if err != nil || !res.Changed {
		t.Fatalf("install: %+v %v", res, err)
	}
	fi, err := os.Stat(res.Path)
	if err != nil || fi.Mode().Perm()&0o111 == 0 {
		t.Fatalf("hook not executable: %v %v", fi, err)
	}
	if ok, _ := Installed(ctx, repo); !ok {
		t.Error("Installed = false after Install")
	}
	if _, err := Uninstall(ctx, repo); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(res.Path); !os.IsNotExist(err) {
		t.Errorf("the hook binky created alone is still there: %v", err)
	}
}

// A user's own stub hook, a shebang and nothing else, is theirs: uninstall
// leaves it, byte for byte. (An attack found it deleted.)
func TestUninstallKeepsAUsersStubHook(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	repo := gittest.NewRepo(t, t.TempDir(), "acme", nil)
	ctx := context.Background()
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	if err := os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(ctx, repo); err != nil {
		t.Fatal(err)
	}
	if _, err := Uninstall(ctx, repo); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(hook); err != nil || string(b) != "#!/bin/sh\n" {
		t.Errorf("the user's stub after uninstall: %q, %v", b, err)
	}
}

// A hook that is a link to a script the repository keeps stays a link:
// install and uninstall change the script it names, and later edits to the
// script still run. (An attack found it turned into a copy.)
func TestInstallAndUninstallKeepAHookThatIsALink(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	repo := gittest.NewRepo(t, t.TempDir(), "acme", nil)
	ctx := context.Background()
	script := filepath.Join(repo, "tools", "post-checkout")
	original := "#!/bin/sh\necho v1\n"
	os.MkdirAll(filepath.Dir(script), 0o755)
	if err := os.WriteFile(script, []byte(original), 0o755); err != nil {
		t.Fatal(err)
	}
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	if err := os.Symlink("../../tools/post-checkout", hook); err != nil {
		t.Fatal(err)
	}
	isLink := func(when string) {
		t.Helper()
		if fi, err := os.Lstat(hook); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("after %s the hook is no longer a link: %v %v", when, fi, err)
		}
	}
	if _, err := Install(ctx, repo); err != nil {
		t.Fatal(err)
	}
	isLink("install")
	if b, _ := os.ReadFile(script); !strings.Contains(string(b), beginMarker) || !strings.Contains(string(b), "echo v1") {
		t.Fatalf("the script after install:\n%s", b)
	}
	if _, err := Uninstall(ctx, repo); err != nil {
		t.Fatal(err)
	}
	isLink("uninstall")
	if b, _ := os.ReadFile(script); string(b) != original {
		t.Errorf("the script after uninstall: %q, want %q", b, original)
	}
}

func TestInstallHonoursCoreHooksPath(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	repo := gittest.NewRepo(t, t.TempDir(), "acme", nil)
	gittest.Git(t, repo, "config", "core.hooksPath", ".husky")
	res, err := Install(context.Background(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(repo, ".husky", "post-checkout"); res.Path != want {
		t.Errorf("installed into %s, want %s", res.Path, want)
	}
}

// A repository that commits .husky/post-checkout as a link to a file outside
// it, and sets core.hooksPath=.husky, does not get binky's block written into
// that file. (An attack had install edit /tmp/victim.sh and print only
// .husky/post-checkout.) A .husky that is itself such a link is refused the
// same way, and nothing is created through it.
func TestInstallRefusesAHookLinkLeadingOutOfTheRepository(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	ctx := context.Background()
	t.Run("the hook is a link", func(t *testing.T) {
		repo := gittest.NewRepo(t, t.TempDir(), "acme", nil)
		gittest.Git(t, repo, "config", "core.hooksPath", ".husky")
		victim := filepath.Join(t.TempDir(), "victim.sh")
		original := "#!/bin/sh\necho victim\n"
		if err := os.WriteFile(victim, []byte(original), 0o755); err != nil {
			t.Fatal(err)
		}
		hook := filepath.Join(repo, ".husky", "post-checkout")
		os.MkdirAll(filepath.Dir(hook), 0o755)
		if err := os.Symlink(victim, hook); err != nil {
			t.Fatal(err)
		}
		res, err := Install(ctx, repo)
		if err == nil || res.Changed || !strings.Contains(err.Error(), hook) || !strings.Contains(err.Error(), victim) ||
			!strings.Contains(err.Error(), "replace the link") || !strings.Contains(err.Error(), `git-binky hook post-checkout "$@" || true`) {
			t.Errorf("install: %+v, %v; want a refusal naming the link, its target and what to do", res, err)
		}
		if b, _ := os.ReadFile(victim); string(b) != original {
			t.Errorf("the file outside the repository was changed:\n%s", b)
		}
		if fi, err := os.Lstat(hook); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link was replaced: %v %v", fi, err)
		}
	})
	t.Run("the hooks folder is a link", func(t *testing.T) {
		repo := gittest.NewRepo(t, t.TempDir(), "acme", nil)
		gittest.Git(t, repo, "config", "core.hooksPath", ".husky")
		outside := t.TempDir()
		if err := os.Symlink(outside, filepath.Join(repo, ".husky")); err != nil {
			t.Fatal(err)
		}
		if _, err := Install(ctx, repo); err == nil || !strings.Contains(err.Error(), outside) {
			t.Errorf("install: %v; want a refusal naming %s", err, outside)
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 0 {
			t.Errorf("install created %v outside the repository", entries)
		}
	})
}

// A hooks folder outside the repository that the user chose (a global
// core.hooksPath) is the user's: a hook there that links to a script in that
// folder is installed into.
func TestInstallWritesThroughALinkInAHooksFolderOutsideTheRepository(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	repo := gittest.NewRepo(t, t.TempDir(), "acme", nil)
	hooksDir := t.TempDir()
	gittest.Git(t, repo, "config", "core.hooksPath", hooksDir)
	script := filepath.Join(hooksDir, "common.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho common\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("common.sh", filepath.Join(hooksDir, "post-checkout")); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(script); !strings.Contains(string(b), beginMarker) {
		t.Errorf("the script after install:\n%s", b)
	}
}

func TestInstallRefusesAHookThatIsNotAShellScript(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	repo := gittest.NewRepo(t, t.TempDir(), "acme", nil)
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	original := "#!/usr/bin/env python3\nprint('hi')\n"
	os.WriteFile(hook, []byte(original), 0o755)
	_, err := Install(context.Background(), repo)
	if !errors.Is(err, ErrNotShell) || !strings.Contains(err.Error(), `git-binky hook post-checkout "$@" || true`) {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(hook); string(b) != original {
		t.Error("a non-shell hook was rewritten")
	}
}

// Following install's advice for a hook in another language (adding the
// call by hand) makes install and doctor content: install again succeeds,
// changes nothing, and Installed says so. (An attack found install
// failing with the same advice for good.)
func TestAHookThatCallsBinkyByHandIsInstalled(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	repo := gittest.NewRepo(t, t.TempDir(), "acme", nil)
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	original := "#!/usr/bin/env python3\nimport subprocess, sys\nsubprocess.call([\"git-binky\", \"hook\", \"post-checkout\"] + sys.argv[1:])\n"
	os.WriteFile(hook, []byte(original), 0o755)
	res, err := Install(context.Background(), repo)
	if err != nil || res.Changed {
		t.Fatalf("install over a hook that calls binky by hand: %+v, %v", res, err)
	}
	if ok, _ := Installed(context.Background(), repo); !ok {
		t.Error("Installed = false for a hook that calls binky")
	}
	if b, _ := os.ReadFile(hook); string(b) != original {
		t.Error("the hand-made hook was rewritten")
	}
}

func TestIsNullRef(t *testing.T) {
	for ref, want := range map[string]bool{
		strings.Repeat("0", 40): true, strings.Repeat("0", 64): true,
		strings.Repeat("0", 39) + "1": false, "": false, strings.Repeat("0", 41): false,
	} {
		if IsNullRef(ref) != want {
			t.Errorf("IsNullRef(%q) = %v", ref, !want)
		}
	}
}

// A block an earlier binky wrote (here: the first release's line) is
// replaced by the current one where it stands; the user's lines around it
// are kept byte for byte, and a second install changes nothing.
func TestInstallUpgradesAStaleBlock(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	repo := gittest.NewRepo(t, t.TempDir(), "acme", nil)
	ctx := context.Background()
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	before, after := "#!/bin/sh\necho before\n", "echo after\nexit 0\n"
	stale := beginMarker + " managed by 'git binky install'\ngit-binky hook post-checkout \"$@\" || true\n" + endMarker + "\n"
	if err := os.WriteFile(hook, []byte(before+stale+after), 0o700); err != nil {
		t.Fatal(err)
	}
	res, err := Install(ctx, repo)
	if err != nil || !res.Changed || !res.Upgraded {
		t.Fatalf("install over a stale block: %+v %v", res, err)
	}
	b, _ := os.ReadFile(hook)
	if want := before + block() + after; string(b) != want {
		t.Fatalf("hook after upgrade:\n%q\nwant\n%q", b, want)
	}
	if fi, _ := os.Stat(hook); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v, want the hook's own 0700", fi.Mode().Perm())
	}
	res, err = Install(ctx, repo)
	if err != nil || res.Changed || res.Upgraded {
		t.Errorf("install over the current block: %+v %v", res, err)
	}
	// Uninstall still finds the upgraded block and leaves the user's lines.
	if _, err := Uninstall(ctx, repo); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(hook); string(b) != before+after {
		t.Errorf("after uninstall: %q", b)
	}
}

func TestInstallRefusesABlockWithNoEndMarker(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	repo := gittest.NewRepo(t, t.TempDir(), "acme", nil)
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	broken := "#!/bin/sh\n" + beginMarker + "\ngit-binky hook post-checkout \"$@\"\necho mine\n"
	if err := os.WriteFile(hook, []byte(broken), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(context.Background(), repo); err == nil || !strings.Contains(err.Error(), "no end marker") {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(hook); string(b) != broken {
		t.Error("a hook binky could not parse was rewritten")
	}
}

// The hook file may be deleted (by another tool, or the user) while
// Uninstall works on it, at any point: Uninstall returns without an error
// and does not panic (it once stat'ed the file after reading it and used
// the result unchecked).
func TestUninstallWhenTheHookVanishes(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	repo := gittest.NewRepo(t, t.TempDir(), "acme", nil)
	ctx := context.Background()
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	content := []byte("#!/bin/sh\n" + block() + "echo mine\n")
	for i := 0; i < 100; i++ {
		if err := os.WriteFile(hook, content, 0o755); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); os.Remove(hook) }()
		if _, err := Uninstall(ctx, repo); err != nil {
			t.Fatalf("uninstall %d: %v", i, err)
		}
		<-done
	}
}

// The installed hook runs git-binky for a `git worktree add` by hand and a
// branch switch, and not for one binky's own up runs (which starts the
// world itself) or a file checkout: the shell line checks before starting
// anything.
func TestTheHookLeavesAWorktreeBinkyAddsToItsUp(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	repo := gittest.NewRepo(t, t.TempDir(), "acme", map[string]string{"README": "hello\n"})
	if _, err := Install(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	bin, calls := t.TempDir(), filepath.Join(t.TempDir(), "calls")
	fake := "#!/bin/sh\necho \"$@\" >> " + calls + "\n"
	if err := os.WriteFile(filepath.Join(bin, "git-binky"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	add := func(name string, env ...string) {
		cmd := exec.Command("git", "worktree", "add", "-q", "-b", name, filepath.Join(t.TempDir(), name))
		cmd.Dir, cmd.Env = repo, append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git worktree add: %v: %s", err, out)
		}
	}
	add("by-binky", "GIT_BINKY_ADDING=1")
	if b, err := os.ReadFile(calls); err == nil {
		t.Fatalf("the hook ran git-binky for a worktree binky added: %q", b)
	}
	add("by-hand")
	if b, err := os.ReadFile(calls); err != nil || !strings.HasPrefix(string(b), "hook post-checkout 0000") {
		t.Fatalf("the hook did not run git-binky for a worktree added by hand: %q %v", b, err)
	}

	// A file checkout has nothing for binky; a branch switch has.
	os.Remove(calls)
	gittest.WriteFiles(t, repo, map[string]string{"README": "changed\n"})
	gittest.Git(t, repo, "checkout", "--", "README")
	if b, err := os.ReadFile(calls); err == nil {
		t.Fatalf("the hook ran git-binky for a file checkout: %q", b)
	}
	gittest.Git(t, repo, "checkout", "-q", "-b", "other")
	if b, err := os.ReadFile(calls); err != nil || !strings.HasSuffix(strings.TrimSpace(string(b)), " 1") {
		t.Fatalf("the hook did not run git-binky for a branch switch: %q %v", b, err)
	}
}

func TestTheHookKeepsAStrictShellHookWorking(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	repo := gittest.NewRepo(t, t.TempDir(), "acme", nil)
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	marker := filepath.Join(t.TempDir(), "ran")
	if err := os.WriteFile(hook, []byte("#!/bin/sh -eu\necho ran >> "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(context.Background(), repo); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "git-binky"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd := exec.Command("git", "checkout", "-q", "-b", "other")
	cmd.Dir = repo
	cmd.Env = os.Environ()
	for _, e := range cmd.Env {
		if strings.HasPrefix(e, "GIT_BINKY_ADDING=") {
			t.Fatal("GIT_BINKY_ADDING is set in the test's environment")
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("a checkout with binky's block in a 'sh -eu' hook failed: %v\n%s", err, out)
	}
	if ran, _ := os.ReadFile(marker); string(ran) != "ran\n" {
		t.Errorf("the user's hook did not run: %q", ran)
	}
}

// git runs a config-defined hook as `sh -c '<command> "$@"' <command>
// <args>` (run-command's shell form with arguments): the command binky
// installs must run that way, and see git's arguments.
func TestTheConfigHookRunsAsGitRunsIt(t *testing.T) {
	bin, calls := t.TempDir(), filepath.Join(t.TempDir(), "calls")
	fake := "#!/bin/sh\necho \"$@\" >> " + calls + "\n"
	if err := os.WriteFile(filepath.Join(bin, "git-binky"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		argv := append([]string{"-c", configCommand + ` "$@"`, configCommand}, args...)
		cmd := exec.Command("sh", argv...)
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the config hook with %q: %v: %s", args, err, out)
		}
	}
	run("abc", "def", "0")
	if b, err := os.ReadFile(calls); err == nil {
		t.Fatalf("a file checkout ran git-binky: %q", b)
	}
	run(strings.Repeat("0", 40), "def", "1")
	if b, err := os.ReadFile(calls); err != nil || strings.TrimSpace(string(b)) != "hook post-checkout "+strings.Repeat("0", 40)+" def 1" {
		t.Fatalf("a new worktree's checkout: git-binky got %q (%v)", b, err)
	}
}

// Review: a hook the user linked to their dotfiles (.git/hooks, or a
// global core.hooksPath's, to a file anywhere) was refused as leading out
// of the repository; the repository chooses neither folder's links.
func TestInstallWritesThroughTheUsersOwnLinkToAnywhere(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	dotfiles := t.TempDir()
	script := filepath.Join(dotfiles, "post-checkout")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho mine\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	repo := gittest.NewRepo(t, t.TempDir(), "acme", nil)
	hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
	os.Remove(hook)
	if err := os.Symlink(script, hook); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(context.Background(), repo); err != nil {
		t.Fatalf("install through the user's own link: %v", err)
	}
	if b, _ := os.ReadFile(script); !strings.Contains(string(b), beginMarker) {
		t.Errorf("the dotfiles hook after install:\n%s", b)
	}
}

// Without git-binky on PATH the hook says so where a world would have
// started (a new worktree), and says nothing at a branch switch, where it
// said "no world started" at every one.
func TestTheHookWithoutBinkySpeaksOnlyForANewWorktree(t *testing.T) {
	empty := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		argv := append([]string{"-c", configCommand + ` "$@"`, configCommand}, args...)
		cmd := exec.Command("/bin/sh", argv...)
		cmd.Env = []string{"PATH=" + empty}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the hook with %q failed: %v: %s", args, err, out)
		}
		return string(out)
	}
	if out := run(strings.Repeat("0", 40), "def", "1"); !strings.Contains(out, "git-binky: not on PATH") {
		t.Errorf("a new worktree's checkout did not say git-binky is missing: %q", out)
	}
	if out := run(strings.Repeat("0", 64), "def", "1"); !strings.Contains(out, "git-binky: not on PATH") {
		t.Errorf("a new worktree's checkout in a SHA-256 repository did not say git-binky is missing: %q", out)
	}
	if out := run("a94a8fe5ccb19ba61c4c0873d391e987982fbbd3", "def", "1"); out != "" {
		t.Errorf("a branch switch spoke: %q", out)
	}
}
