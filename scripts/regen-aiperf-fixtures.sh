#!/usr/bin/env bash
# Regenerates qual/aiperf/testdata/{chat,image_retrieval,all_failed} from real
# AIPerf 0.13.0 runs against trtmc-refserver (the integration tests of
# qual/aiperf with -regen-fixtures), then rewrites the parser golden files
# derived from them. Review the result with `git diff --stat qual/aiperf/testdata`.
#
# Needs the project venv (scripts/setup-venv.sh). Offline is fine.
set -euo pipefail
cd "$(dirname "$0")/.."
export LC_ALL=C
scripts/setup-venv.sh
export TRTMC_QUAL_AIPERF="${TRTMC_QUAL_AIPERF:-$PWD/.venv/bin/aiperf}"
export TRTMC_QUAL_TOKENIZER="${TRTMC_QUAL_TOKENIZER:-$PWD/.venv/tokenizer}"
go test -tags integration -count=1 -run 'TestIntegration(Profile|AllFailed)$' ./qual/aiperf -regen-fixtures
go test -count=1 -run Golden ./qual/aiperf -update
echo "regen-aiperf-fixtures: done; review git diff qual/aiperf/testdata" >&2
