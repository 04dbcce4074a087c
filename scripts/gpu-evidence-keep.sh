#!/usr/bin/env bash
# scripts/gpu-evidence-keep.sh FILES_AT DEST: what the repository keeps of one
# scripts/gpu-evidence.sh run (docs/gpu.md). FILES_AT is the folder the device
# tool brought back (summary.txt, nvidia-smi.txt, packs.tar.gz,
# evidence.tar.gz); DEST is docs/evidence/h200 (or h200-x2, h200-x4).
#
# What the repository keeps is meant for others to read, so it is the public
# evidence only: each run's evidence pack (trtmc-qual export on the GPU
# machine: paths as named roots, no host or user name, sealed again), of
# which the small files are kept - the group tables (results.md/csv/json),
# the completion summary, PACK.json, every result.json and manifest.json -
# and the summary of checks and the GPU list with the GPU machine's work
# directory written as $W, and the sampled compute processes (program base
# names only). evidence.tar.gz (the private evidence: raw logs,
# exact argv) is never kept.
#
# Before keeping a pack it is re-judged here, on another machine than the
# one that wrote it: `trtmc-qual report --from PACK --group G --rejudge`
# must give every row the verdict and figures the pack's own results.json
# holds (rejudge.txt records each). Needs bin/trtmc-qual (make build).
set -euo pipefail
src=${1:?usage: scripts/gpu-evidence-keep.sh FILES_AT DEST}
dest=${2:?usage: scripts/gpu-evidence-keep.sh FILES_AT DEST}
cd "$(dirname "$0")/.."
for f in summary.txt nvidia-smi.txt packs.tar.gz; do
  [ -f "$src/$f" ] || { echo "gpu-evidence-keep: $src/$f is missing" >&2; exit 2; }
done
[ -x bin/trtmc-qual ] || { echo "gpu-evidence-keep: bin/trtmc-qual is missing (make build)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu-keep.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/packs"
tar -xzf "$src/packs.tar.gz" -C "$tmp/packs"
rm -rf "$dest"
mkdir -p "$dest"
sed -E 's#/tmp/gpu-evidence\.[A-Za-z0-9]+#$W#g' "$src/summary.txt" >"$dest/summary.txt"
cp "$src/nvidia-smi.txt" "$dest/"
: >"$dest/rejudge.txt"
status=0
for pack in "$tmp"/packs/*.tar.gz; do
  run=$(basename "$pack" .tar.gz)
  mkdir -p "$tmp/x/$run"
  tar -xzf "$pack" -C "$tmp/x/$run"
  root=$(find "$tmp/x/$run" -mindepth 1 -maxdepth 1 -type d | head -1)
  group=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["group"])' "$root/PACK.json")
  # The re-judge: the pack's rows re-derived from its raw artifacts here.
  if bin/trtmc-qual report --from "$root" --group "$group" --rejudge -o json >"$tmp/$run.rejudged.json" 2>"$tmp/$run.rejudge.log"; then rc=0; else rc=$?; fi
  python3 - "$root/$group/results.json" "$tmp/$run.rejudged.json" "$run" "$rc" >>"$dest/rejudge.txt" <<'PY' || status=1
import json, sys
orig, again, run, rc = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4]
def rows(d):
    out = {}
    for r in d["rows"]:
        res = r.get("result") or {}
        lat = res.get("latency_ms") or {}
        def fig(series):
            s = lat.get(series) or {}
            return s.get("p50"), s.get("p95")
        out[r["profile"]] = (r.get("verdict"), fig("http"), fig("task"), res.get("images_per_sec"),
                             (res.get("requests") or {}).get("matched"))
    return out
a, b = rows(orig), rows(again)
bad = [p for p in a if a[p] != b.get(p)] + [p for p in b if p not in a]
for p in sorted(a):
    print("%s %s: %s%s" % ("PASS" if p not in bad else "FAIL", run, p, "" if p not in bad else " (pack %s, re-judged %s)" % (a[p], b.get(p))))
print("%s %s: re-judged here, exit %s, %d row(s) as the pack holds them" % ("PASS" if not bad else "FAIL", run, rc, len(a)))
sys.exit(1 if bad else 0)
PY
  # The small public files of the pack.
  (cd "$root" && find . -type f \( -name result.json -o -name manifest.json -o -name 'results.md' -o -name 'results.csv' \
      -o -name 'results.json' -o -name PACK.json -o -name summary.md \) -printf '%P\n') | sort | while read -r f; do
    mkdir -p "$dest/$run/$(dirname "$f")"
    cp "$root/$f" "$dest/$run/$f"
  done
done
if [ -f "$src/evidence.tar.gz" ] && tar -xzf "$src/evidence.tar.gz" -C "$tmp" ./samples.csv 2>/dev/null; then
  # The process name nvidia-smi gives is the program's path on the GPU
  # machine: only its base name is kept (no path of that host).
  grep ', apps, ' "$tmp/samples.csv" | awk 'BEGIN { FS = OFS = ", " } { n = split($4, p, "/"); $4 = p[n]; print }' |
    gzip -9n >"$dest/compute-apps-samples.csv.gz" || true
fi
cat "$dest/rejudge.txt" >&2
du -sh "$dest" >&2
exit $status
