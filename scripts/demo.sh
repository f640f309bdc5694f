#!/usr/bin/env bash
# make demo: the main job end to end. Builds git-binky, makes a scratch
# repository from examples/hello, adds two worktrees and shows that each
# world has its own ports. Nothing outside a temp folder is touched.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${1:-$root/bin}"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/binky-demo.XXXXXX")"
export PATH="$bin:$PATH"
export BINKY_HOME="$scratch/binky-home"
export GIT_CONFIG_GLOBAL="$scratch/gitconfig" GIT_CONFIG_NOSYSTEM=1
printf '[user]\n\tname = Binky Demo\n\temail = demo@example.invalid\n[init]\n\tdefaultBranch = main\n' >"$GIT_CONFIG_GLOBAL"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

cp -R "$root/examples/hello" "$scratch/hello"
cd "$scratch/hello"
git init -q && git add -A && git commit -qm "hello"

step git binky check
step git worktree add -q ../login-fix -b login-fix
step git worktree add -q ../checkout-v2 -b checkout-v2

echo
echo "Two worktrees, two worlds, ports nobody chose by hand:"
paste <(cd ../login-fix && git binky env) <(cd ../checkout-v2 && git binky env) | column -t -s $'\t'

step git binky status
echo
echo "demo files are in $scratch (remove it when done)"
