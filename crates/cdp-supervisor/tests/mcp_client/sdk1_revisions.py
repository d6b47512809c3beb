"""The MCP Python SDK 1.x (ClientSession; it speaks 2025-11-25 only) against
a server that offers 2026-07-28 too: it negotiates 2025-11-25 and keeps one
task per session, over stdio and streamable HTTP. Each: navigate, snapshot,
a confirm answered (what the page received is read back), a push
notification (resources/subscribe) when a dialog opens, and a prompt
answered by the client's elicitation callback (browser_dialog ask_user).

Self-contained: common.py is written against the SDK's 2.x API. run.sh
gives a script named sdk1_*.py a virtualenv with the SDK's 1.x.

Usage: python sdk1_revisions.py PATH/TO/cdp-supervisor     (exit 0 on success)
"""

from __future__ import annotations

import asyncio
import http.server
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta
from typing import Any

import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

LEGACY = "2025-11-25"
SNAPSHOT_URI = "browser://snapshot"
DEADLINE_S = 10.0  # a dialog shows, a push arrives
START_DEADLINE_S = 20.0  # the HTTP server prints its address
SCENARIO_DEADLINE_S = 120.0
HUMAN_TEXT = "typed by the 1.x human"
CHROMIUM_NAMES = ["chromium", "chromium-browser", "google-chrome"]

PAGE = """<!doctype html><html><head><meta charset=utf-8><title>sdk1 main</title></head>
<body><p>an old client</p><script>
function ask() { window.confirmed = confirm("Proceed?"); }
function name() { window.named = prompt("Your name?", "nobody"); }
</script></body></html>"""


def log(msg: str) -> None:
    print(f"[sdk1] {msg}", file=sys.stderr, flush=True)


class Fail(Exception):
    pass


def check(cond: bool, what: str) -> None:
    if not cond:
        raise Fail(what)
    log(f"ok: {what}")


def start_site() -> tuple[int, http.server.ThreadingHTTPServer]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            data = PAGE.encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    return server.server_address[1], server


class Client:
    """What the 1.x client saw: resource updates and the questions its human was asked."""

    def __init__(self) -> None:
        self.updates: list[str] = []
        self.asked: list[types.ElicitRequestParams] = []

    async def message_handler(self, message: Any) -> None:
        root = getattr(message, "root", None)
        if isinstance(root, types.ResourceUpdatedNotification):
            self.updates.append(str(root.params.uri))

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        return types.ElicitResult(action="accept", content={"action": "accept", "text": HUMAN_TEXT})


async def call(s: ClientSession, name: str, args: dict | None = None) -> dict:
    r = await s.call_tool(name, args or {})
    text = "".join(getattr(c, "text", "") for c in r.content)
    if r.isError:
        raise Fail(f"{name}({json.dumps(args)}) is a tool error: {text}")
    if r.structuredContent is None:
        raise Fail(f"{name}: no structuredContent")
    return r.structuredContent


async def evaluate(s: ClientSession, expression: str) -> Any:
    r = await call(s, "browser_cdp", {"method": "Runtime.evaluate", "params": {"expression": expression, "returnByValue": True}})
    return r["result"]["result"].get("value")


async def pending(s: ClientSession, dtype: str) -> dict:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        snap = await call(s, "browser_snapshot")
        for d in snap.get("pending_dialogs", []):
            if d.get("type") == dtype:
                return d
        if time.monotonic() > deadline:
            raise Fail(f"no pending {dtype} within {DEADLINE_S:.0f} s")
        await asyncio.sleep(0.1)


async def workflow(s: ClientSession, seen: Client, port: int, label: str) -> None:
    init = await s.initialize()
    check(init.protocolVersion == LEGACY, f"{label}: SDK 1.x negotiated {init.protocolVersion}")
    names = [t.name for t in (await s.list_tools()).tools]
    check("browser_navigate" in names and "browser_open" not in names, f"{label}: the 2025-11-25 tool list")
    url = f"http://127.0.0.1:{port}/main.html"
    nav = await call(s, "browser_navigate", {"url": url})
    check(nav["status"] == "loaded" and nav["title"] == "sdk1 main", f"{label}: browser_navigate loaded")
    snap = await call(s, "browser_snapshot")
    check(snap["url"] == url, f"{label}: browser_snapshot shows the page")
    await s.subscribe_resource(SNAPSHOT_URI)
    before = len(seen.updates)
    await evaluate(s, 'setTimeout(() => ask(), 0); "scheduled"')
    d = await pending(s, "confirm")
    deadline = time.monotonic() + DEADLINE_S
    while len(seen.updates) <= before:
        if time.monotonic() > deadline:
            raise Fail(f"{label}: no notifications/resources/updated within {DEADLINE_S:.0f} s of the confirm")
        await asyncio.sleep(0.02)
    check(seen.updates[before] == SNAPSHOT_URI, f"{label}: a resource update came when the confirm opened")
    ans = await call(s, "browser_dialog", {"action": "accept"})
    check(ans["answered"]["id"] == d["id"], f"{label}: browser_dialog accepted {d['id']}")
    check(await evaluate(s, "window.confirmed") is True, f"{label}: the page's confirm() returned true")
    await evaluate(s, 'setTimeout(() => name(), 0); "scheduled"')
    d = await pending(s, "prompt")
    ans = await call(s, "browser_dialog", {"action": "ask_user"})
    check(len(seen.asked) == 1 and "Your name?" in seen.asked[0].message, f"{label}: the elicitation callback was asked about the prompt")
    check(ans["answered"]["closed_by"] == "user", f"{label}: ask_user answered {d['id']} by the user")
    got = await evaluate(s, "window.named")
    check(got == HUMAN_TEXT, f"{label}: the page's prompt() returned the human's text ({got!r})")


async def over_stdio(binary: str, port: int, tmp: str) -> None:
    seen = Client()
    params = StdioServerParameters(command=binary, args=["mcp"], env=dict(os.environ, TMPDIR=tmp))
    with open(os.path.join(tmp, "stdio.stderr"), "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (r, w):
            async with ClientSession(
                r, w, read_timeout_seconds=timedelta(seconds=60), message_handler=seen.message_handler, elicitation_callback=seen.elicit
            ) as s:
                await workflow(s, seen, port, "stdio")


async def over_http(binary: str, port: int, tmp: str) -> None:
    seen = Client()
    errpath = os.path.join(tmp, "http.stderr")
    with open(errpath, "w") as errlog:
        proc = subprocess.Popen(
            [binary, "mcp", "--http", "127.0.0.1:0"],
            env=dict(os.environ, TMPDIR=tmp),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
        )
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        url = None
        while url is None:
            with open(errpath) as f:
                m = re.search(r"listening on (http://\S+)", f.read())
            if m:
                url = m.group(1)
            elif time.monotonic() > deadline or proc.poll() is not None:
                raise Fail("http: the server printed no address")
            else:
                await asyncio.sleep(0.05)
        async with streamablehttp_client(url) as (r, w, _):
            async with ClientSession(
                r, w, read_timeout_seconds=timedelta(seconds=60), message_handler=seen.message_handler, elicitation_callback=seen.elicit
            ) as s:
                await workflow(s, seen, port, "http")
    finally:
        proc.send_signal(2)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


async def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.realpath(sys.argv[1])
    if not any(shutil.which(n) for n in CHROMIUM_NAMES):
        log(f"FAIL: no Chromium on PATH ({', '.join(CHROMIUM_NAMES)})")
        return 1
    log(f"MCP Python SDK {importlib.metadata.version('mcp')}")
    port, site = start_site()
    failed = 0
    for name, run in (("stdio", over_stdio), ("http", over_http)):
        tmp = tempfile.mkdtemp(prefix="cdp-s1-")
        try:
            await asyncio.wait_for(run(binary, port, tmp), SCENARIO_DEADLINE_S)
            log(f"PASS {name}")
        except Exception as e:  # noqa: BLE001 - every transport reports
            failed += 1
            log(f"FAIL {name}: {type(e).__name__}: {e}")
            for f in os.listdir(tmp):
                if f.endswith(".stderr"):
                    with open(os.path.join(tmp, f), errors="replace") as fh:
                        log(f"last lines of {f}:\n{''.join(fh.readlines()[-15:])}")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    site.shutdown()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
