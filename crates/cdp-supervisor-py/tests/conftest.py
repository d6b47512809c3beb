"""Fixtures: real headless Chromium (never a mock) and pages served on loopback.

Two sites on one server: ``a.test`` and ``b.test`` both map to 127.0.0.1
(``--host-resolver-rules``), so an ``a.test`` page's ``b.test`` iframe is a
real cross-site OOPIF. Chromium missing is a failure, not a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Dict, Iterator

import pytest

import cdp_supervisor

HOST_RULES = "--host-resolver-rules=MAP *.test 127.0.0.1"

PAGES: Dict[str, str] = {
    "/main.html": """<!doctype html><html><head><title>Supervisor pytest</title></head><body>
<h1>Supervisor pytest</h1>
<iframe id="inner" src="/inner.html" width="400" height="100"></iframe>
</body></html>""",
    "/inner.html": "<!doctype html><body><h2>frame-marker</h2></body>",
    "/oopif.html": """<!doctype html><html><head><title>outer</title></head><body>
<iframe id="x" src="http://b.test:{port}/confirm.html"></iframe></body></html>""",
    "/confirm.html": """<!doctype html><body>inner
<script>setTimeout(() => { window.__answer = confirm('OOPIF-CONFIRM'); }, 700);</script></body>""",
    "/opener.html": "<!doctype html><title>opener</title><body>opener</body>",
    "/popup.html": """<!doctype html><title>popup</title><body>
<script>setTimeout(() => alert('POPUP-ALERT'), 200);</script></body>""",
    "/later.html": """<!doctype html><title>later</title><body>
<script>setTimeout(() => alert('LATER-ALERT'), 1000);</script></body>""",
}


class _Handler(BaseHTTPRequestHandler):
    port = 0

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = PAGES.get(self.path.split("?")[0])
        if body is None:
            self.send_error(404)
            return
        data = body.replace("{port}", str(self.port)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="session")
def site() -> Iterator[str]:
    """``http://a.test:PORT`` (``b.test:PORT`` is the same server)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    _Handler.port = server.server_address[1]
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield f"http://a.test:{_Handler.port}"
    server.shutdown()
    server.server_close()


def chromium_path() -> str:
    found = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.fail(
            "these tests need a real Chromium: install it (scripts/ensure-chromium.sh) or set CHROMIUM",
            pytrace=False,
        )
    return found


@pytest.fixture
def chrome_cdp() -> Iterator[str]:
    """A headless Chromium of our own (as the spec's tests launch one):
    yields its ``http://127.0.0.1:PORT`` CDP endpoint; killed and its
    profile removed after the test."""
    profile = tempfile.mkdtemp(prefix="cdp-supervisor-pytest-")
    proc = subprocess.Popen(
        [
            chromium_path(),
            "--headless=new",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--no-sandbox",
            "--site-per-process",
            HOST_RULES,
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.monotonic() + 20
        port = None
        while time.monotonic() < deadline and port is None:
            try:
                with open(port_file) as f:
                    first = f.readline().strip()
                port = int(first) if first else None
            except (OSError, ValueError):
                time.sleep(0.05)
        if port is None:
            pytest.fail("Chromium did not open its DevTools port within 20 s", pytrace=False)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def task() -> Iterator[cdp_supervisor.Task]:
    """A ``Task`` whose first navigate launches the library's own Chromium."""
    t = cdp_supervisor.Task(chromium_args=[HOST_RULES])
    yield t
    t.close()


def wait_until(what: str, check: Callable[[], object], timeout: float = 10.0) -> None:
    """Polls ``check()`` until true, failing after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def dumps(v: object) -> str:
    return json.dumps(v, sort_keys=True)
