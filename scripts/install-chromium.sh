#!/usr/bin/env bash
# Installs headless Chromium from Debian's packages, for the HTML report's
# browser test (reports, build tag `integration`). Idempotent: exits at once
# when a chromium is already on PATH. Needs root (CI and developer machines
# run as root); prints the browser's version on success.
set -euo pipefail

find_chromium() {
  for b in chromium chromium-browser; do
    if command -v "$b" >/dev/null 2>&1; then
      command -v "$b"
      return 0
    fi
  done
  return 1
}

if bin=$(find_chromium); then
  echo "install-chromium: $bin already present ($("$bin" --version 2>/dev/null || echo 'version unknown'))" >&2
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "install-chromium: not root and no sudo; install Debian's chromium package by hand" >&2
    exit 3
  fi
fi

echo "install-chromium: installing Debian's chromium package" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null

if ! bin=$(find_chromium); then
  echo "install-chromium: apt-get finished but no chromium on PATH" >&2
  exit 3
fi
echo "install-chromium: $bin ($("$bin" --version 2>/dev/null || echo 'version unknown'))" >&2
