#!/usr/bin/env bash
# gofmt check, go vet and staticcheck over the whole module (both build-tag
# sets), deadcode (a function no program or test reaches, and product code
# only tests reach: see below), gocyclo (no function above 30), and the macOS
# build: report, inventory and ci must build and work there (the Linux-only
# process code sits behind build tags in families/proc). staticcheck, deadcode
# and gocyclo are pinned in go.mod's tool directives (go tool NAME); staticcheck.conf
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
# Without -test, deadcode lists what only tests reach. Product code holds
# none of it but the test-helper packages (…test/, reports/golden/) and
# these three, each a deliberate API a test of another package uses:
#   schemas.Generate (schemas/generate.go): the schema generator, which
#     cmd/trtmc-qual's schema tests run to check and -update schemas/*.json;
#   qual.Prepared.RunKey: the run key qual/slurm's resume test writes into
#     a finished row (the product compares with it inside Finished);
#   imaging.Image.RGB: the pixel accessor the imaging and detect tests read
#     pictures with (the detector walks Pix in order).
# Anything else exported for tests belongs in a …test package or a _test.go.
testonly=$(go tool deadcode ./... |
  grep -vE '^[^:]*(test|/golden)/[^/:]*\.go:' |
  grep -vE '^schemas/generate\.go:|unreachable func: (Prepared\.RunKey|Image\.RGB)$' || true)
if [ -n "$testonly" ]; then
  echo "deadcode: product code only tests reach (move it to a …test package or a _test.go, or justify it in scripts/lint.sh):" >&2
  echo "$testonly" >&2; exit 1
fi
# No function above cyclomatic 30 outside tests (gocyclo, pinned in go.mod):
# a long checklist is split into named steps. No exception.
cyclo=$(go tool gocyclo -over 30 -ignore '_test\.go$|/testdata/' . || true)
if [ -n "$cyclo" ]; then
  echo "gocyclo: functions above 30 (split them into named steps):" >&2; echo "$cyclo" >&2; exit 1
fi
GOOS=darwin GOARCH=arm64 go build ./...
GOOS=darwin GOARCH=arm64 go vet ./...
