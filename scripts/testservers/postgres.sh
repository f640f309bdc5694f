# A throwaway PostgreSQL for the adapter tests: BINKY_TEST_PG.
install_pkg initdb postgresql
if [ -n "$(find_bin initdb)" ] && [ -z "${BINKY_TEST_PG:-}" ]; then
  pg_port="$(free_port)"
  pg_data="$work/pg"
  mkdir -p "$pg_data" "$work/pgsock"
  echo binky-test > "$work/pgpw"
  : > "$work/pg.log"
  if [ "$(id -u)" = 0 ]; then chown -R postgres "$pg_data" "$work/pgsock" "$work/pgpw" "$work/pg.log"; fi
  run_as postgres "$(find_bin initdb)" -D "$pg_data" -U binky --pwfile "$work/pgpw" --auth scram-sha-256 -E UTF8 >"$work/initdb.log" 2>&1 \
    || { cat "$work/initdb.log" >&2; exit 1; }
  run_as postgres "$(find_bin pg_ctl)" -D "$pg_data" -l "$work/pg.log" -w -o "-c listen_addresses=127.0.0.1 -p $pg_port -c unix_socket_directories=$work/pgsock -c max_connections=300" start >/dev/null \
    || { cat "$work/pg.log" >&2; exit 1; }
  on_exit "run_as postgres '$(find_bin pg_ctl)' -D '$pg_data' -m immediate stop"
  export BINKY_TEST_PG="postgres://binky:binky-test@127.0.0.1:$pg_port/postgres?sslmode=disable"
  echo "make test: throwaway postgres on 127.0.0.1:$pg_port"
fi
