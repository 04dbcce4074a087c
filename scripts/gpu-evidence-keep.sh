#!/usr/bin/env bash
# scripts/gpu-evidence-keep.sh FILES_AT DEST: what the repository keeps of one
# scripts/gpu-evidence.sh run (docs/gpu.md). FILES_AT is the folder the device
# tool brought back (summary.txt, nvidia-smi.txt, evidence.tar.gz); DEST is
# docs/evidence/h200 (or h200-x2, h200-x4). Kept, small: the summary, the GPU
# list, each run's group tables (results.md/csv/json), every result.json and
# manifest.json, and the nvidia-smi samples of compute processes (gzip).
# Logs and AIPerf exports stay in the tarball, not in the repository.
set -euo pipefail
src=${1:?usage: scripts/gpu-evidence-keep.sh FILES_AT DEST}
dest=${2:?usage: scripts/gpu-evidence-keep.sh FILES_AT DEST}
for f in summary.txt nvidia-smi.txt evidence.tar.gz; do
  [ -f "$src/$f" ] || { echo "gpu-evidence-keep: $src/$f is missing" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu-keep.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$src/evidence.tar.gz" -C "$tmp"
rm -rf "$dest"
mkdir -p "$dest"
cp "$src/summary.txt" "$src/nvidia-smi.txt" "$dest/"
# Folders a re-run set aside (ID.<UTC time>) belong to the earlier run: not kept.
(cd "$tmp" && find . -type d -regex '.*\.[0-9]+T[0-9]+Z' -prune -o -type f \( -name result.json -o -name manifest.json -o -name 'results.md' \
    -o -name 'results.csv' -o -name 'results.json' \) -printf '%P\n') | sort | while read -r f; do
  mkdir -p "$dest/$(dirname "$f")"
  cp "$tmp/$f" "$dest/$f"
done
if [ -f "$tmp/samples.csv" ]; then
  grep ', apps, ' "$tmp/samples.csv" | gzip -9n >"$dest/compute-apps-samples.csv.gz" || true
fi
du -sh "$dest" >&2
