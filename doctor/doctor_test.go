package doctor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/client"
	"github.com/git-binky/git-binky/gitx/gittest"
	"github.com/git-binky/git-binky/hooks"
	"github.com/git-binky/git-binky/world"
)

// finding returns the first finding of check at level, if any.
func finding(fs []Finding, check, level string) (Finding, bool) {
	for _, f := range fs {
		if f.Check == check && f.Level == level {
			return f, true
		}
	}
	return Finding{}, false
}

func newClient(t *testing.T) *client.Client {
	t.Helper()
	t.Setenv("BINKY_HOOKS", "file")
	return client.New(world.Home{Dir: t.TempDir()}, "test")
}

// doctor only reads: with no daemon running it says so, and starts none.
func TestNoDaemonIsAProblemAndDoctorStartsNone(t *testing.T) {
	c := newClient(t)
	fs := Run(context.Background(), c, t.TempDir())
	f, ok := finding(fs, "daemon", Problem)
	if !ok || !strings.Contains(f.Detail, "not running") || f.Fix == "" {
		t.Fatalf("daemon finding %+v in %+v", f, fs)
	}
	if c.Running(context.Background()) {
		t.Error("doctor started a daemon")
	}
	if _, ok := finding(fs, "git", OK); !ok {
		t.Errorf("no git finding: %+v", fs)
	}
}

func TestARepositoryWithoutTheHookIsAProblemUntilInstall(t *testing.T) {
	c := newClient(t)
	repo := gittest.NewRepo(t, t.TempDir(), "acme", map[string]string{"binky.toml": "[project]\nname = \"acme\"\n[services.api]\ncmd = \"true\"\n"})
	ctx := context.Background()
	fs := Run(ctx, c, repo)
	for _, check := range []string{"hook", "watcher"} {
		if f, ok := finding(fs, check, Problem); !ok || f.Fix != "git binky install" {
			t.Errorf("%s: %+v, want a problem fixed by git binky install", check, f)
		}
	}
	if _, err := hooks.Setup(ctx, c.Home, repo, nil); err != nil {
		t.Fatal(err)
	}
	fs = Run(ctx, c, repo)
	for _, check := range []string{"hook", "watcher"} {
		if _, ok := finding(fs, check, OK); !ok {
			t.Errorf("%s after install: %+v", check, fs)
		}
	}
}

// A world record whose worktree git removed behind binky's back (no
// watcher) is reported with where to delete it.
func TestARecordWithoutItsWorktreeIsAProblem(t *testing.T) {
	c := newClient(t)
	if err := c.Home.Ensure(); err != nil {
		t.Fatal(err)
	}
	rec := &world.Record{ID: "gone1", Project: "acme", Worktree: "feat", AdminDir: filepath.Join(t.TempDir(), "no-such-admin-dir")}
	if err := c.Home.SaveRecord(rec); err != nil {
		t.Fatal(err)
	}
	f, ok := finding(Run(context.Background(), c, t.TempDir()), "records", Problem)
	if !ok || !strings.Contains(f.Detail, "acme/feat") || !strings.Contains(f.Fix, c.Home.WorldsDir()) {
		t.Errorf("records finding %+v", f)
	}
}

func TestAMissingDaemonBinaryIsAProblem(t *testing.T) {
	c := newClient(t)
	t.Setenv("BINKY_DAEMON", "")
	t.Setenv("PATH", t.TempDir()+":/usr/bin:/bin")
	if f, ok := finding(Run(context.Background(), c, t.TempDir()), "binkyd", Problem); !ok || !strings.Contains(f.Fix, "make install") {
		t.Errorf("binkyd finding %+v", f)
	}
}

func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		addrs []string
		want  bool
	}{
		{[]string{"127.0.0.1", "::1"}, true},
		{[]string{"127.0.0.1", "192.168.1.4"}, false},
		{nil, false},
		{[]string{"not-an-ip"}, false},
	} {
		if got := loopback(tc.addrs); got != tc.want {
			t.Errorf("loopback(%v) = %v", tc.addrs, got)
		}
	}
}

// As root, a deleted home leaves its shared servers' files under
// /var/lib/git-binky: doctor names the folder, the home it was, and how
// to remove it. A live home's folder is not mentioned.
func TestADeletedHomesServerFilesAreNamedWithHowToRemoveThem(t *testing.T) {
	c := newClient(t)
	root := t.TempDir()
	rootDataDir = root
	t.Cleanup(func() { rootDataDir = world.RootDataDir })
	gone := world.Home{Dir: filepath.Join(t.TempDir(), "gone")}
	for i, h := range []world.Home{c.Home, gone} {
		if err := h.Ensure(); err != nil {
			t.Fatal(err)
		}
		folder := filepath.Join(root, fmt.Sprintf("0000000000%02x", 0xfe+i))
		if err := os.MkdirAll(filepath.Join(folder, "mysql"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := h.WriteRootOwner(folder); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(gone.Dir); err != nil {
		t.Fatal(err)
	}
	var files []Finding
	for _, f := range Run(context.Background(), c, t.TempDir()) {
		if f.Check == "server files" {
			files = append(files, f)
		}
	}
	folder := filepath.Join(root, "0000000000ff")
	if len(files) != 1 || files[0].Level != Warning || !strings.Contains(files[0].Detail, folder) ||
		!strings.Contains(files[0].Detail, "mysql") || !strings.Contains(files[0].Detail, gone.Dir) || !strings.HasSuffix(files[0].Fix, ": rm -rf "+folder) {
		t.Errorf("server files findings %+v, want one warning naming %s, its home and its rm -rf", files, folder)
	}
}

// git runs `git binky` as the git-binky it finds; doctor says when there is
// none, and when the one git finds runs another binky than this one.
func TestDoctorSaysWhatGitRunsForGitBinky(t *testing.T) {
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Skip("skipped: no git on PATH")
	}
	tmp := t.TempDir()
	check := func(path string) Finding {
		t.Helper()
		t.Setenv("PATH", path+string(os.PathListSeparator)+filepath.Dir(gitPath))
		var got []Finding
		gitBinky(context.Background(), tmp, func(c, level, detail, fix string) {
			got = append(got, Finding{Check: c, Level: level, Detail: detail, Fix: fix})
		})
		if len(got) != 1 {
			t.Fatalf("findings: %+v", got)
		}
		return got[0]
	}
	elsewhere := filepath.Join(tmp, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if f := check(elsewhere); f.Level != Problem || !strings.Contains(f.Fix, "make install") {
		t.Errorf("no git-binky anywhere: %+v", f)
	}
	if err := os.WriteFile(filepath.Join(elsewhere, "git-binky"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if f := check(elsewhere); f.Level != Warning || !strings.Contains(f.Detail, "another build") {
		t.Errorf("a git-binky not beside this binky: %+v", f)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	beside := filepath.Join(filepath.Dir(self), "git-binky")
	if err := os.WriteFile(beside, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Skip("skipped: cannot write beside the test binary:", err)
	}
	defer os.Remove(beside)
	if f := check(filepath.Dir(self)); f.Level != OK || f.Detail != beside {
		t.Errorf("git-binky beside this binky: %+v", f)
	}
}

// Asked through `git binky mcp`, doctor runs in binkyd: the launcher runs
// this build when the binky beside it would run this binkyd, wherever
// binky finds it ($BINKY_DAEMON, beside itself, PATH).
func TestTheLauncherRunsThisBuildWhenItsBinkyFindsThisDaemon(t *testing.T) {
	tmp := t.TempDir()
	bin, other := filepath.Join(tmp, "bin"), filepath.Join(tmp, "other")
	for _, d := range []string{bin, other} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) string {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write(filepath.Join(bin, "binky"))
	daemonElsewhere := write(filepath.Join(other, "binkyd"))
	t.Setenv("PATH", filepath.Join(tmp, "empty"))

	t.Setenv("BINKY_DAEMON", daemonElsewhere)
	if !runsThis(bin, daemonElsewhere) {
		t.Error("a binkyd that BINKY_DAEMON names is taken for another build")
	}
	t.Setenv("BINKY_DAEMON", "")
	if runsThis(bin, daemonElsewhere) {
		t.Error("a binkyd that the launcher's binky cannot find is taken for this build")
	}
	besideLauncher := write(filepath.Join(bin, "binkyd"))
	if runsThis(bin, daemonElsewhere) {
		t.Error("the launcher's binky runs the binkyd beside it, not this one")
	}
	if !runsThis(bin, besideLauncher) {
		t.Error("the binkyd beside the launcher is taken for another build")
	}
	if !runsThis(bin, filepath.Join(bin, "binky")) || runsThis(bin, filepath.Join(other, "binky")) {
		t.Error("a binky is this build only beside the launcher")
	}
}

// doctor warned of every server binky could not run, minio for a project
// with no s3: inside a project, only the kinds it has binky run are warned
// of; outside one, every kind.
func TestOnlyTheServersAProjectNeedsAreWarnedOf(t *testing.T) {
	c := newClient(t)
	plain := gittest.NewRepo(t, t.TempDir(), "acme", map[string]string{"binky.toml": "[project]\nname = \"acme\"\n[services.db]\nadapter = \"postgres\"\n"})
	buckets := gittest.NewRepo(t, t.TempDir(), "files", map[string]string{"binky.toml": "[project]\nname = \"files\"\n[services.files]\nadapter = \"s3\"\n"})
	// A machine with git and no minio: PATH holds git alone, and neither
	// make test's server folder nor the cache is looked in.
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(git, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	t.Setenv("BINKY_SERVER_BIN", "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if k, _ := adapters.Lookup("s3"); k.Server.Installed() {
		t.Skipf("minio is installed where binky looks beside PATH (%s): the test needs a machine without it", adapters.FindServerBinary("minio"))
	}
	warned := func(fs []Finding) bool {
		for _, f := range fs {
			if f.Check == "server" && f.Level == Warning && strings.HasPrefix(f.Detail, "s3:") {
				return true
			}
		}
		return false
	}
	if !warned(Run(context.Background(), c, t.TempDir())) {
		t.Error("outside a project, minio's absence is not warned of")
	}
	if warned(Run(context.Background(), c, plain)) {
		t.Error("a project with no s3 service is warned that minio is missing")
	}
	if !warned(Run(context.Background(), c, buckets)) {
		t.Error("a project with an s3 service is not warned that binky cannot run its server")
	}
}

// doctor called any git fine, and said 2.25 would do: binky needs 2.31.
func TestDoctorCallsAGitOlderThan231AProblem(t *testing.T) {
	for v, older := range map[string]bool{
		"git version 2.39.2":                 false,
		"git version 2.31.0":                 false,
		"git version 2.30.9":                 true,
		"git version 2.25.1":                 true,
		"git version 1.9.5":                  true,
		"git version 3.0.0":                  false,
		"git version 2.45.1.windows.1":       false,
		"git version 2.37.1 (Apple Git-137)": false,
		"not a version":                      false,
	} {
		if got := gitOlder(v, 2, 31); got != older {
			t.Errorf("gitOlder(%q) = %v, want %v", v, got, older)
		}
	}
}

// Ports leased before [ports] was narrowed are not counted in the new
// range: doctor said "-110 of 3 ports ... are free".
func TestPortsLeasedOutsideANarrowedRangeAreSaidApart(t *testing.T) {
	c := newClient(t)
	if err := c.Home.Ensure(); err != nil {
		t.Fatal(err)
	}
	s, _ := c.Home.LoadSettings()
	s.Ports.Min, s.Ports.Max = 23000, 23199
	a := c.Home.NewAllocator(s)
	a.Bindable = func(int) bool { return true }
	rec := &world.Record{ID: "w1", Ports: map[string]int{}}
	var keys []string
	for i := range 6 {
		keys = append(keys, fmt.Sprint("svc", i))
	}
	if _, err := a.Ensure(context.Background(), rec, keys); err != nil {
		t.Fatal(err)
	}
	if err := c.Home.SaveRecord(rec); err != nil {
		t.Fatal(err)
	}
	s.Ports.Min, s.Ports.Max = 23300, 23302
	if err := c.Home.SaveSettings(s); err != nil {
		t.Fatal(err)
	}
	fs := Run(context.Background(), c, t.TempDir())
	var details []string
	for _, f := range fs {
		if f.Check == "ports" {
			details = append(details, f.Detail)
		}
	}
	got := strings.Join(details, "\n")
	if !strings.Contains(got, "3 of 3 ports in 23300-23302 are free") || !strings.Contains(got, "6 ports held outside 23300-23302") {
		t.Errorf("ports findings:\n%s", got)
	}
}

// From a folder that is gone (a removed worktree), git's version is still
// found: doctor said git failed, and to install it.
func TestDoctorFromAFolderThatIsGoneStillFindsGit(t *testing.T) {
	c := newClient(t)
	gone := filepath.Join(t.TempDir(), "removed-worktree")
	fs := Run(context.Background(), c, gone)
	if f, ok := finding(fs, "git", Problem); ok {
		t.Errorf("git finding from a folder that is gone: %+v", f)
	}
	if _, ok := finding(fs, "git", OK); !ok {
		t.Errorf("no git finding: %+v", fs)
	}
}
