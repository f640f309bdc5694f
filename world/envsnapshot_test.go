package world

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/git-binky/git-binky/envsnap"
	"github.com/git-binky/git-binky/gitx/gittest"
)

// envOnce is what env does: the snapshot's output when it matches, or the
// full path, saved.
func envOnce(t *testing.T, home Home, dir, name string) (out string, fromSnapshot bool) {
	t.Helper()
	s := OpenEnvSnapshot(home, dir, name)
	if b, ok := s.Output("dotenv"); ok {
		return string(b), true
	}
	out = fullEnv(t, home, dir, name)
	s.Save(map[string][]byte{"dotenv": []byte(out)})
	return out, false
}

// fullEnv is env's full path: coordinates from binky.toml, the record and
// the leases.
func fullEnv(t *testing.T, home Home, dir, name string) string {
	t.Helper()
	c, err := OpenCoordinates(context.Background(), home, dir, name)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, kv := range SortedEnv(c.Env) {
		b.WriteString(kv + "\n")
	}
	return b.String()
}

// settle runs env until it prints from its snapshot: the first env of a
// world writes its record and leases, a later one saves the snapshot once
// its inputs are older than the racy margin.
func settle(t *testing.T, home Home, dir, name string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if out, hit := envOnce(t, home, dir, name); hit {
			return out
		}
		time.Sleep(envsnap.RacyMargin / 4)
	}
	t.Fatal("env never printed from its snapshot")
	return ""
}

func TestEnvPrintsFromItsSnapshotUntilAnInputChanges(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": webConfig})
	home := Home{Dir: filepath.Join(tmp, "home")}
	id := func() string {
		r, wt, err := Locate(repo, "")
		if err != nil {
			t.Fatal(err)
		}
		return WorldID(r.CommonDir, wt.AdminDir)
	}()
	rec := func() *Record {
		r, err := home.LoadRecord(id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var lease string // the web port's lease, found after each settle

	for _, change := range []struct {
		what string
		do   func()
		want string // in the output after the change; "" for no check
	}{
		{"binky.toml gains a service", func() {
			gittest.WriteFiles(t, repo, map[string]string{"binky.toml": webConfig + "[services.api]\ncmd = \"true\"\nurl = \"api\"\n"})
		}, "API_PORT="},
		{"settings.toml sets the proxy port", func() {
			os.WriteFile(home.SettingsPath(), []byte("version = 1\nproxy_port = 8111\n"), 0o600)
		}, ":8111"},
		{"the proxy goes down", func() { home.SetProxyDown("test") }, "WEB_URL=http://127.0.0.1:"},
		{"the proxy comes back", func() { home.SetProxyDown("") }, ":8111"},
		{"the record is saved again", func() {
			r := rec()
			r.Label = "renamed"
			home.SaveRecord(r)
		}, "web.renamed.acme."},
		{"the web port's lease is deleted", func() { os.Remove(lease) }, ""},
		{"the web port's lease names another world", func() {
			os.WriteFile(lease, []byte(`{"port":1,"world":"someone-else","key":"web"}`), 0o600)
		}, ""},
		{"the branch is switched", func() { gittest.Git(t, repo, "checkout", "-q", "-b", "other") }, ""},
		{"the home's secret is made", func() { home.Secret() }, ""},
	} {
		before := settle(t, home, repo, "")
		lease = filepath.Join(home.PortsDir(), strconv.Itoa(rec().Ports["web"]))
		change.do()
		out, hit := envOnce(t, home, repo, "")
		if hit {
			t.Errorf("%s: env printed its old snapshot:\n%s", change.what, out)
			continue
		}
		if change.want != "" && !strings.Contains(out, change.want) {
			t.Errorf("%s: env prints no %q:\n%s", change.what, change.want, out)
		}
		if after := settle(t, home, repo, ""); after != out && change.want != "" {
			t.Errorf("%s: the new snapshot prints\n%s\nthe full path printed\n%s\n(before: %s)", change.what, after, out, before)
		}
	}
	// The lease env took back, or took anew, is this world's again.
	if got := rec().Ports["web"]; got == 0 {
		t.Error("the world lost its web port")
	}
}

func TestASnapshotIsNotSavedWhenItsInputsChangedUnderTheFullPath(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": webConfig})
	home := Home{Dir: filepath.Join(tmp, "home")}
	withAPI := webConfig + "[services.api]\ncmd = \"true\"\nurl = \"api\"\n"
	settle(t, home, repo, "")
	gittest.WriteFiles(t, repo, map[string]string{"binky.toml": withAPI})
	want := settle(t, home, repo, "")
	gittest.WriteFiles(t, repo, map[string]string{"binky.toml": webConfig})

	// env opens the snapshot with web alone; binky.toml gains api before
	// the full path reads it, so what it prints is api's world.
	s := OpenEnvSnapshot(home, repo, "")
	gittest.WriteFiles(t, repo, map[string]string{"binky.toml": withAPI})
	s.Save(map[string][]byte{"dotenv": []byte(fullEnv(t, home, repo, ""))})

	// Kept, it would be printed for web alone.
	gittest.WriteFiles(t, repo, map[string]string{"binky.toml": webConfig})
	if out, hit := envOnce(t, home, repo, ""); hit || strings.Contains(out, "API_") {
		t.Fatalf("env for web alone printed from its snapshot %v:\n%s\n(api's world: %s)", hit, out, want)
	}
}

func TestADamagedSnapshotIsRebuiltNotPrinted(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": webConfig})
	home := Home{Dir: filepath.Join(tmp, "home")}
	want := settle(t, home, repo, "")
	matches, _ := filepath.Glob(filepath.Join(home.WorldsDir(), "*.env"))
	if len(matches) != 1 {
		t.Fatalf("snapshots: %v", matches)
	}
	path := matches[0]
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("snapshot mode %v, %v: it holds passwords, so 0600", fi.Mode(), err)
	}
	good, _ := os.ReadFile(path)
	for name, bad := range map[string][]byte{
		"empty":     nil,
		"torn":      good[:len(good)/2],
		"one byte":  bytes.Replace(good, []byte("WEB_PORT="), []byte("WEB_PORT=9"), 1),
		"no end":    good[:bytes.LastIndex(good, []byte("end "))],
		"other":     []byte("binky env snapshot 2\n"),
		"long size": bytes.Replace(good, []byte("out dotenv "), []byte("out dotenv 9"), 1),
	} {
		os.WriteFile(path, bad, 0o600)
		out, hit := envOnce(t, home, repo, "")
		if hit || out != want {
			t.Errorf("%s snapshot: printed from it %v, output\n%s\nwant\n%s", name, hit, out, want)
		}
	}
}

func TestForgettingAWorldRemovesItsSnapshot(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": webConfig})
	wt := gittest.AddWorktree(t, repo, filepath.Join(tmp, "p1"), "p1")
	home := Home{Dir: filepath.Join(tmp, "home")}
	main, p1 := settle(t, home, repo, ""), settle(t, home, repo, "p1")
	if main == p1 {
		t.Fatal("two worktrees print one env")
	}
	if got := settle(t, home, wt, ""); got != p1 {
		t.Errorf("env in p1's folder printed\n%s\nenv p1 printed\n%s", got, p1)
	}
	w, err := Open(home, repo, "p1")
	if err != nil {
		t.Fatal(err)
	}
	r, err := home.LoadRecord(w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := home.DeleteRecord(r); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home.WorldsDir(), w.ID+".env")); !os.IsNotExist(err) {
		t.Errorf("p1's snapshot outlived its record: %v", err)
	}
}

// An input that changes and changes back while the full path reads it
// digests the same at both ends; what the full path printed was for the
// middle state, so it is not kept.
func TestWhatWasPrintedWhileAnInputChangedAndChangedBackIsNotKept(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": webConfig})
	home := Home{Dir: filepath.Join(tmp, "home")}
	want := settle(t, home, repo, "")
	time.Sleep(2 * envsnap.RacyMargin)
	os.Remove(filepath.Join(home.WorldsDir(), func() string {
		m, _ := filepath.Glob(filepath.Join(home.WorldsDir(), "*.env"))
		return filepath.Base(m[0])
	}()))

	s := OpenEnvSnapshot(home, repo, "")
	home.SetProxyDown("a test")
	middle := fullEnv(t, home, repo, "")
	home.SetProxyDown("")
	s.Save(map[string][]byte{"dotenv": []byte(middle)})
	if middle == want {
		t.Fatal("the proxy going down changed nothing env prints")
	}
	if out, hit := envOnce(t, home, repo, ""); hit || out != want {
		t.Errorf("env after the proxy came back printed (from its snapshot: %v)\n%s\nwant\n%s", hit, out, want)
	}
}

// The launcher opens snapshots on behalf of the binky it would run, and
// only reads: another build of binky may print otherwise, so a snapshot
// made by one is not served for another, and a reader never writes one.
func TestASnapshotServesOnlyTheBuildThatMadeIt(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": webConfig})
	home := Home{Dir: filepath.Join(tmp, "home")}
	want := settle(t, home, repo, "")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Another build of the same size and times (`cp -p`, a package manager
	// that stamps every file alike): a copy of this one, its times set.
	other := filepath.Join(tmp, "other-binky")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, b, 0o755); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(other, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	open := func(renderer string) *envsnap.Snapshot {
		return envsnap.Open(envsnap.Options{Home: home.Dir, Dir: repo, Renderer: renderer})
	}
	if out, ok := open(self).Output("dotenv"); !ok || string(out) != want {
		t.Errorf("for the build that made it: %v\n%s", ok, out)
	}
	if out, ok := open(other).Output("dotenv"); ok {
		t.Errorf("another build was served this build's snapshot:\n%s", out)
	}
	// A reader (no PortsOf) that matched and lacks a form saves nothing.
	snap, _ := filepath.Glob(filepath.Join(home.WorldsDir(), "*.env"))
	before, _ := os.ReadFile(snap[0])
	s := open(self)
	if _, ok := s.Output("dotenv"); !ok {
		t.Fatal("the snapshot did not match")
	}
	s.Save(map[string][]byte{"json": []byte("{}\n")})
	if after, _ := os.ReadFile(snap[0]); !bytes.Equal(after, before) {
		t.Error("a reader without PortsOf wrote the snapshot")
	}
}
