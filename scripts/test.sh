#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs Chromium if missing,
# checks formatting and lints, then runs every test (unit, state machine,
# mock CDP scenarios, end to end on real headless Chromium, and the MCP
# client from outside the project).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-chromium.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo build --workspace --all-targets
cargo test --workspace
