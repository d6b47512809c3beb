#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs Chromium if missing,
# and what the real Selenium Grid test needs (Java, chromedriver, the
# Selenium server jar: once per machine, cached), checks formatting and
# lints, then runs every test (unit, state machine, mock CDP scenarios,
# end to end on real headless Chromium and through a real Selenium Grid,
# the MCP client from outside the project, and the Python package's
# pytest suite).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-chromium.sh
scripts/ensure-grid.sh >/dev/null
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo build --workspace --all-targets
cargo test --workspace
# The Python package (crates/cdp-supervisor-py): wheel built with maturin,
# its tests with pytest on real Chromium.
crates/cdp-supervisor-py/tests/run.sh
