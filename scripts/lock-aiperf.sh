#!/usr/bin/env bash
# Regenerates scripts/aiperf-requirements.txt, the pinned and hash-checked
# closure of scripts/aiperf-requirements.in (aiperf==0.13.0), that
# scripts/setup-venv.sh installs with `pip install --require-hashes`.
# pip-tools runs in a throwaway venv; the project's .venv is not touched.
# The lock is resolved for the Python that runs this script (PYTHON,
# default python3; AIPerf 0.13.0 needs >=3.11,<3.14) on this platform.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
pip_tools=${PIP_TOOLS_VERSION:-7.6.2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$python" -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --quiet "pip-tools==$pip_tools"
# pip-compile writes the header with the command below, so the file says how
# to regenerate it; CUSTOM_COMPILE_COMMAND makes that this script.
CUSTOM_COMPILE_COMMAND="scripts/lock-aiperf.sh" \
  "$tmp/venv/bin/pip-compile" --quiet --generate-hashes --allow-unsafe --strip-extras \
  --no-emit-index-url --no-emit-find-links \
  --output-file scripts/aiperf-requirements.txt scripts/aiperf-requirements.in
n=$(grep -c '^[A-Za-z0-9]' scripts/aiperf-requirements.txt)
echo "lock-aiperf: scripts/aiperf-requirements.txt pins $n packages for $("$python" --version)" >&2
