#!/usr/bin/env bash
# The test command (make test): go test -race ./... with everything the tests
# need. Later layers start throwaway servers here; see DESIGN.md, Tests.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v go >/dev/null || { echo "make test: Go is not on PATH; install Go 1.26+ (https://go.dev/doc/install)" >&2; exit 1; }
command -v git >/dev/null || { echo "make test: git is not on PATH; install git" >&2; exit 1; }

go mod download
go vet ./...
go test -race -count=1 -timeout 20m ./... "$@"
