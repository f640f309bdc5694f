#!/usr/bin/env bash
# make demo: the main job end to end. Builds git-binky, makes a scratch
# repository from examples/hello, brings two worktrees up in parallel, shows
# status, calls each world's services on their own ports, and removes both.
# Nothing outside a temp folder is touched, and nothing is left running.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/bin}"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/binky-demo.XXXXXX")"
export PATH="$bin:$PATH"
export BINKY_HOME="$scratch/binky-home"
export GIT_CONFIG_GLOBAL="$scratch/gitconfig" GIT_CONFIG_NOSYSTEM=1
printf '[user]\n\tname = Binky Demo\n\temail = demo@example.invalid\n[init]\n\tdefaultBranch = main\n' >"$GIT_CONFIG_GLOBAL"

# http_get PORT: GET / on loopback with bash alone (no curl needed).
http_get() {
  exec 3<>"/dev/tcp/127.0.0.1/$1"
  printf 'GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  tail -n 1 <&3
  exec 3<&-
}

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

# A proxy port of the demo's own, so a daemon you already run is left alone.
if port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null); then
  git binky port --proxy "$port" >/dev/null
fi

cp -R "$root/examples/hello" "$scratch/hello"
cd "$scratch/hello"
git init -q && git add -A && git commit -qm "hello"

cleanup() {
  git binky daemon stop >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT

step git binky check

printf '\n\033[1m$ git binky up login-fix & git binky up checkout-v2 & wait\033[0m\n'
git binky up login-fix & a=$!
git binky up checkout-v2 & b=$!
wait $a && wait $b

step git binky status

echo
echo "Each world answers on its own ports, and its web calls its own api:"
for wt in login-fix checkout-v2; do
  port=$(cd "../$wt" && git binky env | sed -n 's/^WEB_PORT=//p')
  printf '  GET 127.0.0.1:%s  ->  %s\n' "$port" "$(http_get "$port")"
done

echo
echo "Two worktrees, two worlds, ports nobody chose by hand:"
paste <(cd ../login-fix && git binky env | grep -v PATH) <(cd ../checkout-v2 && git binky env | grep -v PATH) | column -t -s $'\t'

echo
echo "And by name, through the proxy (the Host header filled in):"
step git binky curl checkout-v2 web /

step git binky logs login-fix --service web -n 3
step git binky remove login-fix
step git binky remove checkout-v2
step git binky status
