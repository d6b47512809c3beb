#!/usr/bin/env bash
# End-to-end test of `cdp-supervisor mcp` with the official MCP Python SDK.
#
#   crates/cdp-supervisor/tests/mcp_client/run.sh target/debug/cdp-supervisor
#   crates/cdp-supervisor/tests/mcp_client/run.sh target/debug/cdp-supervisor truth.py [ARGS…]
#   crates/cdp-supervisor/tests/mcp_client/run.sh target/debug/cdp-supervisor push.py [ARGS…]
#   crates/cdp-supervisor/tests/mcp_client/run.sh target/debug/cdp-supervisor providers.py [ARGS…]
#
# Creates (or reuses) a virtualenv with the `mcp` package, then runs a script
# of this folder against the given binary: client.py (the default: stdio and
# streamable HTTP), truth.py (what the agent reads is true) or push.py (the
# snapshot resource and its notifications, browser_wait, ask_user, policy per
# type, output schemas), tabs.py (popups, browser_tabs, max_tabs, crashed
# tabs), providers.py (a cloud provider's session against a fake API:
# created, stopped with the MCP session), security.py (navigation policy,
# HTTP bounds), grid.py (a real Selenium Grid's session through the binary:
# tests/selenium_grid.rs starts the Grid and sets SELENIUM_GRID_URL),
# grid_load.py (a measurement: how many tasks one HTTP server holds on a
# Grid, see the README's "Past one machine"), cost.py (what an agent pays
# per step on a large page: page_cursor, find, changes), prompts.py (HTTP
# authentication as an http_auth dialog), revisions.py (both MCP revisions,
# task handles), sdk1_revisions.py (the SDK's 1.x), ts_revisions.cjs (the
# TypeScript SDK 1.x, through npm), form.py (browser_fill_form, picker
# inputs, what the model reads), contexts.py (many tasks in one browser, a
# context each) or bench_step.py (a
# measurement, see scripts/bench-step.sh); ARGS such as `--only NAME` or `--serial` go to it
# (truth.py and push.py share common.py). Needs python3 (with venv), network
# access for the first pip install, and Chromium on PATH. Exits non-zero on
# any failure.
#
# MCP_CLIENT_VENV: where the virtualenv lives
#   (default: ${TMPDIR:-/tmp}/cdp-supervisor-mcp-client-venv).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ $# -lt 1 ]; then
    echo "usage: $0 PATH/TO/cdp-supervisor [SCRIPT.py [ARGS…]]   (SCRIPT: client.py, the default, or any script beside it: truth.py, push.py, tabs.py, prompts.py, …)" >&2
    exit 2
fi
given="$1"
binary="$(realpath "$1")"
script="${2:-client.py}"
shift $(( $# < 2 ? $# : 2 ))
if [ ! -f "$here/$script" ]; then
    echo "mcp_client: no script $script in $here" >&2
    exit 2
fi
if [ ! -x "$binary" ]; then
    echo "mcp_client: $given is not an executable; build it with cargo build -p cdp-supervisor" >&2
    exit 1
fi
# A *.cjs script is a client of the MCP TypeScript SDK 1.x, installed with
# npm (MCP_TS_CLIENT_DIR, default ${TMPDIR:-/tmp}/cdp-supervisor-mcp-ts-client).
if [[ "$script" == *.cjs ]]; then
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        echo "mcp_client: node and npm are missing; install Node.js (20 or later)" >&2
        exit 1
    fi
    ts_dir="${MCP_TS_CLIENT_DIR:-${TMPDIR:-/tmp}/cdp-supervisor-mcp-ts-client}"
    mkdir -p "$ts_dir"
    exec 9>"$ts_dir.lock"
    flock 9
    if ! node -e 'const v = JSON.parse(require("fs").readFileSync(process.argv[1] + "/node_modules/@modelcontextprotocol/sdk/package.json", "utf8")).version; process.exit(v.startsWith("1.") ? 0 : 1)' "$ts_dir" 2>/dev/null; then
        [ -f "$ts_dir/package.json" ] || echo '{"name":"cdp-supervisor-mcp-ts-client","private":true}' >"$ts_dir/package.json"
        (cd "$ts_dir" && npm install --silent --no-audit --no-fund '@modelcontextprotocol/sdk@^1.32')
    fi
    flock -u 9
    exec 9>&-
    NODE_PATH="$ts_dir/node_modules" exec node "$here/$script" "$binary" "$@"
fi
if ! command -v python3 >/dev/null; then
    echo "mcp_client: python3 is missing; install it (with the venv module)" >&2
    exit 1
fi

# The client API used (mcp.Client, StdioServerParameters) is the SDK's 2.x;
# a script named sdk1_*.py is a client of the SDK's 1.x (ClientSession,
# 2025-11-25 only), which gets a virtualenv of its own beside the 2.x one.
MCP_REQUIREMENT='mcp>=2.3,<3'
IMPORT_CHECK='import mcp; from mcp import Client'
venv="${MCP_CLIENT_VENV:-${TMPDIR:-/tmp}/cdp-supervisor-mcp-client-venv}"
case "$script" in
    sdk1_*)
        MCP_REQUIREMENT='mcp>=1.30,<2'
        IMPORT_CHECK='import importlib.metadata as m, sys; sys.exit(not m.version("mcp").startswith("1."))'
        venv="$venv-sdk1"
        ;;
esac
# Two runs at once (the Rust tests run in parallel) must not build it twice.
exec 9>"$venv.lock"
flock 9
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "$IMPORT_CHECK" 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$MCP_REQUIREMENT"
fi
flock -u 9
exec 9>&-

exec "$venv/bin/python" "$here/$script" "$binary" "$@"
