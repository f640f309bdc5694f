package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// benchEnv: `git binky env` runs on every shell prompt and direnv cd, so it is
// timed against the cheapest git command there is, in the same run,
// interleaved so that machine noise hits both alike.
func benchEnv(b *bench) error {
	repo := filepath.Join(b.tmp, "env-repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return err
	}
	var cfg strings.Builder
	cfg.WriteString("[project]\nname = \"bench\"\n")
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&cfg, "[services.svc%d]\ncmd = \"./svc --port ${self.port}\"\nurl = \"svc%d\"\n", i, i)
		if i > 0 {
			fmt.Fprintf(&cfg, "depends_on = [\"svc%d\"]\nenv = { UP = \"${svc%d.url}\" }\n", i-1, i-1)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "binky.toml"), []byte(cfg.String()), 0o644); err != nil {
		return err
	}
	env := append(os.Environ(), "BINKY_HOME="+filepath.Join(b.tmp, "env-home"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null", "PATH="+b.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	run := func(name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = repo, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run("git", "init", "-q"); err != nil {
		return err
	}
	gb := filepath.Join(b.bin, "git-binky")
	if err := run(gb, "env"); err != nil { // first call allocates; time the steady state
		return err
	}
	cases := []struct {
		label string
		name  string
		args  []string
	}{
		{"git rev-parse --git-dir", "git", []string{"rev-parse", "--git-dir"}},
		{"git-binky env (10 services)", gb, []string{"env"}},
		{"git binky env (through git)", "git", []string{"binky", "env"}},
		{"git-binky env --json", gb, []string{"env", "--json"}},
		{"binky env (the command line itself, no launcher)", filepath.Join(b.bin, "binky"), []string{"env"}},
	}
	times := make([][]time.Duration, len(cases))
	for i := 0; i < b.runs; i++ {
		for c, tc := range cases {
			start := time.Now()
			if err := run(tc.name, tc.args...); err != nil {
				return err
			}
			times[c] = append(times[c], time.Since(start))
		}
	}
	base := summarise(times[0]).p50
	var rows [][]string
	for c, tc := range cases {
		s := summarise(times[c])
		rows = append(rows, []string{tc.label, fmt.Sprint(s.n), ms(s.p50), ms(s.p90), ms(s.p99),
			fmt.Sprintf("%.2fx", float64(s.p50)/float64(base))})
	}
	table([]string{"command", "runs", "median", "p90", "p99", "median vs git rev-parse"}, rows)
	return nil
}
