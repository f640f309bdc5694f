package hooks

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/git-binky/git-binky/api"
	"github.com/git-binky/git-binky/gitx"
	"github.com/git-binky/git-binky/gitx/gittest"
	"github.com/git-binky/git-binky/world"
)

// requests records what the hook commands ask of the daemon.
type requests []api.Request

func (r *requests) Call(_ context.Context, req api.Request, _ func(api.Event), _ any) error {
	*r = append(*r, req)
	return nil
}

const config = "[project]\nname = \"acme\"\n[services.api]\ncmd = \"true\"\n"

func TestSetupRegistersTrustsAndAsksTheDaemonToWatch(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	repo := gittest.NewRepo(t, t.TempDir(), "acme", map[string]string{"binky.toml": config})
	old := gittest.AddWorktree(t, repo, filepath.Join(t.TempDir(), "old"), "old")
	home := world.Home{Dir: t.TempDir()}
	var d requests
	res, err := Setup(context.Background(), home, repo, &d)
	if err != nil || !res.Changed {
		t.Fatalf("setup: %+v %v", res, err)
	}
	if !home.Trusted(world.TrustHash([]byte(config))) {
		t.Error("the binky.toml install stood in is not approved")
	}
	repos, err := home.Repos()
	if err != nil || len(repos) != 1 || len(repos[0].Seen) != 1 || repos[0].Seen[0] != filepath.Base(old) {
		t.Errorf("registry: %+v %v (want the one linked worktree seen)", repos, err)
	}
	if len(d) != 1 || d[0].Op != api.OpWatch || d[0].Dir != repo {
		t.Errorf("daemon got %+v, want one watch of %s", d, repo)
	}
	if _, err := Teardown(context.Background(), home, repo); err != nil {
		t.Fatal(err)
	}
	if repos, _ := home.Repos(); len(repos) != 0 {
		t.Errorf("still registered after teardown: %+v", repos)
	}
}

func TestPostCheckoutHandsTheEventToTheDaemon(t *testing.T) {
	repo := gittest.NewRepo(t, t.TempDir(), "acme", map[string]string{"binky.toml": config})
	wt := gittest.AddWorktree(t, repo, filepath.Join(t.TempDir(), "feat"), "feat")
	null := strings.Repeat("0", 40)
	home := world.Home{Dir: t.TempDir()}
	for _, tc := range []struct {
		name, dir string
		args      []string
		want      string // the event sent, "" for none
		warned    bool
		adding    bool // binky's own up runs the git worktree add
	}{
		{"a worktree is born, its config never approved", wt, []string{null, "abc", "1"}, api.EventBorn, true, false},
		{"a worktree binky's up adds is that up's", wt, []string{null, "abc", "1"}, "", false, true},
		{"a branch checkout", wt, []string{"abc", "def", "1"}, api.EventCheckout, false, false},
		{"a file checkout", wt, []string{"abc", "def", "0"}, "", false, false},
		{"the main worktree is not born", repo, []string{null, "abc", "1"}, "", false, false},
		{"no arguments", wt, nil, "", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.adding {
				t.Setenv(gitx.AddingEnv, "1")
			}
			var d requests
			var errw bytes.Buffer
			PostCheckout(context.Background(), Checkout{Home: home, Dir: tc.dir, Args: tc.args, Daemon: &d, Err: &errw})
			switch {
			case tc.want == "" && len(d) != 0:
				t.Errorf("daemon got %+v, want nothing", d)
			case tc.want != "" && (len(d) != 1 || d[0].Op != api.OpHook || d[0].Event != tc.want || d[0].Dir != wt):
				t.Errorf("daemon got %+v, want one %s hook for %s", d, tc.want, wt)
			}
			if warned := strings.Contains(errw.String(), "git binky trust"); warned != tc.warned {
				t.Errorf("warned=%v: %q", warned, errw.String())
			}
		})
	}
	// A branch with no binky.toml is nothing to binky.
	os.Remove(filepath.Join(wt, "binky.toml"))
	var d requests
	PostCheckout(context.Background(), Checkout{Home: home, Dir: wt, Args: []string{"abc", "def", "1"}, Daemon: &d, Err: &bytes.Buffer{}})
	if len(d) != 0 {
		t.Errorf("daemon got %+v for a branch with no binky.toml", d)
	}
}

// install approves the binky.toml it stands in only when binky can use
// it, and says why not: an approval of a broken file starts nothing.
func TestSetupDoesNotApproveABrokenConfig(t *testing.T) {
	t.Setenv("BINKY_HOOKS", "file")
	broken := config + "depend_on = [\"x\"]\n"
	repo := gittest.NewRepo(t, t.TempDir(), "acme", map[string]string{"binky.toml": broken})
	home := world.Home{Dir: t.TempDir()}
	res, err := Setup(context.Background(), home, repo, nil)
	if err != nil || !res.Changed {
		t.Fatalf("setup: %+v %v (the hook goes in all the same)", res, err)
	}
	if home.Trusted(world.TrustHash([]byte(broken))) {
		t.Error("a binky.toml that does not load was approved")
	}
	if !strings.Contains(res.NotApproved, "depend_on") {
		t.Errorf("NotApproved = %q, want the file's problem", res.NotApproved)
	}
}
