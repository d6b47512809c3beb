#!/usr/bin/env bash
# What one agent step costs (issue 33), on real headless Chromium through the
# MCP Python SDK: browser_snapshot time, tokens, refs and lines on a generated
# rustdoc-like page (3,000 links, hidden menus, an OOPIF) and, when present,
# the real rustdoc `Vec` page and python3-doc's `stdtypes`; the server's RSS
# idle, peak and after; browser_click latency. Builds nothing; about 1–3 min.
#
#   cargo build --release -p cdp-supervisor
#   scripts/bench-step.sh target/release/cdp-supervisor [--json FILE] [--rustdoc DIR] [--pydoc DIR]
#
# Tokens are cl100k when the Python running the bench can import
# `bpe-openai`: the peers' venv (${PEERS_DIR:-$TMPDIR/peers}/venv, made by
# ../shared/peers/run.sh) is used when it has it and `mcp`; else the MCP
# client venv of tests/mcp_client/run.sh, which counts bytes/4 (the table
# says which). BENCH_PYTHON picks another interpreter (it needs `mcp` 2.x).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tests="$here/../crates/cdp-supervisor/tests/mcp_client"
if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
    echo "usage: $0 PATH/TO/cdp-supervisor [--json FILE] [--rustdoc DIR] [--pydoc DIR]" >&2
    exit 2
fi
if [ ! -x "$1" ]; then
    echo "bench-step: $1 is not an executable; build it with cargo build --release -p cdp-supervisor" >&2
    exit 1
fi
binary="$(realpath "$1")"
shift
peers_python="${PEERS_DIR:-${TMPDIR:-/tmp}/peers}/venv/bin/python"
if [ -n "${BENCH_PYTHON:-}" ]; then
    exec "$BENCH_PYTHON" "$tests/bench_step.py" "$binary" "$@"
elif [ -x "$peers_python" ] && "$peers_python" -c 'from mcp import Client; import bpe_openai' 2>/dev/null; then
    exec "$peers_python" "$tests/bench_step.py" "$binary" "$@"
fi
exec bash "$tests/run.sh" "$binary" bench_step.py "$@"
