#!/usr/bin/env bash
# Installs Debian's Chromium when no Chromium is on PATH (chromium,
# chromium-browser or google-chrome). Needs root or sudo for apt-get.
set -euo pipefail
for b in chromium chromium-browser google-chrome; do
  if command -v "$b" >/dev/null 2>&1; then exit 0; fi
done
echo "ensure-chromium: no Chromium on PATH; installing Debian's chromium package" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y chromium
command -v chromium >/dev/null
