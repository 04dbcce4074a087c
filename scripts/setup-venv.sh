#!/usr/bin/env bash
# Creates the project's own Python virtual environment with the pinned AIPerf,
# idempotently, and builds the local tokenizer AIPerf's chat endpoint needs
# (the machines are offline to the model hub). Re-running is cheap.
#
# What is installed is scripts/aiperf-requirements.txt: every package of
# aiperf==0.13.0's closure pinned to one version with its sha256 hashes
# (`pip install --require-hashes`), so two machines get the same environment
# whatever PyPI serves that day. scripts/lock-aiperf.sh regenerates it.
# The venv records the digest of the lock it was installed from
# ($venv/.trtmc-qual-lock.sha256); a changed lock reinstalls.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${TRTMC_QUAL_VENV:-.venv}
version=${AIPERF_VERSION:-0.13.0}
python=${PYTHON:-python3}
lock=scripts/aiperf-requirements.txt
stamp="$venv/.trtmc-qual-lock.sha256"

if ! grep -q "^aiperf==$version " "$lock"; then
  echo "setup: $lock does not pin aiperf==$version; run scripts/lock-aiperf.sh" >&2
  exit 3
fi
want=$(sha256sum "$lock" | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv" >&2
  "$python" -m venv "$venv"
fi
have_lock=$(cat "$stamp" 2>/dev/null || true)
if [ "$have_lock" != "$want" ]; then
  echo "setup: installing $lock (aiperf==$version, pinned and hash-checked) into $venv" >&2
  # --no-deps: the lock is the whole closure; nothing unpinned may come in.
  "$venv/bin/pip" install --quiet --require-hashes --no-deps -r "$lock"
  "$venv/bin/pip" check >&2
  printf '%s\n' "$want" > "$stamp"
fi
have=$("$venv/bin/aiperf" --version)
if [ "$have" != "$version" ]; then
  echo "setup: $venv/bin/aiperf --version says $have, want $version" >&2
  exit 3
fi
if [ -f scripts/build-tokenizer.py ]; then
  "$venv/bin/python" scripts/build-tokenizer.py --out "$venv/tokenizer" >&2
fi
echo "setup: aiperf $have ready in $venv (lock sha256 ${want:0:12})" >&2
