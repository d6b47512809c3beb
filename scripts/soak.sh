#!/usr/bin/env bash
# The soak run (issue 31; DESIGN "At scale"): the MCP HTTP server driven for
# N minutes by K concurrent sessions through the official MCP Python SDK,
# pages firing every dialog kind in every kind of frame and tab, chaos on a
# seeded schedule (socket cuts, renderer crashes, browser restarts, clients
# that vanish or send garbage), invariants checked all along, then 16
# sessions at once (the 17th gets 503). Prints the chaos schedule first and
# the figures last; exits 1 on any invariant violation (each printed with
# the seed: rerun with --seed S to replay the same schedule).
#
#   scripts/soak.sh [--minutes N] [--sessions K] [--seed S] [--many M] [--many-seconds S]
#                   [--isolation browser|context]
#
# Defaults: 10 minutes, 4 sessions, a random seed, 16 sessions for 30 s at
# the end (--many 0 skips that phase), each with a browser of its own
# (--isolation context: each in a browser context of one shared browser,
# DESIGN "Many tasks, one browser"; the run then also checks that exactly
# one browser process serves them). The binary is $CDP_SUPERVISOR_BIN,
# else target/release/cdp-supervisor, built with cargo when missing. Needs
# python3 (with venv), Chromium on PATH (or CHROMIUM=path), and network
# access for the first `pip install mcp` (tests/mcp_client/run.sh's venv).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$here/.."
for a in "$@"; do
    case "$a" in
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    esac
done
binary="${CDP_SUPERVISOR_BIN:-}"
if [ -z "$binary" ]; then
    binary="${CARGO_TARGET_DIR:-$repo/target}/release/cdp-supervisor"
    if [ ! -x "$binary" ]; then
        echo "soak: building $binary (cargo build --release -p cdp-supervisor)" >&2
        (cd "$repo" && cargo build --release -p cdp-supervisor --bin cdp-supervisor)
    fi
fi
if [ ! -x "$binary" ]; then
    echo "soak: $binary is not an executable (set CDP_SUPERVISOR_BIN)" >&2
    exit 1
fi
# run.sh makes (or reuses) the venv with `mcp` and runs a script relative to its folder.
exec bash "$repo/crates/cdp-supervisor/tests/mcp_client/run.sh" "$binary" ../soak/soak.py "$@"
