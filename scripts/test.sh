#!/usr/bin/env bash
# Every test, as CI runs it: installs what the tests need (the AIPerf venv,
# the local tokenizer, headless Chromium), builds, checks formatting, runs the
# unit and integration tiers together, then a bounded fuzz pass.
# Under CI=true a missing AIPerf or browser fails the run; it is never skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
scripts/setup-venv.sh
if [ -x scripts/install-chromium.sh ]; then scripts/install-chromium.sh; fi
make build
scripts/lint.sh
# The GPU reference family's Python: the HTTP layer, payload rules and bundle
# format run everywhere; its model tests skip visibly without torch and a GPU
# (scripts/gpu-evidence.sh runs them on the H200 machine).
.venv/bin/python -m unittest discover -s families/refgpu/tests -t families/refgpu/tests
export TRTMC_QUAL_AIPERF="$PWD/.venv/bin/aiperf"
export TRTMC_QUAL_TOKENIZER="$PWD/.venv/tokenizer"
go test -race -tags integration -count=1 -timeout 40m ./...
scripts/fuzz.sh "${FUZZTIME:-10000x}"
