#!/usr/bin/env bash
# The test command (make test): go test -race ./... with everything the tests
# need. Missing packages are installed (when we are root with apt-get), and a
# throwaway server of each kind the adapter tests use is started on loopback
# in a temp folder: one file per kind in scripts/testservers/, each of which
# exports its BINKY_TEST_<KIND> variable. They are stopped however the run
# ends. Servers built from Go modules are cached with `go install` under
# $BINKY_TEST_CACHE (default ~/.cache/git-binky-test), so only the first run
# builds them.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v go >/dev/null || { echo "make test: Go is not on PATH; install Go 1.26+" >&2; exit 1; }
command -v git >/dev/null || { echo "make test: git is not on PATH; install git" >&2; exit 1; }

apt_updated=""
# find_bin NAME: NAME on PATH, where Debian keeps PostgreSQL's binaries, or
# in /usr/sbin (mariadbd).
find_bin() {
  command -v "$1" 2>/dev/null && return 0
  { ls /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -n 1; ls /usr/sbin/"$1" 2>/dev/null; } | head -n 1
}
# install_pkg BINARY PACKAGE: install a Debian package when its binary is
# missing and we can; otherwise say so (the tests that need it skip, saying
# which variable is unset).
install_pkg() {
  [ -n "$(find_bin "$1")" ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "make test: installing $2 (for $1)"
    if [ -z "$apt_updated" ]; then apt-get update -qq >/dev/null 2>&1 || true; apt_updated=1; fi
    # Packages whose postinst would start a system-wide server (mariadb,
    # rabbitmq) must not: the tests run their own on loopback.
    [ -e /usr/sbin/policy-rc.d ] || { printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d; } 2>/dev/null || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1 \
      || echo "make test: could not install $2; tests that need $1 will skip" >&2
  else
    echo "make test: $1 is missing (install $2); tests that need it will skip" >&2
  fi
}

# free_port: a port nothing listens on, never the same one twice in a run.
# Not bind(0)'s: that is an ephemeral port, which any outgoing connection
# (go install downloading modules while a server boots) may take before a
# slow server (RabbitMQ) binds it. So a port below the ephemeral range,
# and above binky's own default range (4000-4999), when there is room.
# ($(free_port) runs in a subshell: what it gave is kept in $work/ports.)
free_port() {
  local lo p
  lo="$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)"
  if [ "$lo" -gt 11000 ] 2>/dev/null; then
    for _ in $(seq 500); do
      p=$(( 10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000) ))
      grep -qx "$p" "$work/ports" 2>/dev/null && continue
      if python3 -c 'import socket,sys; s=socket.socket(); s.bind(("127.0.0.1",int(sys.argv[1])))' "$p" 2>/dev/null \
        || { ! command -v python3 >/dev/null && ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; }; then
        echo "$p" >>"$work/ports"; echo "$p"; return 0
      fi
    done
  fi
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null \
    || echo $(( 20000 + RANDOM % 10000 ))
}

# wait_port PORT [SECONDS]: wait until something listens on 127.0.0.1:PORT.
wait_port() {
  local tries=$(( ${2:-10} * 20 ))
  for _ in $(seq "$tries"); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
  return 1
}

# run_as USER CMD...: run a server binary as USER when we are root (servers
# that refuse root: postgres, mariadbd).
run_as() {
  local u="$1"; shift
  if [ "$(id -u)" = 0 ]; then
    if command -v runuser >/dev/null 2>&1; then runuser -u "$u" -- "$@"; else su "$u" -s /bin/sh -c "$(printf '%q ' "$@")"; fi
  else
    "$@"
  fi
}

export BINKY_TEST_CACHE="${BINKY_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/git-binky-test}"
mkdir -p "$BINKY_TEST_CACHE/bin"
# Servers binky itself runs (managed defaults) find cached builds here too.
export BINKY_SERVER_BIN="$BINKY_TEST_CACHE/bin${BINKY_SERVER_BIN:+:$BINKY_SERVER_BIN}"

work="$(mktemp -d "${TMPDIR:-/tmp}/binky-test.XXXXXX")"
chmod 755 "$work"
cleanups=()
# on_exit CMD: run CMD (a string) when the run ends, last registered first.
on_exit() { cleanups+=("$1"); }
cleanup() {
  local i
  for (( i=${#cleanups[@]}-1; i>=0; i-- )); do eval "${cleanups[$i]}" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT
awaits=()
# before_tests CMD: run CMD once go vet is done and before go test: where a
# server started in the background (to boot while vet runs) is waited for.
before_tests() { awaits+=("$1"); }

install_pkg caddy caddy
for f in scripts/testservers/*.sh; do
  # shellcheck source=/dev/null
  . "$f"
done

go mod download
go vet ./...
for a in ${awaits[@]+"${awaits[@]}"}; do eval "$a"; done
# Arguments, if any, are the packages (and flags) to test instead of all.
if [ "$#" -eq 0 ]; then set -- ./...; fi
go test -race -count=1 -timeout 30m "$@"
