"""How many tasks one `cdp-supervisor mcp --http` holds on a Selenium Grid:
a measurement, not a CI test (issue 32's figures).

One HTTP server with `browser.cloud_provider: selenium`; GRID_TASKS MCP
sessions (the SDK's Client, one each) connect at once; each navigates to a
page with an OOPIF (creating its WebDriver session), answers a confirm in
the main frame and an alert in the OOPIF, then holds until every task got
that far. Prints the figures (FIGURE lines): tasks that made it, times,
the server's resident memory, the machine's available memory, and checks
the Grid has no session left once the sessions ended.

  SELENIUM_GRID_URL=http://127.0.0.1:4444 GRID_CAPABILITIES='{…}' GRID_TASKS=16 \\
    crates/cdp-supervisor/tests/mcp_client/run.sh target/release/cdp-supervisor grid_load.py

The Grid needs --max-sessions ≥ GRID_TASKS (with --override-max-sessions true).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

import anyio
from mcp import Client

from common import (
    Fail,
    Scenario,
    call,
    first_fail,
    evaluate,
    http_address,
    log,
    page,
    server_env,
    set_log_name,
    snapshot,
    start_site,
    stop_http_server,
    trigger,
)

set_log_name("grid_load")

GRID = os.environ.get("SELENIUM_GRID_URL", "")
CAPABILITIES = os.environ.get("GRID_CAPABILITIES", "{}")
TASKS = int(os.environ.get("GRID_TASKS", "8"))
DEADLINE_S = 300.0


def grid_sessions() -> list[str]:
    with urllib.request.urlopen(f"{GRID}/status", timeout=10) as r:
        status = json.load(r)
    return [s["session"]["sessionId"] for n in status["value"]["nodes"] for s in n["slots"] if s.get("session")]


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def mem_available_mib() -> float:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 1024
    return 0.0


def site_pages(port: int) -> dict[str, str]:
    return {
        "/": page(
            "load page",
            f'<iframe id="child" src="http://localhost:{port}/child"></iframe>',
            "function mainConfirm() { window.answer = confirm('main confirm'); }",
        ),
        "/child": page("child", "<p>child</p>", "function childAlert() { alert('oopif alert'); }"),
    }


async def pending(c: Client, message: str) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for d in (await snapshot(c)).get("pending_dialogs", []):
            if d.get("message") == message:
                return d
        await anyio.sleep(0.05)
    raise Fail(f"no pending {message!r}")


async def main() -> int:
    binary = os.path.realpath(sys.argv[1])
    sc = Scenario("load")
    async with sc.stack:
        port = await start_site(sc, site_pages)
        env = server_env("grid-load")
        env.update(
            {
                "CDP_SUPERVISOR_BROWSER__CLOUD_PROVIDER": "selenium",
                "CDP_SUPERVISOR_BROWSER__SELENIUM_CAPABILITIES": CAPABILITIES,
                "SELENIUM_GRID_URL": GRID,
            }
        )
        log_path = os.path.join(sc.tmp, "server.stderr")
        errlog = open(log_path, "w")
        proc = subprocess.Popen(
            [binary, "mcp", "--http", "127.0.0.1:0", "--max-sessions", str(TASKS + 8)],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errlog,
        )
        try:
            url = await http_address(proc, log_path, "server")
            idle_rss = rss_mib(proc.pid)
            mem_before = mem_available_mib()
            reached = asyncio.Event()
            done = 0
            finished = 0
            navs: list[float] = []
            dialogs: list[float] = []
            peak = {"rss": 0.0, "sessions": 0, "mem_drop": 0.0}

            def one_more() -> None:
                # Every task ok or failed: the held ones may go.
                nonlocal finished
                finished += 1
                if finished == TASKS:
                    reached.set()

            async def task(i: int) -> None:
                try:
                    await held(i)
                except BaseException:
                    if not reached.is_set():
                        one_more()
                    raise

            async def held(i: int) -> None:
                nonlocal done
                async with Client(url, mode="legacy", read_timeout_seconds=DEADLINE_S) as c:
                    t = time.monotonic()
                    r = await call(c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/"})
                    if r.get("status") != "loaded":
                        raise Fail(f"task {i}: {r}")
                    navs.append(time.monotonic() - t)
                    t = time.monotonic()
                    await trigger(c, "mainConfirm")
                    d = await pending(c, "main confirm")
                    await call(c, "browser_dialog", {"action": "accept", "dialog_id": d["id"]})
                    frames = (await snapshot(c))["frame_tree"]["children"]
                    oopif = next(f for f in frames if f.get("is_oopif"))
                    await trigger(c, "childAlert", oopif["frame_id"])
                    d = await pending(c, "oopif alert")
                    await call(c, "browser_dialog", {"action": "accept", "dialog_id": d["id"]})
                    if await evaluate(c, "window.answer") is not True:
                        raise Fail(f"task {i}: the page did not get true")
                    dialogs.append(time.monotonic() - t)
                    done += 1
                    peak["rss"] = max(peak["rss"], rss_mib(proc.pid))
                    peak["sessions"] = max(peak["sessions"], len(grid_sessions()))
                    peak["mem_drop"] = max(peak["mem_drop"], mem_before - mem_available_mib())
                    one_more()
                    with anyio.fail_after(DEADLINE_S):
                        await reached.wait()

            started = time.monotonic()
            results = await asyncio.gather(*(task(i) for i in range(TASKS)), return_exceptions=True)
            took = time.monotonic() - started
            failed = [r for r in results if isinstance(r, BaseException)]
            for r in failed[:5]:
                f = first_fail(r)
                log(f"a task failed: {type(f).__name__}: {f}")
            log(f"FIGURE {TASKS - len(failed)} of {TASKS} tasks held at once in {took:.1f} s, each with its own Grid session (peak {peak['sessions']} sessions on the Grid)")
            if navs:
                log(f"FIGURE first browser_navigate (creates the WebDriver session): median {statistics.median(navs):.2f} s, max {max(navs):.2f} s")
            if dialogs:
                log(f"FIGURE two dialogs (main frame, OOPIF) fired, seen and answered: median {statistics.median(dialogs) * 1000:.0f} ms, max {max(dialogs) * 1000:.0f} ms")
            log(f"FIGURE server RSS {idle_rss:.1f} MiB idle, {peak['rss']:.1f} MiB with {done} tasks ({(peak['rss'] - idle_rss) / max(done, 1) * 1024:.0f} KiB a task); machine MemAvailable dropped {peak['mem_drop']:.0f} MiB ({peak['mem_drop'] / max(done, 1):.0f} MiB a task: Grid, chromedriver, Chromium)")
            deadline = time.monotonic() + 30
            while grid_sessions() and time.monotonic() < deadline:
                await anyio.sleep(0.2)
            left = grid_sessions()
            log(f"sessions left on the Grid after every MCP session ended: {len(left)}")
            return 1 if failed or left else 0
        finally:
            await stop_http_server(sc, "server", proc)
            errlog.close()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
