"""A soak run of `cdp-supervisor mcp --http` with invariants (issue 31).

Starts one MCP HTTP server and drives, for --minutes N, --sessions K
concurrent MCP sessions through the official MCP Python SDK, the way agents
do. Each session supervises its own headless Chromium, launched here on a
fixed DevTools port behind a loopback proxy that can be cut (the session
attaches with browser_connect), so that the browser can be killed and
restarted on the same port. A bundled site on loopback (a.test and b.test
through --host-resolver-rules) fires alert, confirm, prompt and beforeunload
from the main frame, a same-site iframe, an OOPIF and popups, at random times
and during calls; every dialog carries a unique token in its message and the
page reports, by synchronous XHR, each dialog it opens and what it received.

Each agent navigates, reads the outline, clicks and types through refs,
evaluates (Runtime.evaluate through browser_cdp, some of them interrupted by a
dialog they open, some past their timeout_s), answers most dialogs, leaves
some to the watchdog and hands some to ask_user (the client answers the
elicitation). Chaos strikes on a seeded schedule printed at the start: the
CDP socket cut through the proxy, a renderer crashed (Page.crash), the
browser killed and restarted on the same port, an MCP client that vanishes
without DELETE, a client that sends garbage HTTP and JSON.

Invariants, checked while it runs and at the end, each violation printed at
once with the seed and the recent event log:
  dialogs    every dialog a page opened is accounted for exactly once: one
             dialog_id per page dialog, answered with what the page received
             equal to the answer, or closed with a closed_by matching who
             closed it (agent, user, watchdog, remote; never auto_policy)
  pending    no dialog pending longer than dialog_timeout_s + 5 s (plus the
             time the session's connection was down meanwhile, and 1.5 s
             per reconnect: the re-check before a watchdog acts again)
  calls      every interrupted or timed-out call has one outcome, delivered
             by browser_dialog at most once; every side effect (evaluate,
             click, typed text, payment) ran at most once, and exactly once
             when its call says it succeeded
  deadlines  every tool call is answered within its deadline
  resources  the server's RSS and open fds flat after the warm-up (bound
             printed); at the end no Chromium, profile or temp dir left
  sessions   (--many M) M sessions at once over HTTP, each with the browser
             the server launched for it (--isolation browser, the default)
             or each in a browser context of one shared browser (--isolation
             context: exactly one browser process under the server), see only
             their own page and dialogs; one more gets 503; all browsers gone
             after DELETE
Chromium dying on its own (a failed check) is counted apart, with its log
line. Figures at the end: dialogs by kind and frame, calls, interruptions,
reconnects, restarts, p50/p99 tool-call latency, RSS and fds per minute.

Usage: soak.py PATH/TO/cdp-supervisor [--minutes N] [--sessions K]
               [--seed S] [--many M] [--many-seconds S]
               [--isolation browser|context]
Exit 0 when no invariant was violated, 1 otherwise, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import http.client
import http.server
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

# How long after a beforeunload's accept the navigation it held may still commit.
NAV_AFTER_BEFOREUNLOAD_S = 5.0
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mcp_client"))

import anyio  # noqa: E402
from mcp import Client, types  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from common import descendants, find_chromium, is_chromium, page, proc_stat  # noqa: E402
from core import CutProxy  # noqa: E402

# --- constants (seconds unless said) ----------------------------------------------

DIALOG_TIMEOUT_S = 4  # the server's --dialog-timeout-s: short, so the watchdog works often
PENDING_MARGIN_S = 5.0  # issue 31: no dialog pending past dialog_timeout_s + 5 s
# After a reconnect a dialog kept across the drop is re-checked before any
# watchdog acts on it: its renderer's Page.enable gets this long to answer
# (PAGE_ENABLE_GRACE in state/mod.rs; DESIGN "Reconnects"). Each outage in a
# dialog's life adds it to the bound, beside the time the socket was down.
RECHECK_GRACE_S = 1.5
IDLE_TIMEOUT_S = 15  # the server's --idle-timeout-s: a vanished client's session ends by then
VANISHED_GONE_S = IDLE_TIMEOUT_S + 20  # …and its Chromium is gone by then
OBSERVE_EVERY_S = 0.5  # each session's observer reads browser_snapshot this often
# recent_dialogs keeps 20 (RECENT_DIALOGS_MAX): at under one dialog a second
# per session, a read every 0.5 s misses none.
SAMPLE_EVERY_S = 5.0  # server RSS and fds
START_DEADLINE_S = 20.0  # a Chromium or the server is up
RECONNECTED_DEADLINE_S = 60.0  # after a cut or restart the session is connected again
SERVER_LOG = "warn,cdp_supervisor=info,cdp_supervisor::supervisor::driver=debug"
CALL_OUTCOME_GRACE_S = 10.0  # an interrupted call's outcome shows by timeout_s + dialog_timeout_s + this
QUIESCE_S = 3.0  # at the end, after the last navigation, before the final read
TOOL_DEADLINES = {  # no reply within this is a violation (the tool's own bounds + margin)
    "browser_navigate": 45.0,  # its load timeout is 30 s
    "browser_snapshot": 20.0,
    "browser_dialog": 20.0,
    "browser_click": 25.0,
    "browser_type": 25.0,
    "browser_tabs": 20.0,
    "browser_wait": 15.0,  # called with timeout_s 2
    "browser_connect": 45.0,
    "browser_disconnect": 20.0,
}
CDP_DEADLINE_MARGIN_S = 10.0  # browser_cdp: its timeout_s plus this
# Resources after the warm-up (the first third of the run, at least 30 s):
# every later sample at most RSS_FACTOR x the warm-up's peak + RSS_SLACK_MB,
# and fds at most the warm-up's peak + FD_SLACK.
RSS_FACTOR = 1.3
RSS_SLACK_MB = 32.0
FD_SLACK = 32
MANY_CAP = 16  # the server's default --max-sessions
DISMISS_VALUES = ("__undefined__", False, None)
# A dialog call that returned this fast was never shown: no answer through
# MCP comes back within it (the fastest browser_dialog round trip is ~20 ms).
SUPPRESSED_MS = 5  # what a page gets from a dismissed (or closed) dialog

_t0 = time.monotonic()


def now() -> float:
    return time.monotonic() - _t0


def say(msg: str) -> None:
    print(f"[soak {now():7.1f}s] {msg}", file=sys.stderr, flush=True)


# --- the event log and violations ---------------------------------------------------


class Book:
    """What happened (a ring of recent events per session) and what broke."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.events: dict[str, collections.deque] = collections.defaultdict(lambda: collections.deque(maxlen=60))
        self.violations: list[str] = []
        self.chromium_deaths: list[str] = []
        self.counts: collections.Counter = collections.Counter()
        self.latency: dict[str, list[float]] = collections.defaultdict(list)
        self.per_minute: dict[int, collections.Counter] = collections.defaultdict(collections.Counter)
        # Every event of the run, kept after it (its path is printed at the end).
        self.log_path = os.path.join(tempfile.gettempdir(), f"cdp-soak-{seed}-events.log")
        self.server_log_path = os.path.join(tempfile.gettempdir(), f"cdp-soak-{seed}-server.log")
        self.log: Any = open(self.log_path, "w", buffering=1)

    def event(self, who: str, what: str) -> None:
        line = f"{now():7.1f}s {what}"
        self.events[who].append(line)
        if self.log is not None:
            self.log.write(f"{who:6s}{line}\n")

    def count(self, key: str, n: int = 1) -> None:
        self.counts[key] += n
        self.per_minute[int(now() // 60)][key] += n

    def violate(self, who: str, what: str) -> None:
        self.violations.append(f"{who}: {what}")
        if self.log is not None:
            self.log.write(f"{who:6s}{now():7.1f}s VIOLATION {what}\n")
        lines = "\n    ".join(list(self.events[who])[-25:])
        say(f"VIOLATION (seed {self.seed}) {who}: {what}\n  recent events of {who}:\n    {lines}")


# --- the site ------------------------------------------------------------------------

PAGE_JS = r"""
const Q = new URLSearchParams(location.search);
const S = Q.get('s'), F = Q.get('f') || 'main', R = Q.get('r') || '0';
const DOC = Math.random().toString(36).slice(2, 8);
let seed = (+R * 2654435761 + F.length * 97) >>> 0;
function rnd() {  // mulberry32: the page's timers follow the run's seed
  seed = (seed + 0x6D2B79F5) >>> 0; let t = seed;
  t = Math.imul(t ^ t >>> 15, t | 1); t ^= t + Math.imul(t ^ t >>> 7, t | 61);
  return ((t ^ t >>> 14) >>> 0) / 4294967296;
}
function hit(path) {  // synchronous: the server has it before the next line runs
  try { const x = new XMLHttpRequest(); x.open('GET', path, false); x.send(); } catch (e) {}
}
let n = 0;
window.soakAsk = function (kind, why) {
  const tok = `${S}.${F}.${R}.${DOC}.${++n}`;
  hit(`/log?ev=open&s=${S}&tok=${tok}&kind=${kind}&f=${F}`);
  const msg = `soak ${tok} ${kind} ${why}`;
  let v;
  const t0 = performance.now();
  if (kind === 'alert') v = alert(msg);
  else if (kind === 'confirm') v = confirm(msg);
  else v = prompt(msg, 'default-' + tok);
  const sent = v === undefined ? '__undefined__' : v;
  const ms = Math.round(performance.now() - t0);
  hit(`/log?ev=result&s=${S}&tok=${tok}&ms=${ms}&v=${encodeURIComponent(JSON.stringify(sent))}`);
  return v;
};
window.soakEffect = function (id) { hit(`/effect?s=${S}&id=${id}`); return 'done-' + id; };
const KINDS = ['alert', 'confirm', 'prompt'];
const MEAN = +(Q.get('m') || 12000);
function arm() { setTimeout(() => { soakAsk(KINDS[Math.floor(rnd() * 3)], 'timer'); arm(); }, 300 + rnd() * 2 * MEAN); }
if (Q.get('m') !== '0') arm();
"""

MAIN_BODY = """
<h1>Soak {s}</h1>
<button id=pay onclick="if (soakAsk('confirm', 'pay')) hit('/paid?s={s}&n=' + Date.now() + Math.random())">Pay</button>
<button id=count onclick="hit('/count?s={s}')">Count</button>
<button id=popup onclick="window.open('{popup}')">Popup</button>
<label><input type=checkbox id=guard onchange="window.onbeforeunload = this.checked ? (e) => {{ e.preventDefault(); e.returnValue = ''; }} : null"> Guard</label>
<form id=f onsubmit="event.preventDefault(); hit('/typed?s={s}&v=' + encodeURIComponent(note.value)); note.value = '';">
<input id=note aria-label=Note></form>
<iframe src="/frame?s={s}&f=same&r={r}&m={m}" width=300 height=60></iframe>
<iframe src="http://b.test:{port}/frame?s={s}&f=oopif&r={r}&m={m}" width=300 height=60></iframe>
"""


class Site:
    """The bundled site (ThreadingHTTPServer on loopback; a.test and b.test
    both map to it) and the ledger of what pages reported: each dialog
    opened and what it returned, side effects, clicks, typed text."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.opened: dict[str, dict] = {}  # token -> {s, kind, f, at}
        self.results: dict[str, list] = collections.defaultdict(list)  # token -> values received
        self.took_ms: dict[str, int] = {}  # token -> how long the dialog call blocked the page
        self.effects: collections.Counter = collections.Counter()  # (s, id) -> runs
        self.clicks: collections.Counter = collections.Counter()  # s -> Count clicks run
        self.typed: dict[str, list[str]] = collections.defaultdict(list)  # s -> values submitted
        self.paid: collections.Counter = collections.Counter()  # s -> payments
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                u = urllib.parse.urlsplit(self.path)
                q = {k: v[0] for k, v in urllib.parse.parse_qs(u.query, keep_blank_values=True).items()}
                body = site.serve(u.path, q)
                if body is None:
                    self.send_error(404)
                    return
                data = body.encode()
                self.send_response(200)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.send_header("cache-control", "no-store")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # a page that navigated or crashed meanwhile: not ours to report

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def url(self, path: str, host: str = "a.test") -> str:
        return f"http://{host}:{self.port}{path}"

    def main_url(self, s: str, r: int, mean_ms: int) -> str:
        return self.url(f"/main?s={s}&r={r}&m={mean_ms}")

    def serve(self, path: str, q: dict[str, str]) -> str | None:
        s = q.get("s", "")
        with self.lock:
            if path == "/log":
                tok = q.get("tok", "")
                if q.get("ev") == "open":
                    self.opened[tok] = {"s": s, "kind": q.get("kind"), "f": q.get("f"), "at": now()}
                else:
                    self.results[tok].append(json.loads(q.get("v", "null")))
                    self.took_ms[tok] = int(q.get("ms", "-1"))
                return "ok"
            if path == "/effect":
                self.effects[(s, q.get("id", ""))] += 1
                return "ok"
            if path == "/count":
                self.clicks[s] += 1
                return "ok"
            if path == "/typed":
                self.typed[s].append(q.get("v", ""))
                return "ok"
            if path == "/paid":
                self.paid[s] += 1
                return "ok"
        r, m = q.get("r", "0"), q.get("m", "0")
        script = PAGE_JS
        if path == "/main":
            popup_host = "b.test" if int(r) % 3 == 0 else "a.test"  # a cross-site popup now and then
            popup = self.url(f"/frame?s={s}&f=popup&r={r}&m={m}", popup_host)
            body = MAIN_BODY.format(s=s, r=r, m=m, port=self.port, popup=popup)
            return page(f"main {s}", body, script)
        if path == "/frame":
            return page(f"frame {s}", f"<p>{q.get('f')} of {s}</p>", script)
        if path == "/quiet":
            return page(f"quiet {s}", f"<p>quiet {s}</p>", "window.soakEffect = () => 0;")
        return None


# --- Chromium we launch ------------------------------------------------------------------


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class OwnChromium:
    """A headless Chromium on a fixed DevTools port (so a restart keeps the
    port), its own process group, profile and scratch dirs under root."""

    def __init__(self, root: str, label: str) -> None:
        self.root = root
        self.label = label
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.generation = 0
        self.killing = False  # a kill of ours, not a death
        self.dirs: list[str] = []
        self.log_path = ""

    async def start(self) -> None:
        self.generation += 1
        udd = os.path.join(self.root, f"{self.label}-p{self.generation}")
        scratch = udd + "t"
        os.makedirs(udd)
        os.makedirs(scratch)
        self.dirs += [udd, scratch]
        self.log_path = os.path.join(self.root, f"{self.label}-{self.generation}.log")
        logf = open(self.log_path, "w")
        deadline = time.monotonic() + START_DEADLINE_S
        while True:  # the port can linger for a moment after a kill
            self.proc = subprocess.Popen(
                [find_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--host-resolver-rules=MAP *.test 127.0.0.1",
                 f"--remote-debugging-port={self.port}", f"--user-data-dir={udd}", "about:blank"],
                stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                start_new_session=True, env={**os.environ, "TMPDIR": scratch},
            )
            ok = await self._ready(deadline)
            if ok:
                break
            await self.kill()
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.label}: Chromium did not come up on port {self.port}; see {self.log_path}")
            await asyncio.sleep(0.5)
        logf.close()
        self.killing = False

    async def _ready(self, deadline: float) -> bool:
        assert self.proc is not None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                raw = await asyncio.to_thread(
                    lambda: urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=2).read())
                if any(t.get("type") == "page" for t in json.loads(raw)):
                    return True
            except (OSError, ValueError):
                pass
            await asyncio.sleep(0.1)
        return False

    def died(self) -> bool:
        return self.proc is not None and not self.killing and self.proc.poll() is not None

    async def kill(self) -> None:
        self.killing = True
        if self.proc is None:
            return
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while self.proc.poll() is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.2)  # helpers of the group
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)
        self.dirs.clear()

    def log_line(self) -> str:
        """The lines of its log that say why it died (a failed check, a
        signal), else its last lines."""
        try:
            with open(self.log_path, errors="replace") as f:
                lines = [ln.strip() for ln in f.read().splitlines() if ln.strip()]
        except OSError:
            return "(no log)"
        why = [ln for ln in lines if re.search(r"Check failed|FATAL|Received signal|NOTREACHED|DUMP_WITHOUT", ln)]
        return " | ".join((why or lines[-3:] or ["(empty log)"])[:3])


# --- the server ----------------------------------------------------------------------------


class McpServer:
    def __init__(self, binary: str, root: str, isolation: str = "browser") -> None:
        self.binary = binary
        self.isolation = isolation
        self.tmp = os.path.join(root, "server-tmp")
        os.makedirs(self.tmp)
        self.log_path = os.path.join(root, "server.stderr")
        self.proc: subprocess.Popen | None = None
        self.url = ""
        self.samples: list[tuple[float, float, int]] = []  # (t, rss MB, fds)
        self.seen: dict[int, tuple[str, int]] = {}

    async def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CDP_SUPERVISOR_") and k != "CDP_MCP_TOKEN"}
        env["TMPDIR"] = self.tmp
        # The driver's debug lines (each command sent, the dialog and
        # navigation events, each dialog closed and why) explain a violation.
        env["RUST_LOG"] = SERVER_LOG
        env["CDP_SUPERVISOR_BROWSER__CHROMIUM_ARGS"] = '["--host-resolver-rules=MAP *.test 127.0.0.1"]'
        env["CDP_SUPERVISOR_BROWSER__ISOLATION"] = self.isolation
        self.errlog = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            [self.binary, "mcp", "--http", "127.0.0.1:0", "--dialog-timeout-s", str(DIALOG_TIMEOUT_S),
             "--idle-timeout-s", str(IDLE_TIMEOUT_S), "--max-sessions", str(MANY_CAP)],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.errlog,
        )
        deadline = time.monotonic() + START_DEADLINE_S
        while not self.url:
            with contextlib.suppress(OSError):
                with open(self.log_path, errors="replace") as f:
                    m = re.search(r"listening on (http://\S+)", f.read())
                    if m:
                        self.url = m.group(1)
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start: {self.tail()}")
            await asyncio.sleep(0.05)

    def announced(self, token: str) -> bool:
        """Whether Chromium sent a javascriptDialogOpening whose message
        carries `token` (the driver logs each at debug, SERVER_LOG)."""
        with contextlib.suppress(OSError):
            with open(self.log_path, errors="replace") as f:
                return any("javascriptDialogOpening" in line and token in line for line in f)
        return True

    def tail(self, n: int = 20) -> str:
        with contextlib.suppress(OSError):
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        return ""

    def sample(self) -> tuple[float, int] | None:
        assert self.proc is not None
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                rss = next(int(ln.split()[1]) for ln in f if ln.startswith("VmRSS:")) / 1024
            fds = len(os.listdir(f"/proc/{self.proc.pid}/fd"))
        except (OSError, StopIteration):
            return None
        self.samples.append((now(), rss, fds))
        for pid, info in descendants(self.proc.pid).items():
            self.seen.setdefault(pid, info)
        return rss, fds

    def browser_processes(self) -> list[int]:
        """Chromium browser processes under the server (not renderers or
        helpers, whose command lines carry --type=)."""
        found = []
        for p in self.chromium_now():
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    args = f.read().replace(b"\0", b" ")
            except OSError:
                continue
            if args and b"--type=" not in args:
                found.append(p)
        return found

    def chromium_now(self) -> list[int]:
        assert self.proc is not None
        return [p for p, (name, _) in descendants(self.proc.pid).items() if is_chromium(name)]

    async def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            deadline = time.monotonic() + 10
            while self.proc.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        self.errlog.close()


# --- raw HTTP (garbage, vanishing clients, the 17th session) ------------------------------


INIT = {"protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "soak.py raw", "version": "0"}}


def rpc(method: str, params: dict | None = None, id_: int | None = 1) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        msg["id"] = id_
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode()


def http_post(url: str, body: bytes, session: str | None = None, timeout: float = 60) -> tuple[int, dict, str]:
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": "2025-06-18"}
    if session:
        headers["mcp-session-id"] = session
    try:
        conn.request("POST", u.path, body, headers)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode(errors="replace")
    finally:
        conn.close()


def open_raw_session(url: str) -> tuple[int, str | None, str]:
    status, headers, text = http_post(url, rpc("initialize", INIT))
    sid = headers.get("mcp-session-id")
    if status == 200 and sid:
        http_post(url, rpc("notifications/initialized", None, None), sid)
    return status, sid, text


def raw_exchange(port: int, data: bytes, timeout: float = 10) -> str:
    """Sends bytes on a fresh connection; what came back (the status line) until close or timeout."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_WR)
        got = b""
        with contextlib.suppress(socket.timeout, OSError):
            while len(got) < 4096:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        return got.split(b"\r\n", 1)[0].decode(errors="replace")


# --- one agent session ------------------------------------------------------------------------


@dataclass
class Closing:
    closed_by: str
    accepted: bool | None
    user_input: str | None
    closed_at: float  # Unix seconds, the server's


@dataclass
class Dialog:
    """One dialog as the supervisor reported it (by dialog_id)."""

    id: str
    type: str
    token: str | None
    default_prompt: str
    opened_at: float  # Unix seconds, the server's
    first_seen: float  # our monotonic
    closing: Closing | None = None
    fate: str = ""  # what the agent decided: answer, watchdog, ask_user
    answered: dict | None = None  # our successful browser_dialog: {action, text}
    human: dict | None = None  # what the human said through elicitation
    # An answer whose reply the socket cut took ("may or may not have reached
    # the page"): {by: agent|user, action, text}; recent_dialogs tells.
    maybe: dict | None = None
    age_flagged: bool = False


@dataclass
class Call:
    """A call the server said is interrupted or timed out."""

    call_id: str
    method: str
    kind: str  # interrupted | timed_out
    effect: str | None  # the evaluate's effect id
    at: float
    deadline_s: float
    delivered: int = 0  # times browser_dialog's completed_calls carried it
    outcome: dict | None = None


class Agent:
    """One MCP session: its browser behind a proxy, its agent loop and its
    observer, its ledger of dialogs and calls."""

    def __init__(self, idx: int, soak: "Soak") -> None:
        self.idx = idx
        self.name = f"s{idx}"
        self.soak = soak
        self.book = soak.book
        self.rng = random.Random(f"{soak.seed}-agent-{idx}")
        self.chromium = OwnChromium(soak.root, self.name)
        self.proxy = CutProxy(0)
        self.client: Client | None = None
        self.dialogs: dict[str, Dialog] = {}
        self.calls: dict[str, Call] = {}
        self.effects_ok: set[str] = set()  # effect ids whose call said done
        self.effects_all: set[str] = set()
        self.clicks_sent = 0
        self.clicks_ok = 0
        self.typed_ok: list[str] = []
        self.typed_sent: list[str] = []
        self.navs = 0
        self.connection = "connecting"
        self.down_since: float | None = None
        self.outages: list[list[float]] = []  # [start, end] (monotonic since _t0) of chaos and downtime
        self.last_snap: dict = {}
        self.snap_at = 0.0  # when the last snapshot observed was asked for
        self.stop = False
        self.last_human: dict | None = None  # what the human said to the last elicitation
        # (start, end) Unix seconds of the agent's calls that navigate or close
        # tabs: a dialog they close is closed_by agent without an answer.
        self.nav_spans: list[tuple[float, float]] = []
        self.mean_ms = 9000

    # -- tool calls --

    async def call(self, name: str, args: dict | None = None) -> tuple[bool, str, dict]:
        """(is_error, text, structuredContent); a violation when no reply came within its deadline."""
        assert self.client is not None
        args = args or {}
        deadline = TOOL_DEADLINES.get(name, 30.0)
        if name == "browser_cdp":
            deadline = float(args.get("timeout_s", 30)) + CDP_DEADLINE_MARGIN_S
        t = time.monotonic()
        try:
            with anyio.fail_after(deadline):
                r = await self.client.call_tool(name, args)
        except TimeoutError:
            self.book.violate(self.name, f"{name}({json.dumps(args)[:200]}) got no reply within {deadline:.0f} s")
            return True, "no reply", {}
        except MCPError as e:
            self.book.violate(self.name, f"{name}({json.dumps(args)[:200]}) is a JSON-RPC error, not a tool result: {e}")
            return True, str(e), {}
        took = time.monotonic() - t
        self.book.latency[name].append(took)
        self.book.count("calls")
        text = "".join(getattr(c, "text", "") or "" for c in r.content)
        data = r.structured_content or {}
        self.book.event(self.name, f"call {name} {json.dumps(args, ensure_ascii=False)[:160]} -> "
                        f"{'error ' + repr(text[:160]) if r.is_error else json.dumps(r.structured_content)[:200]}")
        if r.is_error:
            self.book.count("tool_errors")
        return bool(r.is_error), text, data

    # -- the human behind ask_user --

    async def human(self, context: Any, params: Any) -> types.ElicitResult:
        msg = getattr(params, "message", "") or ""
        m = re.search(r"soak (\S+) (alert|confirm|prompt)", msg)
        tok = m.group(1) if m else None
        accept = self.rng.random() < 0.7
        content: dict[str, Any] = {"action": "accept" if accept else "dismiss"}
        if accept and m and m.group(2) == "prompt":
            content["text"] = f"user-{self.rng.randrange(10**6)}"
        self.last_human = content
        self.book.event(self.name, f"human answers {tok or msg[:60]!r}: {content}")
        self.book.count("elicitations")
        return types.ElicitResult(action="accept", content=content)

    # -- dialogs as the supervisor reports them --

    def note_dialog(self, d: dict) -> Dialog:
        known = self.dialogs.get(d["id"])
        if known is None:
            msg = d.get("message") or ""
            m = re.search(r"soak (\S+) ", msg)
            known = Dialog(d["id"], d.get("type", ""), m.group(1) if m else None, d.get("default_prompt") or "",
                           float(d.get("opened_at") or time.time()), now())
            self.dialogs[d["id"]] = known
            self.book.event(self.name, f"dialog {known.id} {known.type} {known.token or ''} seen")
            if known.token and not known.token.startswith(self.name + "."):
                self.book.violate(self.name, f"sees another session's dialog {known.id}: {msg[:120]!r}")
        return known

    def note_closed(self, r: dict, source: str) -> None:
        d = self.note_dialog(r)
        c = Closing(r.get("closed_by", "?"), r.get("accepted"), r.get("user_input"), float(r.get("closed_at") or time.time()))
        if d.closing is None:
            d.closing = c
            late = f", {c.closed_at - d.opened_at:.1f} s after it opened (flagged)" if d.age_flagged else ""
            self.book.event(self.name, f"dialog {d.id} closed by {c.closed_by} accepted={c.accepted} ({source}){late}")
        elif (d.closing.closed_by, d.closing.accepted, d.closing.user_input) != (c.closed_by, c.accepted, c.user_input):
            self.book.violate(self.name, f"dialog {d.id} closed twice, differently: {d.closing} then {c} ({source})")

    def note_completed(self, entries: list, delivered: bool) -> None:
        seen: set[str] = set()
        for e in entries or []:
            cid = e.get("call_id")
            if cid in seen:
                self.book.violate(self.name, f"call {cid} listed twice in one completed_calls: {entries}")
            seen.add(cid)
            call = self.calls.get(cid)
            if call is None:
                if delivered:
                    self.book.violate(self.name, f"browser_dialog delivered {cid}, a call never reported interrupted to us")
                continue
            if delivered:
                call.delivered += 1
                if call.delivered > 1:
                    self.book.violate(self.name, f"call {cid} delivered {call.delivered} times")
            if call.outcome is None:
                call.outcome = e
                self.book.event(self.name, f"call {cid} outcome: {json.dumps(e)[:160]}")
                value = (((e.get("result") or {}).get("result")) or {}).get("value")
                if call.effect and value == f"done-{call.effect}":
                    self.effects_ok.add(call.effect)

    def observe(self, snap: dict, asked_at: float) -> None:
        self.last_snap = snap
        self.snap_at = asked_at
        conn = snap.get("connection", "connected")
        if conn != self.connection:
            self.book.event(self.name, f"connection {self.connection} -> {conn}")
            if conn != "connected" and self.down_since is None:
                self.down_since = now()
            if conn == "connected" and self.down_since is not None:
                self.outages.append([self.down_since, now()])
                self.down_since = None
                self.book.count("reconnects")
            self.connection = conn
        for d in snap.get("pending_dialogs") or []:
            self.note_dialog(d)
        for r in snap.get("recent_dialogs") or []:
            self.note_closed(r, "recent_dialogs")
        self.note_completed(snap.get("completed_calls") or [], delivered=False)
        self.check_ages(snap.get("pending_dialogs") or [])

    def down_during(self, start: float, end: float) -> float:
        """The time the connection was down between start and end, plus the
        re-check grace of each reconnect in that span."""
        total = 0.0
        spans = list(self.outages) + ([[self.down_since, now()]] if self.down_since is not None else [])
        for a, b in spans:
            total += max(0.0, min(b, end) - max(a, start))
            if start <= b <= end:
                total += RECHECK_GRACE_S
        return total

    def check_ages(self, pending: list) -> None:
        wall = time.time()
        for p in pending:
            d = self.dialogs[p["id"]]
            age = wall - d.opened_at
            bound = DIALOG_TIMEOUT_S + PENDING_MARGIN_S + self.down_during(now() - age, now())
            if age > bound and not d.age_flagged:
                d.age_flagged = True
                self.book.violate(self.name, f"dialog {d.id} ({d.type} {d.token}) pending {age:.1f} s > bound {bound:.1f} s "
                                  f"(answerable {p.get('answerable')}, page_blocked {self.last_snap.get('page_blocked')}, "
                                  f"connection {self.last_snap.get('connection')})")

    async def observer(self) -> None:
        while not self.stop:
            asked = now()
            _, _, snap = await self.call("browser_snapshot", {"page": False})
            if snap:
                self.observe(snap, asked)
            await asyncio.sleep(OBSERVE_EVERY_S)

    # -- the agent's decisions --

    def read_result(self, name: str, is_error: bool, text: str, data: dict, effect: str | None, timeout_s: float) -> None:
        for d in data.get("pending_dialogs") or []:
            if isinstance(d, dict) and "id" in d:
                self.note_dialog(d)
        if is_error and (data.get("interrupted_by_dialog") or data.get("timed_out")):
            cid = data.get("call_id")
            kind = "interrupted" if data.get("interrupted_by_dialog") else "timed_out"
            if cid in self.calls:
                self.book.violate(self.name, f"call_id {cid} reported interrupted twice")
            self.calls[cid] = Call(cid, data.get("method", name), kind, effect, now(), timeout_s)
            self.book.count(f"calls_{kind}")
            self.book.event(self.name, f"{name} {kind} as {cid} (effect {effect})")
            if "resen" not in text.lower():
                self.book.violate(self.name, f"{name} {kind}: the text does not say not to resend it: {text[:200]!r}")

    async def answer_dialogs(self) -> None:
        pending = [d for d in (self.last_snap.get("pending_dialogs") or [])]
        for p in pending:
            d = self.note_dialog(p)
            if d.fate or d.closing:
                continue
            x = self.rng.random()
            d.fate = "answer" if x < 0.7 else ("watchdog" if x < 0.85 else "ask_user")
            if d.fate == "watchdog":
                self.book.event(self.name, f"leaves {d.id} to the watchdog")
                continue
            args: dict[str, Any] = {"dialog_id": d.id}
            self.last_human = None
            if d.fate == "ask_user":
                args["action"] = "ask_user"
            else:
                accept = self.rng.random() < 0.6 or d.type == "beforeunload"
                args["action"] = "accept" if accept else "dismiss"
                if accept and d.type == "prompt" and self.rng.random() < 0.8:
                    args["prompt_text"] = f"ans\"é-{self.rng.randrange(10**6)}"
            is_error, text, data = await self.call("browser_dialog", args)
            if is_error:
                self.book.count("dialog_answer_refused")
                self.book.event(self.name, f"browser_dialog {args} refused: {text[:160]!r}")
                if "may or may not have reached the page" in text:
                    if d.fate == "ask_user":
                        h = self.last_human or {}
                        d.maybe = {"by": "user", "action": h.get("action"), "text": h.get("text")}
                    else:
                        d.maybe = {"by": "agent", "action": args["action"], "text": args.get("prompt_text")}
                if "browser_navigate" in text:
                    await self.navigate()
                continue
            ans = data.get("answered") or {}
            human_accepted = d.fate == "ask_user" and (self.last_human or {}).get("action") == "accept"
            if d.type == "beforeunload" and (args.get("action") == "accept" or human_accepted):
                # Leaving the page closes its other dialogs too: closed_by agent, with no answer of
                # theirs. The navigation it held goes on after the answer, until it commits (a
                # dialog a queued call opens meanwhile closes with it): seconds on a loaded machine.
                self.nav_spans.append((time.time() - 1.0, time.time() + NAV_AFTER_BEFOREUNLOAD_S))
            if ans.get("id") != d.id:
                self.book.violate(self.name, f"browser_dialog for {d.id} answered {ans.get('id')}: {data}")
            if d.fate == "ask_user":
                d.human = self.last_human or {"action": "(no elicitation came)"}
                self.book.count("dialogs_ask_user")
            else:
                d.answered = {"action": args["action"], "text": args.get("prompt_text")}
                self.book.count("dialogs_answered")
            if ans:
                self.note_closed(ans, "browser_dialog")
            self.note_completed(data.get("completed_calls") or [], delivered=True)

    async def navigate(self, url: str | None = None) -> None:
        self.navs += 1
        url = url or self.soak.site.main_url(self.name, self.idx * 100000 + self.navs, self.mean_ms)
        t = time.time()
        is_error, text, data = await self.call("browser_navigate", {"url": url})
        self.nav_spans.append((t, time.time()))
        self.book.count("navigations")
        for d in data.get("pending_dialogs") or []:
            if isinstance(d, dict) and "id" in d:
                self.note_dialog(d)
        self.book.event(self.name, f"navigate #{self.navs}: {data.get('status') if not is_error else text[:120]}")

    async def outline_ref(self, role: str, name: str) -> str | None:
        is_error, _, data = await self.call("browser_snapshot", {"find": name})
        text = data.get("page") if not is_error else None
        if not isinstance(text, str):
            return None
        m = re.search(rf'- {re.escape(role)} "{re.escape(name)}"[^\n]*\[ref=([a-z0-9]+)\]', text)
        return m.group(1) if m else None

    async def click(self, name: str, role: str = "button") -> None:
        ref = await self.outline_ref(role, name)
        if ref is None:
            self.book.count("refs_not_found")
            return
        if name == "Count":
            self.clicks_sent += 1
        is_error, text, data = await self.call("browser_click", {"ref": ref})
        self.read_result("browser_click", is_error, text, data, None, 0)
        if not is_error and name == "Count" and "may not have received" not in str(data.get("note", "")):
            self.clicks_ok += 1
        self.book.count(f"clicks_{name.lower()}")

    async def type_note(self) -> None:
        ref = await self.outline_ref("textbox", "Note")
        if ref is None:
            self.book.count("refs_not_found")
            return
        word = f"n{self.idx}x{self.rng.randrange(10**9)}"
        self.typed_sent.append(word)
        is_error, text, data = await self.call("browser_type", {"ref": ref, "text": word, "submit": True})
        self.read_result("browser_type", is_error, text, data, None, 0)
        # A dialog that opened in the tab meanwhile can cost the input: the
        # result's note says so, and the word is then not owed exactly once.
        if not is_error and "may not have received" not in str(data.get("note", "")):
            self.typed_ok.append(word)
        self.book.count("typed")

    async def evaluate(self) -> None:
        effect = f"{self.name}e{len(self.effects_all)}"
        self.effects_all.add(effect)
        x = self.rng.random()
        params: dict[str, Any] = {"returnByValue": True}
        timeout_s = 10.0
        if x < 0.4:
            params["expression"] = f"soakEffect('{effect}')"
        elif x < 0.8:  # opens a dialog inside the call: interrupted
            params["expression"] = f"(soakAsk('{self.rng.choice(['alert', 'confirm', 'prompt'])}', 'eval'), soakEffect('{effect}'))"
        else:  # settles after its timeout_s: timed out
            params["expression"] = f"new Promise(r => setTimeout(() => r(soakEffect('{effect}')), 1500))"
            params["awaitPromise"] = True
            timeout_s = 0.5
        args: dict[str, Any] = {"method": "Runtime.evaluate", "params": params, "timeout_s": timeout_s}
        oopif = [c for c in ((self.last_snap.get("frame_tree") or {}).get("children") or []) if c.get("session_id")]
        if oopif and self.rng.random() < 0.3:
            args["frame_id"] = oopif[0]["frame_id"]
        is_error, text, data = await self.call("browser_cdp", args)
        self.read_result("browser_cdp", is_error, text, data, effect, timeout_s)
        value = (((data.get("result") or {}).get("result")) or {}).get("value") if not is_error else None
        if value == f"done-{effect}":
            self.effects_ok.add(effect)
        self.book.count("evaluates")

    async def tidy_tabs(self) -> None:
        is_error, _, data = await self.call("browser_tabs", {"action": "list"})
        tabs = data.get("tabs") or []
        others = [t for t in tabs if not t.get("current")]
        for t in others[: max(0, len(others) - 1)]:
            await self.close_tab(t["target_id"])

    async def close_tab(self, target_id: str) -> None:
        t = time.time()
        await self.call("browser_tabs", {"action": "close", "target_id": target_id})
        self.nav_spans.append((t, time.time()))
        self.book.count("tabs_closed")

    async def step(self) -> None:
        snap = self.last_snap
        current = [t for t in snap.get("tabs") or [] if t.get("current")]
        if current and current[0].get("crashed"):
            self.book.event(self.name, "current tab crashed: navigate")
            await self.navigate()
            return
        if not str(snap.get("url", "")).startswith(self.soak.site.url("/main")):
            await self.navigate()
            return
        what = self.rng.choices(
            ["navigate", "count", "pay", "type", "eval", "guard", "popup", "tabs", "wait", "snapshot"],
            [8, 12, 5, 8, 18, 4, 3, 4, 3, 6])[0]
        if what == "navigate":
            await self.navigate()
        elif what == "count":
            await self.click("Count")
        elif what == "pay":
            await self.click("Pay")
        elif what == "type":
            await self.type_note()
        elif what == "eval":
            await self.evaluate()
        elif what == "guard":
            await self.click("Guard", "checkbox")
            await self.navigate()
        elif what == "popup":
            await self.click("Popup")
        elif what == "tabs":
            await self.tidy_tabs()
        elif what == "wait":
            await self.call("browser_wait", {"event": "any", "timeout_s": 2})
        else:
            await self.call("browser_snapshot", {})

    async def agent_loop(self) -> None:
        while not self.stop:
            try:
                await self.answer_dialogs()
                await self.step()
            except Exception as e:  # noqa: BLE001 - a bug of ours must not end the run silently
                self.book.violate(self.name, f"the agent loop failed: {type(e).__name__}: {e}\n{traceback.format_exc()}")
                await asyncio.sleep(1)
            await asyncio.sleep(self.rng.uniform(0.1, 0.5))

    async def connect(self) -> None:
        is_error, text, data = await self.call("browser_connect", {"cdp_url": self.proxy.http_url})
        if is_error:
            raise RuntimeError(f"{self.name}: browser_connect failed: {text}")
        self.connection = "connected"

    async def quiesce(self) -> None:
        """The end of the session's run: popups closed, the tab on a quiet
        page, every dialog answered or released, outcomes given time."""
        self.stop = True
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            asked = now()
            _, _, snap = await self.call("browser_snapshot", {"page": False})
            if snap:
                self.observe(snap, asked)
            for t in [t for t in snap.get("tabs") or [] if not t.get("current")]:
                await self.close_tab(t["target_id"])
            for p in snap.get("pending_dialogs") or []:
                if p.get("type") == "beforeunload":
                    is_error, _, data = await self.call("browser_dialog", {"action": "accept", "dialog_id": p["id"]})
                    if not is_error:
                        self.note_dialog(p).answered = {"action": "accept", "text": None}
                        if data.get("answered"):
                            self.note_closed(data["answered"], "browser_dialog")
            await self.navigate(self.soak.site.url(f"/quiet?s={self.name}"))
            await asyncio.sleep(QUIESCE_S)
            asked = now()
            _, _, snap = await self.call("browser_snapshot", {"page": False})
            if snap:
                self.observe(snap, asked)
            if snap and not snap.get("pending_dialogs") and len(snap.get("tabs") or []) <= 1 \
                    and str(snap.get("url", "")).startswith(self.soak.site.url("/quiet")):
                break
        # Outcomes of calls still owed (they are kept timeout_s + dialog_timeout_s).
        wait_until = max([c.at + c.deadline_s + DIALOG_TIMEOUT_S + CALL_OUTCOME_GRACE_S
                          for c in self.calls.values() if c.outcome is None] + [0])
        while now() < wait_until and any(c.outcome is None for c in self.calls.values()):
            asked = now()
            _, _, snap = await self.call("browser_snapshot", {"page": False})
            if snap:
                self.observe(snap, asked)
            await asyncio.sleep(OBSERVE_EVERY_S)
        await asyncio.sleep(1.0)  # the last results the pages post

    # -- the end: the ledger against what the pages saw --

    def judge(self) -> None:
        site = self.soak.site
        v = lambda what: self.book.violate(self.name, what)  # noqa: E731
        by_token: dict[str, list[Dialog]] = collections.defaultdict(list)
        for d in self.dialogs.values():
            if d.token:
                by_token[d.token].append(d)
            key = f"dialogs_{d.type}"
            self.book.counts[key] += 1
            if d.closing is None:
                v(f"dialog {d.id} ({d.type} {d.token}) never closed: still pending at the end")
                continue
            c = d.closing
            self.book.counts[f"closed_by_{c.closed_by}"] += 1
            if c.closed_by == "auto_policy":
                v(f"dialog {d.id} closed_by auto_policy under must_respond")
            if d.answered is not None and (c.closed_by != "agent" or c.accepted != (d.answered["action"] == "accept")):
                v(f"dialog {d.id}: our browser_dialog {d.answered} succeeded, yet it closed as {c}")
            if d.human is not None and (c.closed_by != "user" or c.accepted != (d.human.get("action") == "accept")):
                v(f"dialog {d.id}: the human said {d.human} through ask_user, yet it closed as {c}")
            # An answer the socket cut took is true either way: it landed
            # (closed by us, as we answered) or not (closed some other way).
            landed = d.maybe is not None and c.closed_by == d.maybe["by"] \
                and c.accepted == (d.maybe["action"] == "accept")
            if c.closed_by == "agent" and d.answered is None and not landed:
                # Closed by a navigation (or tab close) of ours: one must have run while it was open.
                ours = any(a - 0.5 <= c.closed_at and b + 0.5 >= d.opened_at for a, b in self.nav_spans)
                # (What the page received is checked against `accepted` below.)
                if not ours:
                    v(f"dialog {d.id} closed_by agent accepted={c.accepted}, but no answer of ours succeeded for it"
                      " and no navigation of ours ran while it was open")
            if c.closed_by == "user" and d.human is None and not landed:
                v(f"dialog {d.id} closed_by user, but no ask_user of ours succeeded for it")
        with site.lock:
            opened = {t: o for t, o in site.opened.items() if o["s"] == self.name}
            results = {t: list(site.results.get(t, [])) for t in opened}
            site_took = dict(site.took_ms)
            effects = {e: n for (s, e), n in site.effects.items() if s == self.name}
            clicks = site.clicks[self.name]
            typed = list(site.typed[self.name])
            paid = site.paid[self.name]
        for tok, o in opened.items():
            frame = o["f"]
            self.book.counts[f"page_dialogs_{o['kind']}_{frame}"] += 1
            got = results[tok]
            ds = by_token.get(tok, [])
            if len(got) > 1:
                v(f"the page's {o['kind']} {tok} returned {len(got)} times: {got}")
            if len(ds) > 1:
                v(f"the page's {o['kind']} {tok} reported as {len(ds)} dialogs: {[d.id for d in ds]}")
            took = site_took.get(tok)
            if not ds and got and got[0] in DISMISS_VALUES and took is not None and 0 <= took < SUPPRESSED_MS:
                # Chromium returned at once without showing it (no javascriptDialogOpening):
                # a frame that is unloading, or whose beforeunload was accepted, suppresses dialogs.
                self.book.counts["suppressed_by_chromium"] += 1
                self.book.event(self.name, f"{tok} suppressed by Chromium ({took} ms, got {got})")
                continue
            if not ds:
                if self.in_chaos(o["at"]) and all(x in DISMISS_VALUES for x in got):
                    self.book.counts["unseen_in_chaos"] += 1
                    self.book.event(self.name, f"{tok} unseen (opened at {o['at']:.1f}s in a chaos window), page got {got}")
                    continue
                # Opened while our own navigation (or tab close) tore its frame
                # down: Chromium shows no dialog of a frame it is unloading, and
                # the page's report of the result dies with the frame.
                opened_unix = time.time() - now() + o["at"]
                if all(x in DISMISS_VALUES for x in got) and any(
                        a - 0.5 <= opened_unix <= b + 0.5 for a, b in self.nav_spans):
                    self.book.counts["unseen_in_our_navigation"] += 1
                    self.book.event(self.name, f"{tok} unseen (opened at {o['at']:.1f}s during a navigation of ours), page got {got}")
                    continue
                if not self.soak.server.announced(tok):
                    # Chromium never sent javascriptDialogOpening for it (the
                    # server's debug log has every one): Chromium's own, like
                    # its page handler's failed check on overlapping dialogs.
                    self.book.counts["unannounced_by_chromium"] += 1
                    self.book.event(self.name, f"{tok} never announced by Chromium (not in the server's log), page got {got}")
                    continue
                v(f"the page's {o['kind']} {tok} (opened at {o['at']:.1f}s, no chaos then) was never reported; the page got {got}")
                continue
            d = ds[0]
            if d.type != o["kind"]:
                v(f"{tok}: the page opened a {o['kind']}, the supervisor reported a {d.type}")
            if not got or d.closing is None:
                continue  # released by a navigation, a crash or a restart: no value to compare
            value = got[0]
            c = d.closing
            expect = self.expected_value(d, o["kind"], c)
            if expect is None:
                if value not in DISMISS_VALUES:
                    v(f"{tok} closed {c} (nobody accepted it), yet the page got {value!r}")
            elif value != expect:
                v(f"{tok} closed {c}: the page got {value!r}, the answer was {expect!r} "
                  f"(ours {d.answered}, human {d.human})")
        for e in self.effects_all:
            n = effects.get(e, 0)
            if n > 1:
                v(f"side effect {e} ran {n} times")
            if e in self.effects_ok and n != 1:
                v(f"side effect {e}: its call said it ran, the page ran it {n} times")
        for call in self.calls.values():
            if call.outcome is None:
                v(f"{call.kind} call {call.call_id} ({call.method}, effect {call.effect}) never got an outcome "
                  f"(not in browser_dialog's completed_calls nor in the snapshot's)")
        if clicks > self.clicks_sent:
            v(f"Count ran {clicks} times for {self.clicks_sent} clicks sent")
        if clicks < self.clicks_ok:
            v(f"Count ran {clicks} times, yet {self.clicks_ok} clicks said they were done")
        joined = "\n".join(typed)
        for w in self.typed_sent:
            n = joined.count(w)
            if n > 1:
                v(f"typed text {w} submitted {n} times")
            if w in self.typed_ok and n != 1:
                v(f"typed text {w}: browser_type said done, the form received it {n} times")
        paid_tokens = sum(1 for t, o in opened.items() if o["kind"] == "confirm" and True in results[t])
        if paid > paid_tokens:
            v(f"{paid} payments for {paid_tokens} accepted confirms")
        self.book.counts["page_dialogs"] += len(opened)
        self.book.counts["side_effects"] += sum(effects.values())
        self.book.counts["clicks_ran"] += clicks

    def expected_value(self, d: Dialog, kind: str, c: Closing) -> Any:
        """What the page should have received, or None when only a dismiss value fits."""
        if c.accepted is not True:
            return None if kind != "alert" else "__undefined__"
        if kind == "alert":
            return "__undefined__"
        if kind == "confirm":
            return True
        if c.user_input is not None:
            return c.user_input
        if d.answered and d.answered.get("text") is not None:
            return d.answered["text"]
        if d.human and d.human.get("text") is not None:
            return d.human["text"]
        return d.default_prompt

    def in_chaos(self, at: float) -> bool:
        spans = [[a - 1.0, b + 1.0] for a, b in self.outages] + self.soak.chaos_windows.get(self.name, [])
        return any(a <= at <= b for a, b in spans)


# --- the run ----------------------------------------------------------------------------------


class Soak:
    def __init__(self, binary: str, minutes: float, sessions: int, seed: int, many: int, many_seconds: float,
                 isolation: str = "browser") -> None:
        self.binary = binary
        self.minutes = minutes
        self.sessions = sessions
        self.seed = seed
        self.many = many
        self.many_seconds = many_seconds
        self.book = Book(seed)
        self.root = tempfile.mkdtemp(prefix="cdp-soak-")
        self.site = Site()
        self.isolation = isolation
        self.server = McpServer(binary, self.root, isolation)
        self.agents: list[Agent] = []
        self.chaos_windows: dict[str, list[list[float]]] = collections.defaultdict(list)
        self.vanished: list[tuple[str, list[int]]] = []
        self.many_started = float("inf")

    def schedule(self) -> list[tuple[float, str, str]]:
        """The chaos: (second, kind, session) in time order, from the seed alone."""
        rng = random.Random(f"{self.seed}-chaos")
        end = self.minutes * 60
        plan: list[tuple[float, str, str]] = []
        for k in range(self.sessions):
            s = f"s{k}"
            t = rng.uniform(8, 20)
            while t < end - 10:
                plan.append((round(t, 1), "cut", s))
                t += rng.uniform(15, 25)
            t = rng.uniform(25, 50)
            while t < end - 15:
                plan.append((round(t, 1), "crash", s))
                t += rng.uniform(60, 120)
            t = rng.uniform(40, 70)
            while t < end - 20:
                plan.append((round(t, 1), "restart", s))
                t += rng.uniform(100, 180)
        t = rng.uniform(10, 30)
        while t < end - 5:
            plan.append((round(t, 1), "garbage", "-"))
            t += rng.uniform(20, 40)
        for frac in (0.2, 0.55):
            if end * frac < end - VANISHED_GONE_S - 5 or frac == 0.2:
                plan.append((round(end * frac, 1), "vanish", "-"))
        return sorted(plan)

    async def chaos(self, plan: list[tuple[float, str, str]], start: float) -> None:
        agents = {a.name: a for a in self.agents}
        for t, kind, who in plan:
            await asyncio.sleep(max(0.0, start + t - now()))
            self.book.event(who if who != "-" else "chaos", f"chaos: {kind}")
            say(f"chaos at {t:.1f}s: {kind} {who}")
            self.book.count(f"chaos_{kind}")
            try:
                if kind == "cut":
                    asyncio.create_task(self.cut(agents[who]))
                elif kind == "crash":
                    asyncio.create_task(self.crash(agents[who]))
                elif kind == "restart":
                    asyncio.create_task(self.restart(agents[who], "restart"))
                elif kind == "garbage":
                    asyncio.create_task(self.garbage())
                elif kind == "vanish":
                    asyncio.create_task(self.vanish())
            except Exception as e:  # noqa: BLE001
                self.book.violate("chaos", f"{kind} {who} failed to run: {e}")

    async def wait_connected(self, a: Agent, since: float) -> float:
        """When a snapshot read after `since` says connected again (a violation past the deadline)."""
        deadline = now() + RECONNECTED_DEADLINE_S
        while now() < deadline:
            if a.connection == "connected" and a.down_since is None and a.snap_at > since:
                return now()
            await asyncio.sleep(0.2)
        self.book.violate(a.name, f"not connected again within {RECONNECTED_DEADLINE_S:.0f} s of a chaos at {since:.1f}s "
                          f"(connection {a.connection})")
        return now()

    async def cut(self, a: Agent) -> None:
        t = now()
        a.proxy.cut()
        await asyncio.sleep(random.Random(f"{self.seed}-{a.name}-{t:.0f}").uniform(0.5, 4))
        a.proxy.restore()
        end = await self.wait_connected(a, now())
        self.chaos_windows[a.name].append([t - 0.5, end + 1.0])

    async def crash(self, a: Agent) -> None:
        t = now()
        is_error, text, data = await a.call("browser_cdp", {"method": "Page.crash", "timeout_s": 5})
        a.book.event(a.name, f"Page.crash: {text[:120]!r}")
        # A dialog can hold the crash like any call: its call_id comes back
        # in a later completed_calls, and must be known as interrupted.
        a.read_result("browser_cdp", is_error, text, data, None, 5)
        self.chaos_windows[a.name].append([t - 0.5, now() + 5.0])
        self.book.count("renderer_crashes")

    async def restart(self, a: Agent, why: str) -> None:
        t = now()
        await a.chromium.kill()
        await asyncio.sleep(1.0)
        await a.chromium.start()
        self.book.count("browser_restarts")
        a.book.event(a.name, f"Chromium {why}ed on port {a.chromium.port} (generation {a.chromium.generation})")
        end = await self.wait_connected(a, now())
        self.chaos_windows[a.name].append([t - 0.5, end + 1.0])

    async def watch_deaths(self) -> None:
        while not all(a.stop for a in self.agents):
            for a in self.agents:
                if a.chromium.died():
                    line = a.chromium.log_line()
                    recent = " / ".join(list(self.book.events[a.name])[-6:])
                    self.book.chromium_deaths.append(f"{a.name} at {now():.1f}s: exit {a.chromium.proc.returncode}: {line}\n"
                                                     f"        just before: {recent}")
                    say(f"Chromium of {a.name} died by itself: {line}")
                    a.chromium.killing = True
                    asyncio.create_task(self.restart(a, "death-restart"))
            await asyncio.sleep(0.5)

    async def garbage(self) -> None:
        """A client that sends garbage: the server answers 4xx (or closes), stays up, others unaffected."""
        u = urllib.parse.urlsplit(self.server.url)
        port = u.port
        rng = random.Random(f"{self.seed}-garbage-{now():.0f}")
        junk = bytes(rng.randrange(256) for _ in range(rng.randrange(16, 400)))
        tries = [
            ("random bytes", junk),
            ("not HTTP", b"HELLO WORLD\r\n\r\n"),
            ("bad JSON", b"POST " + u.path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
             b"accept: application/json, text/event-stream\r\ncontent-length: 9\r\nconnection: close\r\n\r\n{not json"),
            ("unknown session", b"POST " + u.path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
             b"accept: application/json, text/event-stream\r\nmcp-session-id: nope\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}"),
            ("truncated body", b"POST " + u.path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
             b"content-length: 1000\r\nconnection: close\r\n\r\n{\"jsonrpc\":"),
        ]
        for what, data in tries:
            try:
                line = await asyncio.to_thread(raw_exchange, port, data, 15 if what == "truncated body" else 10)
            except OSError as e:
                line = f"(connection error {e})"
            m = re.match(r"HTTP/1\.[01] (\d{3})", line)
            status = int(m.group(1)) if m else None
            self.book.event("chaos", f"garbage {what}: {line!r}")
            self.book.count("garbage_requests")
            if status is not None and status >= 500:
                self.book.violate("chaos", f"garbage ({what}) got {line!r}: a server error, not a client error")
        if self.server.proc is None or self.server.proc.poll() is not None:
            self.book.violate("chaos", "the server exited after garbage")

    async def vanish(self) -> None:
        """An MCP client that starts a browser and disappears without DELETE:
        the idle timeout closes its session and stops its browser."""
        before = set(self.server.chromium_now())
        try:
            status, sid, text = await asyncio.to_thread(open_raw_session, self.server.url)
            if status != 200 or not sid:
                self.book.violate("chaos", f"the vanishing client could not open a session: {status} {text[:200]}")
                return
            body = rpc("tools/call", {"name": "browser_navigate", "arguments": {"url": self.site.url("/quiet?s=vanish")}}, 2)
            status, _, text = await asyncio.to_thread(http_post, self.server.url, body, sid)
        except OSError as e:
            self.book.violate("chaos", f"the vanishing client: {e}")
            return
        await asyncio.sleep(1.0)
        mine = [p for p in self.server.chromium_now() if p not in before]
        self.book.event("chaos", f"vanished client {sid}: navigate {status}, its Chromium {mine[:3]}…")
        self.vanished.append((sid, mine))
        self.book.count("vanished_clients")
        deadline = time.monotonic() + VANISHED_GONE_S
        while time.monotonic() < deadline:
            left = [p for p in mine if proc_stat(p) is not None and proc_stat(p)[1] != "Z"]
            if not left:
                break
            await asyncio.sleep(1)
        left = [p for p in mine if proc_stat(p) is not None and proc_stat(p)[1] != "Z"]
        if not mine:
            self.book.violate("chaos", "the vanishing client's browser_navigate started no Chromium we could see")
        elif left:
            self.book.violate("chaos", f"the vanished client's Chromium {left} still runs {VANISHED_GONE_S} s later")
        status, _, _ = await asyncio.to_thread(http_post, self.server.url, rpc("tools/list", None, 3), sid)
        if status != 404:
            self.book.violate("chaos", f"the vanished client's session answers {status}, not 404, after the idle timeout")

    async def sample_resources(self) -> None:
        while True:
            if self.server.sample() is None:
                self.book.violate("server", f"the server is gone: {self.server.tail()}")
                return
            await asyncio.sleep(SAMPLE_EVERY_S)

    def check_resources(self) -> str:
        # The chaos phase only: the many-sessions phase runs 16 browsers on purpose.
        s = [x for x in self.server.samples if x[0] < self.many_started]
        if len(s) < 3:
            return "too few samples"
        warm_end = max(30.0, (s[-1][0] - s[0][0]) / 3) + s[0][0]
        warm = [x for x in s if x[0] <= warm_end]
        later = [x for x in s if x[0] > warm_end]
        rss_peak = max(x[1] for x in warm)
        fd_peak = max(x[2] for x in warm)
        rss_bound = rss_peak * RSS_FACTOR + RSS_SLACK_MB
        fd_bound = fd_peak + FD_SLACK
        for t, rss, fds in later:
            if rss > rss_bound:
                self.book.violate("server", f"RSS {rss:.1f} MB at {t:.0f}s > bound {rss_bound:.1f} MB (warm-up peak {rss_peak:.1f})")
                break
        for t, rss, fds in later:
            if fds > fd_bound:
                self.book.violate("server", f"{fds} fds at {t:.0f}s > bound {fd_bound} (warm-up peak {fd_peak})")
                break
        return (f"warm-up until {warm_end:.0f}s: RSS peak {rss_peak:.1f} MB, fds peak {fd_peak}; bound after it: "
                f"RSS <= {rss_bound:.1f} MB ({RSS_FACTOR} x peak + {RSS_SLACK_MB:.0f}), fds <= {fd_bound} (peak + {FD_SLACK})")

    async def run_agent(self, a: Agent, start_evt: asyncio.Event, end_at: float) -> None:
        await a.chromium.start()
        a.proxy.upstream = a.chromium.port
        await a.proxy.start(self.stack_holder)
        async with Client(self.server.url, read_timeout_seconds=90, elicitation_callback=a.human,
                          mode="legacy", cache=None) as client:
            a.client = client
            await a.connect()
            await a.navigate()
            start_evt.set()
            obs = asyncio.create_task(a.observer())
            loop = asyncio.create_task(a.agent_loop())
            await asyncio.sleep(max(0.0, end_at - now()))
            a.stop = True
            await asyncio.wait([loop], timeout=60)
            if not loop.done():
                self.book.violate(a.name, "the agent loop did not stop within 60 s")
                loop.cancel()
            await asyncio.wait([obs], timeout=30)
            obs.cancel()
            await a.quiesce()
            a.judge()
            await a.call("browser_disconnect", {})
        a.client = None

    async def many_sessions(self) -> None:
        """M sessions at once, each with the browser the server launches for
        it, calling concurrently; the (cap+1)th gets 503; none sees another's
        page or dialogs; every browser is gone after DELETE."""
        say(f"many sessions: {self.many} at once for {self.many_seconds:.0f} s")
        errors: list[str] = []
        stop_at = now() + self.many_seconds
        ready = asyncio.Barrier(self.many + 1) if hasattr(asyncio, "Barrier") else None
        done_evt = asyncio.Event()
        rounds = collections.Counter()

        async def one(i: int) -> None:
            name = f"m{i}"
            async with Client(self.server.url, read_timeout_seconds=90, mode="legacy", cache=None) as c:
                async def tool(n: str, args: dict) -> dict:
                    t = time.monotonic()
                    with anyio.fail_after(TOOL_DEADLINES.get(n, 30) + 30):  # 16 browsers on a small machine
                        r = await c.call_tool(n, args)
                    self.book.latency[f"many:{n}"].append(time.monotonic() - t)
                    return {"is_error": r.is_error, "text": "".join(getattr(x, "text", "") or "" for x in r.content),
                            **(r.structured_content or {})}
                try:
                    r = await tool("browser_navigate", {"url": self.site.url(f"/quiet?s={name}")})
                    if r.get("status") != "loaded":
                        errors.append(f"{name}: navigate {r.get('status')} {r.get('text', '')[:200]}")
                    if ready:
                        await ready.wait()
                    n = 0
                    while now() < stop_at:
                        n += 1
                        msg = f"iso {name} {n}"
                        await tool("browser_cdp", {"method": "Runtime.evaluate", "params": {
                            "expression": f"setTimeout(() => {{ window.got = confirm({json.dumps(msg)}); }}, 0); 1"}})
                        seen = None
                        deadline = time.monotonic() + 20
                        while time.monotonic() < deadline:
                            snap = await tool("browser_snapshot", {"page": False})
                            for d in snap.get("pending_dialogs") or []:
                                if not str(d.get("message", "")).startswith(f"iso {name} "):
                                    errors.append(f"{name} sees another session's dialog: {d}")
                                elif d.get("message") == msg:
                                    seen = d
                            if f"quiet {name}" != snap.get("title"):
                                errors.append(f"{name} sees title {snap.get('title')!r}")
                            if seen:
                                break
                            await asyncio.sleep(0.3)
                        if not seen:
                            errors.append(f"{name}: its confirm {n} never showed")
                            continue
                        a = await tool("browser_dialog", {"action": "accept", "dialog_id": seen["id"]})
                        if a.get("is_error"):
                            errors.append(f"{name}: answering {seen['id']}: {a.get('text', '')[:200]}")
                        rounds[name] += 1
                except Exception as e:  # noqa: BLE001
                    errors.append(f"{name}: {type(e).__name__}: {e}")
                    if ready and not ready.broken:
                        with contextlib.suppress(Exception):
                            await ready.abort()
                finally:
                    await done_evt.wait()

        tasks = [asyncio.create_task(one(i)) for i in range(self.many)]
        if ready:
            try:
                with anyio.fail_after(180):
                    await ready.wait()
            except (TimeoutError, asyncio.BrokenBarrierError):
                errors.append("not every session started its browser within 180 s")
        if self.many >= MANY_CAP:
            status, sid, text = await asyncio.to_thread(open_raw_session, self.server.url)
            if status != 503:
                errors.append(f"session {self.many + 1} got {status}, not 503: {text[:200]}")
            else:
                say(f"session {self.many + 1} got 503: {text.strip()[:160]}")
        chromium_pids = set(self.server.chromium_now())
        browsers = self.server.browser_processes()
        say(f"many sessions: {len(chromium_pids)} Chromium processes under the server, {len(browsers)} of them browsers")
        if self.isolation == "context" and len(browsers) != 1:
            errors.append(f"isolation context: {len(browsers)} browser processes under the server, not 1: {browsers}")
        await asyncio.sleep(max(0.0, stop_at - now()))
        done_evt.set()
        with contextlib.suppress(TimeoutError):
            with anyio.fail_after(120):
                await asyncio.gather(*tasks, return_exceptions=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and set(self.server.chromium_now()) & chromium_pids:
            await asyncio.sleep(0.5)
        left = set(self.server.chromium_now()) & chromium_pids
        if left:
            errors.append(f"{len(left)} Chromium processes still run 20 s after every session was deleted")
        for e in errors:
            self.book.violate("many", e)
        self.book.counts["many_rounds"] = sum(rounds.values())
        say(f"many sessions: {sum(rounds.values())} dialogs answered across {len(rounds)} sessions, {len(errors)} problems")

    async def run(self) -> int:
        # SIGTERM (a test harness stopping us) unwinds like Ctrl-C: the cleanups still run.
        task = asyncio.current_task()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, task.cancel)
        plan = self.schedule()
        say(f"seed {self.seed}: {self.sessions} sessions for {self.minutes:g} min (isolation {self.isolation}); chaos schedule "
            f"({len(plan)} events; replay with --seed {self.seed}):")
        for t, kind, who in plan:
            print(f"    {t:7.1f}s  {kind:8s} {who}", file=sys.stderr)
        await self.server.start()
        say(f"server pid {self.server.proc.pid} at {self.server.url}; site on port {self.site.port}")
        self.stack_holder = type("Holder", (), {"stack": contextlib.AsyncExitStack()})()
        sampler = asyncio.create_task(self.sample_resources())
        try:
            async with self.stack_holder.stack:
                self.agents = [Agent(k, self) for k in range(self.sessions)]
                start = now()
                end_at = start + self.minutes * 60
                evts = [asyncio.Event() for _ in self.agents]
                runs = [asyncio.create_task(self.run_agent(a, e, end_at)) for a, e in zip(self.agents, evts)]
                chaos = asyncio.create_task(self.chaos(plan, start))
                deaths = asyncio.create_task(self.watch_deaths())
                done, _ = await asyncio.wait(runs, timeout=self.minutes * 60 + 300)
                for r in runs:
                    if not r.done():
                        self.book.violate("soak", "a session did not finish within its run + 5 min")
                        r.cancel()
                    elif r.exception() is not None:
                        e = r.exception()
                        self.book.violate("soak", f"a session failed: {type(e).__name__}: {e}\n"
                                          + "".join(traceback.format_exception(e))[-1500:])
                chaos.cancel()
                deaths.cancel()
                # Vanished clients still owed their check.
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self.wait_vanished(), VANISHED_GONE_S + 10)
            if self.many:
                self.many_started = now()
                await self.many_sessions()
        finally:
            for a in self.agents:
                await a.chromium.kill()
            sampler.cancel()
            await self.server.stop()
            self.site.stop()
        self.check_end()
        bound = self.check_resources()
        self.figures(bound)
        # The server's log beside the event log: its debug lines say why each dialog closed.
        with contextlib.suppress(OSError):
            shutil.copyfile(self.server.log_path, self.book.server_log_path)
        shutil.rmtree(self.root, ignore_errors=True)
        return 1 if self.book.violations else 0

    async def wait_vanished(self) -> None:
        while self.book.counts["vanished_clients"] < self.book.counts["chaos_vanish"]:
            await asyncio.sleep(0.5)

    def check_end(self) -> None:
        """Nothing left: no process the server started, no profile or temp dir of its."""
        left = [p for p, (name, st) in self.server.seen.items()
                if proc_stat(p) is not None and proc_stat(p)[4] == st and proc_stat(p)[1] != "Z"]
        if left:
            self.book.violate("end", f"processes the server started still run after it stopped: {left}")
            for p in left:
                with contextlib.suppress(OSError):
                    os.kill(p, signal.SIGKILL)
        leftovers = os.listdir(self.server.tmp)
        if leftovers:
            self.book.violate("end", f"the server left in its TMPDIR: {leftovers}")
        for a in self.agents:
            if a.chromium.proc is not None and a.chromium.proc.poll() is None:
                self.book.violate("end", f"{a.name}'s Chromium still runs")

    def figures(self, bound: str) -> None:
        c = self.book.counts
        out = [f"=== soak figures (seed {self.seed}, {self.sessions} sessions, {self.minutes:g} min) ==="]
        out.append("dialogs the pages opened, by kind and frame:")
        kinds = ("alert", "confirm", "prompt")
        frames = ("main", "same", "oopif", "popup")
        out.append(f"    {'':8s}" + "".join(f"{f:>8s}" for f in frames))
        for k in kinds:
            out.append(f"    {k:8s}" + "".join(f"{c[f'page_dialogs_{k}_{f}']:8d}" for f in frames))
        out.append(f"dialogs the supervisor reported: {sum(c[f'dialogs_{k}'] for k in (*kinds, 'beforeunload'))} "
                   f"(alert {c['dialogs_alert']}, confirm {c['dialogs_confirm']}, prompt {c['dialogs_prompt']}, "
                   f"beforeunload {c['dialogs_beforeunload']}); unseen inside chaos windows {c['unseen_in_chaos']}, "
                   f"during our own navigations {c['unseen_in_our_navigation']}, "
                   f"suppressed by Chromium (never shown, returned in < {SUPPRESSED_MS} ms) {c['suppressed_by_chromium']}, "
                   f"never announced by Chromium {c['unannounced_by_chromium']}")
        out.append("closed by: " + ", ".join(f"{k} {c[f'closed_by_{k}']}" for k in
                                             ("agent", "user", "watchdog", "remote", "auto_policy")))
        out.append(f"agent: answered {c['dialogs_answered']}, ask_user {c['dialogs_ask_user']} "
                   f"(elicitations {c['elicitations']}), answers refused {c['dialog_answer_refused']}")
        out.append(f"calls {c['calls']} (tool errors {c['tool_errors']}); interrupted {c['calls_interrupted']}, "
                   f"timed out {c['calls_timed_out']}; evaluates {c['evaluates']}, side effects run {c['side_effects']}, "
                   f"Count clicks run {c['clicks_ran']}, typed {c['typed']}, navigations {c['navigations']}")
        out.append(f"chaos: cuts {c['chaos_cut']}, renderer crashes {c['renderer_crashes']}, browser restarts "
                   f"{c['browser_restarts']}, vanished clients {c['vanished_clients']}, garbage requests "
                   f"{c['garbage_requests']}; reconnects seen {c['reconnects']}")
        if self.many:
            out.append(f"many sessions: {self.many} at once, {c['many_rounds']} dialogs answered")
        out.append("tool-call latency (s):   n      p50      p99      max")
        for name in sorted(self.book.latency):
            xs = sorted(self.book.latency[name])
            p = lambda q: xs[min(len(xs) - 1, int(q * len(xs)))]  # noqa: E731
            out.append(f"    {name:22s}{len(xs):6d} {statistics.median(xs):8.3f} {p(0.99):8.3f} {xs[-1]:8.3f}")
        out.append("server per minute:  min  RSS MB (min/max)   fds (min/max)   calls")
        by_min: dict[int, list] = collections.defaultdict(list)
        for t, rss, fds in self.server.samples:
            by_min[int(t // 60)].append((rss, fds))
        for m in sorted(by_min):
            xs = by_min[m]
            out.append(f"    {m:16d}  {min(x[0] for x in xs):7.1f}/{max(x[0] for x in xs):7.1f}"
                       f"   {min(x[1] for x in xs):5d}/{max(x[1] for x in xs):5d}   {self.book.per_minute[m]['calls']:6d}")
        out.append(f"resources: {bound}")
        out.append(f"Chromium deaths of its own (counted apart): {len(self.book.chromium_deaths)}")
        for d in self.book.chromium_deaths:
            out.append(f"    {d}")
        out.append(f"every event: {self.book.log_path}")
        out.append(f"the server's log: {self.book.server_log_path}")
        out.append(f"invariant violations: {len(self.book.violations)}")
        for v in self.book.violations:
            out.append(f"    - {v.splitlines()[0][:400]}")
        print("\n".join(out), flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("binary")
    p.add_argument("--minutes", type=float, default=10)
    p.add_argument("--sessions", type=int, default=4)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--many", type=int, default=MANY_CAP, help="sessions at once in the closing phase (0: skip it)")
    p.add_argument("--many-seconds", type=float, default=30)
    p.add_argument("--isolation", choices=["browser", "context"], default="browser",
                   help="the many-sessions phase: a browser per session, or a context each in one shared browser")
    a = p.parse_args()
    if a.sessions < 1 or a.sessions > MANY_CAP - 3 or a.minutes <= 0 or not 0 <= a.many <= MANY_CAP:
        print(f"soak.py: --sessions 1..{MANY_CAP - 3}, --minutes > 0, --many 0..{MANY_CAP}", file=sys.stderr)
        return 2
    if not os.access(a.binary, os.X_OK):
        print(f"soak.py: {a.binary} is not an executable", file=sys.stderr)
        return 1
    try:
        find_chromium()
    except Exception as e:  # noqa: BLE001
        print(f"soak.py: {e}", file=sys.stderr)
        return 1
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1, 10**6)
    soak = Soak(os.path.realpath(a.binary), a.minutes, a.sessions, seed, a.many, a.many_seconds, a.isolation)
    try:
        return asyncio.run(soak.run())
    except (KeyboardInterrupt, asyncio.CancelledError):
        say("interrupted; cleaned up")
        shutil.rmtree(soak.root, ignore_errors=True)
        return 130


if __name__ == "__main__":
    sys.exit(main())
