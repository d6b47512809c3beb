"""A Selenium Grid 4 session through the real binary (issue 32), checked
with the official MCP Python SDK.

`cdp-supervisor mcp` runs with `browser.cloud_provider: selenium`,
SELENIUM_GRID_URL pointed at a real Grid on loopback (started by
tests/selenium_grid.rs, which passes its URL and the Chromium capabilities
in GRID_CAPABILITIES as JSON):

  stdio_session   the first call creates the WebDriver session; a confirm in
                  the main frame and an alert in an OOPIF are answered;
                  browser_cdp(frame_id) runs in the OOPIF; the session's end
                  (the SDK closes stdin, then kills the server 2 s later)
                  deletes the WebDriver session: the Grid's /status shows none
  http_session    over streamable HTTP: a dialog answered; the HTTP
                  session's end deletes the WebDriver session
  sigterm         the server gets SIGTERM with the session open: it deletes
                  the WebDriver session before it exits

Usage: SELENIUM_GRID_URL=… GRID_CAPABILITIES=… python grid.py PATH/TO/cdp-supervisor [--only NAME[,NAME…]]
Exit 0 when every scenario passes.
"""

from __future__ import annotations

import json
import os
import signal
import time
import urllib.request

import anyio

from common import (
    DIALOG_DEADLINE_S,
    Fail,
    Scenario,
    answer,
    call,
    evaluate,
    exit_with,
    mcp_server,
    page,
    run_phases,
    set_log_name,
    snapshot,
    start_site,
    trigger,
    wait_pending,
)

set_log_name("grid")

GRID = os.environ.get("SELENIUM_GRID_URL", "")
CAPABILITIES = os.environ.get("GRID_CAPABILITIES", "{}")
# The Grid deletes a session (chromedriver quits Chromium) within this.
DELETE_DEADLINE_S = 10.0


def grid_sessions() -> list[str]:
    with urllib.request.urlopen(f"{GRID}/status", timeout=5) as r:
        status = json.load(r)
    return [
        s["session"]["sessionId"]
        for n in status["value"]["nodes"]
        for s in n["slots"]
        if s.get("session")
    ]


def site_pages(port: int) -> dict[str, str]:
    # 127.0.0.1 and localhost are different sites: the iframe is an OOPIF.
    return {
        "/": page(
            "grid page",
            f'<iframe id="child" src="http://localhost:{port}/child"></iframe>',
            "function mainConfirm() { window.answer = confirm('main confirm'); }",
        ),
        "/child": page("child", "<p>child</p>", "function childAlert() { alert('oopif alert'); }"),
    }


def env() -> dict[str, str]:
    return {
        "CDP_SUPERVISOR_BROWSER__CLOUD_PROVIDER": "selenium",
        "CDP_SUPERVISOR_BROWSER__SELENIUM_CAPABILITIES": CAPABILITIES,
        "SELENIUM_GRID_URL": GRID,
    }


async def wait_oopif(sc: Scenario, client) -> dict:
    deadline = time.monotonic() + DIALOG_DEADLINE_S
    while True:
        snap = await snapshot(client)
        for f in snap.get("frame_tree", {}).get("children", []):
            if f.get("is_oopif"):
                return f
        if time.monotonic() > deadline:
            raise Fail(f"no OOPIF in the frame tree: {snap.get('frame_tree')}")
        await anyio.sleep(0.1)


async def wait_no_session(sc: Scenario, before: set[str], what: str) -> None:
    deadline = time.monotonic() + DELETE_DEADLINE_S
    while set(grid_sessions()) & before:
        if time.monotonic() > deadline:
            raise Fail(f"{what}: the Grid still shows {sorted(set(grid_sessions()) & before)}")
        await anyio.sleep(0.1)
    sc.check(True, f"{what}: the WebDriver session is gone from the Grid's /status")


async def stdio_session(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    before = set(grid_sessions())
    async with mcp_server(sc, binary, "grid", [], env=env()) as server:
        c = server.client
        r = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/"})
        sc.check(r.get("status") == "loaded", f"browser_navigate loaded the page on the Grid's browser ({r.get('status')})")
        mine = set(grid_sessions()) - before
        sc.check(len(mine) == 1, f"the first call created one WebDriver session ({mine})")
        await trigger(c, "mainConfirm")
        d = await wait_pending(sc, c, "confirm", "main confirm", "main frame")
        await answer(sc, c, d, "accept", "main frame")
        sc.check(await evaluate(c, "window.answer") is True, "the page got true from confirm()")
        oopif = await wait_oopif(sc, c)
        sc.check(bool(oopif.get("session_id")), f"the OOPIF is routable ({oopif})")
        host = await evaluate(c, "location.host", oopif["frame_id"])
        sc.check(host == f"localhost:{port}", f"browser_cdp(frame_id) ran in the OOPIF ({host})")
        await trigger(c, "childAlert", oopif["frame_id"])
        d = await wait_pending(sc, c, "alert", "oopif alert", "OOPIF")
        sc.check(d["frame_id"] == oopif["frame_id"], "the dialog names the OOPIF's frame")
        await answer(sc, c, d, "accept", "OOPIF")
        # Leaving the block ends the session: stdin closes.
    await wait_no_session(sc, mine, "stdio session end")


async def http_session(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    before = set(grid_sessions())
    async with mcp_server(sc, binary, "grid-http", [], transport="http", env=env()) as server:
        c = server.client
        r = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/"})
        sc.check(r.get("status") == "loaded", f"browser_navigate over HTTP loaded ({r.get('status')})")
        mine = set(grid_sessions()) - before
        sc.check(len(mine) == 1, f"one WebDriver session for the HTTP session ({mine})")
        await trigger(c, "mainConfirm")
        d = await wait_pending(sc, c, "confirm", "main confirm", "HTTP main frame")
        await answer(sc, c, d, "dismiss", "HTTP main frame")
        sc.check(await evaluate(c, "window.answer") is False, "the page got false from confirm()")
    await wait_no_session(sc, mine, "HTTP session end")


async def sigterm(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    before = set(grid_sessions())
    async with mcp_server(sc, binary, "grid-term", [], transport="http", env=env()) as server:
        c = server.client
        r = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/"})
        sc.check(r.get("status") == "loaded", f"browser_navigate loaded ({r.get('status')})")
        mine = set(grid_sessions()) - before
        sc.check(len(mine) == 1, f"one WebDriver session ({mine})")
        os.kill(server.pid, signal.SIGTERM)
        deadline = time.monotonic() + DELETE_DEADLINE_S
        while os.path.exists(f"/proc/{server.pid}") and open(f"/proc/{server.pid}/stat").read().split(") ")[1][0] != "Z":
            if time.monotonic() > deadline:
                raise Fail("the server did not exit on SIGTERM")
            await anyio.sleep(0.05)
        # Checked before anything else can: the server itself deleted it on its way out.
        left = set(grid_sessions()) & mine
        sc.check(not left, f"SIGTERM: the WebDriver session was deleted before the server exited ({left})")


SCENARIOS = {
    "stdio_session": stdio_session,
    "http_session": http_session,
    "sigterm": sigterm,
}


async def main() -> int:
    if not GRID:
        print("grid.py: SELENIUM_GRID_URL is not set (tests/selenium_grid.rs starts a Grid and sets it)")
        return 2
    # One after the other: each tells its WebDriver session by the Grid's list.
    return await run_phases("grid.py", __doc__, SCENARIOS, [[n] for n in SCENARIOS])


if __name__ == "__main__":
    exit_with(main)
