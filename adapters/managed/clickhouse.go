package managed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/git-binky/git-binky/adapters"
	"github.com/git-binky/git-binky/world"
)

// startClickHouse runs the shared ClickHouse with a config binky writes:
// loopback only, the HTTP interface on a port from binky's range (no native
// TCP port: the adapter speaks HTTP), its files under dir, small caches, and
// a "default" admin with a generated password. access_management and
// access_control_path are ignored by 18.16 (Debian's, which has no SQL
// users) and let a newer clickhouse-server give every world a user.
func startClickHouse(ctx context.Context, m *Servers, dir string) (string, error) {
	server := adapters.FindServerBinary("clickhouse-server")
	if server == "" {
		return "", missing("clickhouse-server", "clickhouse-server")
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return "", err
	}
	pw, err := secret(dir)
	if err != nil {
		return "", err
	}
	port, err := m.port("clickhouse", dir)
	if err != nil {
		return "", err
	}
	admin := (&url.URL{Scheme: "clickhouse", User: url.UserPassword("default", pw), Host: "127.0.0.1:" + strconv.Itoa(port)}).String()
	ours, err := m.already("clickhouse", port)
	if err != nil {
		return "", err
	}
	if ours {
		return admin, nil
	}
	sum := sha256.Sum256([]byte(pw))
	logf, errf := filepath.Join(dir, "clickhouse.log"), filepath.Join(dir, "clickhouse.err.log")
	conf := fmt.Sprintf(`<?xml version="1.0"?>
<!-- Written by git-binky: the shared ClickHouse of this machine's worlds. -->
<yandex>
  <logger><level>warning</level><log>%s</log><errorlog>%s</errorlog><size>10M</size><count>3</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>%d</http_port>
  <path>%s/</path>
  <tmp_path>%s/tmp/</tmp_path>
  <user_files_path>%s/user_files/</user_files_path>
  <format_schema_path>%s/format_schemas/</format_schema_path>
  <access_control_path>%s/access/</access_control_path>
  <users_config>%s</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
</yandex>
`, logf, errf, port, data, data, data, data, data, filepath.Join(dir, "users.xml"))
	users := fmt.Sprintf(`<?xml version="1.0"?>
<!-- Written by git-binky: the admin of the shared ClickHouse. -->
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users>
    <default>
      <password_sha256_hex>%s</password_sha256_hex>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
      <access_management>1</access_management>
    </default>
  </users>
  <quotas><default></default></quotas>
</yandex>
`, hex.EncodeToString(sum[:]))
	confPath := filepath.Join(dir, "config.xml")
	if err := world.WriteFileAtomic(filepath.Join(dir, "users.xml"), []byte(users), 0o600); err != nil {
		return "", err
	}
	if err := world.WriteFileAtomic(confPath, []byte(conf), 0o600); err != nil {
		return "", err
	}
	// --daemon forks and detaches; run's own session keeps it off the
	// daemon's terminal and process group.
	if err := run(ctx, nil, server, "--config-file="+confPath, "--daemon", "--pid-file="+filepath.Join(dir, "clickhouse.pid")); err != nil {
		return "", fmt.Errorf("start the shared clickhouse (log: %s): %w", errf, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !m.serves("clickhouse", port) {
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the shared clickhouse did not start listening on 127.0.0.1:%d (log: %s)", port, errf)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return admin, nil
}
