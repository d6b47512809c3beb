"""Cloud provider sessions through the real binary (issue 12), checked with the
official MCP Python SDK.

`cdp-supervisor mcp` runs with `browser.cloud_provider: browser-use` and
BROWSER_USE_BASE_URL pointed at a fake Browser Use API on loopback (no test
can reach the public API), whose "remote" browser is our own headless
Chromium (its http DevTools URL, resolved through /json/version):

  stdio_lifecycle    the first call creates the browser (POST /api/v3/browsers
                     with X-Browser-Use-API-Key); browser_disconnect stops it
                     (PATCH /api/v3/browsers/{id} {action: "stop"}); the next
                     navigate creates another, stopped when the session
                     closes (the SDK closes stdin, then kills the server 2 s
                     later: the stop must come before)
  http_lifecycle     the same over streamable HTTP: the session's end (the
                     SDK deletes it; then the server gets Ctrl-C) stops it,
                     exactly once

Usage: python providers.py PATH/TO/cdp-supervisor [--only NAME[,NAME…]]
Exit 0 when every scenario passes.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from typing import Any

from common import (
    exit_with,
    run_phases,
    Scenario,
    call,
    launch_chromium,
    mcp_server,
    page,
    set_log_name,
    start_site,
)

set_log_name("providers")

API_KEY = "bu-test-key"


class FakeBrowserUse:
    """A fake Browser Use API: records every request; POST creates bu-N with
    the given cdpUrl; PATCH answers {status: stopped}."""

    def __init__(self, cdp_url: str) -> None:
        self.cdp_url = cdp_url
        self.seen: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode(errors="replace")
                with fake.lock:
                    fake.seen.append(
                        {
                            "method": self.command,
                            "path": self.path,
                            "key": self.headers.get("x-browser-use-api-key"),
                            "body": body,
                            "at": time.monotonic(),
                        }
                    )
                    n = sum(1 for s in fake.seen if s["method"] == "POST")
                if self.command == "POST" and self.path == "/api/v3/browsers":
                    answer = {"id": f"bu-{n}", "cdpUrl": fake.cdp_url, "status": "active"}
                elif self.command == "PATCH" and self.path.startswith("/api/v3/browsers/"):
                    answer = {"id": self.path.rsplit("/", 1)[1], "status": "stopped"}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = _handle  # noqa: N815
            do_PATCH = _handle  # noqa: N815
            do_GET = _handle  # noqa: N815
            do_DELETE = _handle  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def lines(self) -> list[str]:
        with self.lock:
            return [f"{s['method']} {s['path']}" for s in self.seen]

    def requests(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.seen)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


async def setup(sc: Scenario) -> tuple[FakeBrowserUse, dict[str, str], str]:
    chromium = await launch_chromium(sc, "remote")
    fake = FakeBrowserUse(chromium.http_url)
    sc.stack.callback(fake.close)
    port = await start_site(sc, lambda _port: {"/": page("provider page", "<p>hello</p>")})
    env = {
        "CDP_SUPERVISOR_BROWSER__CLOUD_PROVIDER": "browser-use",
        "BROWSER_USE_API_KEY": API_KEY,
        "BROWSER_USE_BASE_URL": fake.base_url,
    }
    return fake, env, f"http://127.0.0.1:{port}/"


def check_create(sc: Scenario, req: dict[str, Any], what: str) -> None:
    sc.check(
        (req["method"], req["path"]) == ("POST", "/api/v3/browsers"),
        f"{what}: POST /api/v3/browsers ({req['method']} {req['path']})",
    )
    sc.check(req["key"] == API_KEY, f"{what}: with X-Browser-Use-API-Key")


def check_stop(sc: Scenario, req: dict[str, Any], browser_id: str, what: str) -> None:
    sc.check(
        (req["method"], req["path"]) == ("PATCH", f"/api/v3/browsers/{browser_id}"),
        f"{what}: PATCH /api/v3/browsers/{browser_id} ({req['method']} {req['path']})",
    )
    sc.check(req["key"] == API_KEY, f"{what}: with X-Browser-Use-API-Key")
    sc.check(req["body"] == {"action": "stop"}, f"{what}: body {{action: stop}} ({req['body']})")


async def navigate(sc: Scenario, client: Any, url: str) -> None:
    r = await call(client, "browser_navigate", {"url": url})
    sc.check(r.get("status") == "loaded", f"browser_navigate loaded the page on the provider's browser ({r.get('status')})")
    sc.check(r.get("title") == "provider page", f"its title is the page's ({r.get('title')!r})")


async def stdio_lifecycle(sc: Scenario, binary: str) -> None:
    fake, env, url = await setup(sc)
    async with mcp_server(sc, binary, "bu", [], env=env) as server:
        client = server.client
        sc.check(fake.lines() == [], "nothing is created before the first call")
        await navigate(sc, client, url)
        check_create(sc, fake.requests()[0], "first call")
        d = await call(client, "browser_disconnect")
        sc.check(d.get("disconnected") is True, "browser_disconnect detached")
        sc.check(len(fake.requests()) == 2, f"browser_disconnect stopped the browser at once ({fake.lines()})")
        check_stop(sc, fake.requests()[1], "bu-1", "browser_disconnect")
        await navigate(sc, client, url)
        check_create(sc, fake.requests()[2], "navigate after disconnect")
        # Leaving the block ends the session: stdin closes.
    # The SDK killed the server 2 s after closing stdin at the latest: a stop
    # seen now was sent before that.
    reqs = fake.requests()
    sc.check(len(reqs) == 4, f"the session's end stopped the second browser ({fake.lines()})")
    check_stop(sc, reqs[3], "bu-2", "session end (stdin closed)")


async def http_lifecycle(sc: Scenario, binary: str) -> None:
    fake, env, url = await setup(sc)
    async with mcp_server(sc, binary, "bu-http", [], transport="http", env=env) as server:
        await navigate(sc, server.client, url)
        check_create(sc, fake.requests()[0], "first call over HTTP")
    lines = fake.lines()
    sc.check(
        lines == ["POST /api/v3/browsers", "PATCH /api/v3/browsers/bu-1"],
        f"the HTTP session's end stopped the browser exactly once ({lines})",
    )
    check_stop(sc, fake.requests()[1], "bu-1", "HTTP session end")


SCENARIOS = {
    "stdio_lifecycle": stdio_lifecycle,
    "http_lifecycle": http_lifecycle,
}


async def main() -> int:
    return await run_phases("providers.py", __doc__, SCENARIOS, [list(SCENARIOS)])


if __name__ == "__main__":
    exit_with(main)
