#!/usr/bin/env bash
# make demo: the headline, end to end, on the managed default (no servers to
# start by hand): a scratch repository made from examples/notes (a notes API
# with its own migrations, a Postgres database and a Redis cache), two
# worktrees brought up in parallel, each with a Postgres slice cloned from
# one golden template and a Redis slice of its own; a note written in one
# world that the other cannot see; the proxy URLs; and `remove` dropping
# both slices. Nothing outside a temp folder is touched (the shared servers
# run under its BINKY_HOME), and nothing is left running.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="$(cd "${1:-$root/bin}" && pwd)"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/binky-demo.XXXXXX")"
export PATH="$bin:$PATH"
export BINKY_HOME="$scratch/binky-home"
export GIT_CONFIG_GLOBAL="$scratch/gitconfig" GIT_CONFIG_NOSYSTEM=1
printf '[user]\n\tname = Binky Demo\n\temail = demo@example.invalid\n[init]\n\tdefaultBranch = main\n' >"$GIT_CONFIG_GLOBAL"
started=$(date +%s)

# Colour only on a terminal, never with NO_COLOR.
if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then b=$'\033[1m' c=$'\033[36m' r=$'\033[0m'; else b="" c="" r=""; fi
bold() { printf '\n%s%s%s\n' "$b" "$*" "$r"; }
say() { printf '%s# %s%s\n' "$c" "$*" "$r"; }
step() { bold "\$ $*"; "$@"; }
# hide: passwords out of URLs, for the screen.
hide() { sed -E 's#(://[^:/@]+):[^@]+@#\1:***@#g'; }

# The shared servers binky runs itself: PostgreSQL and Redis binaries.
have_pg() { command -v initdb >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; }
if ! have_pg || ! command -v redis-server >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing what binky runs its shared servers with: postgresql, redis-server"
    (apt-get install -y -q postgresql redis-server >/dev/null 2>&1 ||
      { apt-get update -q >/dev/null && apt-get install -y -q postgresql redis-server >/dev/null; })
  else
    echo "make demo needs PostgreSQL and Redis binaries (binky runs one shared server of each itself):" >&2
    echo "  Debian/Ubuntu: sudo apt-get install postgresql redis-server   macOS: brew install postgresql redis" >&2
    exit 1
  fi
fi

# A proxy port of the demo's own, so a daemon you already run is left alone.
if port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null); then
  git binky port --proxy "$port" >/dev/null
fi

if ! command -v binky-notes >/dev/null; then
  (cd "$root" && go build -o "$bin/binky-notes" ./examples/notes)
fi
mkdir -p "$scratch/notes"
cp -R "$root/examples/notes/binky.toml" "$root/examples/notes/migrations" "$scratch/notes/"
cd "$scratch/notes"
git init -q && git add -A && git commit -qm "notes"

cleanup() {
  git binky servers stop >/dev/null 2>&1 || true
  git binky daemon stop >/dev/null 2>&1 || true
  # As root, the shared postgres keeps its files outside BINKY_HOME.
  if target=$(readlink "$BINKY_HOME/servers/postgres/data" 2>/dev/null); then
    rm -rf "$(dirname "$(dirname "$target")")"
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT

say "examples/notes: an API (binky-notes serve) on a Postgres database and a Redis cache, no admin_url:"
say "binky runs one shared Postgres and one shared Redis itself, and carves a slice of each per worktree."
step cat binky.toml
step git binky check

bold '$ git binky up login-fix & git binky up checkout-v2 & wait'
say "the first builds the golden template once (migrate + seed); both worlds are cloned from it"
git binky up login-fix & a=$!
git binky up checkout-v2 & b=$!
wait $a && wait $b
say "from the daemon's log: the template is built once, and each world's database is a copy of it:"
grep -E '"msg":"(golden template built|slice cloned)"' "$BINKY_HOME/daemon.log" |
  sed -E -e 's/.*"msg":"golden template built".*"name":"([^"]+)".*"took_ms":([0-9]+).*/  golden template \1 built in \2 ms/' \
    -e 's/.*"msg":"slice cloned".*"slice":"([^"]+)".*"template":"([^"]+)".*"took_ms":([0-9]+).*/  \1 cloned from \2 in \3 ms/'

step git binky status

say "each world has its own database and its own Redis user and prefix:"
for wt in login-fix checkout-v2; do
  (cd "../$wt" && git binky env | grep -E '^(DB_NAME|DB_URL|CACHE_PREFIX|CACHE_URL)=' | hide | sed "s/^/  $wt  /")
done

say "write a note in login-fix only:"
step git binky curl login-fix api /notes -d "only in login-fix: a row checkout-v2 cannot see"
step git binky curl login-fix api /notes
step git binky curl checkout-v2 api /notes

say "and the URLs, through the proxy (git binky curl fills in the Host header; a browser resolves *.localhost itself):"
for wt in login-fix checkout-v2; do
  (cd "../$wt" && git binky env | grep -E '^API_URL=' | sed "s/^/  $wt  /")
done

step git binky servers
step git binky golden

dbs() { psql "$(admin_pg)" -Atc "SELECT string_agg(datname, ' ') FROM pg_database WHERE datname LIKE 'notes%'" 2>/dev/null || echo "(psql not found)"; }
admin_pg() { printf 'postgres://binky:%s@127.0.0.1:%s/postgres?sslmode=disable' "$(cat "$BINKY_HOME/servers/postgres/admin.password")" "$(cat "$BINKY_HOME/servers/postgres/port")"; }
rusers() { redis-cli -p "$(cat "$BINKY_HOME/servers/redis/port")" --user default --pass "$(cat "$BINKY_HOME/servers/redis/admin.password")" --no-auth-warning ACL USERS 2>/dev/null | grep -v '^default$' | tr '\n' ' '; }

say "on the shared servers now: databases [$(dbs)]  redis users [$(rusers)]"
step git binky remove login-fix
step git binky remove checkout-v2
say "after remove: databases [$(dbs)]  redis users [$(rusers)]  (the golden template stays for the next world)"
step git binky status
say "done in $(( $(date +%s) - started ))s"
