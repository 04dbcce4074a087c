#!/usr/bin/env bash
# Runs every Fuzz target of the module for a bounded budget each: a count of
# inputs (`make test` uses 10000x, a few seconds a target) or a duration
# (`make fuzz` uses FUZZTIME=60s).
# Seed corpora live in each package's testdata/fuzz/; a crash found is
# written there too and becomes a regression test of the plain `go test`.
# The list is every Fuzz function of the module (go test -list), among them
# text.FuzzCheckName (the one id and group-name check) and
# families.FuzzCheckArgv (the families argv validation).
#
# Go 1.26's fuzzing coordinator can end a clean duration-bounded run with a
# bare "context deadline exceeded" (golang/go#75804): no failing input was
# written. Such a run is retried, up to three attempts; a count budget avoids
# it. A run that found a failing input always fails.
#
# FuzzRejudgeTamper re-derives a whole evidence directory per input (tens of
# inputs a second, not thousands): under a count budget it runs
# ${FUZZ_REJUDGE_COUNT:-1000}x instead.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${1:-10000x}
n=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    budget=$fuzztime
    if [ "$target" = FuzzRejudgeTamper ] && [ "${fuzztime%x}" != "$fuzztime" ]; then
      budget=${FUZZ_REJUDGE_COUNT:-1000}x
    fi
    for attempt in 1 2 3; do
      echo "fuzz: $pkg $target ($budget, attempt $attempt)" >&2
      if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$budget" "$pkg" >"$log" 2>&1; then
        cat "$log"; break
      fi
      cat "$log"
      if grep -q 'Failing input written to' "$log" || ! grep -q 'context deadline exceeded' "$log" || [ "$attempt" = 3 ]; then
        echo "fuzz: $pkg $target failed" >&2
        exit 1
      fi
      echo "fuzz: $target ended with the fuzzer's deadline race and no failing input; retrying" >&2
    done
    n=$((n+1))
  done
done
echo "fuzz: $n target(s) ran for $fuzztime each" >&2
