//! The MCP server driven from outside the project: the official MCP Python
//! SDK runs `tests/mcp_client/client.py` against the real binary, over stdio
//! and streamable HTTP (see `tests/mcp_client/run.sh`). Fails — never skips —
//! when python3 or Chromium is missing. The first run needs network access
//! for `pip install mcp` (the virtualenv is reused afterwards).

use std::path::Path;
use std::process::Command;

#[test]
fn the_official_python_sdk_drives_the_binary_over_stdio_and_http() {
    let python = Command::new("python3").arg("--version").output();
    assert!(
        python.is_ok_and(|o| o.status.success()),
        "python3 is missing: this test drives the server with the MCP Python SDK; install python3 (with venv)"
    );
    if let Err(e) = cdp_supervisor::browser::find_chromium(None) {
        panic!("this test needs a real Chromium (install chromium): {e}");
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client/run.sh");
    let status = Command::new("bash")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_cdp-supervisor"))
        .status()
        .expect("run tests/mcp_client/run.sh");
    assert!(status.success(), "{} failed: {status}", script.display());
}
