package world

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/git-binky/git-binky/gitx/gittest"
)

const webConfig = "[project]\nname = \"acme\"\n[services.web]\ncmd = \"true\"\nurl = \"web\"\n"

func TestWorldsWhoseNamesFoldAlikeGetDistinctKeptLabels(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": webConfig})
	gittest.AddWorktree(t, repo, filepath.Join(tmp, "Foo_Bar"), "Foo_Bar")
	gittest.AddWorktree(t, repo, filepath.Join(tmp, "foo-bar"), "foo-bar")
	home := Home{Dir: filepath.Join(tmp, "home")}
	ctx := context.Background()
	env := func(name string) map[string]string {
		t.Helper()
		c, err := OpenCoordinates(ctx, home, repo, name)
		if err != nil {
			t.Fatal(err)
		}
		return c.Env
	}
	a, b := env("Foo_Bar"), env("foo-bar")
	if a["WEB_URL"] == b["WEB_URL"] {
		t.Fatalf("both advertise %s", a["WEB_URL"])
	}
	if !strings.HasPrefix(a["WEB_URL"], "http://web.foo-bar.acme.") || !strings.HasPrefix(b["WEB_URL"], "http://web.foo-bar-") {
		t.Errorf("the first world keeps the folded label, the second gets a hash: %s, %s", a["WEB_URL"], b["WEB_URL"])
	}
	if a["BINKY_WORKTREE"] != "Foo_Bar" || b["BINKY_WORKTREE"] != "foo-bar" {
		t.Errorf("BINKY_WORKTREE %q, %q: want the worktrees' own names", a["BINKY_WORKTREE"], b["BINKY_WORKTREE"])
	}
	if a2, b2 := env("Foo_Bar"), env("foo-bar"); a2["WEB_URL"] != a["WEB_URL"] || b2["WEB_URL"] != b["WEB_URL"] {
		t.Errorf("labels changed on the next look: %s %s → %s %s", a["WEB_URL"], b["WEB_URL"], a2["WEB_URL"], b2["WEB_URL"])
	}
	// `git binky curl` opens the world without ensuring it: it must still
	// reach this world's host, not the other's.
	w, err := Open(home, repo, "foo-bar")
	if err != nil {
		t.Fatal(err)
	}
	if h, err := w.ServiceHost("web"); err != nil || !strings.Contains(b["WEB_URL"], "//"+h+":") {
		t.Errorf("ServiceHost(web) of foo-bar = %q, %v; its URL is %s", h, err, b["WEB_URL"])
	}
}

// Two clones of one project (two repositories, one [project] name) both
// have a worktree named main: their hosts are <svc>.<label>.<project>, so
// the second must get another label, or the proxy routes neither. (An
// attack found both advertising one URL.)
func TestTwoClonesOfAProjectGetDistinctLabels(t *testing.T) {
	tmp := t.TempDir()
	one := gittest.NewRepo(t, filepath.Join(tmp, "one"), "shop", map[string]string{"binky.toml": webConfig})
	two := gittest.NewRepo(t, filepath.Join(tmp, "two"), "shop", map[string]string{"binky.toml": webConfig})
	home := Home{Dir: filepath.Join(tmp, "home")}
	ctx := context.Background()
	var urls []string
	for _, repo := range []string{one, two} {
		c, err := OpenCoordinates(ctx, home, repo, "")
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, c.Env["WEB_URL"])
	}
	if urls[0] == urls[1] {
		t.Fatalf("both clones advertise %s", urls[0])
	}
	if !strings.HasPrefix(urls[0], "http://web.shop.acme.") || !strings.HasPrefix(urls[1], "http://web.shop-") {
		t.Errorf("the first keeps the folded label, the second gets a hash: %s, %s", urls[0], urls[1])
	}
}

func TestASecondHomeDoesNotTakeAWorldAnotherHomeHolds(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": webConfig})
	wt := gittest.AddWorktree(t, repo, filepath.Join(tmp, "p1"), "p1")
	first, second := Home{Dir: filepath.Join(tmp, "h1")}, Home{Dir: filepath.Join(tmp, "h2")}
	ctx := context.Background()
	if _, err := OpenCoordinates(ctx, first, repo, "p1"); err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(repo, ".git", "worktrees", "p1", "binky", "world.json")
	before, err := os.ReadFile(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	_, err = OpenCoordinates(ctx, second, wt, "")
	if !errors.Is(err, ErrOtherHome) || !strings.Contains(err.Error(), "BINKY_HOME="+first.Dir) {
		t.Fatalf("second home: %v", err)
	}
	if after, _ := os.ReadFile(copyPath); string(after) != string(before) {
		t.Errorf("the second home rewrote the admin copy")
	}
	// Once the first home forgets the world, the worktree is free.
	w, err := Open(first, wt, "")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := w.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.DeleteRecord(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenCoordinates(ctx, second, wt, ""); err != nil {
		t.Errorf("after the first home removed the world: %v", err)
	}
}

func TestApprovedSourceIsWhatWasApproved(t *testing.T) {
	h := Home{Dir: t.TempDir()}
	src := []byte(webConfig)
	if _, err := h.ApprovedSource(TrustHash(src)); err == nil {
		t.Fatal("a config never approved has an approved source")
	}
	if err := h.Trust(src, "/x/binky.toml"); err != nil {
		t.Fatal(err)
	}
	got, err := h.ApprovedSource(TrustHash(src))
	if err != nil || string(got) != webConfig {
		t.Fatalf("ApprovedSource = %q, %v", got, err)
	}
	cfg, err := h.ApprovedConfig(TrustHash(src), "/x/binky.toml")
	if err != nil || cfg.Services["web"].Cmd != "true" {
		t.Fatalf("ApprovedConfig: %+v, %v", cfg, err)
	}
}

// Approving a config approves its env files as they are; a change to one
// (a branch's) is unapproved until approved again, and each approved set
// stays approved. An env file that is no regular file (a committed link
// to /dev/zero) is never read, here or when processes start.
func TestApprovalCoversTheEnvFilesAsTheyAre(t *testing.T) {
	dir := t.TempDir()
	home := Home{Dir: filepath.Join(dir, "home")}
	src := []byte("[project]\nname = \"acme\"\nenv_file = \".env\"\n[services.web]\ncmd = \"true\"\nurl = \"web\"\nenv_file = \"web.env\"\n")
	path := filepath.Join(dir, ConfigFile)
	write := func(name, content string) {
		t.Helper()
		os.Remove(filepath.Join(dir, name))
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(".env", "LEVEL=info\n")
	write("web.env", "A=1\n")
	if home.TrustedHere(src, path) {
		t.Fatal("trusted before any approval")
	}
	if err := home.Trust(src, path); err != nil {
		t.Fatal(err)
	}
	if !home.TrustedHere(src, path) {
		t.Fatal("not trusted right after approval")
	}
	write("web.env", "A=1\nLD_PRELOAD=/tmp/evil.so\n")
	if home.TrustedHere(src, path) {
		t.Error("a service's env file changed, and the config is still trusted")
	}
	if err := home.Trust(src, path); err != nil {
		t.Fatal(err)
	}
	write("web.env", "A=1\n")
	if !home.TrustedHere(src, path) {
		t.Error("the first approved set is no longer approved after a second was")
	}
	os.Remove(filepath.Join(dir, ".env"))
	if home.TrustedHere(src, path) {
		t.Error("the project's env file is gone, and the config is still trusted")
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, ".env")); err != nil {
		t.Fatal(err)
	}
	if home.TrustedHere(src, path) {
		t.Error("an env file linking to /dev/zero is trusted")
	}
	if _, err := ReadEnvFile(filepath.Join(dir, ".env")); err == nil {
		t.Error("ReadEnvFile read /dev/zero")
	}
}

// The hook said "binky.toml (or an env_file it names) differs" when a new
// worktree lacked the uncommitted .env its approval saw, and users read
// an unchanged binky.toml for what had changed. It names the file.
func TestUntrustedSaysWhichFileIsNotTheApprovedOne(t *testing.T) {
	dir := t.TempDir()
	home := Home{Dir: filepath.Join(dir, "home")}
	src := []byte("[project]\nname = \"acme\"\nenv_file = \".env\"\n[services.web]\ncmd = \"true\"\nurl = \"web\"\nenv_file = \"web.env\"\n")
	path := filepath.Join(dir, ConfigFile)
	os.WriteFile(filepath.Join(dir, ".env"), []byte("LEVEL=info\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "web.env"), []byte("A=1\n"), 0o644)
	if got := home.Untrusted(src, path); !strings.Contains(got, "binky.toml differs") {
		t.Errorf("never approved: %q", got)
	}
	if err := home.Trust(src, path); err != nil {
		t.Fatal(err)
	}
	if got := home.Untrusted(append(src, '#'), path); !strings.Contains(got, "binky.toml differs") {
		t.Errorf("binky.toml changed: %q", got)
	}
	os.Remove(filepath.Join(dir, ".env"))
	if got := home.Untrusted(src, path); !strings.Contains(got, "env file .env") || !strings.Contains(got, "not there") || strings.Contains(got, "binky.toml differs") {
		t.Errorf(".env absent: %q", got)
	}
	os.WriteFile(filepath.Join(dir, ".env"), []byte("LEVEL=info\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "web.env"), []byte("A=2\n"), 0o644)
	if got := home.Untrusted(src, path); !strings.Contains(got, "env file web.env") || !strings.Contains(got, "differs") || strings.Contains(got, "file .env") {
		t.Errorf("web.env changed: %q", got)
	}
}

// An up reads the env files once: the bytes its trust check judged are
// the ones its processes get, even if a checkout changes the files while
// it waits for its turn (a review's attack ran a branch's PATH that way).
func TestAnUpsProcessesGetTheEnvFilesItsTrustCheckRead(t *testing.T) {
	tmp := t.TempDir()
	cfg := "[project]\nname = \"acme\"\nenv_file = \".env\"\n[services.web]\ncmd = \"true\"\nurl = \"web\"\n"
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": cfg, ".env": "LEVEL=info\n"})
	home := Home{Dir: filepath.Join(tmp, "home")}
	w, err := Open(home, repo, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := home.Trust(w.Config.Source, w.Config.Path); err != nil {
		t.Fatal(err)
	}
	w.PinEnvFiles()
	if !home.TrustedWorld(w) {
		t.Fatal("the approved env file, pinned, is not trusted")
	}
	os.WriteFile(filepath.Join(repo, ".env"), []byte("LEVEL=info\nPATH=./evilbin:/usr/bin\n"), 0o644)
	env, err := w.ProcessEnv(&Record{Ports: map[string]int{}}, []string{"PATH=/usr/bin:/bin"}, "web")
	if err != nil {
		t.Fatal(err)
	}
	if env["PATH"] != "/usr/bin:/bin" || env["LEVEL"] != "info" {
		t.Errorf("a process got PATH %q, LEVEL %q: the env file as changed after the check", env["PATH"], env["LEVEL"])
	}
	// A World that pins now judges the changed file.
	again, _ := Open(home, repo, "")
	again.PinEnvFiles()
	if home.TrustedWorld(again) {
		t.Error("the changed env file, pinned afresh, is trusted")
	}
}

// Two homes taking one new worktree at the same moment both saw no owner
// and both started it (each with its own ports and database). The first
// save is made under a lock of the worktree's own: one home takes it, the
// other is told whose it is.
func TestTwoHomesTakingOneWorktreeAtOnceGiveItOneOwner(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": webConfig})
	ctx := context.Background()
	for round := range 20 {
		name := fmt.Sprintf("r%d", round)
		wt := gittest.AddWorktree(t, repo, filepath.Join(tmp, name), name)
		homes := []Home{{Dir: filepath.Join(tmp, name+"-h1")}, {Dir: filepath.Join(tmp, name+"-h2")}}
		errs := make([]error, len(homes))
		var wg sync.WaitGroup
		for i, h := range homes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w, err := Open(h, wt, "")
				if err == nil {
					_, err = w.Ensure(ctx)
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		took := 0
		for i, err := range errs {
			switch {
			case err == nil:
				took++
			case !errors.Is(err, ErrOtherHome):
				t.Fatalf("round %d, home %d: %v", round, i+1, err)
			}
		}
		if took != 1 {
			t.Fatalf("round %d: %d homes took the worktree, want one (errors: %v)", round, took, errs)
		}
	}
}

// The signs that a world's admin folder is now a new worktree's: no copy
// of its record there, and the folder made after the world. A move (git
// rewrites gitdir) with the copy deleted is not one, and the next save
// puts the copy back; a folder whose clock runs ahead still gets its
// copy at the world's first save; a folder made again under the name
// gets no copy from the old world's saves, and reads as replaced.
func TestAnAdminFolderIsReplacedOnlyWhenGitMadeItAgain(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": webConfig})
	ctx := context.Background()
	home := Home{Dir: filepath.Join(tmp, "home")}
	open := func(name string) (*World, *Record) {
		t.Helper()
		wt := gittest.AddWorktree(t, repo, filepath.Join(tmp, name), name)
		w, err := Open(home, wt, "")
		if err != nil {
			t.Fatal(err)
		}
		rec, err := w.Ensure(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return w, rec
	}
	copyOf := func(rec *Record) string { return filepath.Join(StateDir(rec.AdminDir), "world.json") }
	replaced := func(rec *Record) bool {
		t.Helper()
		r, err := home.AdminFolderReplaced(ctx, rec.ID)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// Moved, then the copy deleted.
	_, moved := open("moved")
	future := time.Now().Add(time.Minute)
	os.Chtimes(filepath.Join(moved.AdminDir, "gitdir"), future, future)
	os.Remove(copyOf(moved))
	if replaced(moved) {
		t.Error("a moved world whose copy was deleted reads as replaced")
	}
	if err := home.SaveRecord(moved); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(copyOf(moved)); err != nil {
		t.Errorf("the next save did not put the copy back: %v", err)
	}

	// The folder's clock ahead of ours when the world is made.
	wt := gittest.AddWorktree(t, repo, filepath.Join(tmp, "skew"), "skew")
	admin := strings.TrimSpace(gittest.Git(t, wt, "rev-parse", "--absolute-git-dir"))
	os.Chtimes(filepath.Join(admin, "commondir"), future, future)
	w, err := Open(home, wt, "")
	if err != nil {
		t.Fatal(err)
	}
	skew, err := w.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(copyOf(skew)); err != nil || replaced(skew) {
		t.Errorf("a world made in a folder whose clock runs ahead: copy %v, replaced %v", err, replaced(skew))
	}

	// Removed and made again under the name.
	_, old := open("again")
	gittest.Git(t, repo, "worktree", "remove", "--force", filepath.Join(tmp, "again"))
	gittest.AddWorktree(t, repo, filepath.Join(tmp, "again"), "again-new")
	if err := home.SaveRecord(old); err != nil { // the old world's processes, adopted, saving
		t.Fatal(err)
	}
	if _, err := os.Stat(copyOf(old)); !os.IsNotExist(err) {
		t.Errorf("the old world wrote its copy into the new worktree's folder: %v", err)
	}
	if !replaced(old) {
		t.Error("a folder git made again under the name does not read as replaced")
	}
}

// Approval went by content alone: approving a binky.toml in one
// repository approved a stranger's repository holding the same bytes,
// whose ./dev.sh then ran on `git worktree add`. An approval counts in
// the repositories it was given in; its worktrees share it.
func TestAnApprovalCountsInItsOwnRepositoryOnly(t *testing.T) {
	tmp := t.TempDir()
	mine := gittest.NewRepo(t, tmp, "mine", map[string]string{"binky.toml": webConfig})
	theirs := gittest.NewRepo(t, tmp, "theirs", map[string]string{"binky.toml": webConfig})
	wt := gittest.AddWorktree(t, mine, filepath.Join(tmp, "mine-feat"), "feat")
	home := Home{Dir: filepath.Join(tmp, "home")}
	src := []byte(webConfig)
	if err := home.Trust(src, filepath.Join(mine, ConfigFile)); err != nil {
		t.Fatal(err)
	}
	if !home.TrustedHere(src, filepath.Join(wt, ConfigFile)) {
		t.Error("a worktree of the repository it was approved in is not approved")
	}
	if home.TrustedHere(src, filepath.Join(theirs, ConfigFile)) {
		t.Fatal("the same bytes in another repository are approved")
	}
	if err := home.Trust(src, filepath.Join(theirs, ConfigFile)); err != nil {
		t.Fatal(err)
	}
	if !home.TrustedHere(src, filepath.Join(theirs, ConfigFile)) || !home.TrustedHere(src, filepath.Join(mine, ConfigFile)) {
		t.Error("approving it in a second repository should approve it there and keep the first")
	}

	// Another repository cloned where an approved one was (moved away)
	// is not it: the id binky keeps in the repository says so.
	if err := os.Rename(theirs, theirs+"-old"); err != nil {
		t.Fatal(err)
	}
	clone := gittest.NewRepo(t, tmp, "theirs", map[string]string{"binky.toml": webConfig})
	if clone != theirs {
		t.Fatalf("the clone is at %s, not %s", clone, theirs)
	}
	if home.TrustedHere(src, filepath.Join(clone, ConfigFile)) {
		t.Error("a repository cloned where an approved one was inherits its approval")
	}

	// An approval of an older binky, with no list of repositories, counts
	// in the repository it was found in.
	file := filepath.Join(home.TrustDir(), TrustHash(src))
	legacy := fmt.Sprintf(`{"path": %q, "approved": "2026-01-01T00:00:00Z", "source": %q}`, filepath.Join(mine, ConfigFile), webConfig)
	if err := os.WriteFile(file, []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	if !home.TrustedHere(src, filepath.Join(wt, ConfigFile)) || home.TrustedHere(src, filepath.Join(theirs, ConfigFile)) {
		t.Error("an old approval should count in its own repository only")
	}
}

// Review: approvals by a repository's folder alone (before it had an id)
// stopped counting once any approval there wrote the id: every other
// branch's file then started untrusted.
func TestApprovalsByFolderStillCountOnceTheRepositoryHasAnId(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": webConfig})
	home := Home{Dir: filepath.Join(tmp, "home")}
	common, err := filepath.EvalSymlinks(filepath.Join(repo, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	src := []byte(webConfig)
	if err := os.MkdirAll(home.TrustDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	byFolder := fmt.Sprintf(`{"path": %q, "approved": "2026-12-01T00:00:00Z", "source": %q, "repos": [%q]}`, filepath.Join(repo, ConfigFile), webConfig, common)
	if err := os.WriteFile(filepath.Join(home.TrustDir(), TrustHash(src)), []byte(byFolder), 0o600); err != nil {
		t.Fatal(err)
	}
	other := []byte(webConfig + "# another branch's\n")
	if err := home.Trust(other, filepath.Join(repo, ConfigFile)); err != nil {
		t.Fatal(err)
	}
	if !home.TrustedHere(src, filepath.Join(repo, ConfigFile)) {
		t.Error("the approval by folder stopped counting once the repository got its id")
	}
	// Attack: the approvals by folder were kept as they were, so another
	// repository cloned into the folder (no id) still matched them.
	if err := os.Rename(repo, repo+"-moved"); err != nil {
		t.Fatal(err)
	}
	clone := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": webConfig})
	if home.TrustedHere(src, filepath.Join(clone, ConfigFile)) {
		t.Error("a repository cloned into the folder matches the approvals made by the folder before the id")
	}
}

// Review: TrustedWorld judged the repository by the config's path, which
// after a move (a config rebuilt from the record) is where the worktree
// was: adopted services were then refused their approved config.
func TestAWorldsApprovalIsJudgedByItsRepositoryNotItsConfigsOldPath(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": webConfig})
	home := Home{Dir: filepath.Join(tmp, "home")}
	w, err := Open(home, repo, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := home.Trust(w.Config.Source, w.Config.Path); err != nil {
		t.Fatal(err)
	}
	w.Config.Path = filepath.Join(tmp, "moved-away", ConfigFile)
	if !home.TrustedWorld(w) {
		t.Error("an approved world is refused for its config's old path")
	}
}

// Every up approves what it runs; an approval that already holds (same
// config, repositories and env files) is not written again. One that
// holds in another repository too is.
func TestAnApprovalThatHoldsIsNotWrittenAgain(t *testing.T) {
	tmp := t.TempDir()
	one := gittest.NewRepo(t, filepath.Join(tmp, "one"), "shop", map[string]string{"binky.toml": webConfig})
	two := gittest.NewRepo(t, filepath.Join(tmp, "two"), "shop", map[string]string{"binky.toml": webConfig})
	h := Home{Dir: filepath.Join(tmp, "home")}
	file := filepath.Join(h.TrustDir(), TrustHash([]byte(webConfig)))
	approve := func(repo string) os.FileInfo {
		t.Helper()
		if err := h.Trust([]byte(webConfig), filepath.Join(repo, ConfigFile)); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	first := approve(one)
	if again := approve(one); !os.SameFile(first, again) {
		t.Error("an approval that held was written again")
	}
	if other := approve(two); os.SameFile(first, other) {
		t.Error("approving in another repository did not record it")
	}
	if e, err := readTrustEntry(file); err != nil || len(e.Repos) != 2 {
		t.Errorf("approved in %v (%v), want both repositories", e.Repos, err)
	}
}

// The variables that name a server's admin credentials (admin_url's and
// options' ${env.X}, as the README has them written) stay out of every
// process of the world, from the caller or an env file: inherited, world
// A's worker used RABBIT_ADMIN to take world B's messages. A service that
// reads one itself keeps it; binky itself, naming the server, reads them.
func TestAdminVariablesStayOutOfTheWorldsProcesses(t *testing.T) {
	tmp := t.TempDir()
	cfg := `[project]
name = "acme"
env_file = ".env"
[services.db]
adapter = "postgres"
admin_url = "${env.PG_ADMIN}"
migrate = "psql \"$DATABASE_URL\" -f schema.sql"
[services.store]
adapter = "s3"
admin_url = "${env.S3_ADMIN:-http://127.0.0.1:9000}"
options = { region = "${env.S3_REGION}" }
[services.api]
cmd = "true"
url = "api"
[services.tool]
cmd = "true"
env = { ADMIN = "${env.PG_ADMIN}" }
`
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": cfg, ".env": "S3_ADMIN=s3://root:pw@127.0.0.1:9000\n"})
	w, err := Open(Home{Dir: filepath.Join(tmp, "home")}, repo, "")
	if err != nil {
		t.Fatal(err)
	}
	rec := &Record{Ports: map[string]int{}}
	base := []string{"PATH=/usr/bin:/bin", "PG_ADMIN=postgres://postgres:pw@127.0.0.1:5432", "S3_REGION=eu", "OTHER=kept"}
	for _, svc := range []string{"api", "db"} {
		env, err := w.ProcessEnv(rec, base, svc)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"PG_ADMIN", "S3_ADMIN", "S3_REGION"} {
			if v, ok := env[name]; ok {
				t.Errorf("%s's process gets %s=%s", svc, name, v)
			}
		}
		if env["OTHER"] != "kept" || env["PATH"] != "/usr/bin:/bin" {
			t.Errorf("%s's process lost the caller's other variables: %v", svc, env)
		}
	}
	if env, _ := w.ProcessEnv(rec, base, "tool"); env["PG_ADMIN"] == "" || env["ADMIN"] != "postgres://postgres:pw@127.0.0.1:5432" {
		t.Errorf("a service that reads PG_ADMIN itself lost it: %v", env)
	}
	if env, _ := w.ProcessEnv(rec, base, ""); env["PG_ADMIN"] == "" || env["S3_ADMIN"] == "" {
		t.Errorf("binky's own view (service \"\"), which names the servers, lost them: %v", env)
	}
}
