#!/usr/bin/env bash
# The test command (make test): go test -race ./... with everything the tests
# need. Missing packages are installed (postgresql, redis-server, caddy, when
# we are root with apt-get), and a throwaway Postgres and Redis are started on
# loopback in a temp folder for the adapter integration tests
# (BINKY_TEST_PG, BINKY_TEST_REDIS); they are stopped however the run ends.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v go >/dev/null || { echo "make test: Go is not on PATH; install Go 1.26+" >&2; exit 1; }
command -v git >/dev/null || { echo "make test: git is not on PATH; install git" >&2; exit 1; }

apt_updated=""
# find_bin NAME: NAME on PATH or where Debian keeps PostgreSQL's binaries.
find_bin() {
  command -v "$1" 2>/dev/null && return 0
  ls /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -n 1
}
# install_pkg BINARY PACKAGE: install a Debian package when its binary is
# missing and we can; otherwise say so (the tests that need it skip, saying
# which variable is unset).
install_pkg() {
  [ -n "$(find_bin "$1")" ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "make test: installing $2 (for $1)"
    if [ -z "$apt_updated" ]; then apt-get update -qq >/dev/null 2>&1 || true; apt_updated=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1 \
      || echo "make test: could not install $2; tests that need $1 will skip" >&2
  else
    echo "make test: $1 is missing (install $2); tests that need it will skip" >&2
  fi
}
install_pkg initdb postgresql
install_pkg redis-server redis-server
install_pkg caddy caddy

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
  || echo $(( 20000 + RANDOM % 20000 )); }

work="$(mktemp -d "${TMPDIR:-/tmp}/binky-test.XXXXXX")"
chmod 755 "$work"
pg_data="" redis_pid=""
cleanup() {
  [ -n "$pg_data" ] && run_pg "$(find_bin pg_ctl)" -D "$pg_data" -m immediate stop >/dev/null 2>&1 || true
  [ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# PostgreSQL refuses to run as root: run its binaries as the postgres user.
run_pg() {
  if [ "$(id -u)" = 0 ]; then
    if command -v runuser >/dev/null 2>&1; then runuser -u postgres -- "$@"; else su postgres -s /bin/sh -c "$(printf '%q ' "$@")"; fi
  else
    "$@"
  fi
}

if [ -n "$(find_bin initdb)" ] && [ -z "${BINKY_TEST_PG:-}" ]; then
  pg_port="$(free_port)"
  pg_data="$work/pg"
  mkdir -p "$pg_data" "$work/pgsock"
  echo binky-test > "$work/pgpw"
  : > "$work/pg.log"
  if [ "$(id -u)" = 0 ]; then chown -R postgres "$pg_data" "$work/pgsock" "$work/pgpw" "$work/pg.log"; fi
  run_pg "$(find_bin initdb)" -D "$pg_data" -U binky --pwfile "$work/pgpw" --auth scram-sha-256 -E UTF8 >"$work/initdb.log" 2>&1 \
    || { cat "$work/initdb.log" >&2; exit 1; }
  run_pg "$(find_bin pg_ctl)" -D "$pg_data" -l "$work/pg.log" -w -o "-c listen_addresses=127.0.0.1 -p $pg_port -c unix_socket_directories=$work/pgsock -c max_connections=300" start >/dev/null \
    || { cat "$work/pg.log" >&2; exit 1; }
  export BINKY_TEST_PG="postgres://binky:binky-test@127.0.0.1:$pg_port/postgres?sslmode=disable"
  echo "make test: throwaway postgres on 127.0.0.1:$pg_port"
fi

if [ -n "$(find_bin redis-server)" ] && [ -z "${BINKY_TEST_REDIS:-}" ]; then
  redis_port="$(free_port)"
  "$(find_bin redis-server)" --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no --dir "$work" \
    --requirepass binky-test --daemonize no >"$work/redis.log" 2>&1 &
  redis_pid=$!
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$redis_port") 2>/dev/null && break; sleep 0.05; done
  export BINKY_TEST_REDIS="redis://default:binky-test@127.0.0.1:$redis_port/0"
  echo "make test: throwaway redis on 127.0.0.1:$redis_port"
fi

go mod download
go vet ./...
# Arguments, if any, are the packages (and flags) to test instead of all.
if [ "$#" -eq 0 ]; then set -- ./...; fi
go test -race -count=1 -timeout 30m "$@"
