package managed

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/world"
)

// startRedis runs the shared Redis with a config binky writes: loopback
// only, the default user's password generated.
func startRedis(ctx context.Context, m *Servers, dir string) (string, error) {
	server := adapters.FindServerBinary("redis-server")
	if server == "" {
		return "", missing("redis-server", "redis-server")
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return "", err
	}
	pw, err := secret(dir)
	if err != nil {
		return "", err
	}
	port, err := m.port("redis", dir)
	if err != nil {
		return "", err
	}
	admin := (&url.URL{Scheme: "redis", User: url.UserPassword("default", pw), Host: "127.0.0.1:" + strconv.Itoa(port), Path: "/0"}).String()
	if listening(port) {
		return admin, nil
	}
	conf := fmt.Sprintf(`# Written by git-binky: the shared Redis of this machine's worlds.
bind 127.0.0.1
protected-mode yes
port %d
daemonize yes
pidfile %s
logfile %s
dir %s
user default on >%s ~* &* +@all
`, port, filepath.Join(dir, "redis.pid"), filepath.Join(dir, "redis.log"), data, pw)
	confPath := filepath.Join(dir, "redis.conf")
	if err := world.WriteFileAtomic(confPath, []byte(conf), 0o600); err != nil {
		return "", err
	}
	if err := run(ctx, nil, server, confPath); err != nil {
		return "", fmt.Errorf("start the shared redis (log: %s): %w", filepath.Join(dir, "redis.log"), err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !listening(port) {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the shared redis did not start listening on 127.0.0.1:%d (log: %s)", port, filepath.Join(dir, "redis.log"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return admin, nil
}
