#!/usr/bin/env bash
# gofmt check, go vet and staticcheck over the whole module (both build-tag
# sets), deadcode (a function no program or test reaches), and the macOS
# build: report, inventory and ci must build and work there (the Linux-only
# process code sits behind build tags in qual/proc). staticcheck and deadcode
# are pinned in go.mod's tool directives (go tool NAME); staticcheck.conf
# says which checks run. Any finding fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$bad" ]; then
  echo "gofmt would change:" >&2; echo "$bad" >&2; exit 1
fi
go vet ./...
go vet -tags integration ./...
go tool staticcheck ./...
go tool staticcheck -tags integration ./...
dead=$(go tool deadcode -test -tags integration ./...)
if [ -n "$dead" ]; then
  echo "deadcode: unreachable even from the tests:" >&2; echo "$dead" >&2; exit 1
fi
GOOS=darwin GOARCH=arm64 go build ./...
GOOS=darwin GOARCH=arm64 go vet ./...
