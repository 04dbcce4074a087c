#!/usr/bin/env bash
# gofmt check and go vet over the whole module (both build-tag sets), and
# the macOS build: report, inventory and ci must build and work there (the
# Linux-only process code sits behind build tags in qual/proc).
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$bad" ]; then
  echo "gofmt would change:" >&2; echo "$bad" >&2; exit 1
fi
go vet ./...
go vet -tags integration ./...
GOOS=darwin GOARCH=arm64 go build ./...
GOOS=darwin GOARCH=arm64 go vet ./...
