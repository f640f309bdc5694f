#!/usr/bin/env bash
# The test command (make test): go test -race ./... with everything the tests
# need, installed when missing (see DESIGN.md, Tests).
set -euo pipefail
cd "$(dirname "$0")/.."

command -v go >/dev/null || { echo "make test: Go is not on PATH; install Go 1.26+" >&2; exit 1; }
command -v git >/dev/null || { echo "make test: git is not on PATH; install git" >&2; exit 1; }

# install_pkg BINARY PACKAGE: install a Debian package when its binary is
# missing and we can (root with apt-get); otherwise say so, and the tests that
# need it skip, naming it.
apt_updated=""
install_pkg() {
  command -v "$1" >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "make test: installing $2 (for $1)"
    if [ -z "$apt_updated" ]; then apt-get update -qq >/dev/null 2>&1 || true; apt_updated=1; fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1 \
      || echo "make test: could not install $2; tests that need $1 will skip" >&2
  else
    echo "make test: $1 is missing (install $2); tests that need it will skip" >&2
  fi
}
install_pkg caddy caddy

go mod download
go vet ./...
go test -race -count=1 -timeout 25m ./... "$@"
