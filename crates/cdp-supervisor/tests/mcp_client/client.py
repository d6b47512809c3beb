"""End-to-end test of `cdp-supervisor mcp` with the official MCP Python SDK.

Drives the real binary over stdio and over streamable HTTP: lists the tools,
navigates to a loopback page whose load opens an alert and which embeds a
cross-site iframe (127.0.0.1 vs localhost: two sites, so an OOPIF), sees the
alert in browser_snapshot, answers it with browser_dialog, evaluates
document.title inside the OOPIF with browser_cdp(frame_id), disconnects, and
checks that no Chromium the server started is left when its session ends.

Usage: python client.py PATH/TO/cdp-supervisor     (exit 0 on success)
"""

from __future__ import annotations

import asyncio
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from mcp import Client, StdioServerParameters

from reads import unfaithful

EXPECTED_TOOLS = [
    "browser_navigate",
    "browser_snapshot",
    "browser_click",
    "browser_type",
    "browser_press_key",
    "browser_select_option",
    "browser_fill_form",
    "browser_dialog",
    "browser_cdp",
    "browser_tabs",
    "browser_wait",
    "browser_connect",
    "browser_disconnect",
    "browser_handoff",
]
ALERT_TEXT = "hello from the python client"
DEADLINE_S = 15.0
# The Python SDK closes stdin, waits 2 s (PROCESS_TERMINATION_TIMEOUT), then
# kills the server's process group.
STDIO_GRACE_S = 2.0


def log(msg: str) -> None:
    print(f"[mcp_client] {msg}", file=sys.stderr, flush=True)


class Fail(Exception):
    pass


def check(cond: bool, what: str) -> None:
    if not cond:
        raise Fail(what)
    log(f"ok: {what}")


# --- fixture site --------------------------------------------------------


def start_site() -> int:
    """Serves /outer.html (iframe from the other site, then an alert in its load event) and
    /inner.html on 127.0.0.1; returns the port."""
    port_box: list[int] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            port = port_box[0]
            path = self.path.split("?")[0]
            if path == "/outer.html":
                body = (
                    "<!doctype html><title>outer page</title>"
                    f'<iframe id="x" src="http://localhost:{port}/inner.html"></iframe>'
                    # In the load event, once the OOPIF has committed: an alert
                    # shown while an OOPIF of the page commits is closed by
                    # Chromium itself (javascriptDialogClosed, result false),
                    # about 1 run in 4 on a loaded machine.
                    f"<script>addEventListener('load', () => alert({json.dumps(ALERT_TEXT)}));</script>"
                )
            elif path == "/inner.html":
                body = "<!doctype html><title>inner frame</title><p>inner</p>"
            else:
                self.send_error(404)
                return
            data = body.encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("cache-control", "no-store")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args) -> None:  # quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port_box.append(server.server_address[1])
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return port_box[0]


# --- processes -----------------------------------------------------------


def proc_stat(pid: int) -> tuple[str, str, int] | None:
    """(name, state, ppid) of a live process, None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    return name, fields[0], int(fields[1])


def alive(pid: int) -> bool:
    s = proc_stat(pid)
    return s is not None and s[1] != "Z"


def children(ppid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            s = proc_stat(int(entry))
            if s and s[2] == ppid and s[1] != "Z":
                out.append(int(entry))
    return out


def chromium_children(server_pid: int) -> list[int]:
    return [p for p in children(server_pid) if "chrom" in (proc_stat(p) or ("",))[0]]


def server_pid_of(binary: str) -> int:
    """The stdio server: our child running `binary`."""
    real = os.path.realpath(binary)
    for pid in children(os.getpid()):
        try:
            if os.path.realpath(f"/proc/{pid}/exe") == real:
                return pid
        except OSError:
            pass
    raise Fail(f"no child process runs {binary}")


def wait_gone(pids: list[int], what: str, kind: str = "Chromium") -> None:
    deadline = time.monotonic() + DEADLINE_S
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            raise Fail(f"{what}: {kind} processes still alive: {[p for p in pids if alive(p)]}")
        time.sleep(0.1)
    log(f"ok: {what}: no {kind} process left (was {pids})")


# --- the agent workflow --------------------------------------------------


async def call(client: Client, name: str, args: dict | None = None, expect_error: bool = False):
    r = await client.call_tool(name, args or {})
    text = "".join(getattr(c, "text", "") for c in r.content)
    if r.is_error != expect_error:
        raise Fail(f"{name}({args}): is_error={r.is_error}, want {expect_error}: {text}")
    if expect_error:
        return text
    if r.structured_content is None:
        raise Fail(f"{name}: no structuredContent")
    why = unfaithful(name, text, r.structured_content)
    if why:
        raise Fail(why)
    return r.structured_content


async def workflow(client: Client, site_port: int, server_pid: int, label: str) -> list[int]:
    """Runs the scenario; returns the Chromium pids running at its end."""
    outer = f"http://127.0.0.1:{site_port}/outer.html"
    names = [t.name for t in (await client.list_tools()).tools]
    check(names == EXPECTED_TOOLS, f"{label}: tools/list = {names}")

    nav = await call(client, "browser_navigate", {"url": outer})
    check(nav["status"] == "dialog_pending", f"{label}: navigate returns with the alert pending ({nav['status']})")
    snap = await call(client, "browser_snapshot")
    pending = snap.get("pending_dialogs", [])
    check(
        len(pending) == 1 and pending[0]["type"] == "alert" and pending[0]["message"] == ALERT_TEXT,
        f"{label}: browser_snapshot shows the alert (pending {pending}; recent {snap.get('recent_dialogs')}; navigate said {nav.get('pending_dialogs')})",
    )
    browsers = chromium_children(server_pid)
    check(len(browsers) >= 1, f"{label}: the server launched Chromium {browsers}")

    answered = await call(client, "browser_dialog", {"action": "accept"})
    check(answered["answered"]["id"] == pending[0]["id"], f"{label}: browser_dialog answered {pending[0]['id']}")
    text = await call(client, "browser_dialog", {"action": "accept"}, expect_error=True)
    check("no dialog" in text.lower(), f"{label}: a second answer is an isError result ({text!r})")

    deadline = time.monotonic() + DEADLINE_S
    while True:
        snap = await call(client, "browser_snapshot")
        oopifs = [f for f in snap.get("frame_tree", {}).get("children", []) if f.get("is_oopif")]
        # An OOPIF can be listed before its first navigation is reported (url "").
        if oopifs and oopifs[0].get("url", "").startswith(f"http://localhost:{site_port}/"):
            break
        if time.monotonic() > deadline:
            raise Fail(f"{label}: no OOPIF in {snap.get('frame_tree')}")
        await asyncio.sleep(0.2)
    frame_id = oopifs[0]["frame_id"]
    check(
        oopifs[0].get("url", "").startswith(f"http://localhost:{site_port}/"),
        f"{label}: OOPIF {frame_id} listed ({oopifs[0]})",
    )

    # The OOPIF's URL is known once its document commits; its <title> is
    # parsed a moment later.
    evaluate = {"expression": "document.readyState === 'loading' ? '' : document.title", "returnByValue": True}
    deadline = time.monotonic() + DEADLINE_S
    while True:
        r = await call(client, "browser_cdp", {"method": "Runtime.evaluate", "params": evaluate, "frame_id": frame_id})
        title = r["result"]["result"]["value"]
        if title or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    check(title == "inner frame", f"{label}: document.title inside the OOPIF = {title!r}")
    r = await call(client, "browser_cdp", {"method": "Runtime.evaluate", "params": evaluate})
    title = r["result"]["result"]["value"]
    check(title == "outer page", f"{label}: document.title of the top page = {title!r}")

    d = await call(client, "browser_disconnect")
    check(d == {"disconnected": True}, f"{label}: browser_disconnect {d}")
    wait_gone(browsers, f"{label}: after browser_disconnect")

    # A fresh browser on the next navigate, left running for the session end.
    nav = await call(client, "browser_navigate", {"url": f"http://127.0.0.1:{site_port}/inner.html"})
    check(nav["status"] == "loaded", f"{label}: navigate after disconnect starts a browser again")
    browsers = chromium_children(server_pid)
    check(len(browsers) >= 1, f"{label}: Chromium running {browsers}")
    return browsers


def wait_empty(path: str, what: str) -> None:
    """The server's temp directory holds nothing once it has exited: the
    Chromium user-data-dirs it made (and Chromium's own temp files) are gone."""
    deadline = time.monotonic() + DEADLINE_S
    while os.listdir(path):
        if time.monotonic() > deadline:
            raise Fail(f"{what}: left behind in its TMPDIR: {os.listdir(path)}")
        time.sleep(0.1)
    log(f"ok: {what}: nothing left in its TMPDIR")


async def run_stdio(binary: str, site_port: int) -> None:
    tmp = tempfile.mkdtemp(prefix="cdp-mcp-tmp-")
    params = StdioServerParameters(command=binary, args=["mcp"], env=dict(os.environ, TMPDIR=tmp))
    # This script pins the 2025-11-25 revision (one task per session);
    # revisions.py tests 2026-07-28.
    async with Client(params, mode="legacy") as client:
        server_pid = server_pid_of(binary)
        browsers = await workflow(client, site_port, server_pid, "stdio")
        closing = time.monotonic()
    # The client closed stdin: the server stops its browser and exits by
    # itself, before the SDK's grace period (then it would kill the server,
    # and a Chromium in its own process group would survive a killed server).
    took = time.monotonic() - closing
    check(took < STDIO_GRACE_S, f"stdio: the server exited on stdin EOF within {took:.2f} s")
    wait_gone(browsers, "stdio: after the session ended")
    wait_gone([server_pid], "stdio: the server process exited", kind="server")
    wait_empty(tmp, "stdio: the server exited")
    os.rmdir(tmp)


def start_http_server(
    binary: str, extra: list[str], bind: str = "127.0.0.1:0"
) -> tuple[subprocess.Popen, str, list[str]]:
    env = {k: v for k, v in os.environ.items() if k != "CDP_MCP_TOKEN"}
    proc = subprocess.Popen(
        [binary, "mcp", "--http", bind, *extra],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    found = threading.Event()
    url_box: list[str] = []

    def drain() -> None:
        assert proc.stderr
        for line in proc.stderr:
            lines.append(line)
            sys.stderr.write(f"[server] {line}")
            m = re.search(r"listening on (http://\S+)", line)
            if m and not url_box:
                url_box.append(m.group(1))
                found.set()

    threading.Thread(target=drain, daemon=True).start()
    if not found.wait(DEADLINE_S):
        proc.kill()
        raise Fail(f"the HTTP server printed no 'listening on' line: {''.join(lines)}")
    return proc, url_box[0], lines


def stop_http_server(proc: subprocess.Popen, label: str) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(DEADLINE_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise Fail(f"{label}: the server did not stop on Ctrl-C")
    check(code == 0, f"{label}: the server exits 0 on Ctrl-C")


async def run_http(binary: str, site_port: int) -> None:
    proc, url, _ = start_http_server(binary, [])
    log(f"HTTP server at {url}")
    try:
        async with Client(url, mode="legacy") as client:
            browsers = await workflow(client, site_port, proc.pid, "http")
        # The client deleted its session: that session's browser stops.
        wait_gone(browsers, "http: after the session was deleted")
        # One more session, left open: Ctrl-C must stop its browser too.
        async with Client(url, mode="legacy") as client:
            nav = await call(client, "browser_navigate", {"url": f"http://127.0.0.1:{site_port}/inner.html"})
            check(nav["status"] == "loaded", "http: a second session navigates")
            browsers = chromium_children(proc.pid)
            stop_http_server(proc, "http")
            wait_gone(browsers, "http: after Ctrl-C")
    finally:
        if proc.poll() is None:
            proc.kill()


def run_http_token(binary: str, generated: bool) -> None:
    if generated:
        # A non-loopback bind without --token: the server makes one up and
        # prints it once to stderr.
        proc, url, lines = start_http_server(binary, [], bind="0.0.0.0:0")
        deadline = time.monotonic() + DEADLINE_S
        token = ""
        while not token and time.monotonic() < deadline:
            m = re.search(r"Bearer ([0-9a-f]{32,})", "".join(lines))
            token = m.group(1) if m else ""
            time.sleep(0.05)
        check(bool(token), "http 0.0.0.0: a generated token is printed to stderr")
        label = "http 0.0.0.0"
    else:
        token = "python-client-token"
        proc, url, lines = start_http_server(binary, ["--token", token])
        label = "http --token"
    try:
        init = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            }
        ).encode()

        def post(headers: dict[str, str]) -> int:
            req = urllib.request.Request(url, data=init, method="POST")
            req.add_header("content-type", "application/json")
            req.add_header("accept", "application/json, text/event-stream")
            for k, v in headers.items():
                req.add_header(k, v)
            try:
                with urllib.request.urlopen(req, timeout=DEADLINE_S) as resp:
                    return resp.status
            except urllib.error.HTTPError as e:
                return e.code

        check(post({}) == 401, f"{label}: no token is 401")
        check(post({"authorization": "Bearer wrong"}) == 401, f"{label}: a wrong token is 401")
        evil = {"authorization": f"Bearer {token}", "origin": "https://evil.example"}
        check(post(evil) == 403, f"{label}: a foreign Origin is 403")
        check(post({"authorization": f"Bearer {token}"}) == 200, f"{label}: the right token passes")
        check(sum(token in line for line in lines) <= 1, f"{label}: the token is printed at most once")
    finally:
        stop_http_server(proc, label)


def first_fail(e: BaseException) -> Fail | None:
    if isinstance(e, Fail):
        return e
    for inner in getattr(e, "exceptions", ()):
        found = first_fail(inner)
        if found:
            return found
    return None


async def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = sys.argv[1]
    if not os.access(binary, os.X_OK):
        log(f"FAIL: {binary} is not an executable")
        return 1
    site_port = start_site()
    try:
        await run_stdio(binary, site_port)
        await run_http(binary, site_port)
        run_http_token(binary, generated=False)
        run_http_token(binary, generated=True)
    except Exception as e:  # noqa: BLE001 - report the first Fail, wherever anyio wrapped it
        fail = first_fail(e)
        if fail is None:
            raise
        log(f"FAIL: {fail}")
        return 1
    log("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
