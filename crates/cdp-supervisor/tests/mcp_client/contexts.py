"""Many tasks, one browser: a browser context per task (issue 41), checked
with the official MCP Python SDK over streamable HTTP.

Each scenario runs its own `cdp-supervisor mcp --http` server (which, with a
local browser, defaults to `browser.isolation: context`) and opens several MCP
sessions on it at once, each one task:

  two_tasks_isolated        two sessions: one Chromium browser process; a
                            cookie and a localStorage item set by one page are
                            absent from the other task's page on the same
                            origin (what the page itself reads); a dialog in
                            one task is pending there only; a popup stays in
                            its opener's task; one session ending (HTTP
                            DELETE) leaves the other working and its context
                            gone from the browser
  eight_tasks_at_once       eight sessions navigate at once: one browser
                            process, each task reads only its own cookie
  browser_cdp_refused       Browser.close, Target.disposeBrowserContext of
                            another task's context, Target.closeTarget of its
                            tab, Target.createTarget in its context,
                            Target.setDiscoverTargets: refused with an error
                            saying why; nothing reached the other task
  shared_browser_killed     three sessions; the shared browser is SIGKILLed:
                            every task comes back (one new browser process),
                            says so in connection and changes.reconnected, and
                            navigates again, isolated as before
  faults_stay_in_their_task three sessions (max_tabs 3): A's renderer
                            crashes (Page.crash), A opens a storm of 10
                            popups, A downloads a file: B and C keep working,
                            list no tab, download or change of A's, and the
                            file lands in A's download directory only
  oopif_in_a_context        a task's cross-site iframe is an OOPIF it
                            supervises (its confirm pending there, answered,
                            the page got the answer); another task on the
                            same page sees its own OOPIF and no dialog
  cdp_url_browser_shared    browser.isolation: context with --cdp-url: two
                            sessions each in a context of that browser
                            (cookies apart); both ended, the browser (not
                            ours) still runs, with no context of theirs left
  browser_open_isolation    MCP 2026-07-28 over stdio (one task per process
                            by default: browser): browser_open
                            {isolation:"context"} twice gives two tasks in
                            one browser, cookies apart; {isolation:"browser"}
                            a browser of its own; browser_close disposes
                            the context
  isolation_browser_opt_out browser.isolation: browser on the HTTP server
                            gives each session a browser of its own again

Fails — never skips — when Chromium is missing. Every wait has a deadline;
no check depends on how fast the machine is.

Usage: python contexts.py PATH/TO/cdp-supervisor [--only NAME[,NAME…]] [--serial]
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from typing import Any

import anyio
from mcp import Client

from common import (
    CALL_TIMEOUT_S,
    alive,
    launch_chromium,
    DIALOG_DEADLINE_S,
    Fail,
    Scenario,
    call,
    call_raw,
    descendants,
    evaluate,
    exit_with,
    http_address,
    is_chromium,
    kill_tree,
    mcp_server,
    page,
    run_phases,
    scratch_dir,
    server_env,
    snapshot,
    start_site,
    stop_http_server,
    trigger,
    wait_dead,
    wait_pending,
)

RECOVER_DEADLINE_S = 60.0  # every task back after the browser is killed (a relaunch, contexts anew)


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().decode(errors="replace").split("\0")
    except OSError:
        return []


def browser_processes(server_pid: int) -> list[int]:
    """The Chromium browser processes under the server (not its renderers,
    zygotes or utilities, which carry --type=)."""
    found = []
    for p, (name, _) in descendants(server_pid).items():
        args = " ".join(cmdline(p))
        if is_chromium(name) and args and "--type=" not in args:
            found.append(p)
    return found


class Tasks:
    """An HTTP server and its MCP sessions (one task each). Each session's
    Client lives in a task of its own, so that any one can end (its HTTP
    DELETE) while the others go on."""

    def __init__(self, proc: subprocess.Popen, url: str, tg: Any) -> None:
        self.proc = proc
        self.url = url
        self.tg = tg
        self.clients: list[Client] = []
        self.done: list[anyio.Event] = []
        self.ended: list[anyio.Event] = []

    async def open(self, n: int) -> list[Client]:
        for _ in range(n):
            ready, done, ended = anyio.Event(), anyio.Event(), anyio.Event()
            slot: list[Client] = []

            async def hold(slot=slot, ready=ready, done=done, ended=ended) -> None:
                try:
                    async with Client(self.url, read_timeout_seconds=CALL_TIMEOUT_S, cache=None, mode="legacy") as c:
                        slot.append(c)
                        ready.set()
                        await done.wait()
                finally:
                    ready.set()
                    ended.set()

            self.tg.start_soon(hold)
            await ready.wait()
            if not slot:
                raise Fail("an MCP session did not open")
            self.clients.append(slot[0])
            self.done.append(done)
            self.ended.append(ended)
        return self.clients

    async def end(self, i: int) -> None:
        """Ends session i as a client does: HTTP DELETE."""
        self.done[i].set()
        with anyio.fail_after(CALL_TIMEOUT_S):
            await self.ended[i].wait()

    async def end_all(self) -> None:
        for d in self.done:
            d.set()


@contextlib.asynccontextmanager
async def http_tasks(sc: Scenario, binary: str, label: str, n: int, args: list[str] | None = None,
                     env: dict[str, str] | None = None):
    """`cdp-supervisor mcp --http 127.0.0.1:0 ARGS` with n sessions open;
    on the way out the sessions end, the server gets Ctrl-C and whatever it
    started and left is killed."""
    log_path = os.path.join(sc.tmp, f"server-{label}.stderr")
    errlog = open(log_path, "w")
    environ = server_env(f"{sc.name}-{label}")
    environ["TMPDIR"] = scratch_dir(sc, label)
    environ.update(env or {})
    proc = subprocess.Popen(
        [binary, "mcp", "--http", "127.0.0.1:0", *(args or [])], env=environ,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errlog,
    )
    seen: dict[int, tuple[str, int]] = {}
    try:
        url = await http_address(proc, log_path, label)
        async with anyio.create_task_group() as tg:
            tasks = Tasks(proc, url, tg)
            try:
                await tasks.open(n)
                sc.log(f"{label}: server pid {proc.pid} at {url}, {n} sessions")
                yield tasks
            finally:
                await tasks.end_all()
    finally:
        with anyio.CancelScope(shield=True):
            seen.update(descendants(proc.pid))
            await stop_http_server(sc, label, proc)
            if not await wait_dead(seen, 5.0):
                sc.log(f"{label}: killed what the server left: {kill_tree(seen)}")
            errlog.close()


def site_pages(port: int) -> dict[str, str]:
    return {
        "/": page("Home", "<h1>home</h1>", "window.hello = () => alert('hello from ' + location.search);"),
        "/pop.html": page("Popup", "<h1>popup</h1>"),
        "/file.txt": "the file of task A",
        # localhost is another site than 127.0.0.1: an OOPIF.
        "/oopif": page("Outer", f'<iframe src="http://localhost:{port}/inner" width=300 height=100></iframe>'),
        "/inner": page("Inner", "<h2>inner</h2>", "window.ask = () => { window.got = confirm('from the OOPIF'); };"),
    }


async def own_context(c: Client) -> str:
    """The task's browser context, as Chromium reports its tab's."""
    r = await call(c, "browser_cdp", {"method": "Target.getTargetInfo"})
    ctx = r["result"]["targetInfo"].get("browserContextId")
    if not ctx:
        raise Fail(f"Target.getTargetInfo names no browserContextId: {r}")
    return ctx


def user_data_dir(browser_pid: int) -> str:
    """The --user-data-dir on a browser process's command line."""
    udd = next((a.split("=", 1)[1] for a in cmdline(browser_pid) if a.startswith("--user-data-dir=")), None)
    if udd is None:
        raise Fail(f"the browser's command line names no --user-data-dir: {cmdline(browser_pid)}")
    return udd


def shared_port(server_pid: int) -> str:
    """The shared browser's DevTools port, when the user asked for one (its
    DevToolsActivePort file)."""
    browsers = browser_processes(server_pid)
    if len(browsers) != 1:
        raise Fail(f"expected one browser process, found {browsers}")
    with open(os.path.join(user_data_dir(browsers[0]), "DevToolsActivePort")) as f:
        return f.read().split()[0]


def listening_ports(pids: list[int]) -> list[str]:
    """The TCP ports (v4 and v6) the processes `pids` listen on: their
    socket inodes matched against /proc/net/tcp{,6} entries in LISTEN."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if link.startswith("socket:["):
                        inodes.add(link[8:-1])
        except OSError:
            continue
    ports = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                    ports.append(str(int(cols[1].rsplit(":", 1)[1], 16)))
    return ports


def browser_target_ids(server_pid: int) -> set[str]:
    """Every target of the shared browser, as its own DevTools HTTP endpoint
    lists them (`/json/list`, whatever context): not through the product."""
    port = shared_port(server_pid)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
        return {t["id"] for t in json.load(r)}


async def wait_for(sc: Scenario, what: str, probe, deadline_s: float) -> Any:
    deadline = time.monotonic() + deadline_s
    while True:
        v = await probe()
        if v:
            return v
        if time.monotonic() > deadline:
            raise Fail(f"{what}: not within {deadline_s:.0f} s")
        await anyio.sleep(0.2)


# A DevTools port the user asks for (the shared browser has none by
# default): this test reads the browser's own target list through it, not
# through the product.
ASKED_FOR_A_PORT = {"CDP_SUPERVISOR_BROWSER__CHROMIUM_ARGS": '["--remote-debugging-port=0"]'}


async def two_tasks_isolated(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    site = f"http://127.0.0.1:{port}"
    async with http_tasks(sc, binary, "two", 2, env=ASKED_FOR_A_PORT) as t:
        a, b = t.clients
        for i, c in enumerate((a, b)):
            r = await call(c, "browser_navigate", {"url": f"{site}/?task={i}"})
            sc.check(r["status"] == "loaded", f"task {i} navigates ({r['status']})")
        browsers = browser_processes(t.proc.pid)
        sc.check(len(browsers) == 1, f"two tasks, one Chromium browser process ({browsers})")
        ca, cb = await own_context(a), await own_context(b)
        sc.check(ca != cb, f"each task has its own browser context ({ca} / {cb})")

        # Cookies and storage: what the pages themselves read.
        await evaluate(a, "document.cookie = 'who=a; path=/'; localStorage.setItem('who', 'a'); 1")
        sc.check(await evaluate(a, "document.cookie") == "who=a", "task A's page reads its cookie")
        sc.check(await evaluate(b, "document.cookie") == "", "task B's page on the same origin has no cookie")
        sc.check(await evaluate(b, "localStorage.getItem('who')") is None, "nor task A's localStorage item")
        await call(b, "browser_navigate", {"url": f"{site}/?again"})
        sc.check(await evaluate(b, "document.cookie") == "", "B's next document on the origin: still no cookie (none was sent)")
        await evaluate(b, "document.cookie = 'who=b; path=/'; 1")
        sc.check(await evaluate(a, "document.cookie") == "who=a", "B's cookie did not overwrite A's")

        # A dialog in A is A's only.
        await trigger(a, "hello")
        d = await wait_pending(sc, a, "alert", None, "A's alert")
        snap_b = await snapshot(b)
        sc.check(not snap_b.get("pending_dialogs"), f"B sees no pending dialog ({snap_b.get('pending_dialogs')})")
        sc.check(snap_b.get("page_blocked") is not True, "B's page is not blocked")
        r = await call(b, "browser_navigate", {"url": f"{site}/?while-a-blocked"})
        sc.check(r["status"] == "loaded", f"B navigates while A's alert is open ({r['status']})")
        await call(a, "browser_dialog", {"action": "accept", "dialog_id": d["id"]})

        # A popup stays in its opener's task.
        await evaluate(a, f"window.open('{site}/pop.html'); 1")

        async def a_has_popup() -> bool:
            return len((await snapshot(a)).get("tabs", [])) == 2

        await wait_for(sc, "A's popup listed in A's tabs", a_has_popup, DIALOG_DEADLINE_S)
        sc.check(len((await snapshot(b)).get("tabs", [])) == 1, "B's tabs do not list A's popup")

        # A task cannot take the shared browser as a whole through a port
        # the user opened (browser_connect to it attached B to A's tab,
        # its cookies and its script).
        port = shared_port(t.proc.pid)
        tab_a = (await snapshot(a))["tabs"][0]["target_id"]
        tab_b = (await snapshot(b))["tabs"][0]["target_id"]
        for url, target in ((f"http://127.0.0.1:{port}", tab_a), (f"http://localhost:{port}", None),
                            (f"ws://127.0.0.1:{port}/devtools/page/{tab_a}", None)):
            args = {"cdp_url": url} | ({"target_id": target} if target else {})
            r = await call_raw(b, "browser_connect", args)
            sc.check(r.is_error and "shared browser" in r.text, f"browser_connect {url} is refused ({r.text[:160]!r})")
        sc.check((await snapshot(b))["tabs"][0]["target_id"] == tab_b, "B is still on its own tab")

        # A ends (HTTP DELETE): its context goes, B goes on.
        a_tabs = {x["target_id"] for x in (await snapshot(a))["tabs"]}
        sc.check(len(a_tabs) == 2 and a_tabs <= browser_target_ids(t.proc.pid),
                 "A's two tabs are in the browser while A runs")
        listed = (await call(b, "browser_cdp", {"method": "Target.getTargets"}))["result"]["targetInfos"]
        sc.check(listed and all(x.get("browserContextId") == cb for x in listed),
                 f"B's Target.getTargets lists B's targets only ({len(listed)})")
        await t.end(0)

        async def a_context_gone() -> bool:
            return not a_tabs & browser_target_ids(t.proc.pid)

        await wait_for(sc, "A's context (its two tabs) gone from the browser once its session ended", a_context_gone, DIALOG_DEADLINE_S)
        sc.check(await evaluate(b, "document.cookie") == "who=b", "B still works and keeps its cookie")
        r = await call(b, "browser_navigate", {"url": f"{site}/?after"})
        sc.check(r["status"] == "loaded", "B navigates after A ended")
        sc.check(len(browser_processes(t.proc.pid)) == 1, "the shared browser still runs for B")
        await t.end(1)

        async def browser_closed() -> bool:
            return not browser_processes(t.proc.pid)

        await wait_for(sc, "the shared browser closed when the last task ended", browser_closed, 10.0)
        tmp = scratch_dir(sc, "two")  # the server's TMPDIR

        async def profile_removed() -> bool:
            return not [d for d in os.listdir(tmp) if d.startswith("cdp-supervisor-chromium-")]

        await wait_for(sc, "its profile directory removed", profile_removed, 10.0)


async def eight_tasks_at_once(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    site = f"http://127.0.0.1:{port}"
    async with http_tasks(sc, binary, "eight", 8) as t:

        async def one(i: int, c: Client) -> None:
            r = await call(c, "browser_navigate", {"url": f"{site}/?task={i}"})
            if r["status"] != "loaded":
                raise Fail(f"task {i}: navigate {r['status']}")
            await evaluate(c, f"document.cookie = 'who={i}; path=/'; 1")

        async with anyio.create_task_group() as tg:
            for i, c in enumerate(t.clients):
                tg.start_soon(one, i, c)
        browsers = browser_processes(t.proc.pid)
        sc.check(len(browsers) == 1, f"eight tasks, one Chromium browser process ({browsers})")
        for i, c in enumerate(t.clients):
            got = await evaluate(c, "document.cookie")
            sc.check(got == f"who={i}", f"task {i} reads its own cookie only ({got!r})")
        contexts = {await own_context(c) for c in t.clients}
        sc.check(len(contexts) == 8, f"eight contexts ({len(contexts)})")


async def browser_cdp_refused(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    site = f"http://127.0.0.1:{port}"
    async with http_tasks(sc, binary, "cdp", 2) as t:
        a, b = t.clients
        for c in (a, b):
            await call(c, "browser_navigate", {"url": f"{site}/"})
        cb = await own_context(b)
        tab_b = (await snapshot(b))["tabs"][0]["target_id"]
        cases: list[tuple[str, dict]] = [
            ("Browser.close", {}),
            ("Browser.crash", {}),
            ("Target.disposeBrowserContext", {"browserContextId": cb}),
            ("Target.closeTarget", {"targetId": tab_b}),
            ("Target.attachToTarget", {"targetId": tab_b, "flatten": True}),
            ("Target.createTarget", {"url": "about:blank", "browserContextId": cb}),
            ("Target.setDiscoverTargets", {"discover": False}),
            ("Storage.clearCookies", {}),
            ("Target.getTargetInfo", {"targetId": tab_b}),
            ("Browser.setWindowBounds", {"windowId": 1, "bounds": {"windowState": "minimized"}}),
            ("Browser.grantPermissions", {"permissions": ["geolocation"], "browserContextId": cb}),
            ("Browser.setPermission", {"permission": {"name": "notifications"}, "setting": "granted"}),
            ("Browser.resetPermissions", {}),
            ("Browser.crashGpuProcess", {}),
        ]
        await evaluate(b, "document.cookie = 'keep=b; path=/'; 1")
        for method, params in cases:
            r = await call_raw(a, "browser_cdp", {"method": method, "params": params})
            sc.check(r.is_error and "refused (nothing was sent)" in r.text and "browserContextId is" in r.text,
                     f"{method} is refused with why ({r.text[:160]!r})")
        # What stays allowed: a tab in its own context, its own cookies.
        r = await call(a, "browser_cdp", {"method": "Target.createTarget", "params": {"url": "about:blank"}})
        new_tab = r["result"]["targetId"]
        infos = (await call(a, "browser_cdp", {"method": "Target.getTargets"}))["result"]["targetInfos"]
        ctx_of = {i["targetId"]: i.get("browserContextId") for i in infos}
        sc.check(ctx_of.get(new_tab) == await own_context(a),
                 "Target.createTarget without browserContextId opens the tab in the task's own context")
        await call(a, "browser_cdp", {"method": "Network.clearBrowserCookies"})
        sc.check(await evaluate(b, "document.cookie") == "keep=b", "nothing reached B: its cookie is there")
        r = await call(b, "browser_navigate", {"url": f"{site}/?still"})
        sc.check(r["status"] == "loaded", "B still navigates")
        sc.check(len(browser_processes(t.proc.pid)) == 1, "the shared browser still runs")
        # No other process can take the shared browser: it listens on no
        # port (CDP goes over its pipe), and no URL a task can give names it.
        browser = browser_processes(t.proc.pid)[0]
        args = cmdline(browser)
        sc.check("--remote-debugging-pipe" in args and not any(a.startswith("--remote-debugging-port") for a in args),
                 f"the shared browser talks CDP over its pipe ({[a for a in args if 'debugging' in a]})")
        sc.check(not os.path.exists(os.path.join(user_data_dir(browser), "DevToolsActivePort")),
                 "the shared browser wrote no DevToolsActivePort")
        chromium = [p for p, (name, _) in descendants(t.proc.pid).items() if is_chromium(name)]
        listening = listening_ports(chromium)
        sc.check(not listening, f"no process of the shared browser listens on TCP ({listening})")
        for url in ("pipe://0", "pipe:///", "file:///proc/self/fd/3"):
            r = await call_raw(b, "browser_connect", {"cdp_url": url})
            sc.check(r.is_error and "scheme" in r.text, f"browser_connect {url} is refused ({r.text[:160]!r})")
        snap_b = await snapshot(b)
        sc.check(snap_b.get("url", "").startswith(f"{site}/") and snap_b["tabs"][0]["target_id"] == tab_b,
                 f"B is still on its own tab ({snap_b.get('url')})")


async def shared_browser_killed(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    site = f"http://127.0.0.1:{port}"
    async with http_tasks(sc, binary, "kill", 3) as t:
        for i, c in enumerate(t.clients):
            await call(c, "browser_navigate", {"url": f"{site}/?task={i}"})
            await evaluate(c, f"document.cookie = 'who={i}; path=/'; 1")
            await snapshot(c)  # what each session has seen: changes start here
        before = browser_processes(t.proc.pid)
        sc.check(len(before) == 1, f"one browser process ({before})")
        os.kill(before[0], signal.SIGKILL)
        sc.log(f"killed the shared browser {before[0]}")

        for i, c in enumerate(t.clients):
            changes: dict = {}

            async def back(c: Client = c, changes: dict = changes) -> bool:
                r = await call_raw(c, "browser_snapshot")
                if r.is_error or r.data is None:
                    return False
                changes.update(r.data.get("changes") or {})
                return r.data.get("connection") == "connected" and bool(changes.get("reconnected"))

            await wait_for(sc, f"task {i} reconnects and says so", back, RECOVER_DEADLINE_S)
            sc.check(changes.get("reconnected", 0) >= 1, f"task {i}: changes.reconnected ({changes})")
        after = browser_processes(t.proc.pid)
        sc.check(len(after) == 1 and after != before, f"one new browser process, launched once for all ({before} -> {after})")
        contexts = set()
        for i, c in enumerate(t.clients):
            r = await call(c, "browser_navigate", {"url": f"{site}/?again={i}"})
            sc.check(r["status"] == "loaded", f"task {i} navigates in the new browser")
            sc.check(await evaluate(c, "document.cookie") == "", f"task {i}: a new context, its old cookie went with the browser")
            await evaluate(c, f"document.cookie = 'who={i}; path=/'; 1")
            contexts.add(await own_context(c))
        sc.check(len(contexts) == 3, "three contexts again")
        for i, c in enumerate(t.clients):
            sc.check(await evaluate(c, "document.cookie") == f"who={i}", f"task {i} isolated again")


async def faults_stay_in_their_task(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    site = f"http://127.0.0.1:{port}"
    async with http_tasks(sc, binary, "faults", 3, env={"CDP_SUPERVISOR_BROWSER__MAX_TABS": "3"}) as t:
        a, b, c = t.clients
        for i, x in enumerate(t.clients):
            await call(x, "browser_navigate", {"url": f"{site}/?task={i}"})
        for x in (b, c):
            await snapshot(x)  # what B and C have seen: their next changes start here

        # A downloads a file.
        await evaluate(a, "const l = document.createElement('a'); l.href = '/file.txt'; l.download = 'a-file.txt';"
                          " document.body.appendChild(l); l.click(); 1")

        async def a_downloaded() -> dict | None:
            for d in (await snapshot(a)).get("downloads") or []:
                if d.get("state") == "completed" and d.get("path"):
                    return d
            return None

        d = await wait_for(sc, "A's download completes", a_downloaded, DIALOG_DEADLINE_S)
        with open(d["path"]) as f:
            sc.check(f.read() == "the file of task A", f"A's file is in A's download directory ({d['path']})")

        # A's popup storm, past its max_tabs.
        await evaluate(a, f"for (let i = 0; i < 10; i++) window.open('{site}/pop.html?i=' + i); 1")

        async def a_truncated() -> bool:
            return bool((await snapshot(a)).get("tabs_truncated"))

        await wait_for(sc, "A's popups past max_tabs: tabs_truncated", a_truncated, DIALOG_DEADLINE_S)

        # A's renderer crashes.
        await call_raw(a, "browser_cdp", {"method": "Page.crash", "timeout_s": 10})

        async def a_crashed() -> bool:
            return any(x.get("crashed") for x in (await snapshot(a)).get("tabs", []))

        await wait_for(sc, "A's crash is reported in A's tabs", a_crashed, DIALOG_DEADLINE_S)

        for name, x in (("B", b), ("C", c)):
            r = await call_raw(x, "browser_snapshot")
            sc.check(not r.is_error and r.data is not None, f"{name} reads its snapshot")
            snap = r.data or {}
            sc.check(len(snap.get("tabs", [])) == 1 and not snap["tabs"][0].get("crashed"),
                     f"{name} has its one tab, not crashed ({snap.get('tabs')})")
            sc.check(not snap.get("tabs_truncated"), f"{name}'s tabs are not truncated")
            sc.check(not snap.get("downloads"), f"{name} lists no download ({snap.get('downloads')})")
            changes = snap.get("changes") or {}
            sc.check(not changes.get("tabs_opened") and not changes.get("downloads") and not changes.get("reconnected"),
                     f"{name}'s changes show nothing of A's ({changes})")
            r = await call(x, "browser_navigate", {"url": f"{site}/?{name}-after"})
            sc.check(r["status"] == "loaded", f"{name} navigates after A's faults")
            sc.check(await evaluate(x, "1 + 1") == 2, f"{name}'s page runs scripts")
        sc.check(len(browser_processes(t.proc.pid)) == 1, "the shared browser still runs, once")


async def oopif_in_a_context(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    site = f"http://127.0.0.1:{port}"
    async with http_tasks(sc, binary, "oopif", 2) as t:
        a, b = t.clients
        for c in (a, b):
            await call(c, "browser_navigate", {"url": f"{site}/oopif"})

        async def oopif_of(c: Client) -> dict | None:
            kids = (await snapshot(c)).get("frame_tree", {}).get("children", [])
            return next((k for k in kids if k.get("is_oopif") and "/inner" in k.get("url", "")), None)

        fa = await wait_for(sc, "A supervises its OOPIF", lambda: oopif_of(a), DIALOG_DEADLINE_S)
        fb = await wait_for(sc, "B supervises its own OOPIF", lambda: oopif_of(b), DIALOG_DEADLINE_S)
        sc.check(fa["frame_id"] != fb["frame_id"], "two OOPIFs, one per task")
        await trigger(a, "ask", fa["frame_id"])
        d = await wait_pending(sc, a, "confirm", "from the OOPIF", "A's OOPIF confirm")
        sc.check(not (await snapshot(b)).get("pending_dialogs"), "B sees no dialog")
        await call(a, "browser_dialog", {"action": "accept", "dialog_id": d["id"]})
        sc.check(not (await snapshot(a)).get("pending_dialogs"), "A's confirm answered")
        got = await evaluate(a, "window.got", fa["frame_id"])
        sc.check(got is True, f"the OOPIF's page got the answer ({got!r})")


async def cdp_url_browser_shared(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    site = f"http://127.0.0.1:{port}"
    chromium = await launch_chromium(sc, "own")

    def targets() -> dict[str, str]:
        with urllib.request.urlopen(f"{chromium.http_url}/json/list", timeout=10) as r:
            return {x["id"]: x["url"] for x in json.load(r)}

    before = set(targets())
    async with http_tasks(sc, binary, "url", 2, ["--cdp-url", chromium.http_url],
                          env={"CDP_SUPERVISOR_BROWSER__ISOLATION": "context"}) as t:
        a, b = t.clients
        for i, c in enumerate((a, b)):
            await call(c, "browser_navigate", {"url": f"{site}/?task={i}"})
        ca, cb = await own_context(a), await own_context(b)
        sc.check(ca != cb, "each task has a context of its own in the cdp_url browser")
        await evaluate(a, "document.cookie = 'who=a; path=/'; 1")
        sc.check(await evaluate(b, "document.cookie") == "", "B's page does not read A's cookie")
        ours = {x["target_id"] for c in (a, b) for x in (await snapshot(c))["tabs"]}
        sc.check(not ours & before, "the tasks' tabs are new ones, not the browser's own")
        sc.check(not browser_processes(t.proc.pid), "the server launched no browser")
        await t.end(0)
        await t.end(1)

        async def theirs_gone() -> bool:
            return not ours & set(targets())

        await wait_for(sc, "both tasks ended: their contexts' tabs gone", theirs_gone, DIALOG_DEADLINE_S)
        sc.check(before <= set(targets()), "the browser's own tabs are untouched")
    sc.check(alive(chromium.pid), "the cdp_url browser (not the server's) still runs")


async def browser_open_isolation(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    site = f"http://127.0.0.1:{port}"
    async with mcp_server(sc, binary, "open", [], mode="auto") as srv:
        c = srv.client

        async def on(task: str, name: str, args: dict) -> dict:
            return await call(c, name, {**args, "task": task})

        async def cookie(task: str) -> Any:
            r = await on(task, "browser_cdp", {"method": "Runtime.evaluate",
                                               "params": {"expression": "document.cookie", "returnByValue": True}})
            return r["result"]["result"].get("value")

        x = (await call(c, "browser_open", {"isolation": "context"}))["task"]
        y = (await call(c, "browser_open", {"isolation": "context"}))["task"]
        for task in (x, y):
            r = await on(task, "browser_navigate", {"url": f"{site}/"})
            sc.check(r["status"] == "loaded", "a context task navigates")
        sc.check(len(browser_processes(srv.pid)) == 1, "two context tasks, one browser process")
        await on(x, "browser_cdp", {"method": "Runtime.evaluate", "params": {"expression": "document.cookie = 'who=x; path=/'"}})
        sc.check(await cookie(x) == "who=x" and await cookie(y) == "", "their cookies are apart")
        z = (await call(c, "browser_open", {"isolation": "browser"}))["task"]
        await on(z, "browser_navigate", {"url": f"{site}/"})
        sc.check(len(browser_processes(srv.pid)) == 2, "an isolation browser task gets a browser of its own")
        sc.check(await cookie(z) == "", "and none of the context tasks' cookies")
        xs = {t["target_id"] for t in (await on(x, "browser_snapshot", {}))["tabs"]}
        await call(c, "browser_close", {"task": x})
        sc.check(await cookie(y) == "", "y goes on after x closed")
        r = await on(y, "browser_navigate", {"url": f"{site}/?after"})
        sc.check(r["status"] == "loaded" and len(browser_processes(srv.pid)) == 2,
                 "the shared browser stays for y (and z's own)")
        sc.check(xs, f"x had its tab ({xs})")


async def isolation_browser_opt_out(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, site_pages)
    site = f"http://127.0.0.1:{port}"
    async with http_tasks(sc, binary, "optout", 2, env={"CDP_SUPERVISOR_BROWSER__ISOLATION": "browser"}) as t:
        for c in t.clients:
            await call(c, "browser_navigate", {"url": f"{site}/"})
        browsers = browser_processes(t.proc.pid)
        sc.check(len(browsers) == 2, f"isolation browser: a browser process per task ({browsers})")


SCENARIOS = {
    "two_tasks_isolated": two_tasks_isolated,
    "eight_tasks_at_once": eight_tasks_at_once,
    "browser_cdp_refused": browser_cdp_refused,
    "shared_browser_killed": shared_browser_killed,
    "faults_stay_in_their_task": faults_stay_in_their_task,
    "oopif_in_a_context": oopif_in_a_context,
    "cdp_url_browser_shared": cdp_url_browser_shared,
    "browser_open_isolation": browser_open_isolation,
    "isolation_browser_opt_out": isolation_browser_opt_out,
}
# One at a time: each runs up to eight tasks on a 2-core machine.
PHASES = [[name] for name in SCENARIOS]


async def main() -> int:
    return await run_phases("contexts.py", __doc__, SCENARIOS, PHASES)


if __name__ == "__main__":
    exit_with(main)
