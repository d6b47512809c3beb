"""Calls and reconnects (issue 28), checked with the official MCP Python SDK.

Drives the real `cdp-supervisor mcp` binary over stdio against real Chromium,
the way an agent sees the product:

  dialog_closed_during_a_drop_is_not_reloaded
                                the CDP socket is cut (a loopback proxy) while
                                a confirm is pending; another CDP client
                                navigates the tab meanwhile, which closes it.
                                After the reconnect the snapshot lists no
                                dialog, recent_dialogs says closed_by remote,
                                and the watchdog never reloads the page (the
                                server counts its loads)
  tab_gone_during_a_drop_is_no_reason_to_stop
                                the supervised tab is closed during the
                                outage (an alert pending in it): the server
                                re-attaches to the tab in front, closes the
                                alert as remote, and browser_navigate works
  timed_out_call_is_kept_and_delivered_once
                                an awaitPromise evaluate whose timeout_s passes
                                is a tool error {timed_out, call_id} that says
                                not to resend; its late result shows once in
                                completed_calls and its side effect ran once
  another_tabs_dialog_claims_no_call
                                a beforeunload pending in another tab: the
                                current tab's browser_navigate loads (not
                                dialog_pending) and its evaluate answers
  answering_past_the_most_recent_dialog
                                a beforeunload, then an OOPIF's confirm: an
                                answer to the beforeunload is refused (Chromium
                                would answer the confirm with it); the confirm
                                gets what the agent said; browser_navigate then
                                releases the beforeunload Chromium refuses
  a_same_site_popups_dialog_claims_the_openers_navigation
                                a same-site popup's confirm freezes its opener:
                                the opener's browser_navigate says
                                dialog_pending at once, not load_timeout at 30 s
  an_answer_to_a_dialog_just_closed_says_how_it_closed
                                (issue 44, F2) a confirm the 1 s watchdog
                                dismissed: browser_dialog with its id says it
                                is no longer pending, closed_by watchdog and
                                when, not "unknown dialog_id"
  navigate_and_answer_at_once   (issue 44, F1) an alert pending; browser_navigate,
                                then browser_dialog 0–20 ms later (14 runs): the tab
                                goes, the alert is closed_by agent whichever
                                closed it, and the answer names no one else
  a_held_navigation_leaves_the_snapshot_whole
                                (issue 44, F3) browser_navigate twice while a
                                beforeunload holds the first: the snapshot's
                                url, tab and title stay the page still shown;
                                dismissed, it stays; accepted, the new page
  dialog_ids_go_on_across_supervisors
                                a confirm answered, browser_disconnect, the
                                next supervisor's first confirm: its id is
                                new, numbered on from the first one's
  a_click_that_loaded_nothing_closes_nothing_later
                                a link to a 204 clicked (a navigation that
                                never commits), then an alert that another
                                CDP client's navigation closes: recent_dialogs says
                                closed_by remote, not agent, before and after
                                the page changes
  beforeunload_and_an_oopif_alert_are_both_freed
                                a beforeunload, then an alert in an OOPIF
                                (Chromium answers only the most recent, and a
                                top frame a beforeunload holds never
                                navigates): the watchdog frees both within a
                                bound and the page answers again

Every scenario has its own server process, Chromium, user-data-dir, ports and
fixture site, and cleans up even when it fails. Every wait has a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
import urllib.request
from typing import Any, Awaitable, Callable

import anyio
from mcp import Client

from common import (
    Fail,
    answer,
    Scenario,
    call,
    call_raw,
    click,
    evaluate,
    exit_with,
    launch_chromium,
    mcp_server,
    NO_CONTENT,
    page,
    recent_has,
    run_phases,
    set_log_name,
    snapshot,
    start_site,
    trigger,
    wait_pending,
)

set_log_name("core")

RECONNECT_DEADLINE_S = 20.0  # the server is connected again after the proxy comes back


class Hits(dict):
    """The site's pages (`start_site`'s `pages`, called with the port),
    counting how often each path was served."""

    def __init__(self, pages: Callable[[int], dict[str, str]]) -> None:
        super().__init__()
        self.pages = pages
        self.count: dict[str, int] = {}

    def __call__(self, port: int) -> "Hits":
        if not self:
            self.update(self.pages(port))
        return self

    def get(self, path: str, default: Any = None) -> Any:  # type: ignore[override]
        self.count[path] = self.count.get(path, 0) + 1
        return super().get(path, default)


def site(port: int) -> dict[str, str]:
    return {
        "/ask.html": page(
            "ask",
            "<p>asks</p>",
            "window.openConfirm = () => { window.answer = confirm('keep going?'); };"
            "window.openAlert = () => alert('on the tab that goes');",
        ),
        "/next.html": page("next", "<p>next</p>", "window.loadedAt = Date.now();"),
        "/leave.html": page(
            "leave page",
            "<p>asks before it is left</p>",
            'window.addEventListener("beforeunload", (e) => { e.preventDefault(); e.returnValue = ""; });',
        ),
        "/plain.html": page("plain", "<p>plain</p>", "window.count = 0;"),
        "/bu-oopif.html": page(
            "leave with an oopif",
            f'<iframe src="http://localhost:{port}/frame.html" width=300 height=100></iframe>',
            'window.addEventListener("beforeunload", (e) => { e.preventDefault(); e.returnValue = ""; });',
        ),
        "/frame.html": page("frame", "<p>in the oopif</p>",
                            "window.pay = () => { const ok = confirm('pay 100 EUR?');"
                            " fetch('/got?' + ok).catch(() => {}); };"),
        "/got": "ok",
        "/links.html": page("links", '<a href="/nothing">Nothing</a>',
                            "window.openAlert = () => alert('after the click');"),
        "/nothing": NO_CONTENT,
        "/opener.html": page("opener", "<p>opens a popup on a click</p>",
                             "document.body.onclick = () => window.open('/popup.html');"),
        "/popup.html": page("popup", "<p>asks</p>", "setTimeout(() => confirm('in the popup'), 100);"),
    }


class CutProxy:
    """A loopback TCP proxy in front of Chromium's DevTools port that can be
    cut: every open connection closed at once, and new ones closed as soon
    as they are accepted, until restored."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.down = False
        self.writers: list[asyncio.StreamWriter] = []
        self.port = 0

    async def start(self, sc: Scenario) -> int:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]

        async def stop() -> None:
            server.close()
            self.cut()

        sc.stack.push_async_callback(stop)
        return self.port

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.down:
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            writer.close()
            return
        self.writers += [writer, up_writer]

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.IncompleteReadError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def cut(self) -> None:
        self.down = True
        for w in self.writers:
            w.close()
        self.writers.clear()

    def restore(self) -> None:
        self.down = False


async def current_tab(c: Client) -> str:
    tabs = (await call(c, "browser_tabs", {"action": "list"}))["tabs"]
    for t in tabs:
        if t.get("current"):
            return t["target_id"]
    raise Fail(f"no current tab in {tabs}")


async def wait_snapshot(sc: Scenario, c: Client, what: str, ok: Callable[[dict], bool]) -> dict:
    deadline = time.monotonic() + RECONNECT_DEADLINE_S
    while True:
        snap = await snapshot(c)
        if ok(snap):
            return snap
        if time.monotonic() > deadline:
            raise Fail(f"{what}: not within {RECONNECT_DEADLINE_S:.0f} s; last snapshot: {json.dumps(snap)[:800]}")
        await anyio.sleep(0.1)


async def devtools(port: int, path: str, method: str = "GET") -> Any:
    """Chromium's DevTools HTTP endpoint, as another client would use it."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    raw = await anyio.to_thread.run_sync(lambda: urllib.request.urlopen(req, timeout=5).read())
    with contextlib.suppress(ValueError):
        return json.loads(raw)
    return raw.decode(errors="replace")


async def navigate_as_another_client(sc: Scenario, binary: str, chromium_port: int, tab: str, url: str) -> None:
    """Another CDP client (a second cdp-supervisor, `snapshot --target-id`)
    navigates the tab: that closes the dialog it shows."""
    proc = await asyncio.create_subprocess_exec(
        binary, "snapshot", url, "--cdp-url", f"http://127.0.0.1:{chromium_port}", "--target-id", tab,
        "--settle-ms", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    except asyncio.TimeoutError:
        proc.kill()
        raise Fail("the other client's navigation did not finish within 30 s")
    sc.log(f"other client: exit {proc.returncode}; stderr {err.decode()[-300:]!r}")
    sc.check(proc.returncode == 0, f"the other client navigated the tab (exit {proc.returncode})")


async def dialog_closed_during_a_drop_is_not_reloaded(sc: Scenario, binary: str) -> None:
    pages = Hits(site)
    port = await start_site(sc, pages)
    chromium = await launch_chromium(sc, "c")
    proxy = CutProxy(chromium.port)
    await proxy.start(sc)
    timeout_s = 3
    async with mcp_server(sc, binary, "s", ["--cdp-url", proxy.http_url, "--dialog-timeout-s", str(timeout_s)]) as srv:
        c = srv.client
        nav = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/ask.html"})
        sc.check(nav.get("status") == "loaded", f"navigate to ask.html ({nav.get('status')})")
        tab = await current_tab(c)
        await trigger(c, "openConfirm")
        d = await wait_pending(sc, c, "confirm", "keep going?", "the confirm")
        proxy.cut()
        await wait_snapshot(sc, c, "the server saw the drop", lambda s: s.get("connection") != "connected")
        next_url = f"http://127.0.0.1:{port}/next.html"
        await navigate_as_another_client(sc, binary, chromium.port, tab, next_url)
        loads = pages.count.get("/next.html", 0)
        proxy.restore()
        snap = await wait_snapshot(
            sc, c, "connected again with the dialog re-checked",
            lambda s: s.get("connection") == "connected" and not s.get("pending_dialogs"),
        )
        closed = recent_has(snap, d["id"])
        sc.check(closed is not None, f"{d['id']} is in recent_dialogs ({snap.get('recent_dialogs')})")
        sc.expect(closed is not None and closed.get("closed_by") == "remote",
                  f"closed_by remote: it closed while we were away ({closed})")
        # Past the watchdog's deadline: nothing navigates the user's page.
        await anyio.sleep(timeout_s + 2)
        snap = await snapshot(c)
        sc.expect(not snap.get("pending_dialogs"), f"still no pending dialog ({snap.get('pending_dialogs')})")
        sc.check(pages.count.get("/next.html", 0) == loads,
                 f"the page was not reloaded ({loads} load(s) of next.html before, {pages.count.get('/next.html')} after)")
        sc.expect(snap.get("url") == next_url, f"the snapshot shows the page the other client opened ({snap.get('url')})")
        r = await call_raw(c, "browser_dialog", {"action": "accept"})
        sc.expect(r.is_error and "no dialog" in r.text.lower(), f"answering says no dialog is open ({r.text[:200]!r})")


async def tab_gone_during_a_drop_is_no_reason_to_stop(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site)
    chromium = await launch_chromium(sc, "c")
    proxy = CutProxy(chromium.port)
    await proxy.start(sc)
    async with mcp_server(sc, binary, "s", ["--cdp-url", proxy.http_url]) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/ask.html"})
        gone = await current_tab(c)
        await trigger(c, "openAlert")
        d = await wait_pending(sc, c, "alert", "on the tab that goes", "the alert")
        # Another client's tab, the one in front once ours is gone.
        other = await devtools(chromium.port, f"/json/new?http://127.0.0.1:{port}/plain.html", "PUT")
        other_id = other["id"] if isinstance(other, dict) else None
        sc.check(bool(other_id), f"a second tab opened through /json/new ({other})")
        proxy.cut()
        await wait_snapshot(sc, c, "the server saw the drop", lambda s: s.get("connection") != "connected")
        await devtools(chromium.port, f"/json/close/{gone}")
        proxy.restore()
        snap = await wait_snapshot(
            sc, c, "connected again on the tab in front",
            lambda s: s.get("connection") == "connected"
            and any(t.get("current") and t.get("target_id") == other_id for t in s.get("tabs", [])),
        )
        sc.expect(not snap.get("pending_dialogs"), f"no dialog pending ({snap.get('pending_dialogs')})")
        closed = recent_has(snap, d["id"])
        sc.expect(closed is not None and closed.get("closed_by") == "remote",
                  f"the gone tab's alert closed remote ({closed})")
        sc.expect(all(t.get("target_id") != gone for t in snap.get("tabs", [])), f"the gone tab is not listed ({snap.get('tabs')})")
        nav = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/next.html"})
        sc.check(nav.get("status") == "loaded", f"browser_navigate works on the tab in front ({nav})")
        title = await evaluate(c, "document.title")
        sc.check(title == "next", f"the page really loaded ({title!r})")


async def timed_out_call_is_kept_and_delivered_once(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site)
    async with mcp_server(sc, binary, "s", []) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/plain.html"})
        args = {
            "method": "Runtime.evaluate",
            "params": {
                "expression": "new Promise(r => setTimeout(() => r(++window.count), 1500))",
                "awaitPromise": True,
                "returnByValue": True,
            },
            "timeout_s": 0.3,
        }
        r = await call_raw(c, "browser_cdp", args)
        data = r.data or {}
        sc.check(r.is_error, f"a call past its timeout_s is a tool error ({r.text[:200]!r})")
        sc.check(data.get("timed_out") is True, f"structuredContent.timed_out is true ({data})")
        call_id = data.get("call_id")
        sc.check(isinstance(call_id, str) and re.fullmatch(r"c-\d+", call_id) is not None, f"a call_id ({call_id!r})")
        sc.expect(data.get("method") == "Runtime.evaluate", f"its method ({data.get('method')!r})")
        sc.expect("not resend" in r.text.lower() or "do not resend" in r.text.lower(),
                  f"the text says not to resend it ({r.text!r})")
        snap = await wait_snapshot(
            sc, c, "its late result in completed_calls",
            lambda s: any(x.get("call_id") == call_id for x in s.get("completed_calls") or []),
        )
        done = [x for x in snap["completed_calls"] if x.get("call_id") == call_id]
        sc.check(len(done) == 1, f"listed once ({done})")
        value = ((done[0].get("result") or {}).get("result") or {}).get("value")
        sc.expect(value == 1, f"with the evaluate's real value 1 ({done[0]})")
        n = await evaluate(c, "window.count")
        sc.check(n == 1, f"the side effect ran exactly once (window.count = {n!r})")


async def another_tabs_dialog_claims_no_call(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site)
    async with mcp_server(sc, binary, "s", []) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/plain.html"})
        first = await current_tab(c)
        r = await call(c, "browser_tabs", {"action": "new", "url": f"http://127.0.0.1:{port}/leave.html"})
        second = r["current_target_id"]
        await wait_snapshot(sc, c, "the new tab loaded", lambda s: s.get("title") == "leave page")
        await click(c, 40, 40)  # beforeunload needs a user gesture
        r = await call(c, "browser_tabs", {"action": "close", "target_id": second})
        bu = [d for d in r["pending_dialogs"] if d["type"] == "beforeunload"] or [
            await wait_pending(sc, c, "beforeunload", None, "closing the second tab asks beforeunload")
        ]
        sc.check(bu[0].get("target_id") == second, f"the beforeunload is the second tab's ({bu[0]})")
        await call(c, "browser_tabs", {"action": "select", "target_id": first})
        target = f"http://127.0.0.1:{port}/next.html"
        nav = await call(c, "browser_navigate", {"url": target})
        sc.check(nav.get("status") == "loaded", f"the first tab navigates: status {nav.get('status')!r}, not dialog_pending")
        title = await evaluate(c, "document.title")
        sc.check(title == "next", f"the first tab really loaded next.html ({title!r})")
        snap = await snapshot(c)
        sc.expect(snap.get("url") == target, f"the snapshot follows it ({snap.get('url')})")
        sc.expect(any(d.get("id") == bu[0]["id"] for d in snap.get("pending_dialogs", [])),
                  "the other tab's beforeunload is still listed")
        await call(c, "browser_dialog", {"action": "accept", "dialog_id": bu[0]["id"]})


async def beforeunload_beside_an_oopif(sc: Scenario, c: Client, port: int) -> tuple[dict, str]:
    """bu-oopif.html loaded, its OOPIF attached, and leaving it (after a
    real gesture) asking beforeunload: the pending beforeunload and the
    OOPIF's frame id."""
    nav = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/bu-oopif.html"})
    sc.check(nav.get("status") == "loaded", f"navigate to bu-oopif.html ({nav.get('status')})")
    snap = await wait_snapshot(sc, c, "the OOPIF attached", lambda s: any(
        ch.get("session_id") for ch in s.get("frame_tree", {}).get("children", [])))
    oopif = next(ch["frame_id"] for ch in snap["frame_tree"]["children"] if ch.get("session_id"))
    await click(c, 20, 20)  # beforeunload needs a user gesture
    r = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/plain.html"})
    sc.check(r.get("status") == "dialog_pending", f"leaving asks beforeunload ({r.get('status')})")
    bu = await wait_pending(sc, c, "beforeunload", None, "the beforeunload")
    return bu, oopif


async def beforeunload_and_an_oopif_alert_are_both_freed(sc: Scenario, binary: str) -> None:
    """A beforeunload shows in the top frame, then an alert in an OOPIF:
    Chromium sends no closed event for the beforeunload, answers the most
    recent dialog (the alert) whichever one a command names, and never lets
    a top frame held by a beforeunload navigate. The watchdog must still free
    the page, and record who closed what."""
    port = await start_site(sc, site)
    timeout_s = 2
    async with mcp_server(sc, binary, "s", ["--dialog-timeout-s", str(timeout_s)]) as srv:
        c = srv.client
        bu, oopif = await beforeunload_beside_an_oopif(sc, c, port)
        await trigger(c, "(() => alert('in the oopif'))", oopif)
        alert = await wait_pending(sc, c, "alert", "in the oopif", "the OOPIF's alert")
        started = time.monotonic()
        bound = 2 * timeout_s + 8
        deadline = started + bound
        while True:
            snap = await snapshot(c)
            if not snap.get("pending_dialogs"):
                break
            if time.monotonic() > deadline:
                raise Fail(f"still pending after {bound} s: {snap.get('pending_dialogs')} (page_blocked {snap.get('page_blocked')})")
            await anyio.sleep(0.2)
        sc.log(f"both freed {time.monotonic() - started:.1f} s after the alert opened")
        for d in (bu, alert):
            closed = recent_has(snap, d["id"])
            sc.expect(closed is not None and closed.get("closed_by") == "watchdog",
                      f"{d['type']} {d['id']} closed by the watchdog ({closed})")
        title = await evaluate(c, "document.title")
        sc.check(title in ("leave with an oopif", "plain"), f"the page answers again (title {title!r})")


async def answering_past_the_most_recent_dialog(sc: Scenario, binary: str) -> None:
    """A beforeunload in the top frame, then a confirm in an OOPIF: an answer
    to the beforeunload is refused (Chromium would give it to the confirm);
    the confirm is answered as asked; the beforeunload Chromium then refuses
    is released by browser_navigate, which navigates."""
    pages = Hits(site)
    port = await start_site(sc, pages)
    async with mcp_server(sc, binary, "s", []) as srv:
        c = srv.client
        bu, oopif = await beforeunload_beside_an_oopif(sc, c, port)
        await trigger(c, "pay", oopif)
        pay = await wait_pending(sc, c, "confirm", "pay 100 EUR?", "the OOPIF's confirm")
        r = await call_raw(c, "browser_dialog", {"action": "accept", "dialog_id": bu["id"]})
        sc.check(r.is_error and pay["id"] in r.text, f"answering the older dialog is refused, naming {pay['id']} ({r.text[:200]!r})")
        await anyio.sleep(0.5)
        sc.check(pages.count.get("/got", 0) == 0, "the confirm received nothing")
        ans = await call(c, "browser_dialog", {"action": "dismiss", "dialog_id": pay["id"]})
        sc.expect((ans.get("answered") or {}).get("id") == pay["id"], f"the confirm is answered ({ans.get('answered')})")
        r = await call_raw(c, "browser_dialog", {"action": "accept", "dialog_id": bu["id"]})
        sc.log(f"accepting the beforeunload now: is_error={r.is_error} {r.text[:200]!r}")
        if r.is_error:
            sc.check("browser_navigate" in r.text, f"the remedy is browser_navigate ({r.text[:200]!r})")
            target = f"http://127.0.0.1:{port}/next.html"
            nav = await call(c, "browser_navigate", {"url": target})
            if nav.get("status") == "dialog_pending":
                # Released; leaving asks the page's beforeunload afresh, and
                # this one can be answered.
                fresh = [d for d in nav.get("pending_dialogs", []) if d["type"] == "beforeunload"]
                sc.check(len(fresh) == 1 and fresh[0]["id"] != bu["id"] and fresh[0]["answerable"],
                         f"the stuck beforeunload is gone; a fresh, answerable one asks ({nav.get('pending_dialogs')})")
                await call(c, "browser_dialog", {"action": "accept", "dialog_id": fresh[0]["id"]})
                snap = await wait_snapshot(sc, c, "the page left", lambda s: s.get("title") == "next")
            else:
                sc.check(nav.get("status") == "loaded", f"browser_navigate releases the page and loads ({nav})")
            title = await evaluate(c, "document.title")
            sc.check(title == "next", f"the page really navigated ({title!r})")
        snap = await snapshot(c)
        sc.expect(not snap.get("pending_dialogs"), f"nothing pending ({snap.get('pending_dialogs')})")


async def a_same_site_popups_dialog_claims_the_openers_navigation(sc: Scenario, binary: str) -> None:
    """A same-site popup's confirm freezes its opener (one renderer): the
    opener's browser_navigate says dialog_pending at once instead of waiting
    out its 30 s load timeout."""
    port = await start_site(sc, site)
    async with mcp_server(sc, binary, "s", []) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/opener.html"})
        opener = await current_tab(c)
        await click(c, 40, 40)
        d = await wait_pending(sc, c, "confirm", "in the popup", "the popup's confirm")
        sc.check(d.get("target_id") != opener, f"the confirm is the popup's ({d.get('target_id')})")
        await call(c, "browser_tabs", {"action": "select", "target_id": opener})
        t = time.monotonic()
        nav = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/next.html"})
        took = time.monotonic() - t
        sc.check(nav.get("status") == "dialog_pending", f"dialog_pending, not a load timeout ({nav.get('status')})")
        sc.check(took < 5, f"at once ({took:.1f} s)")
        await call(c, "browser_dialog", {"action": "accept", "dialog_id": d["id"]})


async def a_click_that_loaded_nothing_closes_nothing_later(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site)
    chromium = await launch_chromium(sc, "c")
    async with mcp_server(sc, binary, "s", ["--cdp-url", f"http://127.0.0.1:{chromium.port}"]) as srv:
        c = srv.client
        url = f"http://127.0.0.1:{port}/links.html"
        await call(c, "browser_navigate", {"url": url})
        snap = await call(c, "browser_snapshot", {})
        m = re.search(r'- link "Nothing"[^\n]*\[ref=([a-z0-9]+)\]', snap.get("page") or "")
        sc.check(m is not None, f"the link has a ref ({(snap.get('page') or '')[:300]!r})")
        r = await call(c, "browser_click", {"ref": m.group(1)})
        sc.log(f"click: {r}")
        sc.check((await snapshot(c)).get("url") == url, "the 204 left the page where it was")
        tab = await current_tab(c)
        await trigger(c, "openAlert")
        d = await wait_pending(sc, c, "alert", "after the click", "the alert")
        next_url = f"http://127.0.0.1:{port}/next.html"
        await navigate_as_another_client(sc, binary, chromium.port, tab, next_url)
        snap = await wait_snapshot(sc, c, "the alert closed", lambda s: not s.get("pending_dialogs"))
        closed = recent_has(snap, d["id"])
        sc.check(closed is not None and closed.get("closed_by") == "remote",
                 f"closed_by remote: another client's navigation closed it ({closed})")
        sc.check(snap.get("url") == next_url, f"the snapshot shows the other client's page ({snap.get('url')})")
        await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/plain.html"})
        closed = recent_has(await snapshot(c), d["id"])
        sc.check(closed is not None and closed.get("closed_by") == "remote",
                 f"still remote once the page changed ({closed})")


async def an_answer_to_a_dialog_just_closed_says_how_it_closed(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site)
    env = {"CDP_SUPERVISOR_BROWSER__DIALOG_TIMEOUT_S": "1"}
    async with mcp_server(sc, binary, "s", [], env=env) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/ask.html"})
        await trigger(c, "openConfirm")
        d = await wait_pending(sc, c, "confirm", "keep going?", "the confirm")
        deadline = time.monotonic() + RECONNECT_DEADLINE_S
        closed = None
        while closed is None and time.monotonic() < deadline:
            closed = recent_has(await snapshot(c), d["id"])
            if closed is None:
                await anyio.sleep(0.1)
        sc.check(closed is not None and closed.get("closed_by") == "watchdog", f"the watchdog dismissed it ({closed})")
        r = await call_raw(c, "browser_dialog", {"action": "accept", "dialog_id": d["id"]})
        sc.check(r.is_error, f"answering it now is an error ({r.text[:200]})")
        sc.expect("unknown" not in r.text and "no longer pending" in r.text, f"saying it is no longer pending ({r.text})")
        sc.expect("closed_by: watchdog" in r.text and "closed_at" in r.text, f"how and when it closed ({r.text})")


async def navigate_and_answer_at_once(sc: Scenario, binary: str) -> None:
    """F1: browser_navigate, then browser_dialog a few ms later, while an
    alert is pending: the navigation closes the alert before the answer
    arrives, or the answer closes it first. Either way the agent closed it."""
    port = await start_site(sc, site)
    async with mcp_server(sc, binary, "s", []) as srv:
        c = srv.client
        for gap in [ms / 1000 for ms in (*range(0, 12), 15, 20)]:
            await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/ask.html"})
            await trigger(c, "openAlert")
            d = await wait_pending(sc, c, "alert", "on the tab that goes", "the alert")
            said: dict = {}

            async def navigate() -> None:
                said["navigate"] = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/next.html"})

            async with anyio.create_task_group() as tg:
                tg.start_soon(navigate)
                await anyio.sleep(gap)
                said["dialog"] = await call_raw(c, "browser_dialog", {"action": "accept", "dialog_id": d["id"]})
            snap = await snapshot(c)
            closed = recent_has(snap, d["id"])
            sc.check(snap.get("url", "").endswith("/next.html"), f"{gap * 1000:.0f} ms: the tab went to next.html ({snap.get('url')})")
            sc.check(closed is not None and closed.get("closed_by") == "agent", f"{gap * 1000:.0f} ms: the alert was closed by the agent ({closed})")
            r = said["dialog"]
            sc.check(
                "someone else" not in r.text and "remote" not in r.text,
                f"{gap * 1000:.0f} ms: the answer names no one else ({r.is_error}, {r.text[:200]})",
            )


async def a_held_navigation_leaves_the_snapshot_whole(sc: Scenario, binary: str) -> None:
    """F3: Chromium reports a navigation's URL from its start, also while a
    beforeunload holds it: the snapshot said the new URL beside the old
    page's title, outline and dialog."""
    port = await start_site(sc, site)
    base = f"http://127.0.0.1:{port}"
    async with mcp_server(sc, binary, "s", []) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"{base}/leave.html"})
        # A user gesture, so that Chromium shows the beforeunload.
        await click(c)

        def whole(snap: dict, where: str) -> None:
            tab = next((t for t in snap.get("tabs", []) if t.get("current")), {})
            sc.check(
                snap.get("url") == f"{base}/leave.html" and tab.get("url") == snap.get("url") and snap.get("title") == "leave page",
                f"{where}: the snapshot is the page that is still shown ({snap.get('url')}, tab {tab.get('url')}, {snap.get('title')!r})",
            )

        for target in ("next.html", "plain.html"):
            r = await call(c, "browser_navigate", {"url": f"{base}/{target}"})
            sc.check(r.get("status") == "dialog_pending", f"browser_navigate to {target}: dialog_pending ({r.get('status')})")
            sc.check(r.get("url") in (None, f"{base}/leave.html"), f"its result names no URL the tab is not on ({r.get('url')})")
            whole(await snapshot(c), f"held on the way to {target}")
        d = await wait_pending(sc, c, "beforeunload", None, "the beforeunload")
        await answer(sc, c, d, "dismiss", "staying")
        whole(await snapshot(c), "after staying")
        r = await call(c, "browser_navigate", {"url": f"{base}/plain.html"})
        d = await wait_pending(sc, c, "beforeunload", None, "the beforeunload again")
        await answer(sc, c, d, "accept", "leaving")
        deadline = time.monotonic() + RECONNECT_DEADLINE_S
        snap = await snapshot(c)
        while snap.get("title") != "plain" and time.monotonic() < deadline:
            await anyio.sleep(0.1)
            snap = await snapshot(c)
        sc.check(snap.get("url") == f"{base}/plain.html" and snap.get("title") == "plain", f"after leaving: the new page, whole ({snap.get('url')}, {snap.get('title')!r})")


async def dialog_ids_go_on_across_supervisors(sc: Scenario, binary: str) -> None:
    """A task's dialog ids never name two dialogs: after browser_disconnect
    (and after a supervisor that gave up), the next supervisor of the task
    numbers its dialogs on from the last one's."""
    port = await start_site(sc, site)
    async with mcp_server(sc, binary, "s", []) as srv:
        c = srv.client
        ids = []
        for round_ in range(2):
            await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/ask.html"})
            await trigger(c, "openConfirm")
            d = await wait_pending(sc, c, "confirm", "keep going?", f"round {round_}'s confirm")
            ids.append(d["id"])
            await call(c, "browser_dialog", {"action": "accept", "dialog_id": d["id"]})
            if round_ == 0:
                r = await call(c, "browser_disconnect", {})
                sc.check(r.get("disconnected") is True, f"browser_disconnect ends the supervisor ({r})")
        sc.check(ids[0] != ids[1], f"the second supervisor's first dialog has an id of its own ({ids})")
        nums = [int(i.split("-")[1]) for i in ids]
        sc.check(nums[1] > nums[0], f"numbered on from the first supervisor's ({ids})")


SCENARIOS: dict[str, Callable[[Scenario, str], Awaitable[None]]] = {
    "dialog_closed_during_a_drop_is_not_reloaded": dialog_closed_during_a_drop_is_not_reloaded,
    "tab_gone_during_a_drop_is_no_reason_to_stop": tab_gone_during_a_drop_is_no_reason_to_stop,
    "timed_out_call_is_kept_and_delivered_once": timed_out_call_is_kept_and_delivered_once,
    "another_tabs_dialog_claims_no_call": another_tabs_dialog_claims_no_call,
    "beforeunload_and_an_oopif_alert_are_both_freed": beforeunload_and_an_oopif_alert_are_both_freed,
    "answering_past_the_most_recent_dialog": answering_past_the_most_recent_dialog,
    "a_same_site_popups_dialog_claims_the_openers_navigation": a_same_site_popups_dialog_claims_the_openers_navigation,
    "a_click_that_loaded_nothing_closes_nothing_later": a_click_that_loaded_nothing_closes_nothing_later,
    "an_answer_to_a_dialog_just_closed_says_how_it_closed": an_answer_to_a_dialog_just_closed_says_how_it_closed,
    "navigate_and_answer_at_once": navigate_and_answer_at_once,
    "a_held_navigation_leaves_the_snapshot_whole": a_held_navigation_leaves_the_snapshot_whole,
    "dialog_ids_go_on_across_supervisors": dialog_ids_go_on_across_supervisors,
}
PHASES = [list(SCENARIOS)]


async def main() -> int:
    return await run_phases("core.py", __doc__, SCENARIOS, PHASES)


if __name__ == "__main__":
    exit_with(main)
