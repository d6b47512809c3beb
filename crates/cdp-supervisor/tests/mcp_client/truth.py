"""What the agent reads is true (issue 7), checked with the official MCP Python SDK.

Drives the real `cdp-supervisor mcp` binary over stdio against real Chromium,
the way an agent sees the product:

  title_after_each_dialog       the snapshot right after each answered dialog
                                shows the title the page set (alert, confirm,
                                prompt accept/dismiss, an OOPIF's confirm, a
                                beforeunload dismissed then accepted)
  first_call_snapshot_sees_blocked_page
                                `mcp --cdp-url` to a tab that already shows an
                                alert: the first call, browser_snapshot, says
                                page_blocked with the page's url
  first_call_sees_an_oopif_blocked_before_attach
                                the same when the alert is in an OOPIF and the
                                top frame is free: page_blocked at once (not
                                after the 15 s attach deadline), the outline
                                reads the top and says the OOPIF cannot be read,
                                browser_dialog and key presses name the remedy,
                                and browser_navigate releases the OOPIF
  target_id_must_name_a_tab   `mcp --target-id` naming an OOPIF's target (not
                                a tab) or no target: the first call is a tool
                                error that says so and lists the tabs; with a
                                tab's id, the snapshot is that tab's
  busy_oopif_at_attach_is_not_reloaded
                                an OOPIF busy in a 4 s script when a server
                                under auto_dismiss attaches looks blocked for a
                                while, but the page is not reloaded: its state
                                is kept and page_blocked clears by itself
  interrupted_evaluate_runs_once
                                an evaluate a dialog blocks is a tool error with
                                a call_id, its result comes once in
                                browser_dialog's completed_calls, and its side
                                effect ran exactly once
  snapshot_during_stalled_rebind
                                browser_snapshot answers within 100 ms while a
                                browser_connect to an endpoint that never
                                answers is in flight; the failed connect says
                                the old browser is still supervised
  connect_to_dead_endpoint_keeps_old
                                a failed browser_connect keeps the old tab
                                supervised: a dialog in it is still caught
  snapshot_before_browser_has_note
                                local launch: the first browser_snapshot is
                                {url:"", title:"", note} and starts no Chromium
  urls_and_tab_titles_after_page_changes
                                after pushState, a fragment, replaceState, back:
                                the next snapshot's url, frame_tree.top.url and
                                tab url follow the page, and browser_tabs list
                                shows the title and URL the page has now
  frame_tree_after_page_changes
                                the frame tree the snapshot shows follows the
                                page: a same-process iframe and an OOPIF that
                                navigate show their new URLs (same ids), an
                                iframe added shows, one removed is gone, in
                                the next snapshot after the page did it

Every scenario has its own server process, Chromium, user-data-dir, ports and
fixture site, and cleans up (Chromium process groups killed, temp dirs
removed) even when it fails. Every wait has a deadline.

Usage: python truth.py PATH/TO/cdp-supervisor [--only NAME[,NAME…]] [--serial]
Exit 0 when every scenario passes. CHROMIUM=path overrides the Chromium found
on PATH (chromium, chromium-browser, google-chrome).
"""

from __future__ import annotations

import os
import re
import signal
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import anyio
from mcp import Client

from common import (
    exit_with,
    run_phases,
    DIALOG_DEADLINE_S,
    NAVIGATE_DEADLINE_S,
    Fail,
    Scenario,
    StallServer,
    ToolResult,
    answer,
    call,
    call_raw,
    click,
    dead_port,
    evaluate,
    is_chromium,
    launch_chromium,
    mcp_server,
    page,
    recent_has,
    set_log_name,
    snapshot,
    start_site,
    trigger,
    wait_pending,
)

set_log_name("truth")

# Seconds (the shared deadlines are in common.py).
CONNECT_DEADLINE_S = 40.0  # a browser_connect to a stalled/dead endpoint fails
READER_BOUND_S = 0.100  # "readers never wait" (issue 7, generous bound): the median sample
READER_MAX_S = 0.750  # …and any one sample (a reader that waits takes seconds)
READER_SAMPLES = 3
INTERRUPT_BOUND_S = 3.0  # an interrupted call returns "promptly" (≤ 1 s after the dialog opened)


# --- fixture site -------------------------------------------------------------

TOP_JS = """
function openAlert() { alert("alert from top"); document.title = "alert:done"; }
function openConfirm() { const r = confirm("confirm from top"); document.title = "confirm:" + r; }
function openPrompt() { const r = prompt("prompt from top", "the default"); document.title = "prompt:" + r; }
window.addEventListener("message", (e) => {
  if (typeof e.data === "string" && e.data.startsWith("oopif-result:")) {
    document.title = "oopif:" + e.data.slice("oopif-result:".length);
  }
});
window.counter = 0;
"""


def site_pages(port: int) -> dict[str, str]:
    """Served on 127.0.0.1:port; reached as http://127.0.0.1:port (site A)
    and http://localhost:port (site B), so an iframe from the other one is an OOPIF."""
    return {
        "/top.html": page(
            "top page",
            "<button onclick=openAlert()>alert</button>"
            "<button onclick=openConfirm()>confirm</button>"
            "<button onclick=openPrompt()>prompt</button>"
            f'<iframe id=oopif src="http://localhost:{port}/frame.html" width=300 height=150></iframe>',
            TOP_JS,
        ),
        "/frame.html": page(
            "oopif frame",
            "<p>frame on the other site</p>",
            'function openConfirm() { const r = confirm("confirm from oopif");'
            ' parent.postMessage("oopif-result:" + r, "*"); }'
            ' function openAlert() { alert("alert from oopif"); }'
            ' function busy(ms) { const t = Date.now(); while (Date.now() < t + ms) {} }',
        ),
        "/leave.html": page(
            "leave page",
            "<p>a page that asks before it is left</p>",
            'window.addEventListener("beforeunload", (e) => {'
            ' document.title = "leaving"; e.preventDefault(); e.returnValue = ""; });',
        ),
        "/after.html": page("after page", "<p>left the other page</p>"),
        "/counter.html": page(
            "counter page",
            "<p>counter</p>",
            'window.counter = 0; function openAlert() { alert("counter alert"); }',
        ),
        "/blocked.html": page(
            "blocked page",
            "<p>this page will show an alert</p>",
            'function openAlert() { alert("blocking alert"); }',
        ),
        "/frames.html": page(
            "frames page",
            '<iframe id=same src="/child.html" width=200 height=100></iframe>'
            f'<iframe id=oopif src="http://localhost:{port}/frame.html" width=200 height=100></iframe>',
        ),
        "/child.html": page("child page", "<p>a same-site child</p>"),
        "/child2.html": page("child page 2", "<p>the same child, navigated</p>"),
        "/frame2.html": page("oopif frame 2", "<p>the OOPIF, navigated</p>"),
        "/old.html": page(
            "old page",
            "<p>the page of the old supervisor</p>",
            'function openConfirm() { const r = confirm("confirm in the old tab"); document.title = "confirm:" + r; }',
        ),
    }


async def title_in_next_snapshot(sc: Scenario, client: Client, expected: str, what: str) -> dict:
    """Once the page has set its title (the caller has seen it in the page),
    the very next browser_snapshot shows `expected` (see in_next_reply)."""
    return await in_next_reply(
        sc, lambda: snapshot(client), lambda s: s.get("title"), lambda t: t == expected,
        f"{what}: the title is {expected!r}",
    )


def interrupted_text_ok(text: str) -> bool:
    t = text.lower()
    return re.search(r"\b(not|never|don't|do not)\b[^.]*\bresen[dt]", t) is not None


def completed_entry(result: dict, call_id: str) -> dict | None:
    for c in result.get("completed_calls") or []:
        if c.get("call_id") == call_id:
            return c
    return None


# --- 1. title after each dialog -----------------------------------------------------


async def title_after_each_dialog(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    chromium = await launch_chromium(sc, "1")
    top = f"http://127.0.0.1:{port}/top.html"
    async with mcp_server(sc, binary, "s1", ["--cdp-url", chromium.http_url]) as srv:
        c = srv.client
        nav = await call(c, "browser_navigate", {"url": top})
        sc.check(nav.get("status") == "loaded", f"navigate to top.html: {nav.get('status')}")
        snap = await snapshot(c)
        keys = {"url", "title", "pending_dialogs", "recent_dialogs", "frame_tree", "console_errors",
                "page_blocked", "connection", "completed_calls"}
        sc.expect(keys <= snap.keys(), f"the snapshot has {sorted(keys)} (missing {sorted(keys - snap.keys())})")
        sc.expect(snap.get("title") == "top page" and snap.get("url") == top, f"snapshot shows top.html ({snap.get('url')}, {snap.get('title')!r})")

        # Page dialogs: each sets a new title once answered.
        cases = [
            ("alert", "openAlert", "alert from top", "accept", None, "alert:done"),
            ("confirm accept", "openConfirm", "confirm from top", "accept", None, "confirm:true"),
            ("confirm dismiss", "openConfirm", "confirm from top", "dismiss", None, "confirm:false"),
            ("prompt accept", "openPrompt", "prompt from top", "accept", "Ada", "prompt:Ada"),
            ("prompt dismiss", "openPrompt", "prompt from top", "dismiss", None, "prompt:null"),
        ]
        for what, fn, message, action, text, expected in cases:
            dtype = what.split()[0]
            await trigger(c, fn)
            d = await wait_pending(sc, c, dtype, message, what)
            sc.expect(d.get("url") == top, f"{what}: the dialog's url is the page's ({d.get('url')})")
            if dtype == "prompt":
                sc.expect(d.get("default_prompt") == "the default", f"{what}: default_prompt {d.get('default_prompt')!r}")
            ans = await answer(sc, c, d, action, what, prompt_text=text)
            if text is not None:
                sc.expect(ans["answered"].get("user_input") == text, f"{what}: user_input {ans['answered'].get('user_input')!r}")
            sc.expect(ans.get("completed_calls") == [], f"{what}: no completed_calls to deliver ({ans.get('completed_calls')})")
            # The very next call after browser_dialog: the snapshot shows the
            # title the page's resumed script set (browser_dialog lets that
            # script finish before it returns). Then the page itself agrees.
            snap = await title_in_next_snapshot(sc, c, expected, what)
            real = await evaluate(c, "document.title")
            sc.check(real == expected, f"{what}: the page's document.title is {expected!r} ({real!r})")
            sc.expect(not snap.get("pending_dialogs"), f"{what}: nothing pending after the answer")
            r = recent_has(snap, d["id"])
            sc.expect(
                r is not None and r.get("closed_by") == "agent" and isinstance(r.get("closed_at"), (int, float)),
                f"{what}: recent_dialogs has {d['id']} closed_by agent with closed_at ({r})",
            )

        # The OOPIF's confirm: answered on the top page, result posted to the top.
        frame_url = f"http://localhost:{port}/frame.html"
        deadline = time.monotonic() + DIALOG_DEADLINE_S
        while True:
            snap = await snapshot(c)
            oopifs = [
                f for f in snap.get("frame_tree", {}).get("children", [])
                if f.get("is_oopif") and f.get("url", "") == frame_url
            ]
            if oopifs:
                break
            if time.monotonic() > deadline:
                raise Fail(f"no OOPIF {frame_url} in frame_tree {snap.get('frame_tree')}")
            await anyio.sleep(0.1)
        frame_id = oopifs[0]["frame_id"]
        sc.check(True, f"the OOPIF {frame_id} is listed")
        what = "oopif confirm"
        await trigger(c, "openConfirm", frame_id=frame_id)
        d = await wait_pending(sc, c, "confirm", "confirm from oopif", what)
        sc.expect(d.get("frame_id") == frame_id and d.get("url") == frame_url,
                  f"{what}: the dialog names the OOPIF ({d.get('frame_id')}, {d.get('url')})")
        await answer(sc, c, d, "accept", what)
        # The title comes to the top through postMessage (another process): wait
        # in the page until it is set, then the very next snapshot must show it.
        real = await evaluate(
            c,
            "new Promise((done) => { const t0 = Date.now(); (function poll() {"
            " if (document.title.startsWith('oopif:') || Date.now() - t0 > 5000) done(document.title);"
            " else setTimeout(poll, 10); })(); })",
            await_promise=True,
        )
        sc.check(real == "oopif:true", f"{what}: the top page's document.title is 'oopif:true' ({real!r})")
        await title_in_next_snapshot(sc, c, "oopif:true", what)

        # beforeunload: needs a real user gesture on the page being left.
        leave = f"http://127.0.0.1:{port}/leave.html"
        after = f"http://127.0.0.1:{port}/after.html"
        nav = await call(c, "browser_navigate", {"url": leave})
        sc.check(nav.get("status") == "loaded", f"navigate to leave.html: {nav.get('status')}")
        what = "beforeunload dismiss"
        await click(c)
        with anyio.fail_after(NAVIGATE_DEADLINE_S):
            nav = await call(c, "browser_navigate", {"url": after})
        sc.check(
            nav.get("status") == "dialog_pending",
            f"{what}: navigating away returns dialog_pending (status {nav.get('status')!r};"
            " 'loaded' means Chromium showed no beforeunload after the Input.dispatchMouseEvent click)",
        )
        d = await wait_pending(sc, c, "beforeunload", None, what)
        await answer(sc, c, d, "dismiss", what)
        # The handler set the title before the dialog showed: no race here.
        snap = await title_in_next_snapshot(sc, c, "leaving", what)
        sc.expect(snap.get("url") == leave, f"{what}: the url is unchanged ({snap.get('url')})")
        real = await evaluate(c, "[document.title, location.href]")
        sc.check(real == ["leaving", leave], f"{what}: the page stayed, its title is 'leaving' ({real})")

        what = "beforeunload accept"
        await click(c)
        with anyio.fail_after(NAVIGATE_DEADLINE_S):
            nav = await call(c, "browser_navigate", {"url": after})
        sc.check(nav.get("status") == "dialog_pending", f"{what}: navigating away again returns dialog_pending ({nav.get('status')!r})")
        d = await wait_pending(sc, c, "beforeunload", None, what)
        await answer(sc, c, d, "accept", what)
        deadline = time.monotonic() + 5.0
        while True:
            snap = await snapshot(c)
            if snap.get("title") == "after page" and snap.get("url") == after:
                break
            if time.monotonic() > deadline:
                sc.expect(False, f"{what}: within 5 s the snapshot shows after.html (url {snap.get('url')}, title {snap.get('title')!r})")
                break
            await anyio.sleep(0.1)
        if snap.get("title") == "after page":
            sc.log(f"ok: {what}: the pending navigation completed; the snapshot shows after.html")
        real = await evaluate(c, "[document.title, location.href]")
        sc.check(real == ["after page", after], f"{what}: the page is after.html ({real})")


# --- 2. the first call of an attaching server sees the blocked page -------------------


async def first_call_snapshot_sees_blocked_page(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    chromium = await launch_chromium(sc, "2")
    blocked = f"http://127.0.0.1:{port}/blocked.html"
    async with mcp_server(sc, binary, "s1", ["--cdp-url", chromium.http_url]) as one:
        nav = await call(one.client, "browser_navigate", {"url": blocked})
        sc.check(nav.get("status") == "loaded", f"server #1 navigates to blocked.html ({nav.get('status')})")
        await trigger(one.client, "openAlert")
        await wait_pending(sc, one.client, "alert", "blocking alert", "server #1")
        async with mcp_server(sc, binary, "s2", ["--cdp-url", chromium.http_url]) as two:
            r = await call_raw(two.client, "browser_snapshot")
            sc.log(f"server #2's first browser_snapshot took {r.seconds:.2f} s")
            sc.check(not r.is_error and r.data is not None, f"server #2's first call, browser_snapshot, succeeds ({r.text[:300]})")
            snap = r.data
            sc.expect(snap.get("page_blocked") is True, f"server #2's first snapshot says page_blocked: true ({snap.get('page_blocked')!r}; {r.text[:300]})")
            sc.expect(snap.get("url") == blocked, f"server #2's first snapshot has the page's url ({snap.get('url')!r})")
            sc.expect(snap.get("title") == "blocked page", f"server #2's first snapshot has the page's title ({snap.get('title')!r})")
        # Server #1 still has its dialog (server #2's attach did not answer it).
        snap = await snapshot(one.client)
        sc.expect(any(d.get("message") == "blocking alert" for d in snap.get("pending_dialogs", [])),
                  "server #1 still lists its alert as pending")


async def top_and_its_oopif(sc: Scenario, client: Client, top: str) -> str:
    """Navigates to top.html (`top`); the frame id of its one OOPIF."""
    nav = await call(client, "browser_navigate", {"url": top})
    sc.check(nav.get("status") == "loaded", f"server #1 navigates to top.html ({nav.get('status')})")
    snap = await snapshot(client)
    oopifs = [c for c in snap["frame_tree"]["children"] if c.get("is_oopif")]
    sc.check(len(oopifs) == 1, f"top.html has one OOPIF ({snap['frame_tree']})")
    return oopifs[0]["frame_id"]


async def first_call_sees_an_oopif_blocked_before_attach(sc: Scenario, binary: str) -> None:
    # Found by a helper (stop 26): the page's own session answered, so the
    # attach waited out its 15 s deadline for the OOPIF's, then said
    # page_blocked: false and no dialog; each later snapshot took 5 s.
    port = await start_site(sc, site_pages)
    chromium = await launch_chromium(sc, "2o")
    top = f"http://127.0.0.1:{port}/top.html"
    async with mcp_server(sc, binary, "s1", ["--cdp-url", chromium.http_url]) as one:
        fid = await top_and_its_oopif(sc, one.client, top)
        await trigger(one.client, "openAlert", fid)
        await wait_pending(sc, one.client, "alert", "alert from oopif", "server #1")
        async with mcp_server(sc, binary, "s2", ["--cdp-url", chromium.http_url]) as two:
            c = two.client
            r = await call_raw(c, "browser_snapshot")
            sc.log(f"server #2's first browser_snapshot took {r.seconds:.2f} s")
            sc.check(not r.is_error and r.data is not None, f"server #2's first browser_snapshot succeeds ({r.text[:300]})")
            snap = r.data
            sc.expect(r.seconds < 10, f"it came well before the 15 s attach deadline ({r.seconds:.2f} s)")
            sc.expect(snap.get("page_blocked") is True, f"it says page_blocked: true ({snap.get('page_blocked')!r})")
            sc.expect(snap.get("url") == top and snap.get("title") == "top page",
                      f"it has the page's url and title ({snap.get('url')!r}, {snap.get('title')!r})")
            sc.expect(any(k.get("frame_id") == fid and k.get("is_oopif") for k in snap["frame_tree"]["children"]),
                      f"its frame_tree lists the blocked OOPIF {fid} ({snap['frame_tree']})")
            outline = snap.get("page") or ""
            sc.expect('button "alert"' in outline, f"the outline reads the free top frame ({outline[:400]!r})")
            sc.expect(fid in outline and "opened before the supervisor attached" in outline and "browser_navigate" in outline,
                      f"the outline says the OOPIF cannot be read and what releases it ({outline[:600]!r})")
            r = await call_raw(c, "browser_snapshot")
            sc.log(f"server #2's second browser_snapshot took {r.seconds:.2f} s")
            sc.expect(not r.is_error and r.seconds < 4.5,
                      f"the next snapshot does not wait on the blocked renderer ({r.seconds:.2f} s)")
            r = await call_raw(c, "browser_dialog", {"action": "accept"})
            sc.expect(r.is_error and "page_blocked" in r.text and "browser_navigate" in r.text,
                      f"browser_dialog says only navigating releases the page ({r.text[:300]})")
            r = await call_raw(c, "browser_press_key", {"key": "a"})
            sc.expect(r.is_error and "browser_navigate" in r.text and "browser_dialog" not in r.text,
                      f"a key press is refused naming browser_navigate, not browser_dialog ({r.text[:300]})")
            r = await call_raw(c, "browser_cdp", {"method": "Runtime.evaluate", "frame_id": fid,
                                                  "params": {"expression": "1 + 1", "returnByValue": True}})
            data = r.data or {}
            call_id = data.get("call_id")
            sc.expect(r.is_error and data.get("interrupted_by_dialog") is True and interrupted_text_ok(r.text),
                      f"an evaluate in the blocked OOPIF is interrupted, not to be resent ({r.text[:300]})")
            sc.expect("browser_navigate" in r.text and "browser_dialog cannot answer" in r.text,
                      f"its text names browser_navigate as the remedy ({r.text[:500]})")
            nav = await call(c, "browser_navigate", {"url": top})
            sc.check(nav.get("status") == "loaded", f"server #2's browser_navigate releases the page ({nav})")
            snap = await snapshot(c)
            sc.expect(snap.get("page_blocked") is False, f"then page_blocked is false ({snap.get('page_blocked')!r})")
            done = [e for e in snap.get("completed_calls") or [] if e.get("call_id") == call_id]
            sc.expect(call_id is not None and len(done) == 1,
                      f"the snapshot's completed_calls lists the interrupted call once ({snap.get('completed_calls')})")
            oopifs = [k for k in snap["frame_tree"]["children"] if k.get("is_oopif")]
            sc.check(len(oopifs) == 1, f"the reloaded page has its OOPIF ({snap['frame_tree']})")
            title = await evaluate(c, "document.title", oopifs[0]["frame_id"])
            sc.expect(title == "oopif frame", f"the OOPIF answers again ({title!r})")
            sc.expect("opened before the supervisor attached" not in (snap.get("page") or ""),
                      "the outline no longer says a frame is blocked")
        # Server #1 saw its alert end with the document (not still pending).
        deadline = time.monotonic() + 10
        while True:
            snap = await snapshot(one.client)
            if not any(d.get("message") == "alert from oopif" for d in snap.get("pending_dialogs", [])):
                break
            if time.monotonic() > deadline:
                sc.expect(False, f"server #1 still lists the OOPIF's alert as pending ({snap.get('pending_dialogs')})")
                break
            await anyio.sleep(0.1)


async def target_id_must_name_a_tab(sc: Scenario, binary: str) -> None:
    # Found by a helper (stop 26): an OOPIF's target id was supervised as a
    # tab; its alert never showed. Pinned through the library before; here
    # as the agent sees it.
    port = await start_site(sc, site_pages)
    chromium = await launch_chromium(sc, "2t")
    top = f"http://127.0.0.1:{port}/top.html"
    async with mcp_server(sc, binary, "s1", ["--cdp-url", chromium.http_url]) as one:
        oopif = await top_and_its_oopif(sc, one.client, top)
        tab = (await snapshot(one.client))["frame_tree"]["top"]["frame_id"]
    for bad, kind in ((oopif, "is \"iframe\", not a tab"), ("NO-SUCH-TARGET", "no")):
        async with mcp_server(sc, binary, "s2", ["--cdp-url", chromium.http_url, "--target-id", bad]) as two:
            r = await call_raw(two.client, "browser_snapshot")
            sc.expect(r.is_error and bad in r.text and tab in r.text and "\n" not in r.text.strip(),
                      f"--target-id {bad[:12]}: the first call is a one-line tool error naming it and listing the tab ({r.text[:400]})")
            if bad == oopif:
                sc.expect('"iframe"' in r.text, f"it says the target is an iframe ({r.text[:300]})")
    async with mcp_server(sc, binary, "s3", ["--cdp-url", chromium.http_url, "--target-id", tab]) as three:
        snap = await snapshot(three.client)
        sc.expect(snap.get("url") == top and snap["frame_tree"]["top"]["frame_id"] == tab,
                  f"--target-id of the tab supervises that tab ({snap.get('url')!r})")


async def busy_oopif_at_attach_is_not_reloaded(sc: Scenario, binary: str) -> None:
    # Found by a helper: a busy OOPIF was taken for a blocked one, and
    # auto_dismiss reloaded the user's page at once (its state lost).
    port = await start_site(sc, site_pages)
    chromium = await launch_chromium(sc, "2b")
    top = f"http://127.0.0.1:{port}/top.html"
    async with mcp_server(sc, binary, "s1", ["--cdp-url", chromium.http_url]) as one:
        fid = await top_and_its_oopif(sc, one.client, top)
        await evaluate(one.client, "window.marker = 'kept'")
        v = await evaluate(one.client, 'setTimeout(() => busy(4000), 0); "scheduled"', fid)
        sc.check(v == "scheduled", f"the OOPIF starts a 4 s script ({v!r})")
        env = {"CDP_SUPERVISOR_BROWSER__DIALOG_POLICY": "auto_dismiss"}
        async with mcp_server(sc, binary, "s2", ["--cdp-url", chromium.http_url], env=env) as two:
            c = two.client
            r = await call_raw(c, "browser_snapshot")
            sc.check(not r.is_error and r.data is not None, f"server #2's first browser_snapshot succeeds ({r.text[:300]})")
            first = r.data
            sc.log(f"server #2's first snapshot ({r.seconds:.2f} s): page_blocked {first.get('page_blocked')}")
            if first.get("page_blocked"):
                sc.expect("unless a long script is running" in (first.get("page") or ""),
                          f"the outline says it may be a script, not only a dialog ({(first.get('page') or '')[:600]!r})")
            deadline = time.monotonic() + 20
            while True:
                snap = await snapshot(c)
                if snap.get("page_blocked") is False:
                    break
                if time.monotonic() > deadline:
                    sc.expect(False, "page_blocked clears once the script ends")
                    break
                await anyio.sleep(0.2)
            marker = await evaluate(c, "window.marker")
            sc.expect(marker == "kept", f"the page was not reloaded: its state is kept ({marker!r})")
            sc.expect(snap.get("page_blocked") is False and not snap.get("pending_dialogs"),
                      f"then nothing is blocked or pending ({snap.get('page_blocked')}, {snap.get('pending_dialogs')})")


# --- 3. an interrupted evaluate runs once and is delivered once ------------------------


async def interrupted_call(sc: Scenario, c: Client, expression: str, what: str, dialog_id: str | None) -> str | None:
    """browser_cdp Runtime.evaluate that a dialog blocks; checks the
    interrupted tool error; returns its call_id (None when it was not one)."""
    args = {
        "method": "Runtime.evaluate",
        "params": {"expression": expression, "returnByValue": True},
        "timeout_s": 10,
    }
    r = await call_raw(c, "browser_cdp", args)
    sc.log(f"{what}: browser_cdp returned after {r.seconds:.2f} s: is_error={r.is_error} {r.text[:300]!r}")
    ok = sc.expect(r.is_error, f"{what}: the blocked browser_cdp is a tool error (isError true)")
    data = r.data or {}
    ok &= sc.expect(data.get("interrupted_by_dialog") is True, f"{what}: structuredContent.interrupted_by_dialog is true ({data})")
    call_id = data.get("call_id")
    ok &= sc.expect(isinstance(call_id, str) and re.fullmatch(r"c-\d+", call_id) is not None, f"{what}: a call_id c-N ({call_id!r})")
    sc.expect(data.get("method") == "Runtime.evaluate", f"{what}: method Runtime.evaluate ({data.get('method')!r})")
    pend = data.get("pending_dialogs") or []
    if dialog_id is not None:
        sc.expect(any(d.get("id") == dialog_id for d in pend), f"{what}: its pending_dialogs name {dialog_id} ({pend})")
    else:
        sc.expect(len(pend) == 1 and pend[0].get("type") == "confirm", f"{what}: its pending_dialogs name the confirm it opened ({pend})")
    sc.expect(interrupted_text_ok(r.text), f"{what}: the text says not to resend it ({r.text!r})")
    sc.expect("queue" in r.text.lower(), f"{what}: the text says it is still queued ({r.text!r})")
    sc.expect(r.seconds < INTERRUPT_BOUND_S, f"{what}: it returned promptly ({r.seconds:.2f} s < {INTERRUPT_BOUND_S} s)")
    return call_id if ok else None


async def interrupted_evaluate_runs_once(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    counter = f"http://127.0.0.1:{port}/counter.html"
    # Local launch: the server starts Chromium on browser_navigate.
    async with mcp_server(sc, binary, "s1", []) as srv:
        c = srv.client
        nav = await call(c, "browser_navigate", {"url": counter})
        sc.check(nav.get("status") == "loaded", f"navigate to counter.html ({nav.get('status')})")
        sc.check(len(srv.chromium_now()) >= 1, f"the server launched Chromium {srv.chromium_now()}")

        # a) The alert already blocks the page when the evaluate is sent.
        what = "blocked evaluate #1"
        await trigger(c, "openAlert")
        d1 = await wait_pending(sc, c, "alert", "counter alert", what)
        cid1 = await interrupted_call(sc, c, "++window.counter", what, d1["id"])
        t = time.monotonic()
        ans = await answer(sc, c, d1, "accept", what)
        sc.log(f"{what}: browser_dialog took {time.monotonic() - t:.2f} s; completed_calls={ans.get('completed_calls')}")
        if cid1:
            e = completed_entry(ans, cid1)
            sc.expect(e is not None, f"{what}: browser_dialog's completed_calls has {cid1} ({ans.get('completed_calls')})")
            if e:
                sc.expect(e.get("method") == "Runtime.evaluate", f"{what}: its method ({e.get('method')!r})")
                value = ((e.get("result") or {}).get("result") or {}).get("value")
                sc.expect(value == 1, f"{what}: its result is the evaluate's real value 1 ({e})")
        n = await evaluate(c, "window.counter")
        sc.check(n == 1, f"{what}: the side effect ran exactly once (window.counter = {n!r})")
        snap = await snapshot(c)
        listed = [x.get("call_id") for x in snap.get("completed_calls") or []]
        if cid1:
            sc.expect(cid1 in listed, f"{what}: the snapshot's completed_calls lists {cid1} ({listed})")

        # b) A second interrupted call: delivered on its own, the first not again.
        what = "blocked evaluate #2"
        await trigger(c, "openAlert")
        d2 = await wait_pending(sc, c, "alert", "counter alert", what)
        cid2 = await interrupted_call(sc, c, "++window.counter", what, d2["id"])
        if cid1 and cid2:
            sc.expect(cid2 != cid1, f"{what}: a new call_id ({cid2} vs {cid1})")
        ans = await answer(sc, c, d2, "accept", what)
        got = [x.get("call_id") for x in ans.get("completed_calls") or []]
        if cid2:
            e = completed_entry(ans, cid2)
            value = (((e or {}).get("result") or {}).get("result") or {}).get("value")
            sc.expect(value == 2, f"{what}: completed_calls has {cid2} with value 2 ({ans.get('completed_calls')})")
        if cid1:
            sc.expect(cid1 not in got, f"{what}: {cid1}, delivered before, is not delivered again ({got})")
        n = await evaluate(c, "window.counter")
        sc.check(n == 2, f"{what}: the side effect ran exactly once (window.counter = {n!r})")

        # c) The dialog opens during the call itself (the call opens it).
        what = "evaluate that opens a confirm"
        cid3 = await interrupted_call(
            sc, c,
            '(() => { const r = confirm("opened by the call"); window.counter += 10; return "confirm:" + r; })()',
            what, None,
        )
        d3 = await wait_pending(sc, c, "confirm", "opened by the call", what)
        ans = await answer(sc, c, d3, "accept", what)
        got = [x.get("call_id") for x in ans.get("completed_calls") or []]
        if cid3:
            e = completed_entry(ans, cid3)
            value = (((e or {}).get("result") or {}).get("result") or {}).get("value")
            sc.expect(value == "confirm:true", f"{what}: completed_calls has {cid3} with 'confirm:true' ({ans.get('completed_calls')})")
        sc.expect(not ({cid1, cid2} - {None}) & set(got), f"{what}: earlier calls are not delivered again ({got})")
        n = await evaluate(c, "window.counter")
        sc.check(n == 12, f"{what}: the side effect ran exactly once (window.counter = {n!r})")

        snap = await snapshot(c)
        listed = [x.get("call_id") for x in snap.get("completed_calls") or []]
        want = [x for x in (cid1, cid2, cid3) if x]
        sc.expect(all(x in listed for x in want) and bool(want), f"the snapshot's completed_calls lists {want} ({listed})")


# --- 4. readers never wait on a stalled rebind ------------------------------------------


@dataclass
class DuringConnect:
    snaps: list[dict]  # the snapshots taken while the connect was in flight
    seconds: list[float]  # how long each took
    connect: ToolResult | None  # None: it did not end within CONNECT_DEADLINE_S
    connect_s: float

    def median_s(self) -> float:
        return sorted(self.seconds)[len(self.seconds) // 2]


async def stalled_connect_and_snapshot(sc: Scenario, c: Client, stall: StallServer, what: str) -> DuringConnect:
    """browser_connect to the stall endpoint and, from ~300 ms into it,
    up to READER_SAMPLES browser_snapshot calls on the same session, 250 ms
    apart, each timed around the call; none is started once the connect has
    ended (it would not measure a reader during a rebind)."""
    out: dict[str, Any] = {"snaps": [], "seconds": []}
    ended = anyio.Event()

    async def connect() -> None:
        t = time.monotonic()
        try:
            with anyio.fail_after(CONNECT_DEADLINE_S):
                out["connect"] = await call_raw(c, "browser_connect", {"cdp_url": f"http://127.0.0.1:{stall.port}"})
        except TimeoutError:
            out["connect"] = None
        out["connect_s"] = time.monotonic() - t
        ended.set()

    async def snaps() -> None:
        await anyio.sleep(0.3)
        for _ in range(READER_SAMPLES):
            if ended.is_set():
                if not out["seconds"]:
                    raise Fail(f"{what}: the connect ended before a snapshot was taken; cannot measure a reader during it")
                break  # (a reader that waited for the rebind ends here)
            t = time.monotonic()
            try:
                r = await call_raw(c, "browser_snapshot")
                snap = r.data if not r.is_error and r.data is not None else {"error": r.text}
            except Exception as e:  # noqa: BLE001 - a timed-out read is a finding, not a crash
                snap = {"error": f"{type(e).__name__}: {e}"}
            out["seconds"].append(time.monotonic() - t)
            out["snaps"].append(snap)
            await anyio.sleep(0.25)

    async with anyio.create_task_group() as tg:
        tg.start_soon(connect)
        tg.start_soon(snaps)
    result = DuringConnect(out["snaps"], out["seconds"], out.get("connect"), out["connect_s"])
    took = ", ".join(f"{1000 * x:.0f}" for x in result.seconds)
    sc.log(f"{what}: snapshots during the connect took [{took}] ms; the connect ended after {result.connect_s:.1f} s")
    return result


def check_readers(sc: Scenario, during: DuringConnect, what: str) -> None:
    """The median sample within READER_BOUND_S (one scheduler hiccup on a
    loaded 2-core machine is tolerated), none near a second: a reader that
    waits for the rebind takes seconds (until the connect gives up)."""
    took = ", ".join(f"{1000 * x:.0f}" for x in during.seconds)
    sc.expect(
        during.median_s() < READER_BOUND_S and max(during.seconds) < READER_MAX_S,
        f"{what}: browser_snapshot during the connect answered in [{took}] ms"
        f" (median < {1000 * READER_BOUND_S:.0f} ms, each < {1000 * READER_MAX_S:.0f} ms)",
    )


async def snapshot_during_stalled_rebind(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    chromium = await launch_chromium(sc, "4")
    old = f"http://127.0.0.1:{port}/old.html"
    stall = StallServer()
    sc.stack.callback(stall.close)

    async def with_old_page() -> None:
        async with mcp_server(sc, binary, "s1", ["--cdp-url", chromium.http_url]) as srv:
            c = srv.client
            nav = await call(c, "browser_navigate", {"url": old})
            sc.check(nav.get("status") == "loaded", f"navigate to old.html ({nav.get('status')})")
            await snapshot(c)  # warm: the first snapshot after a load may read more
            what = "rebind from a supervised page"
            during = await stalled_connect_and_snapshot(sc, c, stall, what)
            check_readers(sc, during, what)
            shown = [(x.get("url"), x.get("title"), x.get("connection")) for x in during.snaps]
            sc.expect(all(x == (old, "old page", "connected") for x in shown),
                      f"{what}: each snapshot shows the old page, connection 'connected' ({shown})")
            conn, conn_s = during.connect, during.connect_s
            sc.check(conn is not None, f"{what}: the connect to a stalled endpoint ended within {CONNECT_DEADLINE_S:.0f} s ({conn_s:.1f} s)")
            assert conn is not None
            sc.expect(conn.is_error, f"{what}: the connect to a stalled endpoint is a tool error ({conn.text[:300]!r})")
            sc.expect("still supervised" in conn.text.lower(), f"{what}: its text says the old browser is still supervised ({conn.text!r})")
            after = await snapshot(c)
            sc.expect(after.get("url") == old and after.get("connection") == "connected",
                      f"{what}: afterwards the old page is still supervised ({after.get('url')!r}, {after.get('connection')!r})")

    async def without_old_page() -> None:
        # Local mode, no browser yet: the snapshot during the connect says "connecting".
        async with mcp_server(sc, binary, "s2", []) as srv:
            await snapshot(srv.client)  # warm: the server's first request
            what = "connect with no browser before"
            during = await stalled_connect_and_snapshot(sc, srv.client, stall, what)
            check_readers(sc, during, what)
            sc.expect(all(x.get("connection") == "connecting" for x in during.snaps),
                      f"{what}: each snapshot says connection 'connecting' ({during.snaps})")
            conn, conn_s = during.connect, during.connect_s
            sc.check(conn is not None, f"{what}: the connect ended within {CONNECT_DEADLINE_S:.0f} s ({conn_s:.1f} s)")
            assert conn is not None
            sc.expect(conn.is_error, f"{what}: the connect to a stalled endpoint is a tool error ({conn.text[:300]!r})")
            sc.expect(not srv.chromium_now(), f"{what}: no Chromium was launched ({srv.chromium_now()})")

    # One after the other, so neither half's timing pays for the other's work.
    await with_old_page()
    await without_old_page()


# --- 5. a failed connect keeps the old supervisor -----------------------------------------


async def connect_to_dead_endpoint_keeps_old(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    chromium = await launch_chromium(sc, "5")
    old = f"http://127.0.0.1:{port}/old.html"
    async with mcp_server(sc, binary, "s1", ["--cdp-url", chromium.http_url]) as srv:
        c = srv.client
        nav = await call(c, "browser_navigate", {"url": old})
        sc.check(nav.get("status") == "loaded", f"navigate to old.html ({nav.get('status')})")
        dead = dead_port()
        with anyio.fail_after(CONNECT_DEADLINE_S):
            r = await call_raw(c, "browser_connect", {"cdp_url": f"http://127.0.0.1:{dead}"})
        sc.log(f"browser_connect to dead port {dead} took {r.seconds:.2f} s: {r.text[:300]!r}")
        sc.check(r.is_error, "browser_connect to a dead port is a tool error")
        sc.expect("still supervised" in r.text.lower(), f"its text says the old browser is still supervised ({r.text!r})")
        snap = await snapshot(c)
        sc.expect(snap.get("url") == old and snap.get("connection") == "connected",
                  f"the snapshot still shows the old page, connected ({snap.get('url')!r}, {snap.get('connection')!r})")
        await trigger(c, "openConfirm")
        d = await wait_pending(sc, c, "confirm", "confirm in the old tab", "a confirm in the old tab")
        sc.check(d.get("url") == old, f"the confirm in the old tab is caught ({d['id']}, {d.get('url')})")
        await answer(sc, c, d, "dismiss", "the old tab's confirm")
        real = await evaluate(c, "document.title")
        sc.check(real == "confirm:false", f"the old tab's page got the answer (document.title {real!r})")


# --- 6. a snapshot before any browser ------------------------------------------------------


def child_entry(snap: dict, frame_id: str) -> dict | None:
    for f in snap.get("frame_tree", {}).get("children", []):
        if f.get("frame_id") == frame_id:
            return f
    return None


def frames_html_urls(port: int) -> tuple[str, str, str]:
    """frames.html's URL and its two origins: its own (`a`, where its
    same-process child is) and the cross-site one of its OOPIF (`b`)."""
    a = f"http://127.0.0.1:{port}"
    return f"{a}/frames.html", a, f"http://localhost:{port}"


def frames_html_children(kids: list[dict], a: str, b: str) -> tuple[list[dict], list[dict]]:
    """frames.html's entries among `kids`: its same-process child (on `a`)
    and its OOPIF (on `b`)."""
    same = [f for f in kids if f.get("url") == f"{a}/child.html" and not f.get("is_oopif")]
    oopif = [f for f in kids if f.get("url") == f"{b}/frame.html" and f.get("is_oopif")]
    return same, oopif


async def in_next_reply(
    sc: Scenario, ask: Callable[[], Awaitable[dict]], read: Callable[[dict], Any],
    ok: Callable[[Any], bool], what: str,
) -> dict:
    """The page has done it (the caller saw it in the page): the very next
    reply of `ask` (a tool call) has a `read` that passes `ok` (no polling).
    When it does not, polls 3 s more only to tell a late reply from a stale
    one. Returns the first reply."""
    first = await ask()
    seen = read(first)
    if sc.expect(ok(seen), f"{what}: the next reply shows it ({seen})"):
        return first
    t = time.monotonic()
    while time.monotonic() - t < 3.0:
        seen = read(await ask())
        if ok(seen):
            sc.log(f"  ({what}: shown only {1000 * (time.monotonic() - t):.0f} ms later)")
            return first
        await anyio.sleep(0.1)
    sc.log(f"  ({what}: still {seen} 3 s later: stale)")
    return first


async def child_in_next_snapshot(
    sc: Scenario, c: Client, frame_id: str, ok: Callable[[dict | None], bool], what: str
) -> dict:
    """The very next browser_snapshot's entry for frame_id passes `ok` (see
    in_next_reply)."""
    return await in_next_reply(sc, lambda: snapshot(c), lambda s: child_entry(s, frame_id), ok, what)


async def urls_and_tab_titles_after_page_changes(sc: Scenario, binary: str) -> None:
    """A page that changes its URL without a new document (history API, a
    fragment, back) and its title: the very next browser_snapshot shows the
    URL in `url`, in `frame_tree.top` and in its `tabs` entry, and the very
    next browser_tabs list shows the tab's title and URL as the page has
    them (issue 11's shared strings; browser_tabs read the last heard title)."""
    port = await start_site(sc, site_pages)
    chromium = await launch_chromium(sc, "1")
    a = f"http://127.0.0.1:{port}"
    async with mcp_server(sc, binary, "s1", ["--cdp-url", chromium.http_url]) as srv:
        c = srv.client
        nav = await call(c, "browser_navigate", {"url": f"{a}/after.html"})
        sc.check(nav.get("status") == "loaded", f"navigate to after.html: {nav.get('status')}")

        def shown(snap: dict) -> tuple:
            current = [t for t in snap.get("tabs", []) if t.get("current")]
            return (
                snap.get("url"),
                (snap.get("frame_tree", {}).get("top") or {}).get("url"),
                current[0].get("url") if current else None,
                snap.get("title"),
            )

        def listed(tabs: dict) -> tuple:
            current = [t for t in tabs.get("tabs", []) if t.get("current")]
            return (current[0].get("url"), current[0].get("title")) if current else None

        steps = [
            ("pushState", "history.pushState(null, '', '/pushed'); document.title = 'pushed';"),
            ("a fragment", "location.hash = 'part'; document.title = 'part';"),
            ("replaceState", "history.replaceState(null, '', '/replaced?q=1'); document.title = 'replaced';"),
            ("back", "await new Promise((done) => { addEventListener('popstate', done, {once: true}); history.back(); });"
                     " document.title = 'back';"),
            ("the same title again, back to the first URL",
             "history.pushState(null, '', '/after.html'); document.title = 'back';"),
            ("back to the page's own title", "document.title = 'after page';"),
        ]
        for what, script in steps:
            real = await evaluate(c, f"(async () => {{ {script} return [location.href, document.title]; }})()",
                                  await_promise=True)
            href, title = real
            await in_next_reply(sc, lambda: snapshot(c), shown, lambda v: v == (href, href, href, title),
                                f"{what}: url, frame_tree.top.url, the tab's url and title {href} {title!r}")
            await in_next_reply(sc, lambda: call(c, "browser_tabs", {"action": "list"}), listed,
                                lambda v: v == (href, title), f"{what}: browser_tabs list shows {href} {title!r}")


async def frame_tree_after_page_changes(sc: Scenario, binary: str) -> None:
    """The snapshot keeps its frame tree between changes and patches a
    frame that only changed its URL (issue 11): what the agent reads must
    still follow the page, change after change."""
    port = await start_site(sc, site_pages)
    chromium = await launch_chromium(sc, "1")
    top, a, b = frames_html_urls(port)
    async with mcp_server(sc, binary, "s1", ["--cdp-url", chromium.http_url]) as srv:
        c = srv.client
        nav = await call(c, "browser_navigate", {"url": top})
        sc.check(nav.get("status") == "loaded", f"navigate to frames.html: {nav.get('status')}")
        deadline = time.monotonic() + NAVIGATE_DEADLINE_S
        while True:
            snap = await snapshot(c)
            kids = snap.get("frame_tree", {}).get("children", [])
            same, oopif = frames_html_children(kids, a, b)
            if same and oopif:
                break
            if time.monotonic() > deadline:
                raise Fail(f"frames.html: no same-process child and OOPIF in {snap.get('frame_tree')}")
            await anyio.sleep(0.1)
        same_id, oopif_id = same[0]["frame_id"], oopif[0]["frame_id"]
        top_id = snap["frame_tree"]["top"]["frame_id"]
        sc.check(len(kids) == 2, f"two children listed ({kids})")
        sc.expect(
            set(same[0]) == {"frame_id", "url", "origin", "parent_frame_id", "is_oopif"}
            and set(oopif[0]) == {"frame_id", "url", "origin", "parent_frame_id", "is_oopif", "session_id"},
            f"children entries keep their fields ({same[0]}, {oopif[0]})",
        )
        # Asked twice with nothing changed: the same tree.
        again = await snapshot(c)
        sc.expect(again["frame_tree"] == snap["frame_tree"], "an unchanged page shows the same frame tree")

        # 1. The same-process iframe navigates: same frame, new URL.
        real = await evaluate(
            c,
            "new Promise((done) => { const f = document.getElementById('same');"
            " f.onload = () => done(f.contentWindow.location.href); f.src = '/child2.html'; })",
            await_promise=True,
        )
        sc.check(real == f"{a}/child2.html", f"the page's iframe is at child2.html ({real!r})")
        snap = await child_in_next_snapshot(
            sc, c, same_id,
            lambda e: e is not None and e.get("url") == f"{a}/child2.html" and e.get("origin") == a
            and e.get("parent_frame_id") == top_id and e.get("is_oopif") is False,
            "same-process iframe navigated",
        )
        o = child_entry(snap, oopif_id)
        sc.expect(o is not None and o.get("url") == f"{b}/frame.html" and o.get("session_id"),
                  f"the OOPIF is unchanged beside it ({o})")

        # 2. The OOPIF navigates within its site: same frame, new URL. Its
        # events come on its own session, so this one is polled.
        await evaluate(c, f"setTimeout(() => {{ location.href = '{b}/frame2.html'; }}, 0); 1", frame_id=oopif_id)
        deadline = time.monotonic() + NAVIGATE_DEADLINE_S
        while True:
            snap = await snapshot(c)
            o = child_entry(snap, oopif_id)
            if o is not None and o.get("url") == f"{b}/frame2.html":
                break
            if time.monotonic() > deadline:
                raise Fail(f"the OOPIF's new URL never showed: {snap.get('frame_tree')}")
            await anyio.sleep(0.1)
        sc.expect(o.get("is_oopif") is True and bool(o.get("session_id")) and o.get("origin") == b,
                  f"the navigated OOPIF is still routable ({o})")
        where = await evaluate(c, "location.href", frame_id=oopif_id)
        sc.expect(where == f"{b}/frame2.html", f"browser_cdp(frame_id) reaches the navigated OOPIF ({where!r})")

        # 3. An iframe is added: shown in the next snapshot.
        await evaluate(
            c,
            "new Promise((done) => { const f = document.createElement('iframe'); f.id = 'added';"
            " f.onload = () => done(1); f.src = '/child.html'; document.body.appendChild(f); })",
            await_promise=True,
        )
        snap = await snapshot(c)
        added = [
            f for f in snap["frame_tree"]["children"]
            if f["frame_id"] not in (same_id, oopif_id)
        ]
        sc.expect(len(added) == 1 and added[0].get("url") == f"{a}/child.html",
                  f"the added iframe shows in the next snapshot ({snap['frame_tree']['children']})")

        # 4. The first iframe is removed: gone from the next snapshot.
        await evaluate(c, "document.getElementById('same').remove(); 1")
        snap = await child_in_next_snapshot(sc, c, same_id, lambda e: e is None, "removed iframe")
        kids = snap["frame_tree"]["children"]
        sc.expect(
            child_entry(snap, oopif_id) is not None and len(kids) == 2,
            f"the others stay ({kids})",
        )


async def frame_tree_after_back_forward_cache(sc: Scenario, binary: str) -> None:
    """The agent leaves a page with an iframe and an OOPIF, then goes back.
    Chromium may restore the page from its back-forward cache, and then
    announces none of its frames again: the next snapshot must still list
    both, and the OOPIF must still be reachable (the review of stop 20 saw
    them lost)."""
    port = await start_site(sc, site_pages)
    chromium = await launch_chromium(sc, "1")
    top, a, b = frames_html_urls(port)
    async with mcp_server(sc, binary, "s1", ["--cdp-url", chromium.http_url]) as srv:
        c = srv.client

        async def both_frames(what: str) -> tuple[dict, dict]:
            """Once the page itself has both frames loaded, the snapshot lists
            both (polled 5 s only to tell a race with the OOPIF's own tree
            reply from a lost frame: no tighter clock, which a loaded machine
            would miss)."""
            deadline = time.monotonic() + NAVIGATE_DEADLINE_S
            while await evaluate(c, "[...document.querySelectorAll('iframe')].filter((f) => {"
                                 " try { return f.contentWindow.location.href !== 'about:blank'; }"
                                 " catch (e) { return true; } }).length") != 2:
                if time.monotonic() > deadline:
                    raise Fail(f"{what}: the page never had its two iframes")
                await anyio.sleep(0.1)
            t = time.monotonic()
            while True:
                kids = (await snapshot(c)).get("frame_tree", {}).get("children", [])
                same, oopif = frames_html_children(kids, a, b)
                if same and oopif and len(kids) == 2:
                    break
                if time.monotonic() - t > 5:
                    raise Fail(f"{what}: the snapshot does not list the page's two frames: {kids}")
                await anyio.sleep(0.1)
            sc.log(f"{what}: both frames listed {time.monotonic() - t:.2f} s after the page had them")
            sc.expect(bool(oopif[0].get("session_id")), f"{what}: the OOPIF has its session ({oopif[0]})")
            where = await evaluate(c, "location.href", frame_id=oopif[0]["frame_id"])
            sc.expect(where == f"{b}/frame.html", f"{what}: browser_cdp(frame_id) reaches the OOPIF ({where!r})")
            return same[0], oopif[0]

        nav = await call(c, "browser_navigate", {"url": top})
        sc.check(nav.get("status") == "loaded", f"navigate to frames.html: {nav.get('status')}")
        await both_frames("frames.html loaded")
        await evaluate(c, "window.before_leaving = 1; 1")
        nav = await call(c, "browser_navigate", {"url": f"{a}/after.html"})
        sc.check(nav.get("status") == "loaded", f"navigate to after.html: {nav.get('status')}")
        kids = (await snapshot(c)).get("frame_tree", {}).get("children", [])
        sc.expect(kids == [], f"after.html has no frames ({kids})")
        await evaluate(c, "setTimeout(() => history.back(), 0); 1")
        deadline = time.monotonic() + NAVIGATE_DEADLINE_S
        while (await evaluate(c, "location.href")) != top:
            if time.monotonic() > deadline:
                raise Fail("history.back() never reached frames.html")
            await anyio.sleep(0.1)
        restored = await evaluate(c, "window.before_leaving === 1")
        sc.log(f"back on frames.html: {'restored from the back-forward cache' if restored else 'loaded again'}")
        await both_frames("back on frames.html")


async def snapshot_before_browser_has_note(sc: Scenario, binary: str) -> None:
    async with mcp_server(sc, binary, "s1", []) as srv:
        snap = await snapshot(srv.client)
        sc.expect(snap.get("url") == "" and snap.get("title") == "", f"url and title are empty ({snap})")
        note = snap.get("note")
        sc.expect(isinstance(note, str) and "browser_navigate" in note, f"a note names browser_navigate ({note!r})")
        await anyio.sleep(0.5)
        srv.sample()
        started = [p for p, (name, _) in srv.ever_seen().items() if is_chromium(name)]
        sc.check(not started, f"browser_snapshot started no Chromium ({started})")


async def browser_gone_is_said_not_hidden(sc: Scenario, binary: str) -> None:
    """The browser the session drives dies under it (here: its Chromium is
    killed). The next snapshot says connection "closed" and keeps the last
    state (the pending dialog), with a note naming browser_navigate; acting
    calls fail saying so, and none of them silently starts a new browser;
    browser_navigate does start one."""
    port = await start_site(sc, site_pages)
    top = f"http://127.0.0.1:{port}/top.html"
    async with mcp_server(sc, binary, "s1", []) as srv:
        c = srv.client
        nav = await call(c, "browser_navigate", {"url": top})
        sc.check(nav.get("status") == "loaded", f"navigate to top.html ({nav.get('status')})")
        await trigger(c, "openConfirm")
        d = await wait_pending(sc, c, "confirm", "confirm from top", "before the crash")
        first = srv.chromium_now()
        sc.check(len(first) >= 1, f"the server launched Chromium {first}")
        for pid in first:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 15
        while True:
            snap = await snapshot(c)
            if snap.get("connection") == "closed":
                break
            sc.check(time.monotonic() < deadline, f"the snapshot says connection closed within 15 s ({snap.get('connection')!r})")
            await anyio.sleep(0.1)
        note = snap.get("note") or ""
        sc.expect("browser_navigate" in note, f"the note names browser_navigate ({note!r})")
        sc.expect([p.get("id") for p in snap.get("pending_dialogs", [])] == [d["id"]],
                  f"the last state is kept: {d['id']} pending ({snap.get('pending_dialogs')})")
        for name, args in [("browser_cdp", {"method": "Runtime.evaluate", "params": {"expression": "1"}}),
                           ("browser_dialog", {"action": "accept"}),
                           ("browser_wait", {"event": "any", "timeout_s": 1})]:
            r = await call_raw(c, name, args)
            sc.expect(r.is_error and "browser_navigate" in r.text, f"{name} fails naming browser_navigate ({r.text[:160]!r})")
        await anyio.sleep(0.3)
        sc.expect(not srv.chromium_now(), f"no call started a new Chromium ({srv.chromium_now()})")
        nav = await call(c, "browser_navigate", {"url": top})
        sc.check(nav.get("status") == "loaded", f"browser_navigate starts a browser again ({nav.get('status')})")
        snap = await snapshot(c)
        sc.expect(snap.get("connection") == "connected" and snap.get("title") == "top page",
                  f"the new browser's snapshot ({snap.get('connection')}, {snap.get('title')!r})")


# --- main -------------------------------------------------------------------------


SCENARIOS: dict[str, Callable[[Scenario, str], Awaitable[None]]] = {
    "title_after_each_dialog": title_after_each_dialog,
    "first_call_snapshot_sees_blocked_page": first_call_snapshot_sees_blocked_page,
    "first_call_sees_an_oopif_blocked_before_attach": first_call_sees_an_oopif_blocked_before_attach,
    "busy_oopif_at_attach_is_not_reloaded": busy_oopif_at_attach_is_not_reloaded,
    "target_id_must_name_a_tab": target_id_must_name_a_tab,
    "interrupted_evaluate_runs_once": interrupted_evaluate_runs_once,
    "snapshot_during_stalled_rebind": snapshot_during_stalled_rebind,
    "connect_to_dead_endpoint_keeps_old": connect_to_dead_endpoint_keeps_old,
    "snapshot_before_browser_has_note": snapshot_before_browser_has_note,
    "browser_gone_is_said_not_hidden": browser_gone_is_said_not_hidden,
    "frame_tree_after_page_changes": frame_tree_after_page_changes,
    "frame_tree_after_back_forward_cache": frame_tree_after_back_forward_cache,
    "urls_and_tab_titles_after_page_changes": urls_and_tab_titles_after_page_changes,
}
# Run together within a phase; phases one after the other. The timing checks
# (100 ms readers, the title right after an answer) run with little else on
# the CPU: the stalled rebind alone.
PHASES = [
    ["snapshot_before_browser_has_note", "first_call_snapshot_sees_blocked_page", "connect_to_dead_endpoint_keeps_old",
     "frame_tree_after_page_changes", "first_call_sees_an_oopif_blocked_before_attach",
     "busy_oopif_at_attach_is_not_reloaded", "target_id_must_name_a_tab"],
    ["title_after_each_dialog", "interrupted_evaluate_runs_once", "browser_gone_is_said_not_hidden",
     "frame_tree_after_back_forward_cache", "urls_and_tab_titles_after_page_changes"],
    ["snapshot_during_stalled_rebind"],
]


async def main() -> int:
    return await run_phases("truth.py", __doc__, SCENARIOS, PHASES)


if __name__ == "__main__":
    exit_with(main)
