#!/usr/bin/env bash
# Runs every Fuzz target of the module for a bounded time each (default 4s).
# Seed corpora live in each package's testdata/fuzz/; a crash found is
# written there too and becomes a regression test of the plain `go test`.
#
# Go's fuzzer can end a clean run with "context deadline exceeded" when the
# -fuzztime deadline lands while a worker is between inputs (golang/go#48127
# family). Such a run wrote no failing input; it is retried once. A run that
# found a failing input always fails.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-4s}
n=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    for attempt in 1 2; do
      echo "fuzz: $pkg $target ($fuzztime, attempt $attempt)" >&2
      if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >"$log" 2>&1; then
        cat "$log"; break
      fi
      cat "$log"
      if grep -q 'Failing input written to' "$log" || ! grep -q 'context deadline exceeded' "$log" || [ "$attempt" = 2 ]; then
        echo "fuzz: $pkg $target failed" >&2
        exit 1
      fi
      echo "fuzz: $target ended with the fuzzer's deadline race and no failing input; retrying once" >&2
    done
    n=$((n+1))
  done
done
echo "fuzz: $n target(s) ran for $fuzztime each" >&2
