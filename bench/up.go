package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// benchUp: for examples/hello, binky's own cost of bringing a world up (wall
// time of `git binky up` minus the time the two services take to start and
// answer when run by hand), 8 worlds at once against one after another, and
// the daemon's memory with 8 worlds up.
func benchUp(b *bench) error {
	dir := filepath.Join(b.tmp, "up")
	bins := filepath.Join(dir, "bin")
	if err := buildHello(bins, "api", "web"); err != nil {
		return err
	}
	// The services run as built binaries, so what is timed is binky, not
	// the Go compiler behind `go run`.
	cfg := fmt.Sprintf(`[project]
name = "hello"
[services.api]
cmd = "%s/api"
url = "api"
health = { http = "/healthz" }
[services.web]
cmd = "%s/web"
url = "web"
depends_on = ["api"]
env = { API_URL = "${api.direct_url}" }
health = { http = "/healthz" }
`, bins, bins)
	repo := filepath.Join(dir, "hello")
	os.MkdirAll(repo, 0o755)
	os.WriteFile(filepath.Join(repo, "binky.toml"), []byte(cfg), 0o644)
	home := filepath.Join(dir, "home")
	env := append(os.Environ(), "BINKY_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.invalid", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.invalid")
	run := func(d string, name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = d, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if err != nil {
			return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out.String())
		}
		return out.String(), nil
	}
	gb := filepath.Join(b.bin, "git-binky")
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "hello"}} {
		if _, err := run(repo, "git", args...); err != nil {
			return err
		}
	}
	defer run(repo, gb, "daemon", "stop")
	if _, err := run(repo, gb, "daemon", "start"); err != nil {
		return err
	}

	// The services' own start time, run by hand: api, then web once api answers.
	own := func() (time.Duration, error) {
		start := time.Now()
		apiPort, webPort := freePort(), freePort()
		api := exec.Command(filepath.Join(bins, "api"))
		api.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", apiPort))
		if err := api.Start(); err != nil {
			return 0, err
		}
		defer func() { api.Process.Kill(); api.Wait() }()
		waitPort(apiPort)
		web := exec.Command(filepath.Join(bins, "web"))
		web.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", webPort), fmt.Sprintf("API_URL=http://127.0.0.1:%d", apiPort))
		if err := web.Start(); err != nil {
			return 0, err
		}
		defer func() { web.Process.Kill(); web.Wait() }()
		waitPort(webPort)
		return time.Since(start), nil
	}
	// Nothing a section starts outlives it, a failed one included: the
	// daemon's stop leaves services running for the next daemon to adopt.
	defer run(repo, gb, "down")
	const reps = 7
	var ownT, upT []time.Duration
	for i := 0; i < reps; i++ {
		d, err := own()
		if err != nil {
			return err
		}
		ownT = append(ownT, d)
		start := time.Now()
		if _, err := run(repo, gb, "up"); err != nil {
			return err
		}
		upT = append(upT, time.Since(start))
		if _, err := run(repo, gb, "down"); err != nil {
			return err
		}
	}
	o, u := summarise(ownT), summarise(upT)
	table([]string{"one world (api + web)", "median", "p90"}, [][]string{
		{"services started by hand, until both answer", ms(o.p50), ms(o.p90)},
		{"`git binky up`, until both healthy", ms(u.p50), ms(u.p90)},
		{"binky's overhead (difference of medians)", ms(u.p50 - o.p50), ""},
	})
	fmt.Println()

	const n = 8
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("w%d", i)
		names = append(names, name)
		if _, err := run(repo, "git", "worktree", "add", "-q", "-b", name, "../"+name); err != nil {
			return err
		}
	}
	defer func() {
		for _, name := range names {
			run(repo, gb, "down", name)
		}
	}()
	upAll := func(parallel bool) (time.Duration, error) {
		start := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, name := range names {
			if parallel {
				wg.Add(1)
				go func() { defer wg.Done(); _, errs[i] = run(repo, gb, "up", name) }()
			} else if _, err := run(repo, gb, "up", name); err != nil {
				return 0, err
			}
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
	downAll := func() {
		for _, name := range names {
			run(repo, gb, "down", name)
		}
	}
	seq, err := upAll(false)
	if err != nil {
		return err
	}
	downAll()
	par, err := upAll(true)
	if err != nil {
		return err
	}
	rss := daemonRSS(home)
	downAll()
	table([]string{"8 worlds of examples/hello", "wall time"}, [][]string{
		{"one after another", ms(seq)},
		{"all at once", ms(par)},
		{"speed-up", fmt.Sprintf("%.1fx", float64(seq)/float64(par))},
	})
	fmt.Println()
	table([]string{"daemon", "resident memory"}, [][]string{{"with 8 worlds (16 services) up", rss}})
	return nil
}

// buildHello builds examples/hello's services into bins, so that what is
// timed is binky, not the Go compiler behind `go run`.
func buildHello(bins string, services ...string) error {
	root, err := repoRoot()
	if err != nil {
		return err
	}
	for _, svc := range services {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bins, svc), "./"+svc)
		cmd.Dir = filepath.Join(root, "examples", "hello")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build examples/hello/%s: %v: %s", svc, err, out)
		}
	}
	return nil
}

func repoRoot() (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("find the module root: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func freePort() int {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// waitPort waits (up to 10s) for something to accept on port.
func waitPort(port int) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp4", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func daemonRSS(home string) string {
	b, err := os.ReadFile(filepath.Join(home, "daemon.json"))
	if err != nil {
		return "unknown"
	}
	var info struct{ PID int }
	json.Unmarshal(b, &info)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", info.PID))
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
