package managed

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/git-binky/git-binky/adapters"
	redisadapter "github.com/git-binky/git-binky/adapters/redis"
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
	ours, err := m.already("redis", port)
	if err != nil {
		return "", err
	}
	if ours {
		return admin, nil
	}
	// The worlds' users live in an ACL file the adapter saves to (ACL
	// SAVE), so that a restart of this server does not lock every world
	// out (ACL SETUSER alone lives in memory).
	acl := filepath.Join(dir, redisadapter.ACLFile)
	if err := writeDefaultUser(acl, pw); err != nil {
		return "", err
	}
	conf := fmt.Sprintf(`# Written by git-binky: the shared Redis of this machine's worlds.
bind 127.0.0.1
protected-mode yes
port %d
daemonize yes
pidfile %s
logfile %s
dir %s
aclfile %s
`, port, filepath.Join(dir, "redis.pid"), filepath.Join(dir, "redis.log"), data, acl)
	confPath := filepath.Join(dir, "redis.conf")
	if err := world.WriteFileAtomic(confPath, []byte(conf), 0o600); err != nil {
		return "", err
	}
	if err := run(ctx, nil, server, confPath); err != nil {
		return "", fmt.Errorf("start the shared redis (log: %s): %w", filepath.Join(dir, "redis.log"), err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !m.serves("redis", port) {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the shared redis did not start listening on 127.0.0.1:%d (log: %s)", port, filepath.Join(dir, "redis.log"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return admin, nil
}

// writeDefaultUser makes the ACL file's default user the admin, with pw,
// keeping every other user in it (the worlds', saved by the adapter).
func writeDefaultUser(path, pw string) error {
	lines := []string{"user default on >" + pw + " ~* &* +@all"}
	if b, err := os.ReadFile(path); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "user default ") {
				lines = append(lines, l)
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return world.WriteFileAtomic(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}
