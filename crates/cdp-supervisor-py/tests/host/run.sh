#!/usr/bin/env bash
# The host agent's own supervisor tests (its tests/tools/test_browser_supervisor.py,
# real headless Chromium) run against cdp_supervisor.hermes: the host's
# tools/browser_supervisor.py is replaced by the one-line re-export beside
# this script, its tool handlers and tests run unchanged (hermes_host.py).
#
#   HERMES_AGENT_DIR=/path/to/hermes-agent crates/cdp-supervisor-py/tests/host/run.sh PYTHON [PYTEST ARGS…]
#
# HERMES_AGENT_DIR: a checkout of the host agent (NousResearch/hermes-agent,
#   MIT); read, never written (no cache, no bytecode). Its code is not in this
#   repository, so CI runs this only where a checkout is provided
#   (tests/run.sh calls it when HERMES_AGENT_DIR is set).
# PYTHON: an interpreter with the cdp_supervisor wheel, pytest and websockets
#   installed (tests/run.sh's virtualenv).
# Fails, never skips, without Chromium or the checkout.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${1:?usage: HERMES_AGENT_DIR=… $0 PYTHON [PYTEST ARGS…]}"
shift
host="${HERMES_AGENT_DIR:?set HERMES_AGENT_DIR to a checkout of the host agent}"
tests="$host/tests/tools/test_browser_supervisor.py"
if [ ! -f "$tests" ]; then
    echo "cdp-supervisor-py: $tests is missing; HERMES_AGENT_DIR must be a host agent checkout" >&2
    exit 1
fi
chromium="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
if [ -z "$chromium" ]; then
    echo "cdp-supervisor-py: Chromium is missing; run scripts/ensure-chromium.sh (or set CHROMIUM)" >&2
    exit 1
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# The host's fixture launches the first of google-chrome / chromium on PATH
# with no --no-sandbox (it runs as a desktop user); as root (CI) Chromium
# refuses to start without it, and the fixture would skip every test. So
# both names lead to our Chromium with that one flag added.
mkdir "$scratch/bin"
printf '#!/bin/sh\nexec "%s" --no-sandbox "$@"\n' "$chromium" >"$scratch/bin/chromium"
chmod +x "$scratch/bin/chromium"
ln -s chromium "$scratch/bin/google-chrome"
# An empty ini: the host's own pytest settings deselect its browser tests
# (-m 'not integration') and its conftests set up the whole agent; this
# file needs neither (--noconftest).
printf '[pytest]\n' >"$scratch/pytest.ini"

cd "$host"
PATH="$scratch/bin:$PATH" \
    PYTHONPATH="$here:$host${PYTHONPATH:+:$PYTHONPATH}" \
    PYTHONDONTWRITEBYTECODE=1 \
    HERMES_E2E_BROWSER=1 \
    "$python" -m pytest -c "$scratch/pytest.ini" --rootdir "$host" --noconftest \
    -p no:cacheprovider -p hermes_host -q -rs "$tests" "$@"
