package managed

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/world"
)

// s3RootUser is the shared MinIO's root access key; its secret is
// generated (secret, 0600) and passed in the server's environment only.
const s3RootUser = "binky-root"

// startS3 runs the shared MinIO: one `minio server` on loopback, its data
// under dir, root credentials generated, its console on a loopback port of
// its own (and switched off). MinIO is AGPL-3.0: binky runs it as a
// separate program and never links it.
func startS3(ctx context.Context, m *Servers, dir string) (string, error) {
	bin := adapters.FindServerBinary("minio")
	if bin == "" {
		return "", fmt.Errorf("minio not found: build it (GOBIN=$HOME/.local/bin go install github.com/minio/minio@latest, " +
			"or a MinIO release binary on PATH), or set admin_url to an S3 server of your own (s3://KEY:SECRET@host:port)")
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return "", err
	}
	pw, err := secret(dir)
	if err != nil {
		return "", err
	}
	port, err := m.port("s3", dir)
	if err != nil {
		return "", err
	}
	console, err := m.secondPort("s3", dir, "console")
	if err != nil {
		return "", err
	}
	admin := (&url.URL{Scheme: "s3", User: url.UserPassword(s3RootUser, pw), Host: "127.0.0.1:" + strconv.Itoa(port)}).String()
	serving, err := m.already("s3", port)
	if err != nil {
		return "", err
	}
	if serving && s3Ready(ctx, port) {
		return admin, nil
	}
	logPath := filepath.Join(dir, "minio.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", err
	}
	defer logf.Close()
	// Not CommandContext: the server outlives this request and the daemon.
	cmd := exec.Command(bin, "server", data, "--address", "127.0.0.1:"+strconv.Itoa(port),
		"--console-address", "127.0.0.1:"+strconv.Itoa(console), "--quiet")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(withoutMinIOEnv(os.Environ()),
		"MINIO_ROOT_USER="+s3RootUser, "MINIO_ROOT_PASSWORD="+pw, "MINIO_BROWSER=off", "MINIO_UPDATE=off")
	cmd.SysProcAttr = detached(nil)
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start the shared minio: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	if err := world.WriteFileAtomic(filepath.Join(dir, "minio.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600); err != nil {
		return "", err
	}
	deadline := time.Now().Add(60 * time.Second)
	for !(m.serves("s3", port) && s3Ready(ctx, port)) {
		select {
		case err := <-exited:
			return "", fmt.Errorf("the shared minio exited (%v); its log: %s", err, logPath)
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the shared minio did not become ready on 127.0.0.1:%d in 60s (log: %s)", port, logPath)
		}
	}
	return admin, nil
}

// s3Ready asks MinIO's readiness probe, which answers 200 once the server
// takes requests.
func s3Ready(ctx context.Context, port int) bool {
	if !listening(port) {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:"+strconv.Itoa(port)+"/minio/health/ready", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// withoutMinIOEnv drops MINIO_* settings the caller may have, which would
// change the shared server (other root keys, other addresses).
func withoutMinIOEnv(env []string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, "MINIO_") {
			out = append(out, e)
		}
	}
	return out
}

// secondPort is a managed server's second port (a console, a management
// API), kept in dir/<name>.port and leased from binky's range once.
func (m *Servers) secondPort(kind, dir, name string) (int, error) {
	p := filepath.Join(dir, name+".port")
	if b, err := os.ReadFile(p); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n, nil
		}
	}
	settings, err := m.Home.LoadSettings()
	if err != nil && !world.UsingLastGood(err) {
		return 0, err
	}
	n, err := m.Home.NewAllocator(settings).Server(kind + "-" + name)
	if err != nil {
		return 0, err
	}
	return n, world.WriteFileAtomic(p, []byte(strconv.Itoa(n)+"\n"), 0o600)
}
