#!/usr/bin/env bash
# scripts/gpu-pack.sh DIR: everything scripts/gpu-evidence.sh needs on the
# H200 machine that the repository's tracked files do not hold, under DIR
# (git-ignored; carried with the device tool's `carry`), in under 60 MiB:
#
#   DIR/tools.tar.xz   bin/trtmc-qual and bin/trtmc-refserver built stripped
#                      (-trimpath -ldflags "-s -w") for linux/amd64, and the
#                      local tokenizer AIPerf's chat endpoint needs (.venv/tokenizer)
#   DIR/wheels/*.whl   the cp312 manylinux wheels of aiperf==0.13.0 and its
#                      dependencies, minus the packages the machine's image
#                      already has (scripts/gpu-machine-packages.txt)
#   DIR/MANIFEST       sha256 and size of every file
#
# The machine reaches no registry, so everything is downloaded here. Re-running
# is cheap (pip's cache). Knobs: AIPERF_VERSION (0.13.0), GPU_PACK_MAX_MIB (60).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/gpu-pack.sh DIR}
version=${AIPERF_VERSION:-0.13.0}
max_mib=${GPU_PACK_MAX_MIB:-60}
say() { echo "gpu-pack: $*" >&2; }

[ -d .venv/tokenizer ] || scripts/setup-venv.sh
rm -rf "$dir"
mkdir -p "$dir/wheels"
stage=$(mktemp -d "${TMPDIR:-/tmp}/gpu-pack.XXXXXX")
trap 'rm -rf "$stage"' EXIT

say "building stripped linux/amd64 binaries"
v=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
c=$(git rev-parse HEAD 2>/dev/null || echo unknown)
GOOS=linux GOARCH=amd64 CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$v -X main.commit=$c" \
  -o "$stage/bin/" ./cmd/trtmc-qual ./cmd/trtmc-refserver
cp -r .venv/tokenizer "$stage/tokenizer"
# xz through Python's tarfile (lzma is in the standard library; the GPU
# machine need not have an xz binary): half the size of gzip here.
python3 -c 'import sys, tarfile
with tarfile.open(sys.argv[1], "w:xz", preset=9) as t:
    for name in ("bin", "tokenizer"):
        t.add(sys.argv[2] + "/" + name, arcname=name)' "$dir/tools.tar.xz" "$stage"
say "tools.tar.xz: $(du -k "$dir/tools.tar.xz" | cut -f1) KiB (binaries $(du -sk "$stage/bin" | cut -f1) KiB unpacked)"

say "downloading aiperf==$version and its dependencies as cp312 manylinux wheels"
py=${PYTHON:-python3}
plat=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  plat+=(--platform "$p")
done
"$py" -m pip download --quiet --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none \
  "${plat[@]}" -d "$stage/wheels" "aiperf==$version"

# Keep only what the machine lacks (names compared as pip normalises them),
# and leave out GPU_PACK_DROP (default: plotly and dash, 17 MiB): only
# `aiperf plot` and its dashboard import them (aiperf/plot/handlers,
# exporters and dashboard), never `aiperf profile` -- a reference run with
# both imports blocked qualified and attempted neither (2026-12-05) -- and
# without them the pack and the tracked files fit the 64 MiB a call carries.
norm() { tr 'A-Z' 'a-z' | sed -E 's/[-_.]+/-/g'; }
have=$(grep -v '^#' scripts/gpu-machine-packages.txt | norm | sort -u)
drop=$(tr ' ' '\n' <<<"${GPU_PACK_DROP-plotly dash}" | norm | sort -u)
kept=0 skipped=0
for w in "$stage"/wheels/*.whl; do
  name=$(basename "$w" | cut -d- -f1 | norm)
  if grep -qxF "$name" <<<"$drop"; then
    say "left out: $(basename "$w") (GPU_PACK_DROP)"
  elif grep -qxF "$name" <<<"$have"; then
    skipped=$((skipped + 1))
  else
    cp "$w" "$dir/wheels/"
    kept=$((kept + 1))
  fi
done
say "wheels: $kept carried, $skipped already on the machine ($(du -sk "$dir/wheels" | cut -f1) KiB)"
ls "$dir/wheels" | grep -q '^aiperf-' || { say "aiperf's own wheel is missing"; exit 1; }

(cd "$dir" && find . -type f ! -name MANIFEST -printf '%P\n' | sort | while read -r f; do
  printf '%s  %s  %s\n' "$(sha256sum "$f" | cut -d' ' -f1)" "$(stat -c %s "$f")" "$f"
done) >"$dir/MANIFEST"
total=$(du -sk "$dir" | cut -f1)
tree=$(($(git ls-files -z | xargs -0 cat | wc -c) / 1024))
say "total: $((total / 1024)) MiB in $dir; the repository's tracked files: $((tree / 1024)) MiB (64 MiB travel in all)"
if [ "$total" -gt $((max_mib * 1024)) ]; then
  say "over the $max_mib MiB budget"
  exit 1
fi
echo "$dir"
