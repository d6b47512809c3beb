"""Push, wait and ask the human (issue 10), checked with the official MCP Python SDK.

Drives the real `cdp-supervisor mcp` binary against real Chromium, over stdio
and over streamable HTTP (each scenario once per transport unless noted):

  subscription_update_on_alert  the snapshot resource is listed, subscribable
                                (capabilities say so) and reads as
                                browser_snapshot; after resources/subscribe a
                                timer's alert brings notifications/resources/
                                updated within 1 s and the read right after shows
                                it pending; its answer, a navigation and a
                                disconnect bring one too; latency "dialog opened
                                (its opened_at) -> update received" over a series
  no_update_when_idle           a subscribed client gets no update in 2 s of a
                                loaded quiet page (reads included); after
                                resources/unsubscribe a dialog brings none
  updates_coalesced             a burst of 100 alerts (auto_accept) brings at most
                                20 updates a second, the last one after the last
                                dialog closed
  wait_dialog_opened            browser_wait: a 1 s timer's confirm ends
                                wait(dialog_opened) with happened:true; an answer
                                ends wait(dialog_closed); a navigation ends
                                wait(page_loaded); a quiet page gives happened:false
                                after ~1 s; a dialog opened before the call counts
                                only with `since`; a bad event name is a tool error
                                naming the allowed ones; a cancelled wait leaves the
                                server healthy; latency "dialog opened -> wait
                                returned" over a series
  ask_user_accepts_prompt       browser_dialog(ask_user) sends a form elicitation
                                (type, message, origin; action accept|dismiss, text
                                for a prompt); "accept" with text "Ada" gives the page
                                "Ada", closed_by "user"; a confirm dismissed by the
                                human gives the page false
  ask_user_without_capability   a client with no elicitation callback: tool error
                                mentioning elicitation, the dialog stays pending
  ask_user_declined             the human declines, then cancels: tool errors saying
                                so, the dialog stays pending (then accepts)
  per_type_policy_map           (stdio) {alert: auto_accept, confirm: must_respond}
                                from the environment, from a --config file and from
                                --policy type=policy: the alert is answered
                                (closed_by auto_policy), the confirm and a prompt (a
                                missing type) stay pending; a bad type or value ends
                                the server at start with a one-line error naming the
                                key and the allowed ones
  output_schemas                every listed tool declares an outputSchema and its
                                results validate (the SDK checks structuredContent
                                against it); browser_cdp is not idempotent

Every scenario has its own server process(es), Chromium, temp dir and fixture
site (127.0.0.1 and localhost: two sites, so the quiet page's iframe is an
OOPIF), and cleans up even when it fails. Every wait has a deadline.

The client connects with mode="legacy" (the initialize handshake,
2025-11-25): resources/subscribe is that revision's mechanism.

Usage: python push.py PATH/TO/cdp-supervisor [--only NAME[,NAME…]]
         [--transport stdio|http] [--samples N] [--jobs N] [--serial]
  --samples  dialogs per latency series (default 20; the issue's figures use 100)
  --jobs     scenarios run at once outside the timing ones (default 2)
Exit 0 when every scenario passes. CHROMIUM=path overrides the Chromium found
on PATH.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from common import (
    exit_with,
    NAVIGATE_DEADLINE_S,
    Fail,
    Outcome,
    Scenario,
    ToolResult,
    call,
    call_raw,
    cancel_on_signals,
    evaluate,
    first_fail,
    log,
    mcp_server,
    page,
    recent_has,
    run_scenario,
    scratch_dir,
    server_env,
    set_log_name,
    snapshot,
    start_site,
    summarize,
    wait_pending,
    preflight,
)

set_log_name("push")
# resources/subscribe is deprecated in the SDK (removed in 2026-07-28); it is
# what a 2025-11-25 session speaks.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

SNAPSHOT_URI = "browser://snapshot"
WAIT_EVENTS = ["dialog_opened", "dialog_closed", "page_loaded", "tab_opened", "any"]
DIALOG_TYPES = ["alert", "confirm", "prompt", "beforeunload", "file_chooser"]
POLICIES = ["must_respond", "auto_dismiss", "auto_accept"]
POLICY_MAP = "{alert: auto_accept, confirm: must_respond}"
# Seconds.
UPDATE_BOUND_S = 1.0  # an update after a change (the contract says 100 ms; generous for CI)
IDLE_WINDOW_S = 2.0  # no update while nothing changes
SETTLE_S = 1.0  # after a load, before a page counts as idle
QUIET_S = 0.2  # no update for this long: the previous change's updates are all in
BAD_START_DEADLINE_S = 10.0  # a server with a bad config exits by then
MAX_UPDATES_PER_S = 20
# The coalescing window can run past the burst's last close by one slot.
UPDATE_SLACK_S = 0.1
BURST_ALERTS = 100

# Latency series (seconds), by "what [transport]", for the summary.
FIGURES: dict[str, list[float]] = {}


# --- fixture site ------------------------------------------------------------------

PUSH_JS = """
window.got = "unset"; window.confirmed = "unset"; window.afterAlert = false; window.burstDone = false;
function openAlert(m) { alert(m); }
function openConfirm(m) { window.confirmed = confirm(m); }
function openPrompt(m, d) { window.got = prompt(m, d); }
function alertThenConfirm() { alert("auto alert"); window.afterAlert = true; window.confirmed = confirm("stays pending"); }
function burst(n) { window.burstStart = Date.now(); for (let i = 0; i < n; i++) alert("burst " + i); window.burstEnd = Date.now(); window.burstDone = true; }
"""


def push_pages(port: int) -> dict[str, str]:
    return {
        "/quiet.html": page(
            "quiet page",
            "<p>a page where nothing happens by itself</p>"
            f'<iframe src="http://localhost:{port}/frame.html" width=200 height=100></iframe>',
            PUSH_JS,
        ),
        "/other.html": page("other page", "<p>another page</p>", PUSH_JS),
        "/frame.html": page("frame", "<p>a frame on the other site</p>"),
    }


# --- the client side: updates, the human ------------------------------------------------


@dataclass
class Update:
    wall: float  # time.time() when the SDK handed it to us
    uri: str


@dataclass
class Updates:
    """Records notifications/resources/updated (the Client's message_handler)."""

    items: list[Update] = field(default_factory=list)
    other: list[str] = field(default_factory=list)

    async def handler(self, message: Any) -> None:
        now = time.time()
        if isinstance(message, types.ResourceUpdatedNotification):
            self.items.append(Update(now, str(message.params.uri)))
        elif isinstance(message, Exception):
            self.other.append(f"{type(message).__name__}: {message}")
        await anyio.lowlevel.checkpoint()

    def since(self, wall: float) -> list[Update]:
        return [u for u in self.items if u.wall >= wall]

    async def first_after(self, wall: float, timeout_s: float) -> Update | None:
        deadline = time.monotonic() + timeout_s
        while True:
            got = self.since(wall)
            if got:
                return got[0]
            if time.monotonic() > deadline:
                return None
            await anyio.sleep(0.005)

    async def settle(self, quiet_s: float = QUIET_S, max_s: float = 5.0) -> None:
        """Until no update came for quiet_s (at most max_s)."""
        deadline = time.monotonic() + max_s
        while time.monotonic() < deadline:
            last = self.items[-1].wall if self.items else 0.0
            if time.time() - last >= quiet_s:
                return
            await anyio.sleep(0.02)


class Human:
    """An elicitation callback answering with the given results in turn."""

    def __init__(self, *answers: types.ElicitResult) -> None:
        self.answers = list(answers)
        self.asked: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult | types.ErrorData:
        self.asked.append(params)
        if not self.answers:
            return types.ErrorData(code=types.INVALID_REQUEST, message="the test's human has no more answers")
        return self.answers.pop(0)


def push_server(
    sc: Scenario,
    binary: str,
    transport: str,
    label: str = "s1",
    args: list[str] | None = None,
    env: dict[str, str] | None = None,
    updates: Updates | None = None,
    human: Human | None = None,
):
    kwargs: dict[str, Any] = {"mode": "legacy"}
    if updates is not None:
        kwargs["message_handler"] = updates.handler
    if human is not None:
        # Declaring the callback is what declares the elicitation capability;
        # without one the SDK declares none (and would answer "not supported").
        kwargs["elicitation_callback"] = human
    return mcp_server(sc, binary, f"{label}-{transport}", list(args or []), transport=transport, env=env, **kwargs)


# --- helpers ----------------------------------------------------------------------


async def tool(client: Client, name: str, args: dict | None = None) -> ToolResult:
    """call_raw, with a JSON-RPC error (not a tool result) turned into a Fail."""
    try:
        return await call_raw(client, name, args)
    except MCPError as e:
        raise Fail(f"{name}({args}) is a JSON-RPC error {e.error.code}, not a tool result: {e.error.message}") from e


async def read_snapshot(sc: Scenario, client: Client) -> dict:
    """resources/read of browser://snapshot: one text content, JSON."""
    try:
        r = await client.read_resource(SNAPSHOT_URI)
    except MCPError as e:
        raise Fail(f"resources/read {SNAPSHOT_URI} failed: {e.error.code} {e.error.message}") from e
    if len(r.contents) != 1 or not isinstance(r.contents[0], types.TextResourceContents):
        raise Fail(f"resources/read {SNAPSHOT_URI}: want one text content, got {r.contents}")
    content = r.contents[0]
    if content.mime_type not in (None, "application/json"):
        sc.expect(False, f"the read's content is application/json ({content.mime_type})")
    try:
        return json.loads(content.text)
    except ValueError as e:
        raise Fail(f"resources/read {SNAPSHOT_URI}: not JSON ({e}): {content.text[:300]!r}") from e


# The shortest page timer schedule() sets: Chromium does not order the
# evaluate's reply (from the renderer) before the javascriptDialogOpening of a
# dialog its 0 ms timer opens (from the browser process); under CI load the
# dialog came first and the evaluate was reported interrupted by it.
SCHEDULE_MIN_DELAY_MS = 50


async def schedule(client: Client, js_call: str, delay_ms: int) -> float:
    """Runs js_call from a page timer (so the evaluate is not blocked by the
    dialog it opens), at least SCHEDULE_MIN_DELAY_MS later; returns
    time.time() when the evaluate returned."""
    delay_ms = max(delay_ms, SCHEDULE_MIN_DELAY_MS)
    v = await evaluate(client, f'setTimeout(() => {{ {js_call}; }}, {delay_ms}); "scheduled"')
    if v != "scheduled":
        raise Fail(f"schedule {js_call}: evaluate returned {v!r}")
    return time.time()


async def navigate(sc: Scenario, client: Client, url: str) -> dict:
    with anyio.fail_after(NAVIGATE_DEADLINE_S):
        nav = await call(client, "browser_navigate", {"url": url})
    sc.check(nav.get("status") == "loaded", f"navigate to {url} ({nav.get('status')})")
    return nav


async def dialog(client: Client, action: str, dialog_id: str | None = None, **extra: Any) -> dict:
    args: dict[str, Any] = {"action": action, **extra}
    if dialog_id is not None:
        args["dialog_id"] = dialog_id
    return await call(client, "browser_dialog", args)


def pending_of(snap: dict, dtype: str, message: str | None = None) -> dict | None:
    for d in snap.get("pending_dialogs") or []:
        if d.get("type") == dtype and (message is None or d.get("message") == message):
            return d
    return None


def ms(seconds: float) -> str:
    return f"{1000 * seconds:.0f} ms"


def percentile(xs: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(xs)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def record_figure(sc: Scenario, what: str, xs: list[float]) -> None:
    FIGURES[what] = xs
    if xs:
        sc.log(
            f"{what}: median {ms(percentile(xs, 0.5))}, p99 {ms(percentile(xs, 0.99))},"
            f" max {ms(max(xs))} over {len(xs)} dialogs"
        )


def same_snapshot(sc: Scenario, read: dict, snap: dict, what: str) -> None:
    """The resource reads as browser_snapshot: same keys (but the page outline,
    which only the tool reads: the resource is re-read on every update, and
    `changes`, which every tool result carries for its MCP session), same
    pending ids and url."""
    snap = {
        k: v
        for k, v in snap.items()
        if k not in ("page", "page_truncated", "page_cursor", "frame_refs", "changes")
    }
    sc.expect(read.keys() == snap.keys(), f"{what}: the resource has browser_snapshot's keys"
              f" (only in the resource {sorted(read.keys() - snap.keys())}, only in the tool {sorted(snap.keys() - read.keys())})")
    ids_r = [d.get("id") for d in read.get("pending_dialogs") or []]
    ids_s = [d.get("id") for d in snap.get("pending_dialogs") or []]
    sc.expect(ids_r == ids_s, f"{what}: same pending_dialogs ids ({ids_r} vs {ids_s})")
    sc.expect(read.get("url") == snap.get("url"), f"{what}: same url ({read.get('url')!r} vs {snap.get('url')!r})")
    seq_r, seq_s = read.get("event_seq"), snap.get("event_seq")
    ok = isinstance(seq_r, int) and isinstance(seq_s, int) and seq_r <= seq_s
    sc.expect(ok, f"{what}: both carry an integer event_seq, the later one not smaller ({seq_r!r}, {seq_s!r})")


# --- 1. an update when a dialog opens -------------------------------------------------


async def subscription_update_on_alert(sc: Scenario, binary: str, transport: str, samples: int) -> None:
    port = await start_site(sc, push_pages)
    quiet = f"http://127.0.0.1:{port}/quiet.html"
    other = f"http://127.0.0.1:{port}/other.html"
    ups = Updates()
    async with push_server(sc, binary, transport, updates=ups) as srv:
        c = srv.client
        caps = c.server_capabilities
        sc.expect(
            caps.resources is not None and caps.resources.subscribe is True,
            f"the server's capabilities declare resources with subscribe: true ({caps.model_dump(exclude_none=True)})",
        )
        try:
            listed = (await c.list_resources()).resources
        except MCPError as e:
            raise Fail(f"resources/list failed: {e.error.code} {e.error.message}") from e
        entry = [r for r in listed if str(r.uri) == SNAPSHOT_URI]
        sc.check(bool(entry), f"resources/list lists {SNAPSHOT_URI} ({[str(r.uri) for r in listed]})")
        sc.expect(entry[0].mime_type == "application/json", f"{SNAPSHOT_URI} is application/json ({entry[0].mime_type})")

        await navigate(sc, c, quiet)
        try:
            await c.subscribe_resource(SNAPSHOT_URI)
        except MCPError as e:
            raise Fail(f"resources/subscribe failed: {e.error.code} {e.error.message}") from e
        sc.log("subscribed")
        await ups.settle()
        read = await read_snapshot(sc, c)
        snap = await snapshot(c)
        same_snapshot(sc, read, snap, "quiet page")
        seq_before = read.get("event_seq")

        # The first alert, from a 300 ms timer.
        what = "alert from a timer"
        t = await schedule(c, "openAlert('x')", 300)
        u = await ups.first_after(t, 0.3 + UPDATE_BOUND_S + 2.0)
        sc.check(u is not None, f"{what}: notifications/resources/updated arrives (waited up to {0.3 + UPDATE_BOUND_S + 2.0:.1f} s)")
        assert u is not None
        late = u.wall - (t + 0.3)
        sc.expect(u.uri == SNAPSHOT_URI, f"{what}: the update names {SNAPSHOT_URI} ({u.uri})")
        sc.expect(late < UPDATE_BOUND_S, f"{what}: the update came {ms(late)} after the alert opened (evaluate returned + 300 ms; bound {ms(UPDATE_BOUND_S)})")
        read = await read_snapshot(sc, c)
        d = pending_of(read, "alert", "x")
        sc.check(d is not None, f"{what}: the read right after the update shows the alert pending ({read.get('pending_dialogs')})")
        assert d is not None
        seq = read.get("event_seq")
        sc.expect(isinstance(seq, int) and isinstance(seq_before, int) and seq > seq_before,
                  f"{what}: event_seq grew ({seq_before!r} -> {seq!r})")
        snap = await snapshot(c)
        same_snapshot(sc, read, snap, what)
        latencies = [u.wall - d["opened_at"]]

        # Its answer closes it: one more update.
        t = time.time()
        await dialog(c, "accept")
        t_ret = time.time()
        u = await ups.first_after(t, (t_ret - t) + UPDATE_BOUND_S + 2.0)
        sc.expect(u is not None and u.wall - t_ret < UPDATE_BOUND_S,
                  f"answering it brings an update ({'received ' + ms(u.wall - t_ret) + ' relative to browser_dialog returning' if u else 'none'})")
        read = await read_snapshot(sc, c)
        sc.expect(not read.get("pending_dialogs"), f"then the read shows nothing pending ({read.get('pending_dialogs')})")

        # The series: dialog opened (its opened_at) -> update received.
        strays: list[float] = []
        misses = 0
        for i in range(samples):
            await ups.settle()
            message = f"series {i}"
            t = await schedule(c, f"openAlert({message!r})", 50)
            u = await ups.first_after(t, 0.05 + UPDATE_BOUND_S + 2.0)
            if u is None:
                misses += 1
                sc.expect(False, f"series {i}: no update within {0.05 + UPDATE_BOUND_S + 2.0:.1f} s of the timer")
                d = await wait_pending(sc, c, "alert", message, f"series {i}")
            else:
                read = await read_snapshot(sc, c)
                d = pending_of(read, "alert", message)
                if d is None:
                    sc.expect(False, f"series {i}: the read right after the update shows the alert pending ({read.get('pending_dialogs')})")
                    d = await wait_pending(sc, c, "alert", message, f"series {i}")
                ups_after_open = [x for x in ups.since(t) if x.wall >= d["opened_at"] - 0.002]
                strays += [x.wall - d["opened_at"] for x in ups.since(t) if x.wall < d["opened_at"] - 0.002]
                if ups_after_open:
                    latencies.append(ups_after_open[0].wall - d["opened_at"])
            await dialog(c, "accept", d["id"])
        sc.expect(not strays, f"the series: no update before its dialog opened (saw {[ms(x) for x in strays]} relative to opened_at)")
        sc.expect(misses == 0, f"the series: every dialog brought an update ({samples - misses}/{samples})")
        record_figure(sc, f"dialog opened -> notifications/resources/updated [{transport}]", latencies)
        if latencies:
            sc.expect(max(latencies) < UPDATE_BOUND_S, f"the series: each update within {ms(UPDATE_BOUND_S)} of opened_at (max {ms(max(latencies))})")

        # The current tab commits and loads a document.
        await ups.settle()
        t = time.time()
        await navigate(sc, c, other)
        t_ret = time.time()
        u = await ups.first_after(t, (t_ret - t) + UPDATE_BOUND_S)
        sc.expect(u is not None, f"a navigation brings an update (by {ms(UPDATE_BOUND_S)} after browser_navigate returned)")
        await ups.settle()
        n = len(ups.since(t))
        sc.log(f"the navigation brought {n} update(s)")
        read = await read_snapshot(sc, c)
        sc.expect(read.get("url") == other, f"the read after them shows the new page ({read.get('url')})")

        # The connection changes state.
        t = time.time()
        await call(c, "browser_disconnect")
        t_ret = time.time()
        u = await ups.first_after(t, (t_ret - t) + UPDATE_BOUND_S)
        sc.expect(u is not None, f"browser_disconnect brings an update (by {ms(UPDATE_BOUND_S)} after it returned)")
        sc.expect(not ups.other, f"no transport errors reached the message handler ({ups.other})")


# --- 2. nothing changes, nothing is sent ---------------------------------------------


async def no_update_when_idle(sc: Scenario, binary: str, transport: str, samples: int) -> None:
    port = await start_site(sc, push_pages)
    quiet = f"http://127.0.0.1:{port}/quiet.html"
    ups = Updates()
    async with push_server(sc, binary, transport, updates=ups) as srv:
        c = srv.client
        await navigate(sc, c, quiet)
        try:
            await c.subscribe_resource(SNAPSHOT_URI)
        except MCPError as e:
            raise Fail(f"resources/subscribe failed: {e.error.code} {e.error.message}") from e
        t = time.time()
        await anyio.sleep(SETTLE_S)
        settling = ups.since(t)
        if settling:
            sc.log(f"{len(settling)} update(s) in the {SETTLE_S:.0f} s after the load (not counted)")
        t = time.time()
        # Reads are not changes.
        await anyio.sleep(IDLE_WINDOW_S / 4)
        await snapshot(c)
        await read_snapshot(sc, c)
        await anyio.sleep(IDLE_WINDOW_S / 4)
        await snapshot(c)
        await anyio.sleep(max(0.0, t + IDLE_WINDOW_S - time.time()))
        got = ups.since(t)
        sc.expect(not got, f"no update in {IDLE_WINDOW_S:.0f} s of a loaded quiet page, reads included"
                           f" (got {len(got)}, at {[f'+{ms(x.wall - t)}' for x in got]})")

        try:
            await c.unsubscribe_resource(SNAPSHOT_URI)
        except MCPError as e:
            raise Fail(f"resources/unsubscribe failed: {e.error.code} {e.error.message}") from e
        await ups.settle()
        t = time.time()
        await schedule(c, "openAlert('after unsubscribe')", 0)
        d = await wait_pending(sc, c, "alert", "after unsubscribe", "after unsubscribe")
        await anyio.sleep(UPDATE_BOUND_S)
        got = ups.since(t)
        sc.expect(not got, f"after resources/unsubscribe, a dialog brings no update (got {len(got)})")
        await dialog(c, "accept", d["id"])


# --- 3. a burst is coalesced -------------------------------------------------------------


async def updates_coalesced(sc: Scenario, binary: str, transport: str, samples: int) -> None:
    port = await start_site(sc, push_pages)
    quiet = f"http://127.0.0.1:{port}/quiet.html"
    ups = Updates()
    async with push_server(sc, binary, transport, args=["--policy", "auto_accept"], updates=ups) as srv:
        c = srv.client
        await navigate(sc, c, quiet)
        try:
            await c.subscribe_resource(SNAPSHOT_URI)
        except MCPError as e:
            raise Fail(f"resources/subscribe failed: {e.error.code} {e.error.message}") from e
        await ups.settle(quiet_s=0.5)
        t = await schedule(c, f"burst({BURST_ALERTS})", 0)
        # The page is done when its flag is set (an evaluate during an alert is interrupted: retry).
        deadline = time.monotonic() + 30.0
        while True:
            r = await tool(c, "browser_cdp", {"method": "Runtime.evaluate",
                                              "params": {"expression": "window.burstDone", "returnByValue": True},
                                              "timeout_s": 2})
            done = not r.is_error and (((r.data or {}).get("result") or {}).get("result") or {}).get("value") is True
            if done:
                break
            if time.monotonic() > deadline:
                raise Fail(f"the burst of {BURST_ALERTS} alerts did not finish within 30 s ({r.text[:200]!r})")
            await anyio.sleep(0.1)
        await ups.settle(quiet_s=0.5)
        got = [u.wall for u in ups.since(t)]
        sc.check(len(got) >= 1, f"the burst brought updates ({len(got)})")
        span = got[-1] - got[0]
        worst = max(sum(1 for y in got if x <= y < x + 1.0) for x in got)
        sc.log(f"{BURST_ALERTS} alerts ({2 * BURST_ALERTS} events) brought {len(got)} updates over {ms(span)}; at most {worst} in one second")
        snap = await snapshot(c)
        closed = [r for r in snap.get("recent_dialogs") or [] if str(r.get("message", "")).startswith("burst ")]
        sc.expect(bool(closed) and all(r.get("closed_by") == "auto_policy" for r in closed),
                  f"the burst's alerts were answered by the policy ({len(closed)} listed)")
        if closed:
            # Coalescing is the server spacing its sends >= 50 ms apart. When
            # they arrive is blurred by the transport and by this client's
            # own event loop (17 arrived within 209 ms on a loaded run), so
            # the count is judged against how long the burst lasted in the
            # page: at most one update per 50 ms (plus the first and the
            # trailing one) fits in it. Uncoalesced, its 200 events would
            # send ~200.
            last_close = max(r.get("closed_at") or 0 for r in closed)
            took_ms = await evaluate(c, "window.burstEnd - window.burstStart")
            burst_s = max(0.0, float(took_ms or 0) / 1000.0)
            allowed = int((burst_s + UPDATE_SLACK_S) * MAX_UPDATES_PER_S) + 2
            sc.expect(len(got) <= allowed,
                      f"at most {MAX_UPDATES_PER_S} updates a second: {len(got)} for a burst of {ms(burst_s)} (allowed {allowed})")
            sc.expect(got[-1] >= last_close - 0.002,
                      f"the last update came after the last dialog closed ({ms(got[-1] - last_close)} after it)")


# --- 4. browser_wait ---------------------------------------------------------------------


async def wait_call(client: Client, args: dict) -> tuple[ToolResult, float]:
    """browser_wait; (result, time.time() when it returned)."""
    r = await tool(client, "browser_wait", args)
    return r, time.time()


def wait_result_ok(sc: Scenario, r: ToolResult, event: str, happened: bool, what: str) -> dict:
    sc.check(not r.is_error, f"{what}: browser_wait succeeds ({r.text[:300]!r})")
    data = r.data or {}
    sc.expect(data.get("event") == event or event == "any", f"{what}: event is {event!r} ({data.get('event')!r})")
    sc.check(data.get("happened") is happened, f"{what}: happened is {happened} ({data.get('happened')!r}, after {r.seconds:.2f} s)")
    snap = data.get("snapshot")
    sc.check(isinstance(snap, dict), f"{what}: it carries a snapshot")
    sc.expect(isinstance(snap.get("event_seq"), int), f"{what}: its snapshot carries an integer event_seq ({snap.get('event_seq')!r})")
    return snap


async def wait_dialog_opened(sc: Scenario, binary: str, transport: str, samples: int) -> None:
    port = await start_site(sc, push_pages)
    quiet = f"http://127.0.0.1:{port}/quiet.html"
    other = f"http://127.0.0.1:{port}/other.html"
    async with push_server(sc, binary, transport) as srv:
        c = srv.client
        await navigate(sc, c, quiet)

        # a) A confirm from a 1 s timer ends the wait.
        what = "wait(dialog_opened) for a 1 s timer"
        await schedule(c, "openConfirm('in one second')", 1000)
        r, t_ret = await wait_call(c, {"event": "dialog_opened", "timeout_s": 10})
        snap = wait_result_ok(sc, r, "dialog_opened", True, what)
        sc.expect(0.7 <= r.seconds <= 1.0 + UPDATE_BOUND_S + 1.0, f"{what}: it returned when the confirm opened ({r.seconds:.2f} s)")
        d = pending_of(snap, "confirm", "in one second")
        sc.check(d is not None, f"{what}: its snapshot shows the confirm pending ({snap.get('pending_dialogs')})")
        assert d is not None
        sc.log(f"{what}: returned {ms(t_ret - d['opened_at'])} after opened_at")

        # b) Answering it ends a wait(dialog_closed).
        what = "wait(dialog_closed) while it is answered"
        out: dict[str, Any] = {}

        async def waiter() -> None:
            out["r"], out["t"] = await wait_call(c, {"event": "dialog_closed", "timeout_s": 10})

        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await anyio.sleep(0.3)
            await dialog(c, "dismiss", d["id"])
        snap = wait_result_ok(sc, out["r"], "dialog_closed", True, what)
        sc.expect(not snap.get("pending_dialogs"), f"{what}: its snapshot shows nothing pending ({snap.get('pending_dialogs')})")
        r = recent_has(snap, d["id"])
        sc.expect(r is not None, f"{what}: its snapshot's recent_dialogs has {d['id']} ({snap.get('recent_dialogs')})")
        v = await evaluate(c, "window.confirmed")
        sc.check(v is False, f"{what}: the page got false ({v!r})")

        # c) A quiet page: happened false after the timeout.
        what = "wait(dialog_opened, timeout_s 1) on a quiet page"
        r, _ = await wait_call(c, {"event": "dialog_opened", "timeout_s": 1})
        wait_result_ok(sc, r, "dialog_opened", False, what)
        sc.expect(0.9 <= r.seconds <= 2.5, f"{what}: it returned after ~1 s ({r.seconds:.2f} s)")

        # d) A dialog that opened before the call counts only with `since`.
        what = "a dialog opened before the wait"
        before = await snapshot(c)
        seq = before.get("event_seq")
        sc.check(isinstance(seq, int), f"{what}: the snapshot carries an integer event_seq ({seq!r})")
        await schedule(c, "openConfirm('before the wait')", 0)
        d = await wait_pending(sc, c, "confirm", "before the wait", what)
        after = await snapshot(c)
        sc.expect(isinstance(after.get("event_seq"), int) and after["event_seq"] > seq,
                  f"{what}: event_seq grew with the dialog ({seq} -> {after.get('event_seq')!r})")
        r, _ = await wait_call(c, {"event": "dialog_opened", "timeout_s": 1})
        wait_result_ok(sc, r, "dialog_opened", False, f"{what}, without since")
        r, _ = await wait_call(c, {"event": "dialog_opened", "timeout_s": 10, "since": seq})
        snap = wait_result_ok(sc, r, "dialog_opened", True, f"{what}, with since={seq}")
        sc.expect(r.seconds < 5, f"{what}, with since: it returned at once, not at its 10 s timeout ({r.seconds:.2f} s)")
        sc.expect(pending_of(snap, "confirm", "before the wait") is not None, f"{what}, with since: its snapshot shows the confirm")
        await dialog(c, "accept", d["id"])

        # e) A navigation ends a wait(page_loaded).
        what = "wait(page_loaded) during a navigation"
        out = {}

        async def load_waiter() -> None:
            out["r"], out["t"] = await wait_call(c, {"event": "page_loaded", "timeout_s": 20})

        async with anyio.create_task_group() as tg:
            tg.start_soon(load_waiter)
            await anyio.sleep(0.3)
            await navigate(sc, c, other)
        snap = wait_result_ok(sc, out["r"], "page_loaded", True, what)
        sc.expect(snap.get("url") == other, f"{what}: its snapshot shows the new page ({snap.get('url')!r})")

        # f) A bad event name.
        r = await tool(c, "browser_wait", {"event": "dialog_opend", "timeout_s": 1})
        sc.expect(r.is_error, f"wait(dialog_opend) is a tool error ({r.text[:300]!r})")
        missing = [e for e in WAIT_EVENTS if e not in r.text]
        sc.expect(not missing, f"its text lists the allowed events (missing {missing}: {r.text[:300]!r})")

        # g) Cancelled by the client: the server stays healthy.
        what = "a cancelled wait(any, 30)"
        await anyio.sleep(SETTLE_S)  # the page is idle: nothing may end the wait before the cancel
        t = time.monotonic()
        with anyio.move_on_after(0.5) as scope:
            await c.call_tool("browser_wait", {"event": "any", "timeout_s": 30})
        sc.check(scope.cancelled_caught, f"{what}: still waiting after 0.5 s on a quiet page, then cancelled")
        with anyio.fail_after(5.0):
            snap = await snapshot(c)
        sc.check(snap.get("url") == other, f"{what}: the next call works ({time.monotonic() - t - 0.5:.2f} s after the cancel)")
        await schedule(c, "openAlert('after the cancel')", 300)
        r, _ = await wait_call(c, {"event": "dialog_opened", "timeout_s": 10})
        snap = wait_result_ok(sc, r, "dialog_opened", True, f"{what}: a new wait afterwards")
        d = pending_of(snap, "alert", "after the cancel")
        sc.check(d is not None, f"{what}: the new wait saw the alert")
        assert d is not None
        await dialog(c, "accept", d["id"])

        # h) The series: dialog opened (its opened_at) -> browser_wait returned.
        latencies: list[float] = []
        for i in range(samples):
            message = f"wait series {i}"
            # Since the seq before the timer: on a loaded machine the alert
            # can open before the wait is asked for, and still counts.
            seq = (await snapshot(c))["event_seq"]
            await schedule(c, f"openAlert({message!r})", 200)
            r, t_ret = await wait_call(c, {"event": "dialog_opened", "timeout_s": 10, "since": seq})
            if r.is_error or not (r.data or {}).get("happened"):
                sc.expect(False, f"wait series {i}: happened true ({r.text[:200]!r})")
                d = await wait_pending(sc, c, "alert", message, f"wait series {i}")
            else:
                d = pending_of(r.data["snapshot"], "alert", message)
                if d is None:
                    sc.expect(False, f"wait series {i}: its snapshot shows the alert")
                    d = await wait_pending(sc, c, "alert", message, f"wait series {i}")
                else:
                    latencies.append(t_ret - d["opened_at"])
            await dialog(c, "accept", d["id"])
        record_figure(sc, f"dialog opened -> browser_wait returned [{transport}]", latencies)
        if latencies:
            sc.expect(max(latencies) < UPDATE_BOUND_S, f"the series: each wait returned within {ms(UPDATE_BOUND_S)} of opened_at (max {ms(max(latencies))})")


# --- 5-7. ask_user --------------------------------------------------------------------


def accept(text: str | None = None) -> types.ElicitResult:
    content: dict[str, Any] = {"action": "accept"}
    if text is not None:
        content["text"] = text
    return types.ElicitResult(action="accept", content=content)


async def prompt_pending(sc: Scenario, c: Client, what: str) -> dict:
    await schedule(c, "openPrompt('Your name?', 'nobody')", 0)
    return await wait_pending(sc, c, "prompt", "Your name?", what)


async def still_pending(sc: Scenario, c: Client, d: dict, what: str) -> None:
    snap = await snapshot(c)
    ids = [x.get("id") for x in snap.get("pending_dialogs") or []]
    sc.expect(d["id"] in ids, f"{what}: {d['id']} is still pending ({ids})")


async def ask_user_accepts_prompt(sc: Scenario, binary: str, transport: str, samples: int) -> None:
    port = await start_site(sc, push_pages)
    quiet = f"http://127.0.0.1:{port}/quiet.html"
    origin = f"127.0.0.1:{port}"
    human = Human(accept("Ada"), types.ElicitResult(action="accept", content={"action": "dismiss"}))
    async with push_server(sc, binary, transport, human=human) as srv:
        c = srv.client
        await navigate(sc, c, quiet)

        what = "ask_user on a prompt"
        d = await prompt_pending(sc, c, what)
        r = await tool(c, "browser_dialog", {"action": "ask_user"})
        sc.check(not r.is_error, f"{what}: browser_dialog(ask_user) succeeds ({r.text[:300]!r})")
        sc.check(len(human.asked) == 1, f"{what}: the client was asked once ({len(human.asked)})")
        p = human.asked[0]
        sc.check(isinstance(p, types.ElicitRequestFormParams), f"{what}: a form elicitation ({type(p).__name__})")
        sc.expect("prompt" in p.message.lower() and "Your name?" in p.message,
                  f"{what}: its message shows the type and the message ({p.message!r})")
        sc.expect(origin in p.message, f"{what}: its message shows the frame's origin {origin} ({p.message!r})")
        props = (p.requested_schema or {}).get("properties") or {}
        sc.expect(set((props.get("action") or {}).get("enum") or []) == {"accept", "dismiss"},
                  f"{what}: the schema's action is an enum accept, dismiss ({props.get('action')})")
        sc.expect((props.get("text") or {}).get("type") == "string", f"{what}: the schema has a string text ({props.get('text')})")
        answered = (r.data or {}).get("answered") or {}
        sc.expect(answered.get("closed_by") in (None, "user"), f"{what}: the result's answered says closed_by user ({answered})")
        got = await evaluate(c, "window.got")
        sc.check(got == "Ada", f"{what}: the page received 'Ada' ({got!r})")
        snap = await snapshot(c)
        rec = recent_has(snap, d["id"])
        sc.check(rec is not None and rec.get("closed_by") == "user", f"{what}: recent_dialogs says closed_by 'user' ({rec})")
        sc.expect(not snap.get("pending_dialogs"), f"{what}: nothing pending ({snap.get('pending_dialogs')})")

        what = "ask_user on a confirm, by dialog_id, dismissed"
        await schedule(c, "openConfirm('Delete everything?')", 0)
        d = await wait_pending(sc, c, "confirm", "Delete everything?", what)
        r = await tool(c, "browser_dialog", {"action": "ask_user", "dialog_id": d["id"]})
        sc.check(not r.is_error, f"{what}: browser_dialog(ask_user) succeeds ({r.text[:300]!r})")
        sc.check(len(human.asked) == 2, f"{what}: the client was asked again ({len(human.asked)})")
        p = human.asked[1]
        sc.expect("confirm" in p.message.lower() and "Delete everything?" in p.message,
                  f"{what}: its message shows the type and the message ({p.message!r})")
        props = (p.requested_schema or {}).get("properties") or {}
        sc.expect("text" not in props, f"{what}: no text in the schema for a confirm ({sorted(props)})")
        got = await evaluate(c, "window.confirmed")
        sc.check(got is False, f"{what}: the page got false ({got!r})")
        snap = await snapshot(c)
        rec = recent_has(snap, d["id"])
        sc.expect(rec is not None and rec.get("closed_by") == "user", f"{what}: recent_dialogs says closed_by 'user' ({rec})")


async def ask_user_without_capability(sc: Scenario, binary: str, transport: str, samples: int) -> None:
    port = await start_site(sc, push_pages)
    quiet = f"http://127.0.0.1:{port}/quiet.html"
    async with push_server(sc, binary, transport) as srv:
        c = srv.client
        await navigate(sc, c, quiet)
        what = "ask_user from a client without elicitation"
        d = await prompt_pending(sc, c, what)
        r = await tool(c, "browser_dialog", {"action": "ask_user"})
        sc.check(r.is_error, f"{what}: a tool error ({r.text[:300]!r})")
        sc.expect("elicitation" in r.text.lower(), f"{what}: its text mentions elicitation ({r.text!r})")
        await still_pending(sc, c, d, what)
        await dialog(c, "dismiss", d["id"])
        got = await evaluate(c, "window.got")
        sc.check(got is None, f"{what}: the agent can still answer it (the page got {got!r})")


async def ask_user_declined(sc: Scenario, binary: str, transport: str, samples: int) -> None:
    port = await start_site(sc, push_pages)
    quiet = f"http://127.0.0.1:{port}/quiet.html"
    human = Human(types.ElicitResult(action="decline"), types.ElicitResult(action="cancel"), accept("later"))
    async with push_server(sc, binary, transport, human=human) as srv:
        c = srv.client
        await navigate(sc, c, quiet)
        what = "ask_user"
        d = await prompt_pending(sc, c, what)
        for action, word in (("decline", "declin"), ("cancel", "cancel")):
            r = await tool(c, "browser_dialog", {"action": "ask_user"})
            sc.check(r.is_error, f"the human {action}s: a tool error ({r.text[:300]!r})")
            sc.expect(word in r.text.lower(), f"the human {action}s: its text says so ({r.text!r})")
            await still_pending(sc, c, d, f"the human {action}s")
        r = await tool(c, "browser_dialog", {"action": "ask_user"})
        sc.check(not r.is_error, f"asked a third time, the human accepts ({r.text[:300]!r})")
        got = await evaluate(c, "window.got")
        sc.check(got == "later", f"the page received 'later' ({got!r})")
        sc.expect(len(human.asked) == 3, f"the human was asked three times ({len(human.asked)})")


# --- 8. one policy per dialog type ---------------------------------------------------------


async def policy_applies(sc: Scenario, binary: str, label: str, quiet: str, args: list[str], env: dict[str, str] | None) -> None:
    async with push_server(sc, binary, "stdio", label=label, args=args, env=env) as srv:
        c = srv.client
        await navigate(sc, c, quiet)
        await schedule(c, "alertThenConfirm()", 0)
        d = await wait_pending(sc, c, "confirm", "stays pending", f"{label}: the confirm")
        snap = await snapshot(c)
        alerts = [x for x in snap.get("recent_dialogs") or [] if x.get("type") == "alert" and x.get("message") == "auto alert"]
        sc.check(bool(alerts) and alerts[0].get("closed_by") == "auto_policy",
                 f"{label}: the alert was answered by the policy, closed_by auto_policy ({alerts})")
        sc.expect(pending_of(snap, "alert") is None, f"{label}: no alert pending ({snap.get('pending_dialogs')})")
        await anyio.sleep(1.0)
        snap = await snapshot(c)
        sc.check(pending_of(snap, "confirm", "stays pending") is not None, f"{label}: the confirm is still pending 1 s later")
        await dialog(c, "accept", d["id"])
        v = await evaluate(c, "[window.afterAlert, window.confirmed]")
        sc.check(v == [True, True], f"{label}: the page went on after the alert and got the agent's answer ({v})")
        # A type the map leaves out is must_respond.
        d = await prompt_pending(sc, c, f"{label}: a prompt (not in the map)")
        await anyio.sleep(1.0)
        await still_pending(sc, c, d, f"{label}: a prompt (not in the map) 1 s later")
        await dialog(c, "dismiss", d["id"])


async def bad_start(sc: Scenario, binary: str, label: str, args: list[str], env: dict[str, str],
                    must_name: list[str]) -> None:
    """The server must exit non-zero at start, with one line naming must_name."""
    full_env = server_env(f"{sc.name}-{label}")
    full_env["TMPDIR"] = scratch_dir(sc, label)
    full_env.update(env)

    def run() -> tuple[int | None, str]:
        # stdin stays open: a server that accepted the config would wait for a client.
        p = subprocess.Popen([binary, *args], env=full_env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _, err = p.communicate(timeout=BAD_START_DEADLINE_S)
            return p.returncode, err
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
            return None, err

    code, err = await anyio.to_thread.run_sync(run)
    lines = [x for x in err.splitlines() if x.strip()]
    sc.check(code is not None, f"{label}: the server exits at start (still running after {BAD_START_DEADLINE_S:.0f} s; stderr {err[-300:]!r})")
    sc.expect(code != 0, f"{label}: a non-zero exit ({code})")
    sc.expect(len(lines) == 1 and "panicked" not in err, f"{label}: a one-line error ({lines})")
    missing = [w for w in must_name if w not in err]
    sc.expect(not missing, f"{label}: the error names {must_name} (missing {missing}: {err.strip()!r})")


async def per_type_policy_map(sc: Scenario, binary: str, transport: str, samples: int) -> None:
    port = await start_site(sc, push_pages)
    quiet = f"http://127.0.0.1:{port}/quiet.html"
    env = {"CDP_SUPERVISOR_BROWSER__DIALOG_POLICY": POLICY_MAP}
    config = os.path.join(sc.tmp, "config.yaml")
    with open(config, "w") as f:
        f.write("browser:\n  dialog_policy:\n    alert: auto_accept\n    confirm: must_respond\n")
    bad_config = os.path.join(sc.tmp, "bad.yaml")
    with open(bad_config, "w") as f:
        f.write("browser:\n  dialog_policy:\n    popup: auto_accept\n")

    # The bad starts first: they are quick and do not depend on a browser.
    type_words = ["popup", "dialog_policy", *DIALOG_TYPES]
    await bad_start(sc, binary, "env {popup: auto_accept}", ["mcp"],
                    {"CDP_SUPERVISOR_BROWSER__DIALOG_POLICY": "{popup: auto_accept}"}, type_words)
    await bad_start(sc, binary, "config popup: auto_accept", ["mcp", "--config", bad_config], {}, type_words)
    await bad_start(sc, binary, "env {alert: sometimes}", ["mcp"],
                    {"CDP_SUPERVISOR_BROWSER__DIALOG_POLICY": "{alert: sometimes}"},
                    ["sometimes", "dialog_policy", *POLICIES])

    failures_before = len(sc.failures)
    problems: list[str] = []
    for label, args, variant_env in (
        ("env", [], env),
        ("config", ["--config", config], None),
        ("flag", ["--policy", "alert=auto_accept,confirm=must_respond"], None),
    ):
        try:
            await policy_applies(sc, binary, label, quiet, args, variant_env)
        except Exception as e:  # noqa: BLE001 - each source is reported; the next one still runs
            f = first_fail(e)
            problem = f"{label}: {f}" if isinstance(f, Fail) else f"{label}: {type(f).__name__}: {f} (did the server start?)"
            problems.append(problem)
            sc.log(f"FAILED (going on): {problem}")
    sc.failures += problems
    if len(sc.failures) == failures_before:
        sc.log("ok: the map from the environment, a --config file and --policy all apply")


# --- 9. typed results ---------------------------------------------------------------------


async def output_schemas(sc: Scenario, binary: str, transport: str, samples: int) -> None:
    port = await start_site(sc, push_pages)
    quiet = f"http://127.0.0.1:{port}/quiet.html"
    async with push_server(sc, binary, transport) as srv:
        c = srv.client
        tools = (await c.list_tools()).tools
        names = [t.name for t in tools]
        sc.log(f"tools: {names}")
        for t in tools:
            s = t.output_schema
            sc.expect(isinstance(s, dict) and s.get("type") == "object", f"{t.name} declares an outputSchema of type object ({s and s.get('type')!r})")
        cdp = next((t for t in tools if t.name == "browser_cdp"), None)
        sc.check(cdp is not None, "browser_cdp is listed")
        assert cdp is not None
        sc.expect(cdp.annotations is not None and cdp.annotations.idempotent_hint is False,
                  f"browser_cdp's annotations say idempotentHint false ({cdp.annotations})")

        # Successful results validate against the schema: the SDK checks each
        # one (call_tool raises RuntimeError when structuredContent does not).
        async def valid(name: str, args: dict | None = None, when: str = "") -> dict | None:
            if name not in names:
                sc.log(f"({name} is not listed; skipped)")
                return None
            try:
                data = await call(c, name, args)
            except RuntimeError as e:
                sc.expect(False, f"{name}({args}): its result validates against its outputSchema ({e})")
                return None
            sc.log(f"ok: {name}: the result validates against its outputSchema")
            # event_seq is a supervisor field: a snapshot with no supervisor
            # ({url, title, note}) carries none of them.
            if name == "browser_snapshot" and not when:
                sc.expect(isinstance(data.get("event_seq"), int),
                          f"the snapshot{when} carries an integer event_seq ({data.get('event_seq')!r}; keys {sorted(data)})")
            return data

        await valid("browser_snapshot", when=" before any browser")  # {url, title, note}
        await valid("browser_navigate", {"url": quiet})
        await valid("browser_snapshot")
        await valid("browser_cdp", {"method": "Runtime.evaluate", "params": {"expression": "1 + 1", "returnByValue": True}})
        await valid("browser_wait", {"event": "any", "timeout_s": 1})
        await schedule(c, "openPrompt('typed?', 'yes')", 0)
        await wait_pending(sc, c, "prompt", "typed?", "a prompt")
        await valid("browser_snapshot")
        await valid("browser_dialog", {"action": "accept", "prompt_text": "typed"})
        await valid("browser_tabs", {"action": "list"})
        await valid("browser_disconnect")
        await valid("browser_snapshot", when=" after browser_disconnect")  # no supervisor fields


# --- main ---------------------------------------------------------------------------------


Body = Callable[[Scenario, str, str, int], Awaitable[None]]
# name -> (function, transports, timing: run alone)
SCENARIOS: dict[str, tuple[Body, tuple[str, ...], bool]] = {
    "subscription_update_on_alert": (subscription_update_on_alert, ("stdio", "http"), True),
    "no_update_when_idle": (no_update_when_idle, ("stdio", "http"), True),
    "updates_coalesced": (updates_coalesced, ("stdio", "http"), False),
    "wait_dialog_opened": (wait_dialog_opened, ("stdio", "http"), True),
    "ask_user_accepts_prompt": (ask_user_accepts_prompt, ("stdio", "http"), False),
    "ask_user_without_capability": (ask_user_without_capability, ("stdio", "http"), False),
    "ask_user_declined": (ask_user_declined, ("stdio", "http"), False),
    "per_type_policy_map": (per_type_policy_map, ("stdio",), False),
    "output_schemas": (output_schemas, ("stdio", "http"), False),
}


async def main() -> int:
    argv = sys.argv[1:]
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.realpath(argv[0])
    only: list[str] | None = None
    transports = ["stdio", "http"]
    samples, jobs, serial = 20, 2, False
    rest = argv[1:]
    try:
        while rest:
            a = rest.pop(0)
            if a == "--only" and rest:
                only = rest.pop(0).split(",")
            elif a == "--transport" and rest:
                transports = [rest.pop(0)]
            elif a == "--samples" and rest:
                samples = int(rest.pop(0))
            elif a == "--jobs" and rest:
                jobs = max(1, int(rest.pop(0)))
            elif a == "--serial":
                serial = True
            else:
                raise ValueError(a)
    except ValueError:
        print(__doc__, file=sys.stderr)
        return 2
    failed = preflight(binary)
    if failed is not None:
        return failed
    unknown = [n for n in only or [] if n not in SCENARIOS]
    if unknown or any(t not in ("stdio", "http") for t in transports):
        log(f"unknown scenario(s) {unknown} or transport {transports}; known: {list(SCENARIOS)}, stdio, http")
        return 2
    cancel_on_signals()

    runs = [
        (f"{name}[{t}]", name, t, timing)
        for name, (_, ts, timing) in SCENARIOS.items()
        if only is None or name in only
        for t in ts
        if t in transports
    ]

    def start(label: str, name: str, t: str) -> Awaitable[Outcome]:
        fn = SCENARIOS[name][0]
        return run_scenario(label, lambda sc: fn(sc, binary, t, samples))

    started = time.monotonic()
    outcomes: dict[str, Outcome] = {}
    # The others, `jobs` at a time; then the timing scenarios, each alone.
    limit = anyio.Semaphore(1 if serial else jobs)

    async def one(label: str, name: str, t: str) -> None:
        async with limit:
            outcomes[label] = await start(label, name, t)

    async with anyio.create_task_group() as tg:
        for label, name, t, timing in runs:
            if not timing:
                tg.start_soon(one, label, name, t)
    for label, name, t, timing in runs:
        if timing:
            outcomes[label] = await start(label, name, t)

    ordered = [outcomes[label] for label, *_ in runs if label in outcomes]
    if FIGURES:
        log("figures (Unix time of receipt minus the dialog's opened_at):")
        for what, xs in FIGURES.items():
            if xs:
                log(f"  {what}: median {ms(percentile(xs, 0.5))}, p99 {ms(percentile(xs, 0.99))},"
                    f" max {ms(max(xs))}, n={len(xs)}")
            else:
                log(f"  {what}: no samples")
    return summarize("push.py", ordered, started)


if __name__ == "__main__":
    exit_with(main)
