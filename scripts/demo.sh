#!/usr/bin/env bash
# The main job on the built-in reference target: qualifies the vlm and
# detection groups of inventory/reference.yaml with the real AIPerf 0.13.0
# against trtmc-refserver, writing evidence under OUT (default out/demo) and
# printing each group's table. `make demo` runs setup and build first.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/demo}
# The venv `make setup` filled (TRTMC_QUAL_VENV, as scripts/test.sh reads
# it): its AIPerf and tokenizer, unless the caller named others.
venv=${TRTMC_QUAL_VENV:-.venv}
export TRTMC_QUAL_AIPERF=${TRTMC_QUAL_AIPERF:-$venv/bin/aiperf}
export TRTMC_QUAL_TOKENIZER=${TRTMC_QUAL_TOKENIZER:-$venv/tokenizer}
status=0
for group in vlm detection; do
  echo "== trtmc-qual run --group $group --out $out" >&2
  bin/trtmc-qual run --group "$group" --out "$out" --format md || status=$?
done
echo "demo: evidence in $out/<group>/<profile>/, tables in $out/<group>/results.{md,csv,json,html}" >&2
exit $status
