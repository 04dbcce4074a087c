#!/usr/bin/env bash
# Creates the project's own Python virtual environment with the pinned AIPerf,
# idempotently, and builds the local tokenizer AIPerf's chat endpoint needs
# (the machines are offline to the model hub). Re-running is cheap.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${TRTMC_QUAL_VENV:-.venv}
version=${AIPERF_VERSION:-0.13.0}
python=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv" >&2
  "$python" -m venv "$venv"
fi
have=$("$venv/bin/aiperf" --version 2>/dev/null || true)
if [ "$have" != "$version" ]; then
  echo "setup: installing aiperf==$version into $venv (have: ${have:-none})" >&2
  "$venv/bin/pip" install --quiet "aiperf==$version"
fi
have=$("$venv/bin/aiperf" --version)
if [ "$have" != "$version" ]; then
  echo "setup: $venv/bin/aiperf --version says $have, want $version" >&2
  exit 3
fi
if [ -f scripts/build-tokenizer.py ]; then
  "$venv/bin/python" scripts/build-tokenizer.py --out "$venv/tokenizer" >&2
fi
echo "setup: aiperf $have ready in $venv" >&2
