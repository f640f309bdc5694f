# git-binky: one isolated local world per git worktree.
GO      ?= go
BIN     := $(CURDIR)/bin
STATICCHECK_VERSION := v0.8.2
# Static binaries start faster (no dynamic loader), and `git binky env` runs
# on every shell prompt. (Only for build and install: -race needs cgo.)
STATIC  := CGO_ENABLED=0
# One stamp for the CLI and the daemon built together: a CLI replaces a
# running daemon of any other build.
LDFLAGS := -X github.com/git-binky/git-binky/version.build=$(shell date +%s)

.PHONY: all build install test bench lint demo fuzz cross clean servers ferretdb

all: build

## build: compile git-binky (the launcher git runs), binky (the command line) and binkyd (the daemon) into ./bin
build:
	$(STATIC) $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

# Where make install puts the manual pages: `git binky --help` is git's
# `man git-binky`, which finds them under $(PREFIX)/share/man when that is on
# the man path (~/.local/share/man is, on most systems, once it exists).
PREFIX  ?= $(HOME)/.local
MANDIR  ?= $(PREFIX)/share/man

## install: put git-binky, binky and binkyd on PATH via go install, and its man pages in MANDIR (PREFIX default ~/.local)
install:
	$(STATIC) $(GO) install -ldflags "$(LDFLAGS)" ./cmd/...
	$(GO) run -tags manpage ./cmd/binky man "$(MANDIR)/man1"
	@echo "installed git-binky, binky and binkyd into $$($(GO) env GOPATH)/bin (or GOBIN): put it on PATH, then try: git binky --version"
	@echo "installed its manual into $(MANDIR)/man1: git binky --help opens it (if man does not find it: export MANPATH=\"$(MANDIR):\$$MANPATH\")"

## test: go test -race ./... against real throwaway servers (installed when missing)
test:
	./scripts/test.sh

## cross: build and vet the binaries for macOS and Windows (amd64, arm64), compile every package's tests there, and build them for 32-bit Linux
CROSS := darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
# Built only: the launcher's file identity reads stat fields whose widths
# differ on 32-bit Linux.
CROSS_BUILD := linux/386 linux/arm
cross:
	@set -e; for t in $(CROSS); do os=$${t%/*}; arch=$${t#*/}; echo "cross: build and vet $$os/$$arch"; \
		GOOS=$$os GOARCH=$$arch $(STATIC) $(GO) build -o /dev/null ./cmd/git-binky; \
		GOOS=$$os GOARCH=$$arch $(STATIC) $(GO) build -o /dev/null ./cmd/binky; \
		GOOS=$$os GOARCH=$$arch $(STATIC) $(GO) build -o /dev/null ./cmd/binkyd; \
		GOOS=$$os GOARCH=$$arch $(STATIC) $(GO) vet ./...; \
	done
	@set -e; for t in $(CROSS_BUILD); do os=$${t%/*}; arch=$${t#*/}; echo "cross: build $$os/$$arch"; \
		for c in git-binky binky binkyd; do GOOS=$$os GOARCH=$$arch $(STATIC) $(GO) build -o /dev/null ./cmd/$$c; done; \
	done
	@set -e; out=$$(mktemp -d); trap 'rm -rf "$$out"' EXIT; for os in darwin windows; do \
		echo "cross: compile every package's tests for $$os"; \
		GOOS=$$os $(STATIC) $(GO) test -c -o "$$out/" ./... >"$$out/log" 2>&1 || { cat "$$out/log"; exit 1; }; \
	done

## servers: build the servers binky runs itself that no package provides (FerretDB) into SERVER_BIN, where binky looks
SERVER_BIN ?= $${XDG_CACHE_HOME:-$$HOME/.cache}/git-binky/bin
servers: ferretdb

## ferretdb: build FerretDB v1.24.2 (the managed mongodb, on the managed postgres) into SERVER_BIN, once
ferretdb:
	./scripts/build-ferretdb.sh "$(SERVER_BIN)"

## bench: print the performance tables (env latency, ...)
bench: build ferretdb
	$(GO) run ./bench -bin $(BIN)

## lint: gofmt, go vet, staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

## demo: the headline end to end on a scratch repository made from examples/notes: two worlds, each with its own Postgres and Redis slice
demo: build
	$(STATIC) $(GO) build -o $(BIN)/binky-notes ./examples/notes
	./scripts/demo.sh $(BIN)

## fuzz: run each fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	$(GO) test ./world -run '^$$' -fuzz '^FuzzParseConfig$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./world -run '^$$' -fuzz '^FuzzInterpolate$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
	$(GO) test ./envsnap -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s

clean:
	rm -rf $(BIN)
