#!/usr/bin/env bash
# make golden: rewrite every golden file, then review `git diff`.
#
# The golden files belong to the packages whose tests use reports/golden
# (the one golden helper and its -update flag); only those get -update,
# every test of theirs runs (T=regex narrows it).
set -euo pipefail
cd "$(dirname "$0")/.."
mod=$(go list -m)
mapfile -t pkgs < <(go list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
  awk -v g="$mod/reports/golden" '{ for (i = 2; i <= NF; i++) if ($i == g) { print $1; break } }')
[ "${#pkgs[@]}" -gt 0 ] || { echo "golden: no package uses reports/golden" >&2; exit 1; }
echo "golden: ${pkgs[*]}" >&2
go test -count=1 -run "${T:-.}" "${pkgs[@]}" -update
echo "golden: done; review git diff" >&2
