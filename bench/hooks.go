package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// benchHooks: what git-native automation costs. The hook's own wall time
// (it runs inside every `git worktree add`), the latency from `git worktree
// add` returning to the world healthy and from `git worktree remove`
// returning to its last process gone, and the daemon's CPU while idle with
// ten repositories watched.
func benchHooks(b *bench) error {
	dir := filepath.Join(b.tmp, "hooks")
	home := filepath.Join(dir, "home")
	bins := filepath.Join(dir, "bin")
	if err := buildHello(bins, "api"); err != nil {
		return err
	}
	env := append(os.Environ(), "BINKY_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.invalid", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.invalid",
		"PATH="+b.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	run := func(d, name string, args ...string) (string, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = d, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out.String())
		}
		return out.String(), nil
	}
	gb := filepath.Join(b.bin, "git-binky")
	cfg := fmt.Sprintf("[project]\nname = \"hooks\"\n[services.api]\ncmd = \"%s/api\"\nurl = \"api\"\nhealth = { http = \"/healthz\" }\n", bins)
	newRepo := func(name string) (string, error) {
		repo := filepath.Join(dir, name)
		os.MkdirAll(repo, 0o755)
		os.WriteFile(filepath.Join(repo, "binky.toml"), []byte(cfg), 0o644)
		for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-qm", "init"}} {
			if _, err := run(repo, "git", args...); err != nil {
				return "", err
			}
		}
		_, err := run(repo, gb, "install")
		return repo, err
	}
	repo, err := newRepo("main")
	if err != nil {
		return err
	}
	defer run(repo, gb, "daemon", "stop")

	// add → healthy, remove → gone.
	var addT, removeT []time.Duration
	for i := 0; i < 5; i++ {
		name := fmt.Sprintf("wt%d", i)
		path := filepath.Join(dir, name)
		if _, err := run(repo, "git", "worktree", "add", "-q", "-b", name, path); err != nil {
			return err
		}
		returned := time.Now()
		var pid int
		for deadline := time.Now().Add(30 * time.Second); ; {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s never became healthy", name)
			}
			if p, ok := healthyPID(home, name); ok {
				pid = p
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		addT = append(addT, time.Since(returned))
		if _, err := run(repo, "git", "worktree", "remove", path); err != nil {
			return err
		}
		returned = time.Now()
		for deadline := time.Now().Add(30 * time.Second); alive(pid); {
			if time.Now().After(deadline) {
				return fmt.Errorf("%s's service survived its removal", name)
			}
			time.Sleep(2 * time.Millisecond)
		}
		removeT = append(removeT, time.Since(returned))
	}

	// The hook alone, in a linked worktree whose world is already up.
	wt := filepath.Join(dir, "hooked")
	if _, err := run(repo, "git", "worktree", "add", "-q", "-b", "hooked", wt); err != nil {
		return err
	}
	// Stopping the daemon leaves services running (the next daemon adopts
	// them): this world's api would outlive the bench and load the
	// sections after it.
	defer run(wt, gb, "down")
	var hookT []time.Duration
	null := strings.Repeat("0", 40)
	for i := 0; i < 50; i++ {
		start := time.Now()
		if _, err := run(wt, gb, "hook", "post-checkout", null, null, "1"); err != nil {
			return err
		}
		hookT = append(hookT, time.Since(start))
	}
	h, a, r := summarise(hookT), summarise(addT), summarise(removeT)
	table([]string{"git-native automation", "runs", "median", "p99"}, [][]string{
		{"post-checkout hook wall time", fmt.Sprint(h.n), ms(h.p50), ms(h.p99)},
		{"`git worktree add` returned → world healthy", fmt.Sprint(a.n), ms(a.p50), ms(a.p99)},
		{"`git worktree remove` returned → last process gone", fmt.Sprint(r.n), ms(r.p50), ms(r.p99)},
	})
	fmt.Println()

	for i := 0; i < 9; i++ {
		if _, err := newRepo(fmt.Sprintf("idle%d", i)); err != nil {
			return err
		}
	}
	pid := daemonPID(home)
	before := cpuTicks(pid)
	const window = 10 * time.Second
	time.Sleep(window)
	used := cpuTicks(pid) - before
	table([]string{"daemon idle, 10 repositories watched", "CPU over " + window.String()}, [][]string{
		{"user+system time (clock ticks of 10 ms)", fmt.Sprintf("%d ticks = %.2f%% of one core", used, float64(used)*10/float64(window.Milliseconds())*100)},
	})
	return nil
}

// healthyPID reads the world record of worktree name under home and returns
// its api's pid once it is healthy.
func healthyPID(home, name string) (int, bool) {
	files, _ := filepath.Glob(filepath.Join(home, "worlds", "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var rec struct {
			Worktree string
			Services map[string]struct {
				PID   int
				State string
			}
		}
		if json.Unmarshal(b, &rec) == nil && rec.Worktree == name {
			if s, ok := rec.Services["api"]; ok && s.State == "healthy" {
				return s.PID, true
			}
		}
	}
	return 0, false
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}

func daemonPID(home string) int {
	b, err := os.ReadFile(filepath.Join(home, "daemon.json"))
	if err != nil {
		return 0
	}
	var info struct{ PID int }
	json.Unmarshal(b, &info)
	return info.PID
}

// cpuTicks is utime+stime of pid, in clock ticks.
func cpuTicks(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}
