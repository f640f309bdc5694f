//go:build unix

package world

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/gitx/gittest"
)

// A branch can commit binky.toml as a link to /dev/zero, or make it a pipe:
// read as a file, either would exhaust the daemon's memory or hang the
// hook and every prompt's env. Both are refused at once, as is a file far
// past any real binky.toml; a link to a plain file is read.
func TestOnlyAPlainBinkyTomlOfSaneSizeIsRead(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "real.toml")
	if err := os.WriteFile(plain, []byte("[project]\nname = \"acme\"\n[services.api]\ncmd = \"true\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.toml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	pipe := filepath.Join(dir, "pipe.toml")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.toml")
	if err := os.WriteFile(huge, []byte("# "+strings.Repeat("x", MaxConfigSize)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "folder.toml")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(dir, "linked.toml")
	if err := os.Symlink(plain, linked); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{zero: "not a regular file", pipe: "not a regular file", folder: "not a regular file", huge: "over binky's size limit"} {
		start := time.Now()
		_, err := ReadConfigFile(path)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", filepath.Base(path), err, want)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: refused after %s", filepath.Base(path), took)
		}
	}
	for _, path := range []string{zero, pipe, huge} {
		if _, err := LoadConfig(path); err == nil {
			t.Errorf("LoadConfig(%s) loaded it", filepath.Base(path))
		}
	}
	cfg, err := LoadConfig(linked)
	if err != nil || cfg.Project.Name != "acme" {
		t.Fatalf("a link to a plain binky.toml: %+v, %v", cfg, err)
	}
}

// A pipe where env's snapshot belongs (left by anyone who can write the
// home) would block every env, and so every prompt, for good: it is not
// read, and env prints from the full path.
func TestAPipeForASnapshotIsNotWaitedOn(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": webConfig})
	home := Home{Dir: filepath.Join(tmp, "home")}
	want := settle(t, home, repo, "")
	matches, _ := filepath.Glob(filepath.Join(home.WorldsDir(), "*.env"))
	if len(matches) != 1 {
		t.Fatalf("snapshots: %v", matches)
	}
	os.Remove(matches[0])
	if err := syscall.Mkfifo(matches[0], 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if out, hit := envOnce(t, home, repo, ""); hit || out != want {
			t.Errorf("env with a pipe for its snapshot: from it %v, output\n%s\nwant\n%s", hit, out, want)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("env waited on the pipe")
	}
}

// golden_key's files are a branch's too: a link to /dev/zero among them
// fails the key at once rather than being read for ever.
func TestAGoldenKeyFileThatIsADeviceIsRefused(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "migrations"), 0o755)
	os.WriteFile(filepath.Join(dir, "migrations", "001.sql"), []byte("CREATE TABLE a (id int);"), 0o644)
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "migrations", "002.sql")); err != nil {
		t.Fatal(err)
	}
	cfg, _ := ParseConfig("binky.toml", []byte("[services.db]\nadapter = \"postgres\"\nclone_from = \"golden\"\ngolden_key = [\"migrations/**\"]\n"))
	w := &World{Config: cfg, Worktree: &gitx.Worktree{Path: dir}}
	start := time.Now()
	if _, err := w.GoldenKeyHash("db"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("golden key over a link to /dev/zero: %v", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("refused after %s", took)
	}
}
