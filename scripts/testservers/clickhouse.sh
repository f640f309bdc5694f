# A throwaway ClickHouse for the adapter tests: BINKY_TEST_CLICKHOUSE.
# Debian's clickhouse-server is 18.16, which has no SQL users: it covers the
# database-only path. Point BINKY_TEST_CLICKHOUSE at a modern server
# (clickhouse://default:pw@127.0.0.1:8123, its admin with access_management)
# to run the per-world user path too.
install_pkg clickhouse-server clickhouse-server
if [ -n "$(find_bin clickhouse-server)" ] && [ -z "${BINKY_TEST_CLICKHOUSE:-}" ]; then
  ch_http="$(free_port)"
  ch_tcp="$(free_port)"
  ch_dir="$work/clickhouse"
  mkdir -p "$ch_dir/data"
  # Loopback only, the two ports we picked, files in the temp folder, small
  # caches (the packaged config asks for 5-8 GiB of them).
  cat > "$ch_dir/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$ch_dir/server.log</log><errorlog>$ch_dir/server.err.log</errorlog></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>$ch_http</http_port>
  <tcp_port>$ch_tcp</tcp_port>
  <path>$ch_dir/data/</path>
  <tmp_path>$ch_dir/data/tmp/</tmp_path>
  <user_files_path>$ch_dir/data/user_files/</user_files_path>
  <format_schema_path>$ch_dir/data/format_schemas/</format_schema_path>
  <users_config>$ch_dir/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
</yandex>
XML
  cat > "$ch_dir/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users>
    <default>
      <password_sha256_hex>$(printf binky-test | sha256sum | cut -d' ' -f1)</password_sha256_hex>
      <networks><ip>127.0.0.1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
  </users>
  <quotas><default></default></quotas>
</yandex>
XML
  "$(find_bin clickhouse-server)" --config-file="$ch_dir/config.xml" >"$ch_dir/stdout.log" 2>&1 &
  ch_pid=$!
  # It takes a moment to shut down: wait, so its files go before $work does.
  on_exit "kill $ch_pid; for _ in \$(seq 100); do kill -0 $ch_pid 2>/dev/null || break; sleep 0.05; done"
  wait_port "$ch_http" 30 || { cat "$ch_dir/stdout.log" "$ch_dir/server.err.log" >&2; exit 1; }
  export BINKY_TEST_CLICKHOUSE="clickhouse://default:binky-test@127.0.0.1:$ch_http"
  echo "make test: throwaway clickhouse on 127.0.0.1:$ch_http"
fi
