"""Both MCP revisions, 2025-11-25 and 2026-07-28, through the official Python SDK.

The same agent workflow for each client: navigate, snapshot, a confirm
answered (what the page really received is read back), a push notification
received when a dialog opens (subscriptions/listen on 2026-07-28, the legacy
resources/subscribe on 2025-11-25), and a prompt answered by the client's
own elicitation callback through browser_dialog(ask_user) (input_required on
2026-07-28, elicitation/create on 2025-11-25). Clients:

  modern_stdio   SDK 2.x default mode (probes server/discover, adopts
                 2026-07-28) over stdio: no task argument, the process's task
  modern_http    the same over streamable HTTP: browser_open's handle as task
  legacy_stdio   SDK 2.x mode="legacy" (initialize, 2025-11-25) over stdio
  legacy_http    the same over HTTP: one task per MCP session

browser_handoff through input_required (modern_handoff: the link as a URL
elicitation, the person presses Done or declines), and the bad input of
2026-07-28 (bad_input): a request without task over
HTTP, a forged, closed or malformed handle, a bad isolation, a listen for an
unknown resource, a request without its version _meta, and two handles that
see nothing of each other. --max-sessions counts sessions and handles
together (one_cap_for_both).

Usage: python revisions.py PATH/TO/cdp-supervisor [--only NAME[,NAME…]] [--serial]
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp.shared.exceptions import MCPError

from common import (
    Fail,
    Scenario,
    call,
    call_raw,
    descendants,
    evaluate,
    exit_with,
    is_chromium,
    log,
    mcp_server,
    page,
    recent_has,
    run_phases,
    start_site,
    trigger,
    wait_pending,
)

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
SNAPSHOT_URI = "browser://snapshot"
PUSH_DEADLINE_S = 10.0  # a dialog opening shows as a notification (the server: within 100 ms)
HUMAN_TEXT = "typed by the human"

PAGE_JS = """
function ask() { window.confirmed = confirm("Proceed?"); document.title = "confirmed " + window.confirmed; }
function name() { window.named = prompt("Your name?", "nobody"); document.title = "named " + window.named; }
"""


def pages(port: int) -> dict[str, str]:
    return {"/main.html": page("revisions main", "<p>two revisions, one browser</p>", PAGE_JS)}


class OnTask:
    """A Client whose every tool call names `task` (2026-07-28 over HTTP):
    what common.py's helpers take as a client."""

    def __init__(self, client: Any, task: str | None) -> None:
        self.client = client
        self.task = task

    async def call_tool(self, name: str, arguments: dict | None = None, *args: Any, **kwargs: Any) -> Any:
        arguments = dict(arguments or {})
        if self.task is not None:
            arguments.setdefault("task", self.task)
        return await self.client.call_tool(name, arguments, *args, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.client, attr)


class Human:
    """The client's elicitation callback: answers each question with the
    given content (accept), and remembers what it was asked."""

    def __init__(self, content: dict) -> None:
        self.content = content
        self.asked: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult | types.ErrorData:
        self.asked.append(params)
        return types.ElicitResult(action="accept", content=self.content)


class Pushes:
    """Resource updates received, from either revision's push."""

    def __init__(self) -> None:
        self.uris: list[str] = []

    async def handler(self, message: Any) -> None:  # the legacy message_handler
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
        await anyio.lowlevel.checkpoint()

    async def wait(self, count: int, what: str) -> None:
        deadline = time.monotonic() + PUSH_DEADLINE_S
        while len(self.uris) < count:
            if time.monotonic() > deadline:
                raise Fail(f"{what}: no resource update within {PUSH_DEADLINE_S:.0f} s (got {self.uris})")
            await anyio.sleep(0.02)


async def listen_into(client: Any, uri: str, pushes: Pushes, ready: anyio.Event) -> None:
    """subscriptions/listen for uri (2026-07-28), every update into pushes."""
    async with client.listen(resource_subscriptions=[uri]) as sub:
        if uri not in (sub.honored.resource_subscriptions or []):
            raise Fail(f"listen: the server did not honour {uri} ({sub.honored})")
        ready.set()
        async for event in sub:
            pushes.uris.append(str(getattr(event, "uri", event)))


async def workflow(sc: Scenario, client: Any, port: int, label: str, pushes: Pushes, human: Human) -> None:
    """navigate, snapshot, a confirm answered, a push seen, a prompt answered by the human."""
    url = f"http://127.0.0.1:{port}/main.html"
    nav = await call(client, "browser_navigate", {"url": url})
    sc.check(nav["status"] == "loaded" and nav["title"] == "revisions main", f"{label}: browser_navigate loaded ({nav})")
    snap = await call(client, "browser_snapshot")
    sc.check(snap["url"] == url and snap["pending_dialogs"] == [], f"{label}: browser_snapshot shows the page, no dialog")

    before = len(pushes.uris)
    await trigger(client, "ask")
    d = await wait_pending(sc, client, "confirm", "Proceed?", f"{label}: the confirm")
    await pushes.wait(before + 1, f"{label}: the confirm opening")
    sc.check(True, f"{label}: a resource update came when the confirm opened ({pushes.uris[before]})")
    ans = await call(client, "browser_dialog", {"action": "accept"})
    sc.check((ans.get("answered") or {}).get("id") == d["id"], f"{label}: browser_dialog accepted {d['id']}")
    got = await evaluate(client, "window.confirmed")
    sc.check(got is True, f"{label}: the page's confirm() returned true ({got!r})")

    await trigger(client, "name")
    d = await wait_pending(sc, client, "prompt", "Your name?", f"{label}: the prompt")
    asked = len(human.asked)
    ans = await call(client, "browser_dialog", {"action": "ask_user"})
    sc.check(len(human.asked) == asked + 1, f"{label}: the client's elicitation callback was asked once")
    message = getattr(human.asked[-1], "message", "")
    sc.check("Your name?" in message, f"{label}: the human read the prompt's message ({message[:120]!r})")
    closed = ans.get("answered") or {}
    sc.check(closed.get("id") == d["id"] and closed.get("closed_by") == "user", f"{label}: ask_user answered {d['id']} by the user ({closed})")
    got = await evaluate(client, "window.named")
    sc.check(got == HUMAN_TEXT, f"{label}: the page's prompt() returned the human's text ({got!r})")
    snap = await call(client, "browser_snapshot")
    sc.check(recent_has(snap, d["id"]) is not None, f"{label}: the prompt is in recent_dialogs")


def human() -> Human:
    return Human({"action": "accept", "text": HUMAN_TEXT})


async def check_modern_tools(sc: Scenario, client: Any, label: str) -> None:
    tools = (await client.list_tools()).tools
    names = [t.name for t in tools]
    sc.check(names[:2] == ["browser_open", "browser_close"], f"{label}: browser_open and browser_close are listed first ({names[:3]})")
    missing = [t.name for t in tools[2:] if "task" not in (t.input_schema.get("properties") or {})]
    sc.check(not missing, f"{label}: every browser tool takes task (not: {missing})")


async def modern_stdio(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, pages)
    pushes, h = Pushes(), human()
    async with mcp_server(sc, binary, "stdio", [], mode="auto", elicitation_callback=h) as srv:
        c = srv.client
        sc.check(c.protocol_version == MODERN, f"stdio: the SDK's default mode negotiated {c.protocol_version}")
        await check_modern_tools(sc, c, "stdio")
        browsers = [n for n, _ in descendants(srv.pid).values() if is_chromium(n)]
        sc.check(not browsers, f"stdio: discover and tools/list start no browser ({browsers})")
        async with anyio.create_task_group() as tg:
            ready = anyio.Event()
            tg.start_soon(listen_into, c, SNAPSHOT_URI, pushes, ready)
            with anyio.fail_after(PUSH_DEADLINE_S):
                await ready.wait()
            # No task argument: the process's one task.
            await workflow(sc, c, port, "stdio", pushes, h)
            tg.cancel_scope.cancel()


async def modern_http(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, pages)
    pushes, h = Pushes(), human()
    async with mcp_server(
        sc, binary, "http", [], transport="http", env={"RUST_LOG": "debug"}, mode="auto", elicitation_callback=h
    ) as srv:
        c = srv.client
        sc.check(c.protocol_version == MODERN, f"http: the SDK's default mode negotiated {c.protocol_version}")
        await check_modern_tools(sc, c, "http")
        opened = await call_raw(c, "browser_open", {"isolation": "browser"})
        sc.check(not opened.is_error and isinstance((opened.data or {}).get("task"), str), f"http: browser_open returned a task ({opened.text})")
        task = opened.data["task"]
        sc.check(len(task) == 32 and int(task, 16) >= 0, "http: the handle is 128 bits in hex")
        t = OnTask(c, task)
        async with anyio.create_task_group() as tg:
            ready = anyio.Event()
            tg.start_soon(listen_into, c, f"{SNAPSHOT_URI}?task={task}", pushes, ready)
            with anyio.fail_after(PUSH_DEADLINE_S):
                await ready.wait()
            await workflow(sc, t, port, "http", pushes, h)
            tg.cancel_scope.cancel()
        read = await c.read_resource(f"{SNAPSHOT_URI}?task={task}")
        snap = json.loads(read.contents[0].text)
        sc.check(snap["url"].endswith("/main.html"), "http: the task's snapshot resource reads its page")
        closed = await call_raw(c, "browser_close", {"task": task})
        sc.check(not closed.is_error and (closed.data or {}).get("closed") is True, f"http: browser_close ({closed.text})")
        with open(srv.log_path, errors="replace") as f:
            logged = f.read()
        sc.check(task[:6] in logged, "http: the server's debug log names the task (by its first characters)")
        sc.check(task not in logged, "http: no log line holds the handle whole")


async def legacy(sc: Scenario, binary: str, transport: str) -> None:
    port = await start_site(sc, pages)
    pushes, h = Pushes(), human()
    async with mcp_server(
        sc, binary, transport, [], transport=transport, mode="legacy", message_handler=pushes.handler, elicitation_callback=h
    ) as srv:
        c = srv.client
        sc.check(c.protocol_version == LEGACY, f"{transport}: mode='legacy' negotiated {c.protocol_version}")
        names = [t.name for t in (await c.list_tools()).tools]
        sc.check("browser_open" not in names, f"{transport}: a 2025-11-25 client is not offered task handles")
        import warnings

        from mcp.shared.exceptions import MCPDeprecationWarning

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await c.subscribe_resource(SNAPSHOT_URI)
        await workflow(sc, c, port, transport, pushes, h)


async def legacy_stdio(sc: Scenario, binary: str) -> None:
    await legacy(sc, binary, "stdio")


async def legacy_http(sc: Scenario, binary: str) -> None:
    await legacy(sc, binary, "http")


def post(url: str, body: dict, headers: dict[str, str]) -> tuple[int, Any]:
    """A raw JSON-RPC POST (what no SDK sends): status and parsed body (JSON or the SSE's data)."""
    req = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "accept": "application/json, text/event-stream", **headers},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    for line in text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            return status, json.loads(line[5:])
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


async def bad_input(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, pages)
    async with mcp_server(sc, binary, "http", [], transport="http", mode="auto") as srv:
        c = srv.client
        sc.check(c.protocol_version == MODERN, f"bad: negotiated {c.protocol_version}")
        r = await call_raw(c, "browser_snapshot", {})
        sc.check(r.is_error and "browser_open" in r.text, f"bad: no task over HTTP is an error naming browser_open ({r.text[:120]})")
        r = await call_raw(c, "browser_open", {"isolation": "process"})
        sc.check(r.is_error and '"browser" or "context"' in r.text, f"bad: an unknown isolation names the allowed values ({r.text[:120]})")
        forged = "0123456789abcdef0123456789abcdef"
        r = await call_raw(c, "browser_snapshot", {"task": forged})
        sc.check(r.is_error and "no open task has the handle" in r.text and forged not in r.text, f"bad: a forged handle is refused without echoing it ({r.text[:140]})")
        r = await call_raw(c, "browser_snapshot", {"task": 7})
        sc.check(r.is_error and "task must be the string" in r.text, f"bad: a non-string task ({r.text[:100]})")

        a = (await call_raw(c, "browser_open", {})).data["task"]
        b = (await call_raw(c, "browser_open", {})).data["task"]
        ta, tb = OnTask(c, a), OnTask(c, b)
        await call(ta, "browser_navigate", {"url": f"http://127.0.0.1:{port}/main.html"})
        await trigger(ta, "ask")
        await wait_pending(sc, ta, "confirm", "Proceed?", "bad: task A's confirm")
        snap_b = await call(tb, "browser_snapshot")
        sc.check(snap_b.get("pending_dialogs", []) == [] and snap_b.get("url", "") == "", f"bad: task B sees nothing of task A ({snap_b.get('url')!r}, {snap_b.get('pending_dialogs')})")
        r = await call_raw(tb, "browser_dialog", {"action": "accept"})
        sc.check(r.is_error, "bad: task B cannot answer task A's dialog")
        await call(ta, "browser_dialog", {"action": "dismiss"})
        got = await evaluate(ta, "window.confirmed")
        sc.check(got is False, f"bad: task A's page got its own answer ({got!r})")

        closed = await call_raw(c, "browser_close", {"task": b})
        sc.check(not closed.is_error, "bad: browser_close(B)")
        r = await call_raw(tb, "browser_snapshot", {})
        sc.check(r.is_error and "no open task has the handle" in r.text, f"bad: a closed handle is refused ({r.text[:100]})")
        r = await call_raw(c, "browser_close", {"task": b})
        sc.check(r.is_error, "bad: closing it twice is an error")

        try:
            async with c.listen(resource_subscriptions=["browser://nothing"]) as sub:
                honored = sub.honored.resource_subscriptions or []
                sc.check("browser://nothing" not in honored, f"bad: a listen for an unknown resource is not honoured ({honored})")
                with anyio.fail_after(PUSH_DEADLINE_S):
                    async for _ in sub:
                        raise Fail("bad: an event for an unknown resource")
        except MCPError as e:
            sc.check("unknown resource" in str(e), f"bad: a listen for an unknown resource is refused ({e})")
        except Exception as e:  # noqa: BLE001 - SubscriptionLost carries the server's error
            cause = e.__cause__ or e
            sc.check("unknown resource" in str(cause), f"bad: a listen for an unknown resource ends with its error ({type(e).__name__}: {cause})")
        # A forged handle's snapshot is not honoured either (the newcomer
        # review: it was acknowledged, and then nothing ever came).
        for uri in (f"{SNAPSHOT_URI}?task={forged}", f"{SNAPSHOT_URI}?task={b}"):
            try:
                async with c.listen(resource_subscriptions=[uri]) as sub:
                    honored = sub.honored.resource_subscriptions or []
                    sc.check(uri not in honored, f"bad: a listen for a forged or closed handle is not honoured ({honored})")
            except Exception as e:  # noqa: BLE001 - refused outright is as good
                sc.log(f"bad: the listen for {uri[:40]}… ended with {type(e).__name__}")
        try:
            await c.read_resource(f"{SNAPSHOT_URI}?task={forged}")
            raise Fail("bad: reading a forged handle's snapshot succeeded")
        except MCPError as e:
            sc.check(e.code == -32602 and "no open task" in str(e) and forged not in str(e), f"bad: a forged handle's resource is -32602, the handle not echoed ({e.code}: {e})")
        try:
            await c.read_resource("browser://elsewhere")
            raise Fail("bad: reading an unknown resource succeeded")
        except MCPError as e:
            sc.check(e.code == -32602, f"bad: an unknown resource is -32602 on 2026-07-28 ({e.code})")

        # A request without its version _meta (no SDK sends one).
        url = http_url(srv)
        status, reply = post(
            url,
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "browser_snapshot", "arguments": {"task": a}}},
            {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "browser_snapshot"},
        )
        err = reply.get("error") if isinstance(reply, dict) else None
        sc.check(err is not None and "_meta" in err.get("message", ""), f"bad: a 2026-07-28 request without _meta is refused (HTTP {status}: {reply})")
        status, reply = post(
            url,
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "browser_snapshot", "arguments": {"task": a}, "_meta": modern_meta()},
            },
            {"mcp-protocol-version": MODERN, "mcp-method": "tools/list", "mcp-name": "browser_snapshot"},
        )
        sc.check(status == 400 or (isinstance(reply, dict) and "error" in reply), f"bad: an Mcp-Method header that is not the body's method is refused (HTTP {status})")
        status, reply = post(
            url,
            {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": modern_meta()}},
            {"mcp-protocol-version": MODERN, "mcp-method": "tools/list"},
        )
        result = reply.get("result", {}) if isinstance(reply, dict) else {}
        sc.check("ttlMs" in result and "cacheScope" in result, f"bad: tools/list carries cache hints on 2026-07-28 ({sorted(result)})")
        await call_raw(c, "browser_close", {"task": a})


async def one_cap_for_both(sc: Scenario, binary: str) -> None:
    """--max-sessions 2 counts 2025-11-25 sessions and 2026-07-28 handles
    together: a handle and a session fill it, a third task of either kind
    is refused, and closing the handle makes room again."""
    async with mcp_server(sc, binary, "cap", ["--max-sessions", "2"], transport="http", mode="auto") as srv:
        c = srv.client
        url = http_url(srv)
        a = (await call(c, "browser_open", {}))["task"]

        def initialize(n: int) -> tuple[int, Any]:
            return post(
                url,
                {"jsonrpc": "2.0", "id": n, "method": "initialize", "params": {
                    "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "cap", "version": "1"}}},
                {},
            )

        status, reply = await anyio.to_thread.run_sync(lambda: initialize(1))
        sc.check(status == 200 and isinstance(reply, dict) and "result" in reply,
                 f"cap: a 2025-11-25 session opens beside one handle (HTTP {status}: {str(reply)[:160]})")
        r = await call_raw(c, "browser_open", {})
        sc.check(r.is_error and "--max-sessions 2" in r.text,
                 f"cap: a second handle is refused with one handle and one session open ({r.text[:200]})")
        status, reply = await anyio.to_thread.run_sync(lambda: initialize(2))
        sc.check(status == 503 and "task handles" in str(reply),
                 f"cap: a second session is refused too, the message counting both kinds (HTTP {status}: {str(reply)[:200]})")
        await call(c, "browser_close", {"task": a})
        r = await call_raw(c, "browser_open", {})
        sc.check(not r.is_error, f"cap: closing the handle makes room for another ({r.text[:120]})")
        if not r.is_error:
            await call_raw(c, "browser_close", {"task": r.data["task"]})


class Person:
    """An elicitation callback for a handoff's URL: the person opens the
    link and presses Done (the live view's API, as its page does), then the
    client answers accept; or they decline without opening it."""

    def __init__(self, decline: bool = False) -> None:
        self.decline = decline
        self.urls: list[str] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        url = getattr(params, "url", None)
        if url is None:
            return types.ElicitResult(action="decline")
        self.urls.append(url)
        if self.decline:
            return types.ElicitResult(action="decline")
        status = await anyio.to_thread.run_sync(lambda: post_status(url + "/done"))
        if status != 200:
            raise Fail(f"handoff: pressing Done on the link answered HTTP {status}")
        return types.ElicitResult(action="accept")


def post_status(url: str) -> int:
    req = urllib.request.Request(url, data=b"{}", headers={"content-type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


async def modern_handoff(sc: Scenario, binary: str) -> None:
    """browser_handoff through input_required: the link reaches the client's
    callback as a URL elicitation, the person presses Done, the second round
    returns handed_back; a person who declines ends the handoff."""
    port = await start_site(sc, pages)
    for decline in (False, True):
        label = "declined" if decline else "handed back"
        person = Person(decline=decline)
        async with mcp_server(sc, binary, f"h{int(decline)}", [], transport="http", mode="auto", elicitation_callback=person) as srv:
            c = srv.client
            task = (await call_raw(c, "browser_open", {})).data["task"]
            t = OnTask(c, task)
            await call(t, "browser_navigate", {"url": f"http://127.0.0.1:{port}/main.html"})
            r = await call(t, "browser_handoff", {"reason": "Log in for me.", "timeout_s": 60})
            sc.check(len(person.urls) == 1 and "/live/" in person.urls[0], f"{label}: the client's callback got the control link as a URL elicitation")
            if decline:
                sc.check(r["status"] == "cancelled", f"{label}: the handoff ended as cancelled ({r['status']})")
                sc.check(post_status(person.urls[0] + "/done") == 404, f"{label}: the link no longer works")
            else:
                sc.check(r["status"] == "handed_back", f"{label}: the second round returned handed_back ({r['status']})")
                sc.check((r.get("handoff") or {}).get("ended_by") == "person", f"{label}: ended_by person")
            nav = await call(t, "browser_navigate", {"url": f"http://127.0.0.1:{port}/main.html"})
            sc.check(nav["status"] == "loaded", f"{label}: the agent has the browser back")
            # A second round whose request state is not this task's.
            r = await c.session.call_tool(
                "browser_handoff",
                {"reason": "again", "task": task},
                input_responses={"handoff": {"action": "accept"}},
                request_state="0" * 32,
                allow_input_required=True,
            )
            text = "".join(getattr(x, "text", "") for x in getattr(r, "content", []))
            sc.check(bool(getattr(r, "is_error", False)) and "requestState" in text, f"{label}: a forged request state is refused ({text[:100]})")


def modern_meta() -> dict:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "revisions.py", "version": "0"},
    }


def http_url(srv: Any) -> str:
    """The HTTP server's /mcp URL, from its stderr's `listening on` line."""
    import re

    with open(srv.log_path) as f:
        m = re.search(r"listening on (http://\S+)", f.read())
    if not m:
        raise Fail("no 'listening on' line in the server's stderr")
    return m.group(1)


SCENARIOS = {
    "modern_stdio": modern_stdio,
    "modern_http": modern_http,
    "legacy_stdio": legacy_stdio,
    "legacy_http": legacy_http,
    "bad_input": bad_input,
    "modern_handoff": modern_handoff,
    "one_cap_for_both": one_cap_for_both,
}
PHASES = [["modern_stdio", "modern_http"], ["legacy_stdio", "legacy_http"], ["bad_input", "modern_handoff", "one_cap_for_both"]]


async def main() -> int:
    log(f"revisions.py: MCP {LEGACY} and {MODERN} through the Python SDK")
    return await run_phases("revisions.py", __doc__ or "", SCENARIOS, PHASES)


if __name__ == "__main__":
    exit_with(main)
