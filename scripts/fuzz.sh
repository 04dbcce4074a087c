#!/usr/bin/env bash
# Runs every Fuzz target of the module for a bounded time each (default 4s).
# Seed corpora live in each package's testdata/fuzz/; crashes found are
# written there too and become regression tests of the plain `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-4s}
n=0
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "fuzz: $pkg $target ($fuzztime)" >&2
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
    n=$((n+1))
  done
done
echo "fuzz: $n target(s) ran for $fuzztime each" >&2
