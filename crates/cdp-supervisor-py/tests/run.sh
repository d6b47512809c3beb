#!/usr/bin/env bash
# The Python package's tests: builds the wheel with maturin in a virtualenv,
# installs it, checks the tests' types (mypy --strict, against the package's
# stubs and py.typed) and runs them with pytest on real headless Chromium.
#
#   crates/cdp-supervisor-py/tests/run.sh [PYTEST ARGS…]
#
# CDP_PY_VENV: where the virtualenv lives (default:
#   ${TMPDIR:-/tmp}/cdp-supervisor-py-venv; reused across runs).
# MATURIN_PROFILE: the cargo profile of the wheel (default: dev, which
#   reuses what `cargo build` compiled).
# HERMES_AGENT_DIR: a checkout of the host agent; when set, its own
#   supervisor tests also run against cdp_supervisor.hermes (tests/host/run.sh;
#   its code is not in this repository, so without it they do not run).
# Needs python3 (with venv), network access for the first pip install, and
# Chromium (scripts/ensure-chromium.sh). Fails — never skips — without them.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
crate="$(dirname "$here")"
if ! command -v python3 >/dev/null; then
    echo "cdp-supervisor-py: python3 is missing; install it (with the venv module)" >&2
    exit 1
fi
if [ -z "${CHROMIUM:-}" ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
    echo "cdp-supervisor-py: Chromium is missing; run scripts/ensure-chromium.sh (or set CHROMIUM)" >&2
    exit 1
fi

venv="${CDP_PY_VENV:-${TMPDIR:-/tmp}/cdp-supervisor-py-venv}"
exec 9>"$venv.lock"
flock 9
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import pytest, mypy' 2>/dev/null || [ ! -x "$venv/bin/maturin" ]; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'maturin>=1.9,<2' 'pytest>=8,<10' 'mypy>=1.10,<3'
fi
# The host's tests talk CDP themselves (websockets) to drive the page.
if [ -n "${HERMES_AGENT_DIR:-}" ] && ! "$venv/bin/python" -c 'import websockets' 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'websockets>=13,<18'
fi

wheels="$(mktemp -d)"
trap 'rm -rf "$wheels"' EXIT
"$venv/bin/maturin" build --quiet --manifest-path "$crate/Cargo.toml" \
    --profile "${MATURIN_PROFILE:-dev}" --interpreter "$venv/bin/python" --out "$wheels"
"$venv/bin/pip" install --quiet --disable-pip-version-check --force-reinstall --no-deps "$wheels"/*.whl
flock -u 9
exec 9>&-

cd "$here"
"$venv/bin/mypy" --strict --no-error-summary . || {
    echo "cdp-supervisor-py: mypy --strict found type errors in the tests" >&2
    exit 1
}
if [ -z "${HERMES_AGENT_DIR:-}" ]; then
    echo "cdp-supervisor-py: the host agent's own tests are not run (HERMES_AGENT_DIR is not set)"
    exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
fi
"$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"
exec "$here/host/run.sh" "$venv/bin/python"
