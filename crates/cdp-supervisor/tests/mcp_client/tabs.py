"""Every tab the agent opens is supervised (issue 9), checked with the official MCP Python SDK.

Drives the real `cdp-supervisor mcp` binary over stdio; the server launches
its own headless Chromium (with --disable-popup-blocking, as DESIGN says) on
the first browser_navigate:

  popup_confirm_caught      a click opens a popup whose first inline script
                            calls confirm(): the dialog is pending with the
                            popup's target_id while the opener stays current,
                            the popup shows in tabs with opener_target_id, the
                            answer reaches the popup (its title), and the
                            popup's OOPIF alert is caught and answered too
  popups_timed              50 popups opened one after another, each with a
                            confirm() in its first script and closing itself:
                            every dialog caught; prints the median and p99 from
                            window.open to the dialog being pending
  target_blank_link         a link with target=_blank clicked: browser_wait
                            (tab_opened) fires, the tab is listed with its opener
  tabs_new_select_close     browser_tabs new / select / close; close runs the
                            page's beforeunload: dismissed keeps the tab,
                            accepted closes it; the previous tab becomes current
  current_tab_closes_itself the current (selected) popup calls window.close():
                            its opener becomes current; closing the last tab
                            opens a blank one
  popup_storm_capped        one click opens 50 popups: 20 tabs supervised
                            (max_tabs), tabs_truncated, the page still answers,
                            and every popup (supervised or not) was resumed
  crashed_tab               Page.crash: crashed:true at once, the snapshot's
                            outline says so (issue 44), a call on the tab
                            fails at once naming browser_navigate, which reloads it
  busy_page                 a page whose script never yields: navigating
                            away (same site or another) is a load_timeout
                            whose note says so and what to do, not an
                            error; browser_tabs close closes it anyway, and
                            the fresh tab navigates
  file_chooser              a click on a file input (multiple) is a pending
                            file_chooser (selectMultiple); accepted with two
                            files, the page's change event reads their names;
                            dismissed, the input is unchanged and no change
                            fires; a missing path is an error naming it

Every scenario has its own server, Chromium, user-data-dir and fixture site,
and cleans up whatever happens. Every wait has a deadline.

Usage: python tabs.py PATH/TO/cdp-supervisor [--only NAME[,NAME…]] [--serial]
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

import anyio
from mcp import Client

from common import (
    exit_with,
    run_phases,
    DIALOG_DEADLINE_S,
    Fail,
    Scenario,
    call,
    call_raw,
    click,
    evaluate,
    mcp_server,
    page,
    set_log_name,
    snapshot,
    start_site,
    wait_pending,
)

set_log_name("tabs")

POPUPS_TIMED = 50
STORM = 50
MAX_TABS_DEFAULT = 20

BIG_BUTTON = 'style="position:absolute;left:0;top:0;width:300px;height:200px"'


def site_pages(port: int) -> dict[str, str]:
    """Site A is http://127.0.0.1:port, site B http://localhost:port."""
    b = f"http://localhost:{port}"
    return {
        "/opener.html": page(
            "opener",
            f"<button id=open {BIG_BUTTON} onclick=\"window.opened = (window.opened || 0) + 1; window.open('/pay.html')\">pay</button>",
            "window.openTimes = {};"
            "function openNth(n) { window.openTimes[n] = Date.now(); window.open('/paynth.html?n=' + n); }",
        ),
        # The OOPIF comes after the answer: Chromium itself closes a dialog
        # shown while an OOPIF of its page commits (result false, about 1 run
        # in 10 under load; seen as title "paid:false").
        "/pay.html": page(
            "pay",
            "",
            'document.title = "paid:" + confirm("Pay 12 EUR?");'
            'const f = document.createElement("iframe"); f.id = "oopif";'
            f'f.src = "{b}/frame.html"; document.body.appendChild(f);',
        ),
        "/paynth.html": page(
            "paynth",
            "",
            'const n = new URLSearchParams(location.search).get("n");'
            'const r = confirm("pay " + n); window.close();',
        ),
        "/frame.html": page(
            "oopif frame",
            "<p>the payment provider</p>",
            'function openAlert() { alert("alert in the popup oopif"); parent.postMessage("alerted", "*"); }',
        ),
        "/link.html": page(
            "link page",
            f'<a href="/target.html" target=_blank {BIG_BUTTON}>open</a>',
        ),
        "/target.html": page("the blank target", "<p>opened by a link</p>"),
        "/leave.html": page(
            "leave page",
            "<p>asks before it is left</p>",
            'window.addEventListener("beforeunload", (e) => { e.preventDefault(); e.returnValue = ""; });',
        ),
        "/storm.html": page(
            "storm",
            f"<button {BIG_BUTTON} onclick=\"for (let i = 0; i < {STORM}; i++) window.open('/loaded.html?i=' + i)\">storm</button>",
            "window.loaded = 0;",
        ),
        "/loaded.html": page("loaded", "", "window.opener.loaded++;"),
        "/plain.html": page("plain", "<p>plain</p>"),
        "/busy.html": page("busy", "<p>busy</p>"),
        "/upload.html": page(
            "upload",
            f"<input type=file multiple id=f {BIG_BUTTON}>",
            "window.changes = 0;"
            'document.getElementById("f").addEventListener("change", (e) => {'
            ' window.changes++; document.title = [...e.target.files].map((f) => f.name).join(","); });',
        ),
    }


async def tabs_of(c: Client) -> list[dict]:
    return (await call(c, "browser_tabs", {"action": "list"}))["tabs"]


def current_of(tabs: list[dict]) -> dict | None:
    cur = [t for t in tabs if t.get("current")]
    return cur[0] if len(cur) == 1 else None


async def eval_in_tab(c: Client, target_id: str, expression: str) -> Any:
    r = await call(
        c,
        "browser_cdp",
        {"method": "Runtime.evaluate", "params": {"expression": expression, "returnByValue": True}, "target_id": target_id},
    )
    return r["result"]["result"].get("value")


async def wait_tabs(sc: Scenario, c: Client, what: str, pred, deadline_s: float = DIALOG_DEADLINE_S) -> list[dict]:
    deadline = time.monotonic() + deadline_s
    while True:
        tabs = await tabs_of(c)
        if pred(tabs):
            return tabs
        if time.monotonic() > deadline:
            raise Fail(f"{what}: not within {deadline_s:.0f} s; tabs={tabs}")
        await anyio.sleep(0.1)


async def wait_title(sc: Scenario, c: Client, target_id: str, want: str, what: str) -> None:
    deadline = time.monotonic() + DIALOG_DEADLINE_S
    got = None
    while time.monotonic() < deadline:
        got = await eval_in_tab(c, target_id, "document.title")
        if got == want:
            sc.log(f"ok: {what}: the page's title is {want!r}")
            return
        await anyio.sleep(0.1)
    raise Fail(f"{what}: the page's title is {got!r}, not {want!r}")


# --- scenarios -----------------------------------------------------------------


async def popup_confirm_caught(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    async with mcp_server(sc, binary, "p", []) as srv:
        c = srv.client
        nav = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/opener.html"})
        sc.check(nav["status"] == "loaded", f"navigate to the opener: {nav['status']}")
        opener = current_of(await tabs_of(c))
        sc.check(opener is not None, "one current tab before the click")
        await click(c, 40, 40)
        try:
            d = await wait_pending(sc, c, "confirm", "Pay 12 EUR?", "the popup's first-script confirm")
        except Fail as e:
            # Seen once under CI load (not reproduced in 20 runs): say whether
            # the popup exists (a dialog missed) or not (the click opened nothing).
            snap = await snapshot(c)
            opened = await evaluate(c, "String(window.opened || 0)")
            raise Fail(f"{e}; tabs={snap.get('tabs')}; page_blocked={snap.get('page_blocked')}; opener saw {opened} opens") from e
        popup_id = d.get("target_id")
        sc.check(bool(popup_id) and popup_id != opener["target_id"], f"the dialog carries the popup's target_id ({popup_id})")
        snap = await snapshot(c)
        sc.expect(snap["url"].endswith("/opener.html"), f"the opener stays current: snapshot url {snap['url']}")
        popup = [t for t in snap.get("tabs", []) if t["target_id"] == popup_id]
        sc.check(len(popup) == 1, f"the popup is in tabs ({snap.get('tabs')})")
        sc.expect(popup[0].get("opener_target_id") == opener["target_id"], f"its opener_target_id is the opener ({popup[0]})")
        sc.expect(popup[0]["current"] is False and popup[0]["pending_dialogs"] == 1, f"not current, one pending ({popup[0]})")
        ans = await call(c, "browser_dialog", {"action": "accept"})
        sc.check(ans["answered"]["id"] == d["id"] and ans["answered"]["closed_by"] == "agent", f"answered {ans['answered']}")
        await wait_title(sc, c, popup_id, "paid:true", "the popup received the answer")
        # The popup's OOPIF: its alert is caught too, and answered on the popup's session.
        frames = None
        kind = None
        deadline = time.monotonic() + DIALOG_DEADLINE_S
        while time.monotonic() < deadline:
            await call(c, "browser_tabs", {"action": "select", "target_id": popup_id})
            snap = await snapshot(c)
            frames = [f for f in snap["frame_tree"]["children"] if f.get("is_oopif")]
            # The OOPIF is listed from its attach, before its document has
            # loaded; its alert can only be opened once openAlert exists.
            if frames:
                kind = await evaluate(c, "typeof openAlert", frames[0]["frame_id"])
                if kind == "function":
                    break
            await anyio.sleep(0.1)
        sc.check(bool(frames), f"the selected popup's frame_tree has its OOPIF ({snap['frame_tree']})")
        sc.check(kind == "function", f"the popup's OOPIF loaded its document (typeof openAlert: {kind})")
        await call(c, "browser_tabs", {"action": "select", "target_id": opener["target_id"]})
        await call(
            c,
            "browser_cdp",
            {
                "method": "Runtime.evaluate",
                "params": {"expression": "setTimeout(openAlert, 0); 1", "returnByValue": True},
                "frame_id": frames[0]["frame_id"],
            },
        )
        a = await wait_pending(sc, c, "alert", "alert in the popup oopif", "the popup's OOPIF alert")
        sc.expect(a.get("target_id") == popup_id, f"the OOPIF alert carries the popup's target_id ({a.get('target_id')})")
        ans = await call(c, "browser_dialog", {"action": "accept", "dialog_id": a["id"]})
        sc.check(ans["answered"]["closed_by"] == "agent", "the OOPIF alert answered by the agent")


async def popups_timed(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    async with mcp_server(sc, binary, "t", []) as srv:
        c = srv.client
        nav = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/opener.html"})
        sc.check(nav["status"] == "loaded", "navigate to the opener")
        opener_id = current_of(await tabs_of(c))["target_id"]
        latencies = []
        for n in range(POPUPS_TIMED):
            await evaluate(c, f"setTimeout(() => openNth({n}), 0); 1")
            d = await wait_pending(sc, c, "confirm", f"pay {n}", f"popup {n}") if n < 3 else await quiet_pending(c, f"pay {n}")
            await call(c, "browser_dialog", {"action": "accept", "dialog_id": d["id"]})
            opened_ms = await eval_in_tab(c, opener_id, f"window.openTimes[{n}]")
            latencies.append(d["opened_at"] * 1000 - opened_ms)
            # It closes itself after the answer: tabs must not pile up.
            await wait_tabs(sc, c, f"popup {n} closed", lambda t: len(t) == 1)
        latencies.sort()
        p50 = statistics.median(latencies)
        p99 = latencies[min(len(latencies) - 1, int(round(0.99 * (len(latencies) - 1))))]
        sc.log(f"FIGURE window.open -> popup's first dialog pending: median {p50:.1f} ms, p99 {p99:.1f} ms, max {latencies[-1]:.1f} ms over {len(latencies)} popups")
        sc.check(len(latencies) == POPUPS_TIMED, f"all {POPUPS_TIMED} popups' dialogs caught")


async def quiet_pending(c: Client, message: str) -> dict:
    deadline = time.monotonic() + DIALOG_DEADLINE_S
    while time.monotonic() < deadline:
        for d in (await snapshot(c)).get("pending_dialogs", []):
            if d.get("message") == message:
                return d
        await anyio.sleep(0.02)
    raise Fail(f"no pending dialog {message!r} within {DIALOG_DEADLINE_S:.0f} s")


async def target_blank_link(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    async with mcp_server(sc, binary, "l", []) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/link.html"})
        snap = await snapshot(c)
        opener_id = current_of(snap["tabs"])["target_id"]
        since = snap["event_seq"]
        await click(c, 40, 40)
        w = await call(c, "browser_wait", {"event": "tab_opened", "timeout_s": 10, "since": since})
        sc.check(w["happened"] is True, "browser_wait(tab_opened) fired for the target=_blank link")
        tabs = await wait_tabs(sc, c, "the link's tab loaded", lambda t: any(x["url"].endswith("/target.html") for x in t))
        new = [t for t in tabs if t["url"].endswith("/target.html")][0]
        sc.expect(new.get("opener_target_id") == opener_id, f"the link's tab names its opener ({new})")
        sc.expect(new["current"] is False, "a popup does not become current by itself")
        await wait_title(sc, c, new["target_id"], "the blank target", "browser_cdp(target_id) runs in the new tab")
        # No event tells when a script sets document.title: the next snapshot reads every tab's now.
        await eval_in_tab(c, new["target_id"], 'document.title = "renamed"; 1')
        snap = await snapshot(c)
        entry = [t for t in snap["tabs"] if t["target_id"] == new["target_id"]][0]
        sc.check(entry["title"] == "renamed", f"the next snapshot shows the tab's new title ({entry['title']!r})")


async def tabs_new_select_close(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    async with mcp_server(sc, binary, "n", []) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/plain.html"})
        first = current_of(await tabs_of(c))["target_id"]
        r = await call(c, "browser_tabs", {"action": "new", "url": f"http://127.0.0.1:{port}/leave.html"})
        second = r["current_target_id"]
        sc.check(second and second != first and len(r["tabs"]) == 2, f"new opens a second tab and makes it current ({r})")
        sc.expect(any(t["target_id"] == second for t in r.get("tabs_opened", [])), f"tabs_opened names it ({r.get('tabs_opened')})")
        await wait_title(sc, c, second, "leave page", "the new tab loaded its url")
        snap = await snapshot(c)
        sc.expect(snap["url"].endswith("/leave.html"), f"the snapshot is the current (new) tab's ({snap['url']})")
        await click(c, 40, 40)  # beforeunload needs a user gesture
        r = await call(c, "browser_tabs", {"action": "close", "target_id": second})
        bu = [d for d in r["pending_dialogs"] if d["type"] == "beforeunload"]
        if not bu:
            bu = [await wait_pending(sc, c, "beforeunload", None, "close runs beforeunload")]
        sc.check(bu[0].get("target_id") == second, f"the beforeunload is the closing tab's ({bu[0]})")
        await call(c, "browser_dialog", {"action": "dismiss", "dialog_id": bu[0]["id"]})
        await anyio.sleep(0.3)
        tabs = await tabs_of(c)
        sc.check(any(t["target_id"] == second for t in tabs), "dismissing beforeunload keeps the tab")
        r = await call(c, "browser_tabs", {"action": "close", "target_id": second})
        bu = [d for d in r["pending_dialogs"] if d["type"] == "beforeunload"] or [
            await wait_pending(sc, c, "beforeunload", None, "the second close runs beforeunload again")
        ]
        await call(c, "browser_dialog", {"action": "accept", "dialog_id": bu[0]["id"]})
        tabs = await wait_tabs(sc, c, "accepting beforeunload closes the tab", lambda t: all(x["target_id"] != second for x in t))
        sc.check(current_of(tabs) is not None and current_of(tabs)["target_id"] == first, f"the first tab is current again ({tabs})")
        snap = await snapshot(c)
        sc.expect(snap["url"].endswith("/plain.html"), f"the snapshot follows it ({snap['url']})")
        r = await call_raw(c, "browser_tabs", {"action": "select", "target_id": "NOPE"})
        sc.expect(r.is_error and "browser_tabs list" in r.text, f"an unknown target_id is an error naming browser_tabs list ({r.text})")
        r = await call_raw(c, "browser_tabs", {"action": "open"})
        sc.expect(r.is_error and "list, new, select, close" in r.text, f"a bad action says what is allowed ({r.text})")


async def current_tab_closes_itself(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    async with mcp_server(sc, binary, "c", []) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/link.html"})
        opener_id = current_of(await tabs_of(c))["target_id"]
        await click(c, 40, 40)
        tabs = await wait_tabs(sc, c, "the link's tab opened", lambda t: len(t) == 2)
        popup_id = [t for t in tabs if t["target_id"] != opener_id][0]["target_id"]
        # Its document first: a script run in the initial about:blank dies with it.
        await wait_title(sc, c, popup_id, "the blank target", "the link's tab loaded")
        await call(c, "browser_tabs", {"action": "select", "target_id": popup_id})
        await evaluate(c, "setTimeout(() => window.close(), 0); 1")
        tabs = await wait_tabs(sc, c, "the popup closed itself", lambda t: len(t) == 1)
        sc.check(tabs[0]["target_id"] == opener_id and tabs[0]["current"], f"its opener is current again ({tabs})")
        snap = await snapshot(c)
        sc.expect(snap["url"].endswith("/link.html"), f"the snapshot is the opener's ({snap['url']})")
        # The review: closing the only tab that was ever current, while its
        # popup is open, leaves the popup current (not no tab at all).
        await click(c, 40, 40)
        tabs = await wait_tabs(sc, c, "another popup opened", lambda t: len(t) == 2)
        popup_id = [t for t in tabs if t["target_id"] != opener_id][0]["target_id"]
        await call(c, "browser_tabs", {"action": "close", "target_id": opener_id})
        tabs = await wait_tabs(sc, c, "the opener closed", lambda t: len(t) == 1)
        sc.check(tabs[0]["target_id"] == popup_id and tabs[0]["current"], f"the popup is current ({tabs})")
        nav = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/link.html"})
        sc.check(nav["status"] == "loaded", f"browser_navigate works in it ({nav['status']})")
        await call(c, "browser_tabs", {"action": "close", "target_id": popup_id})
        tabs = await wait_tabs(sc, c, "the last tab closed: a blank one opens", lambda t: len(t) == 1 and t[0]["target_id"] != popup_id)
        sc.check(tabs[0]["current"], f"the blank tab is current ({tabs})")
        nav = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/plain.html"})
        sc.check(nav["status"] == "loaded" and nav["title"] == "plain", f"browser_navigate works in it ({nav})")


async def popup_storm_capped(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    async with mcp_server(sc, binary, "s", []) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/storm.html"})
        await click(c, 40, 40)
        deadline = time.monotonic() + 30
        loaded = 0
        while time.monotonic() < deadline:
            loaded = await evaluate(c, "window.loaded")
            if loaded == STORM:
                break
            await anyio.sleep(0.2)
        sc.check(loaded == STORM, f"all {STORM} popups ran their script (none left paused): {loaded}")
        snap = await snapshot(c)
        sc.check(len(snap["tabs"]) == MAX_TABS_DEFAULT, f"{MAX_TABS_DEFAULT} tabs supervised (got {len(snap['tabs'])})")
        sc.check(snap.get("tabs_truncated") is True, "tabs_truncated is true")
        sc.expect(len(str(snap)) < 200_000, f"the snapshot stays small ({len(str(snap))} chars)")
        r = await call_raw(c, "browser_tabs", {"action": "new"})
        sc.check(r.is_error and "max_tabs" in r.text, f"browser_tabs new past max_tabs is an error naming it ({r.text})")


async def crashed_tab(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    async with mcp_server(sc, binary, "x", []) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/plain.html"})
        tid = current_of(await tabs_of(c))["target_id"]
        # A call in flight when the renderer crashes ends with the crash, not its deadline.
        pending_eval = {}

        async def never_settles() -> None:
            pending_eval["r"] = await call_raw(
                c,
                "browser_cdp",
                {"method": "Runtime.evaluate", "params": {"expression": "new Promise(() => {})", "awaitPromise": True}, "timeout_s": 60},
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(never_settles)
            await anyio.sleep(0.5)
            t = time.monotonic()
            r = await call_raw(c, "browser_cdp", {"method": "Page.crash", "timeout_s": 30})
            sc.check(time.monotonic() - t < 10, f"Page.crash returns with the crash, not its 30 s deadline ({time.monotonic() - t:.1f} s: {r.text[:200]})")
        r = pending_eval["r"]
        sc.check(r.is_error and "crashed" in r.text and r.seconds < 20, f"the call in flight ended with the crash ({r.seconds:.1f} s: {r.text[:200]})")
        tabs = await wait_tabs(sc, c, "the crash is reported", lambda t: any(x["crashed"] for x in t))
        sc.check(tabs[0]["target_id"] == tid, "the crashed tab is the current one")
        # What the model reads says so (one tab: the text shows no tab list).
        r = await call_raw(c, "browser_snapshot", {})
        sc.check("renderer crashed" in r.text and "browser_navigate reloads it" in r.text,
                 f"the snapshot's text says the tab crashed and how to reload it ({r.text[-300:]!r})")
        t = time.monotonic()
        r = await call_raw(c, "browser_cdp", {"method": "Runtime.evaluate", "params": {"expression": "1"}, "timeout_s": 30})
        took = time.monotonic() - t
        sc.check(r.is_error and "browser_navigate" in r.text, f"a call on the crashed tab fails naming browser_navigate ({r.text})")
        # At once, not at its 30 s deadline (a bound far from both: the
        # crash's minidump loads the machine for a moment).
        sc.expect(took < 10, f"…at once ({took:.2f} s)")
        nav = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/plain.html"})
        sc.check(nav["status"] == "loaded", f"browser_navigate reloads it ({nav})")
        tabs = await tabs_of(c)
        sc.check(not tabs[0]["crashed"], f"crashed is false again ({tabs})")
        sc.check(await evaluate(c, "document.title") == "plain", "calls work again")


async def busy_page(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    async with mcp_server(sc, binary, "b", []) as srv:
        c = srv.client
        nav = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/busy.html"})
        sc.check(nav["status"] == "loaded", f"the page loads ({nav})")
        busy_tab = current_of(await tabs_of(c))["target_id"]
        # Then a script that never yields: it runs when this call returns
        # (at its timeout_s, unanswered).
        r = await call_raw(c, "browser_cdp", {"method": "Runtime.evaluate", "params": {"expression": "while (true) {}"}, "timeout_s": 1})
        sc.check(r.is_error, f"the busy loop's evaluate gets no answer ({r.text[:160]!r})")
        for url in (f"http://127.0.0.1:{port}/plain.html", f"http://localhost:{port}/plain.html"):
            r = await call_raw(c, "browser_navigate", {"url": url})
            nav = r.data or {}
            sc.check(not r.is_error and nav.get("status") == "load_timeout",
                     f"navigating away from it ({url}) is a load_timeout, not an error ({r.text[:200]!r})")
            sc.check("busy loop" in (nav.get("note") or "") and "browser_tabs close" in (nav.get("note") or ""),
                     f"its note says the page's script does not yield and what to do ({nav.get('note')!r})")
            sc.expect(r.seconds < 25, f"it says so before the navigation's 30 s deadline ({r.seconds:.1f} s)")
        r = await call_raw(c, "browser_tabs", {"action": "close", "target_id": busy_tab})
        sc.check(not r.is_error, f"browser_tabs close closes the busy tab anyway ({r.text[:200]!r})")
        tabs = await wait_tabs(sc, c, "the busy tab is gone: a blank one opens", lambda t: len(t) == 1 and t[0]["target_id"] != busy_tab)
        nav = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/plain.html"})
        sc.check(nav["status"] == "loaded" and nav["title"] == "plain", f"browser_navigate works in the new tab ({nav})")


async def file_chooser(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    a = os.path.join(sc.tmp, "a.txt")
    b = os.path.join(sc.tmp, "b.txt")
    for p in (a, b):
        with open(p, "w") as f:
            f.write("some bytes\n")
    async with mcp_server(sc, binary, "f", []) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/upload.html"})
        await click(c, 40, 40)
        d = await wait_pending(sc, c, "file_chooser", None, "a click on the file input")
        sc.check(d.get("mode") == "selectMultiple", f"mode is selectMultiple ({d.get('mode')})")
        r = await call_raw(c, "browser_dialog", {"action": "accept", "files": [a, os.path.join(sc.tmp, "missing.txt")]})
        sc.check(r.is_error and "missing.txt" in r.text, f"a missing path is an error naming it ({r.text})")
        r = await call_raw(c, "browser_dialog", {"action": "accept"})
        sc.check(r.is_error and "files" in r.text, f"accepting without files says files are needed ({r.text})")
        ans = await call(c, "browser_dialog", {"action": "accept", "files": [a, b]})
        sc.check(ans["answered"]["type"] == "file_chooser" and ans["answered"]["closed_by"] == "agent", f"answered {ans['answered']}")
        deadline = time.monotonic() + DIALOG_DEADLINE_S
        title = None
        while time.monotonic() < deadline:
            title = await evaluate(c, "document.title")
            if title == "a.txt,b.txt":
                break
            await anyio.sleep(0.1)
        sc.check(title == "a.txt,b.txt", f"the page's change event read both files ({title!r})")
        await click(c, 40, 40)
        d2 = await wait_pending(sc, c, "file_chooser", None, "a second click opens the chooser again")
        ans = await call(c, "browser_dialog", {"action": "dismiss", "dialog_id": d2["id"]})
        sc.check(ans["answered"]["accepted"] is False, f"dismissed ({ans['answered']})")
        await anyio.sleep(0.3)
        changes = await evaluate(c, "window.changes")
        files = await evaluate(c, '[...document.getElementById("f").files].map((f) => f.name).join(",")')
        sc.check(changes == 1 and files == "a.txt,b.txt", f"dismiss leaves the input unchanged, no change event ({changes}, {files!r})")
        snap = await snapshot(c)
        sc.check(not snap["pending_dialogs"], "nothing pending after the answers")
        sc.expect(
            sum(1 for r in snap["recent_dialogs"] if r["type"] == "file_chooser") == 2,
            "both choosers are in recent_dialogs",
        )


SCENARIOS = {
    "popup_confirm_caught": popup_confirm_caught,
    "target_blank_link": target_blank_link,
    "tabs_new_select_close": tabs_new_select_close,
    "current_tab_closes_itself": current_tab_closes_itself,
    "popup_storm_capped": popup_storm_capped,
    "crashed_tab": crashed_tab,
    "file_chooser": file_chooser,
    "busy_page": busy_page,
    "popups_timed": popups_timed,
}
# Two at a time: each runs its own Chromium on a 2-core machine; the timed one alone.
PHASES = [
    ["popup_confirm_caught", "target_blank_link"],
    ["tabs_new_select_close", "current_tab_closes_itself"],
    ["popup_storm_capped", "crashed_tab"],
    ["file_chooser", "busy_page"],
    ["popups_timed"],
]


async def main() -> int:
    return await run_phases("tabs.py", __doc__, SCENARIOS, PHASES)


if __name__ == "__main__":
    exit_with(main)
