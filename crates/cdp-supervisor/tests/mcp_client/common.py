"""Shared helpers of the MCP Python SDK tests (truth.py, push.py).

What each scenario needs to drive the real `cdp-supervisor mcp` binary the way
an agent does, and to leave nothing behind: Scenario (check/expect, a temp
dir, cleanups that run however the scenario ends), a loopback fixture site,
our own headless Chromium, the MCP server over stdio or streamable HTTP
through the SDK's Client (whatever it started is reaped afterwards), and tool
call helpers. Every wait has a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from reads import unfaithful

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

CHROMIUM_NAMES = ["chromium", "chromium-browser", "google-chrome"]
# Seconds. Every wait below has one of these deadlines.
DIALOG_DEADLINE_S = 10.0  # a triggered dialog shows in pending_dialogs
START_DEADLINE_S = 20.0  # Chromium writes DevToolsActivePort, has a page; a server prints its address
CALL_TIMEOUT_S = 60.0  # any single MCP request (the SDK's read timeout)
NAVIGATE_DEADLINE_S = 45.0  # browser_navigate's own load timeout is 30 s
SCENARIO_DEADLINE_S = 180.0  # a whole scenario
CLEANUP_GRACE_S = 5.0  # processes the server should have stopped by itself

_t0 = time.monotonic()
_name = ["mcp"]


def set_log_name(name: str) -> None:
    """The script's name in every log line (and in its scenarios' temp dirs)."""
    _name[0] = name


def log(msg: str) -> None:
    print(f"[{_name[0]} {time.monotonic() - _t0:6.2f}s] {msg}", file=sys.stderr, flush=True)

class Fail(Exception):
    pass


# --- scenario bookkeeping -------------------------------------------------


class Scenario:
    """One scenario: its log prefix, temp dir, soft failures and cleanups.

    check() stops the scenario at the first broken expectation (like
    client.py); expect() records one and goes on, for checks whose failure
    does not invalidate the steps after them, so one run reports them all.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        # Short: Chromium's singleton socket path under TMPDIR must stay < 108 chars.
        self.tmp = tempfile.mkdtemp(prefix=f"cdp-{_name[0]}-")
        self.failures: list[str] = []
        self.stack = contextlib.AsyncExitStack()

    def log(self, msg: str) -> None:
        log(f"{self.name}: {msg}")

    def check(self, cond: bool, what: str) -> None:
        if not cond:
            raise Fail(what)
        self.log(f"ok: {what}")

    def expect(self, cond: bool, what: str) -> bool:
        if cond:
            self.log(f"ok: {what}")
        else:
            self.failures.append(what)
            self.log(f"FAILED (going on): {what}")
        return cond




# --- fixture site -------------------------------------------------------------


def page(title: str, body: str = "", script: str = "") -> str:
    return (
        "<!doctype html><html><head><meta charset=utf-8>"
        f"<title>{title}</title></head>"
        '<body style="margin:0;min-height:100vh">'
        f"{body}<script>{script}</script></body></html>"
    )


# A page whose text starts with this is served as a 302 to the rest of it.
REDIRECT = "redirect:"
NO_CONTENT = "204"  # as a page: an empty 204 reply (a link to it loads nothing)
SLOW = "slow:"  # SLOW + "S:" + page: the page, after S seconds


async def start_site(sc: Scenario, pages: Callable[[int], dict[str, str]]) -> int:
    """A ThreadingHTTPServer on 127.0.0.1 for this scenario, serving
    pages(port) (path -> HTML, REDIRECT + URL for a 302, NO_CONTENT for a 204, SLOW for a late page); returns its port. The same pages are reached
    as http://127.0.0.1:port (site A) and http://localhost:port (site B), so
    an iframe from the other one is an OOPIF."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = pages(self.server.server_address[1]).get(self.path.split("?")[0])
            if body is None:
                self.send_error(404)
                return
            if body.startswith(SLOW):
                seconds, body = body[len(SLOW):].split(":", 1)
                time.sleep(float(seconds))
            if body == NO_CONTENT:
                self.send_response(204)
                self.end_headers()
                return
            if body.startswith(REDIRECT):
                # An HTTP redirect: "redirect:URL" as the page.
                self.send_response(302)
                self.send_header("location", body[len(REDIRECT):])
                self.send_header("content-length", "0")
                self.end_headers()
                return
            data = body.encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("cache-control", "no-store")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:  # quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()

    async def stop() -> None:
        await anyio.to_thread.run_sync(server.shutdown)
        server.server_close()

    sc.stack.push_async_callback(stop)
    return server.server_address[1]


class StallServer:
    """Accepts TCP connections and never answers: a CDP endpoint that stalls."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self.stopped = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            self.conns.append(conn)  # held open, never read or answered

    def close(self) -> None:
        self.stopped.set()
        for c in [self.sock, *self.conns]:
            with contextlib.suppress(OSError):
                c.close()


def dead_port() -> int:
    """A loopback port with nothing listening (bound, then released)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


# --- processes ---------------------------------------------------------------


def proc_stat(pid: int) -> tuple[str, str, int, int, int] | None:
    """(name, state, ppid, pgid, starttime) of a process, None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    name = stat[stat.index("(") + 1 : stat.rindex(")")]
    fields = stat[stat.rindex(")") + 2 :].split()
    return name, fields[0], int(fields[1]), int(fields[2]), int(fields[19])


def alive(pid: int, starttime: int | None = None) -> bool:
    s = proc_stat(pid)
    return s is not None and s[1] != "Z" and (starttime is None or s[4] == starttime)


def descendants(root: int) -> dict[int, tuple[str, int]]:
    """Live descendants of root: pid -> (name, starttime)."""
    by_parent: dict[int, list[int]] = {}
    stats: dict[int, tuple[str, str, int, int, int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            s = proc_stat(int(entry))
            if s and s[1] != "Z":
                stats[int(entry)] = s
                by_parent.setdefault(s[2], []).append(int(entry))
    out: dict[int, tuple[str, int]] = {}
    todo = list(by_parent.get(root, []))
    while todo:
        pid = todo.pop()
        out[pid] = (stats[pid][0], stats[pid][4])
        todo.extend(by_parent.get(pid, []))
    return out


def is_chromium(name: str) -> bool:
    return "chrom" in name.lower()


def user_data_dir_of(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().decode(errors="replace").split("\0")
    except OSError:
        return None
    for a in args:
        if a.startswith("--user-data-dir="):
            return a.split("=", 1)[1]
    return None


def kill_tree(pids: dict[int, tuple[str, int]]) -> list[int]:
    """SIGKILLs these processes (when still the same processes) and their
    process groups, never our own group. Returns the pids it had to kill."""
    killed = []
    own_group = os.getpgrp()
    for pid, (_, start) in pids.items():
        s = proc_stat(pid)
        if s is None or s[1] == "Z" or s[4] != start:
            continue
        killed.append(pid)
        with contextlib.suppress(OSError):
            if s[3] != own_group and s[3] > 1:
                os.killpg(s[3], signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return killed


async def wait_dead(pids: dict[int, tuple[str, int]], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(alive(p, st) for p, (_, st) in pids.items()):
        if time.monotonic() > deadline:
            return False
        await anyio.sleep(0.1)
    return True


def find_chromium() -> str:
    configured = os.environ.get("CHROMIUM")
    if configured:
        return configured
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    raise Fail("Chromium not found (chromium, chromium-browser, google-chrome on PATH; or set CHROMIUM)")


@dataclass
class Chromium:
    port: int
    pid: int

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


async def launch_chromium(sc: Scenario, label: str, args: list[str] | None = None) -> Chromium:
    """Our own headless Chromium (its own process group), killed and its
    user-data-dir removed when the scenario ends, whatever happened; args
    are added to its command line."""
    udd = os.path.join(sc.tmp, f"c{label}")
    os.makedirs(udd)
    # Chromium's own scratch dirs (org.chromium.Chromium.*) go with the scenario's.
    scratch = os.path.join(sc.tmp, f"c{label}t")
    os.makedirs(scratch)
    logf = open(os.path.join(sc.tmp, f"chromium-{label}.log"), "w")
    proc = subprocess.Popen(
        [
            find_chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--remote-debugging-port=0",
            f"--user-data-dir={udd}",
            *(args or []),
            "about:blank",
        ],
        stdin=subprocess.DEVNULL,
        stdout=logf,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "TMPDIR": scratch},
    )

    async def stop() -> None:
        # SIGTERM lets it remove its scratch files; SIGKILL the group after 2 s.
        for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, CLEANUP_GRACE_S)):
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, sig)
            deadline = time.monotonic() + grace
            while proc.poll() is None and time.monotonic() < deadline:
                await anyio.sleep(0.05)
            if proc.poll() is not None:
                break
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)  # helpers left in the group
        logf.close()
        # Helpers (zygote, renderers) share the group; give them a moment, then the dir.
        await anyio.sleep(0.2)
        shutil.rmtree(udd, ignore_errors=True)

    sc.stack.push_async_callback(stop)
    active = os.path.join(udd, "DevToolsActivePort")
    deadline = time.monotonic() + START_DEADLINE_S
    port = 0
    while not port:
        if proc.poll() is not None:
            raise Fail(f"{label}: Chromium exited with {proc.returncode}; see {logf.name}")
        if time.monotonic() > deadline:
            raise Fail(f"{label}: Chromium wrote no {active} within {START_DEADLINE_S:.0f} s")
        with contextlib.suppress(OSError, ValueError):
            with open(active) as f:
                port = int(f.readline().strip() or 0)
        if not port:
            await anyio.sleep(0.05)
    chromium = Chromium(port=port, pid=proc.pid)
    # The about:blank tab must exist before a supervisor attaches to "the first page".
    while True:
        try:
            raw = await anyio.to_thread.run_sync(
                lambda: urllib.request.urlopen(f"{chromium.http_url}/json/list", timeout=2).read()
            )
            if any(t.get("type") == "page" for t in json.loads(raw)):
                break
        except (OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise Fail(f"{label}: Chromium on port {port} lists no page target")
        await anyio.sleep(0.1)
    sc.log(f"Chromium {label} pid {proc.pid} on port {port}")
    return chromium


# --- MCP servers ---------------------------------------------------------------


@dataclass
class Server:
    label: str
    client: Client
    pid: int
    log_path: str
    seen: dict[int, tuple[str, int]] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def sample(self) -> None:
        """Remembers the server's descendants (and Chromium user-data-dirs)."""
        found = descendants(self.pid)
        with self.lock:
            for pid, info in found.items():
                if pid not in self.seen:
                    self.seen[pid] = info
                    if is_chromium(info[0]):
                        d = user_data_dir_of(pid)
                        if d:
                            self.dirs.add(d)

    def ever_seen(self) -> dict[int, tuple[str, int]]:
        with self.lock:
            return dict(self.seen)

    def chromium_now(self) -> list[int]:
        return [p for p, (name, _) in descendants(self.pid).items() if is_chromium(name)]


# Marks a server process (in its environment) so that we find it among our descendants.
TAG_VAR = "CDP_TRUTH_TAG"


def server_env(tag: str) -> dict[str, str]:
    # The defaults (dialog_policy must_respond…): no config from the caller's environment.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CDP_SUPERVISOR_") and k != "CDP_MCP_TOKEN"
    }
    env[TAG_VAR] = tag
    return env


def scratch_dir(sc: Scenario, label: str) -> str:
    """A TMPDIR inside the scenario's dir: what the server and a Chromium it
    launches put in temp (a profile, org.chromium.Chromium.*) goes with it."""
    d = os.path.join(sc.tmp, f"{label}t")
    os.makedirs(d, exist_ok=True)
    return d


def pid_with_tag(tag: str) -> int | None:
    needle = f"{TAG_VAR}={tag}".encode()
    for pid in descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    return pid
        except OSError:
            pass
    return None


TRANSPORTS = ("stdio", "http")


@contextlib.asynccontextmanager
async def mcp_server(
    sc: Scenario,
    binary: str,
    label: str,
    args: list[str],
    *,
    transport: str = "stdio",
    env: dict[str, str] | None = None,
    **client_kwargs: Any,
):
    """`cdp-supervisor mcp ARGS` through the SDK's Client: over stdio (the
    SDK starts the server), or over streamable HTTP (`mcp --http
    127.0.0.1:0`, started here; its address read from the `listening on`
    line of its stderr). `env` adds variables to the server's environment
    (which otherwise has no CDP_SUPERVISOR_* of ours); `client_kwargs` go to
    Client (message_handler, elicitation_callback, mode…).

    On the way out (also on failure) the SDK closes stdin (then kills the
    server's group after 2 s), or deletes its HTTP session, after which the
    HTTP server gets Ctrl-C; whatever the server started and left running is
    killed here, and a Chromium user-data-dir it left is removed."""
    if transport not in TRANSPORTS:
        raise ValueError(f"transport {transport!r}: one of {TRANSPORTS}")
    tag = f"{sc.name}-{label}-{uuid.uuid4().hex[:8]}"
    log_path = os.path.join(sc.tmp, f"server-{label}.stderr")
    errlog = open(log_path, "w")
    server_environ = server_env(tag)
    server_environ["TMPDIR"] = scratch_dir(sc, label)
    server_environ.update(env or {})
    client_kwargs.setdefault("read_timeout_seconds", CALL_TIMEOUT_S)
    # The 2025-11-25 revision (one task per session) unless the script asks
    # for another: over HTTP a 2026-07-28 client must name its task
    # (revisions.py tests that revision).
    client_kwargs.setdefault("mode", "legacy")
    # No response cache: every resources/read must reach the server.
    client_kwargs.setdefault("cache", None)
    server: Server | None = None
    http_proc: subprocess.Popen | None = None
    stop_sampling = threading.Event()
    try:
        if transport == "stdio":
            params = StdioServerParameters(command=binary, args=["mcp", *args], env=server_environ)
            target: Any = stdio_client(params, errlog=errlog)
        else:
            http_proc = subprocess.Popen(
                [binary, "mcp", "--http", "127.0.0.1:0", *args],
                env=server_environ,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errlog,
            )
            target = await http_address(http_proc, log_path, label)
            sc.log(f"{label}: HTTP server pid {http_proc.pid} at {target}")
        async with Client(target, **client_kwargs) as client:
            pid = http_proc.pid if http_proc is not None else None
            deadline = time.monotonic() + START_DEADLINE_S
            while pid is None and time.monotonic() < deadline:
                pid = pid_with_tag(tag)
                if pid is None:
                    await anyio.sleep(0.05)
            if pid is None:
                raise Fail(f"{label}: no child process runs the server (tag {tag})")
            server = Server(label=label, client=client, pid=pid, log_path=log_path)
            st = proc_stat(pid)
            if st is not None:
                server.seen[pid] = (st[0], st[4])  # reaped with the rest if it outlives the session

            def sampler() -> None:
                while not stop_sampling.wait(0.5):
                    server.sample()

            sampling = threading.Thread(target=sampler, daemon=True)
            sampling.start()
            try:
                yield server
            finally:
                stop_sampling.set()
                sampling.join(2.0)
                server.sample()
    finally:
        stop_sampling.set()
        with anyio.CancelScope(shield=True):
            if http_proc is not None:
                await stop_http_server(sc, label, http_proc)
            errlog.close()
            await reap_server(sc, label, server)


async def http_address(proc: subprocess.Popen, log_path: str, label: str) -> str:
    """The http://…/mcp address an `mcp --http` server prints on stderr."""
    deadline = time.monotonic() + START_DEADLINE_S
    while True:
        with contextlib.suppress(OSError):
            with open(log_path, errors="replace") as f:
                m = re.search(r"listening on (http://\S+)", f.read())
            if m:
                return m.group(1)
        if proc.poll() is not None:
            raise Fail(f"{label}: the HTTP server exited with {proc.returncode} before listening: {tail(log_path)}")
        if time.monotonic() > deadline:
            raise Fail(f"{label}: the HTTP server printed no 'listening on' line within {START_DEADLINE_S:.0f} s")
        await anyio.sleep(0.05)


async def stop_http_server(sc: Scenario, label: str, proc: subprocess.Popen) -> None:
    """Ctrl-C, as a person would; SIGKILL when it does not stop in time."""
    if proc.poll() is None:
        with contextlib.suppress(OSError):
            proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + CLEANUP_GRACE_S
        while proc.poll() is None and time.monotonic() < deadline:
            await anyio.sleep(0.05)
    if proc.poll() is None:
        sc.log(f"{label}: the HTTP server did not stop on Ctrl-C within {CLEANUP_GRACE_S:.0f} s; killing it")
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(CLEANUP_GRACE_S)


async def reap_server(sc: Scenario, label: str, server: Server | None) -> None:
    """After the session: the server and whatever it started must be gone;
    kills what is left (a cancelled scenario may cut the SDK's own shutdown short)."""
    if server is None:
        return
    seen = server.ever_seen()
    if not await wait_dead(seen, CLEANUP_GRACE_S):
        killed = kill_tree(seen)
        sc.log(f"{label}: killed what the server left running: {killed}")
        await wait_dead(seen, CLEANUP_GRACE_S)
    tmp_root = os.path.realpath(tempfile.gettempdir())
    with server.lock:
        dirs = set(server.dirs)
    for d in dirs:
        real = os.path.realpath(d)
        if os.path.isdir(real) and real.startswith(tmp_root + os.sep):
            sc.log(f"{label}: removing the Chromium profile the server left: {real}")
            shutil.rmtree(real, ignore_errors=True)


def tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


# --- tool calls ------------------------------------------------------------------


@dataclass
class ToolResult:
    is_error: bool
    text: str
    data: dict | None  # structuredContent
    seconds: float


async def call_raw(client: Client, name: str, args: dict | None = None) -> ToolResult:
    t = time.monotonic()
    r = await client.call_tool(name, args or {})
    took = time.monotonic() - t
    text = "".join(getattr(c, "text", "") or "" for c in r.content)
    return ToolResult(bool(r.is_error), text, r.structured_content, took)


async def call(client: Client, name: str, args: dict | None = None) -> dict:
    """A tool call that must succeed; returns its structuredContent."""
    r = await call_raw(client, name, args)
    if r.is_error:
        raise Fail(f"{name}({json.dumps(args)}) is a tool error: {r.text}")
    if r.data is None:
        raise Fail(f"{name}: no structuredContent")
    why = unfaithful(name, r.text, r.data)
    if why:
        raise Fail(why)
    return r.data


def ref_of(text: str, role: str, name: str) -> str:
    """The ref of the outline line `- role "name" … [ref=…]` in text."""
    m = re.search(rf'- {re.escape(role)} "{re.escape(name)}"[^\n]*\[ref=([a-z0-9]+)\]', text)
    if not m:
        raise Fail(f"no {role} {name!r} with a ref in the outline:\n{text[:3000]}")
    return m.group(1)


async def snapshot(client: Client) -> dict:
    return await call(client, "browser_snapshot")


async def evaluate(client: Client, expression: str, frame_id: str | None = None, await_promise: bool = False) -> Any:
    """Runtime.evaluate through browser_cdp (must not be blocked); the value."""
    params: dict[str, Any] = {"expression": expression, "returnByValue": True}
    if await_promise:
        params["awaitPromise"] = True
    args: dict[str, Any] = {"method": "Runtime.evaluate", "params": params}
    if frame_id:
        args["frame_id"] = frame_id
    r = await call(client, "browser_cdp", args)
    reply = r.get("result")
    if not isinstance(reply, dict) or "result" not in reply:
        raise Fail(f"Runtime.evaluate {expression!r}: not a CDP reply under 'result': {r}")
    if "exceptionDetails" in reply:
        raise Fail(f"Runtime.evaluate {expression!r} threw: {reply['exceptionDetails']}")
    return reply["result"].get("value")


async def trigger(client: Client, fn: str, frame_id: str | None = None) -> None:
    """Calls the page function fn from a timer, so the trigger call itself is
    not blocked by the dialog it opens."""
    v = await evaluate(client, f'setTimeout(() => {{ {fn}(); }}, 0); "scheduled"', frame_id)
    if v != "scheduled":
        raise Fail(f"trigger {fn}: evaluate returned {v!r}")


async def click(client: Client, x: float = 40, y: float = 40) -> None:
    """A real user gesture: mousePressed + mouseReleased inside the page body."""
    for kind in ("mousePressed", "mouseReleased"):
        await call(
            client,
            "browser_cdp",
            {
                "method": "Input.dispatchMouseEvent",
                "params": {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
            },
        )


PENDING_KEYS = {"id", "type", "message", "default_prompt", "opened_at", "frame_id", "url", "answerable"}
CLOSED_BY = {"agent", "auto_policy", "watchdog", "remote", "user"}


def dialog_shape_ok(d: dict) -> bool:
    return (
        PENDING_KEYS <= d.keys()
        and re.fullmatch(r"d-\d+", str(d["id"])) is not None
        and isinstance(d["opened_at"], (int, float))
        and isinstance(d["answerable"], bool)
    )


async def wait_pending(
    sc: Scenario, client: Client, dtype: str, message: str | None, what: str, deadline_s: float = DIALOG_DEADLINE_S
) -> dict:
    """Polls browser_snapshot until a pending dialog of that type (and message)
    shows; checks its shape; returns it."""
    deadline = time.monotonic() + deadline_s
    while True:
        snap = await snapshot(client)
        for d in snap.get("pending_dialogs", []):
            if d.get("type") == dtype and (message is None or d.get("message") == message):
                sc.check(dialog_shape_ok(d), f"{what}: pending {d.get('id')} has {sorted(PENDING_KEYS)} ({d})")
                return d
        if time.monotonic() > deadline:
            raise Fail(f"{what}: no pending {dtype} within {deadline_s:.0f} s; pending_dialogs={snap.get('pending_dialogs')}")
        await anyio.sleep(0.1)


async def answer(
    sc: Scenario, client: Client, d: dict, action: str, what: str, prompt_text: str | None = None
) -> dict:
    """browser_dialog for d; checks the answered dialog; returns the result."""
    args: dict[str, Any] = {"action": action}
    if prompt_text is not None:
        args["prompt_text"] = prompt_text
    ans = await call(client, "browser_dialog", args)
    closed = ans.get("answered") or {}
    sc.check(closed.get("id") == d["id"], f"{what}: browser_dialog {action} answered {d['id']}")
    sc.expect(closed.get("closed_by") == "agent", f"{what}: answered closed_by 'agent' ({closed.get('closed_by')})")
    if "accepted" in closed:
        sc.expect(closed["accepted"] == (action == "accept"), f"{what}: answered accepted={closed['accepted']}")
    sc.expect(
        isinstance(ans.get("completed_calls"), list),
        f"{what}: browser_dialog's result carries a completed_calls list (keys {sorted(ans)})",
    )
    return ans


def recent_has(snap: dict, dialog_id: str) -> dict | None:
    for r in snap.get("recent_dialogs", []):
        if r.get("id") == dialog_id:
            return r
    return None




# --- running scenarios -----------------------------------------------------------


def first_fail(e: BaseException) -> BaseException:
    if isinstance(e, Fail):
        return e
    for inner in getattr(e, "exceptions", ()):
        found = first_fail(inner)
        if isinstance(found, Fail):
            return found
    inner = getattr(e, "exceptions", None)
    return first_fail(inner[0]) if inner else e


@dataclass
class Outcome:
    name: str
    ok: bool
    seconds: float
    problems: list[str]


async def run_scenario(
    name: str, body: Callable[[Scenario], Awaitable[None]], deadline_s: float = SCENARIO_DEADLINE_S
) -> Outcome:
    """Runs body(sc) within its deadline; its cleanups run however it ends;
    on failure the tails of its log files are shown; its temp dir is removed."""
    sc = Scenario(name)
    t = time.monotonic()
    problems: list[str] = []
    try:
        try:
            async with sc.stack:  # its cleanups run however the scenario ends
                with anyio.fail_after(deadline_s):
                    await body(sc)
        except TimeoutError:
            problems.append(f"a step did not finish within its deadline (scenario {deadline_s:.0f} s, or a step's own)")
            sc.log(traceback.format_exc())
        except Exception as e:  # noqa: BLE001 - every scenario reports
            f = first_fail(e)
            if isinstance(f, Fail):
                problems.append(f"stopped at: {f}")
            else:
                problems.append(f"error: {type(f).__name__}: {f}")
                sc.log("".join(traceback.format_exception(f)))
        problems = sc.failures + problems
        if problems:
            for path in sorted(os.listdir(sc.tmp)):
                full = os.path.join(sc.tmp, path)
                if os.path.isfile(full):
                    sc.log(f"last lines of {path}:\n{tail(full)}")
    finally:
        shutil.rmtree(sc.tmp, ignore_errors=True)
    return Outcome(name, not problems, time.monotonic() - t, problems)


def cancel_on_signals() -> None:
    """SIGTERM (a test harness stopping us) unwinds like Ctrl-C: every
    scenario's cleanup still kills its Chromium and removes its dirs."""
    main_task = asyncio.current_task()
    assert main_task is not None
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, main_task.cancel)


def summarize(script: str, outcomes: list[Outcome], started: float) -> int:
    """Logs PASS/FAIL per scenario; returns the exit code (1 when any failed)."""
    log("summary:")
    for o in outcomes:
        log(f"{'PASS' if o.ok else 'FAIL'} {o.name} ({o.seconds:.1f} s)")
        for p in o.problems:
            log(f"    - {p}")
    failed = sum(not o.ok for o in outcomes)
    log(f"{script}: {len(outcomes) - failed} passed, {failed} failed in {time.monotonic() - started:.1f} s")
    return 1 if failed else 0


def preflight(binary: str) -> int | None:
    """Why the run cannot start (an exit code), or None: the binary must be
    executable and Chromium present."""
    if not os.access(binary, os.X_OK):
        log(f"FAIL: {binary} is not an executable")
        return 1
    try:
        find_chromium()
    except Fail as e:
        log(f"FAIL: {e}")
        return 1
    return None


async def run_phases(
    script: str,
    doc: str,
    scenarios: dict[str, Callable[[Scenario, str], Awaitable[None]]],
    phases: list[list[str]],
    deadlines: dict[str, float] | None = None,
) -> int:
    """The main of a scenario script: parses `PATH/TO/cdp-supervisor [--only
    NAME[,NAME…]] [--serial]` (doc is the usage), then runs the scenarios
    phase by phase (a phase's scenarios together); the exit code. A
    scenario named in deadlines gets that many seconds instead of
    SCENARIO_DEADLINE_S."""
    argv = sys.argv[1:]
    if not argv or argv[0].startswith("-"):
        print(doc, file=sys.stderr)
        return 2
    binary = os.path.realpath(argv[0])
    only: list[str] | None = None
    serial = False
    rest = argv[1:]
    while rest:
        a = rest.pop(0)
        if a == "--only" and rest:
            only = rest.pop(0).split(",")
        elif a == "--serial":
            serial = True
        else:
            print(doc, file=sys.stderr)
            return 2
    failed = preflight(binary)
    if failed is not None:
        return failed
    unknown = [n for n in only or [] if n not in scenarios]
    if unknown:
        log(f"unknown scenario(s) {unknown}; known: {list(scenarios)}")
        return 2
    cancel_on_signals()
    chosen = [[n for n in p if only is None or n in only] for p in phases]
    if serial:
        chosen = [[n] for p in chosen for n in p]
    outcomes: list[Outcome] = []
    started = time.monotonic()
    for phase in chosen:
        if phase:
            outcomes += await asyncio.gather(
                *(
                    run_scenario(n, lambda sc, n=n: scenarios[n](sc, binary), (deadlines or {}).get(n, SCENARIO_DEADLINE_S))
                    for n in phase
                )
            )
    return summarize(script, outcomes, started)


def exit_with(main: Callable[[], Awaitable[int]]) -> None:
    """Runs main and exits with its code; Ctrl-C or SIGTERM exit 130 after
    every scenario's cleanup ran."""
    try:
        sys.exit(asyncio.run(main()))
    except (asyncio.CancelledError, KeyboardInterrupt):
        log("interrupted; cleaned up")
        sys.exit(130)
