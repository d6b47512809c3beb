#!/usr/bin/env bash
# Many tasks, one browser (issue 41): memory per task and first-call latency
# for N tasks at once, a Chromium per task (`browser.isolation: browser`)
# against a browser context per task in one shared Chromium (`context`).
# A measurement, not a test: prints a Markdown table (the README's).
#
#   scripts/bench-contexts.sh [--modes context,browser] [--counts 1,16,64] [--browser-max N]
#
# The binary is $CDP_SUPERVISOR_BIN, else target/release/cdp-supervisor
# (built with cargo when missing). Needs python3 (with venv) and Chromium.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$here/.."
binary="${CDP_SUPERVISOR_BIN:-}"
if [ -z "$binary" ]; then
    binary="${CARGO_TARGET_DIR:-$repo/target}/release/cdp-supervisor"
    if [ ! -x "$binary" ]; then
        echo "bench-contexts: building $binary (cargo build --release -p cdp-supervisor)" >&2
        (cd "$repo" && cargo build --release -p cdp-supervisor --bin cdp-supervisor)
    fi
fi
exec bash "$repo/crates/cdp-supervisor/tests/mcp_client/run.sh" "$binary" bench_contexts.py "$@"
