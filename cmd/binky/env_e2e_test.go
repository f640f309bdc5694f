package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/git-binky/git-binky/gitx/gittest"
)

const threeServices = `[project]
name = "acme"
[services.web]
cmd = "./web ${self.port}"
url = "web"
[services.api]
cmd = "./api ${self.port}"
url = "api"
ports = ["admin"]
`

// binky runs the built git-binky with env and returns its stdout.
func binky(t *testing.T, dir string, env []string, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "git-binky"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		return out, fmt.Errorf("%v: %s", err, ee.Stderr)
	}
	return out, err
}

type envDoc struct {
	Worktree string `json:"worktree"`
	Services map[string]struct {
		Port  int            `json:"port"`
		Ports map[string]int `json:"ports"`
	} `json:"services"`
}

func TestEnvInSixteenWorktreesAtOnceGivesDistinctPorts(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": threeServices})
	const n = 16
	paths := make([]string, n)
	for i := range paths {
		paths[i] = gittest.AddWorktree(t, repo, filepath.Join(tmp, fmt.Sprintf("wt%02d", i)), fmt.Sprintf("b%02d", i))
	}
	home := "BINKY_HOME=" + filepath.Join(tmp, "home")
	// A narrow range makes first choices collide, so the test exercises the
	// lease race rather than the hash spreading worlds apart.
	if err := os.MkdirAll(filepath.Join(tmp, "home"), 0o700); err != nil {
		t.Fatal(err)
	}
	settings := "[ports]\nmin = 24000\nmax = 24099\n"
	if err := os.WriteFile(filepath.Join(tmp, "home", "settings.toml"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}

	docs := make([]envDoc, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range paths {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out, err := binky(t, paths[i], []string{home}, "env", "--json")
			if err == nil {
				err = json.Unmarshal(out, &docs[i])
			}
			errs[i] = err
		}(i)
	}
	wg.Wait()
	seen := map[int]string{}
	for i, d := range docs {
		if errs[i] != nil {
			t.Fatalf("worktree %d: %v", i, errs[i])
		}
		for svc, s := range d.Services {
			ports := []int{s.Port}
			for _, p := range s.Ports {
				ports = append(ports, p)
			}
			for _, p := range ports {
				if p < 24000 || p > 24099 {
					t.Errorf("%s/%s: port %d outside the range", d.Worktree, svc, p)
				}
				if other, dup := seen[p]; dup {
					t.Errorf("port %d given to %s/%s and %s", p, d.Worktree, svc, other)
				}
				seen[p] = d.Worktree + "/" + svc
			}
		}
	}
	if len(seen) != n*3 {
		t.Errorf("got %d distinct ports, want %d", len(seen), n*3)
	}

	// The same calls again, one after another, return the same ports.
	for i := range paths {
		out, err := binky(t, paths[i], []string{home}, "env", "--json")
		if err != nil {
			t.Fatal(err)
		}
		var again envDoc
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatal(err)
		}
		if again.Services["api"].Port != docs[i].Services["api"].Port {
			t.Errorf("worktree %d: api moved from %d to %d", i, docs[i].Services["api"].Port, again.Services["api"].Port)
		}
	}
}

func TestEnvSkipsAPortHeldFromOutside(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": "[services.api]\ncmd = \"./api\"\nurl = \"api\"\n"})
	// Hold the lower of a two-port range: the only free choice is the other,
	// so the pair is picked where the upper one is free too (other programs
	// on a busy machine take ephemeral ports).
	var l net.Listener
	var held int
	for range 50 {
		c, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := c.Addr().(*net.TCPAddr).Port
		if up, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", p+1)); err == nil {
			up.Close()
			l, held = c, p
			break
		}
		c.Close()
	}
	if l == nil {
		t.Fatal("found no two adjacent free ports")
	}
	defer l.Close()
	home := filepath.Join(tmp, "home")
	os.MkdirAll(home, 0o700)
	settings := fmt.Sprintf("[ports]\nmin = %d\nmax = %d\n", held, held+1)
	if err := os.WriteFile(filepath.Join(home, "settings.toml"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := binky(t, repo, []string{"BINKY_HOME=" + home}, "env")
	if err != nil {
		t.Fatal(err)
	}
	if want := "API_PORT=" + strconv.Itoa(held+1) + "\n"; !strings.Contains(string(out), want) {
		t.Fatalf("env = %s\nwant %q: port %d is held from outside binky", out, want, held)
	}
}

// JSON has no bytes that are not UTF-8: env --json turned a branch named
// in another encoding into U+FFFD, a name that is not the branch's, and
// said nothing. It refuses, naming the value; --dotenv keeps the bytes.
func TestEnvJSONRefusesAValueThatIsNotUTF8(t *testing.T) {
	tmp := t.TempDir()
	repo := gittest.NewRepo(t, tmp, "acme", map[string]string{"binky.toml": threeServices})
	if out, err := exec.Command("git", "-C", repo, "checkout", "-q", "-b", "caf\xe9").CombinedOutput(); err != nil {
		t.Fatalf("git checkout: %v: %s", err, out)
	}
	env := []string{"BINKY_HOME=" + filepath.Join(tmp, "home")}
	out, err := binky(t, repo, env, "env", "--json")
	if err == nil || !strings.Contains(err.Error(), "the branch's name holds bytes that are not UTF-8") {
		t.Errorf("env --json = %q, %v; want a refusal naming the branch", out, err)
	}
	out, err = binky(t, repo, env, "env", "--dotenv")
	if err != nil || !strings.Contains(string(out), "BINKY_BRANCH=caf\xe9\n") && !strings.Contains(string(out), "BINKY_BRANCH='caf\xe9'\n") {
		t.Errorf("env --dotenv = %q, %v; want the bytes as they are", out, err)
	}
}

// env before the world's first up says which data services have no slice
// yet, in a comment each form reads past: a script's eval got no DB_URL,
// and nothing said why.
func TestEnvBeforeTheFirstUpSaysWhichSlicesAreMissing(t *testing.T) {
	f := newFixture(t, `[project]
name = "acme"
[services.db]
adapter = "postgres"
admin_url = "postgres://127.0.0.1:1/none"
[services.api]
cmd = "testsvc"
url = "api"
`)
	for _, form := range []string{"--shell", "--dotenv"} {
		out := f.mustBinky(f.repo, "env", form)
		if !strings.Contains(out, "# no slice yet for db (their variables are missing): 'git binky up' makes them") || !strings.Contains(out, "API_PORT") {
			t.Errorf("env %s before the first up:\n%s", form, out)
		}
	}
	sh := exec.Command("sh", "-c", `eval "$(git-binky env --shell)" && echo "api on $API_PORT"`)
	sh.Dir, sh.Env = f.repo, append(os.Environ(), f.env()...)
	if out, err := sh.CombinedOutput(); err != nil || !strings.Contains(string(out), "api on ") {
		t.Errorf("eval of env --shell with the comment: %v\n%s", err, out)
	}
	var doc struct{ Unmade []string }
	if err := json.Unmarshal([]byte(f.mustBinky(f.repo, "env", "--json")), &doc); err != nil || len(doc.Unmade) != 1 || doc.Unmade[0] != "db" {
		t.Errorf("env --json's unmade: %v (%v)", doc.Unmade, err)
	}
}
