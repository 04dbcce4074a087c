#!/usr/bin/env bash
# Every test, as CI runs it: installs what the tests need (the AIPerf venv,
# the local tokenizer, headless Chromium), builds, checks formatting, runs the
# unit and integration tiers together, then a bounded fuzz pass.
# Under CI=true a missing AIPerf or browser fails the run; it is never skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
venv=${TRTMC_QUAL_VENV:-.venv}
case $venv in /*) ;; *) venv="$PWD/$venv" ;; esac
export TRTMC_QUAL_VENV=$venv
scripts/setup-venv.sh
if [ -x scripts/install-chromium.sh ]; then scripts/install-chromium.sh; fi
make build
scripts/lint.sh
export TRTMC_QUAL_AIPERF="$venv/bin/aiperf"
export TRTMC_QUAL_TOKENIZER="$venv/tokenizer"
go test -race -tags integration -count=1 -timeout 40m ./...
scripts/fuzz.sh "${FUZZTIME:-10000x}"
