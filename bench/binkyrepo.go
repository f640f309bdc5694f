package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// binkyRepo makes a bench's repository: binky.toml cfg and files (name →
// content), committed, and a fresh BINKY_HOME whose proxy listens on a free
// port. run runs a command in dir with that home and with git isolated from
// the user's configuration, and returns its standard output; its error
// carries both outputs.
func binkyRepo(home, repo, cfg string, files map[string]string) (run func(dir string, args ...string) (string, error), err error) {
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(repo, "binky.toml"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(home, "settings.toml"), []byte(fmt.Sprintf("proxy_port = %d\nmax_parallel = 16\n", freePort())), 0o600); err != nil {
		return nil, err
	}
	env := append(os.Environ(), "BINKY_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.invalid", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.invalid")
	run = func(dir string, args ...string) (string, error) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = dir, env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("%s: %v: %s%s", strings.Join(args, " "), err, out.String(), errb.String())
		}
		return out.String(), nil
	}
	for _, args := range [][]string{{"git", "init", "-q", "-b", "main"}, {"git", "add", "-A"}, {"git", "commit", "-qm", "bench"}} {
		if _, err := run(repo, args...); err != nil {
			return nil, err
		}
	}
	return run, nil
}
