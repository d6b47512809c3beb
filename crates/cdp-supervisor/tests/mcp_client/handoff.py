"""A person at the wheel (issue 40), checked with the official MCP Python SDK
and a second real browser.

The agent's server is `cdp-supervisor mcp --http` (its own headless Chromium,
*.test mapped to 127.0.0.1, so b.test is an OOPIF); the live view shares its
listener. The *person* is a second headless Chromium, driven by a second
`cdp-supervisor mcp` over stdio: it opens the live page and clicks and types
with real input (browser_click on the page's buttons, Input.dispatchMouseEvent
at a point of the screen image, key presses), never through the agent's tools.

  handoff_end_to_end  the agent hands over (wait:false); page-changing tools
                      answer person_in_control, the snapshot works; the live
                      page shows a confirm() of the supervised page and its
                      accept button answers it (closed_by user, the page got
                      true); clicks and typing on the image reach a button and
                      fields of the main frame and of an OOPIF, and a button
                      below the fold after a wheel scroll; a password typed
                      there reaches the page and no tool result, snapshot,
                      changes or server log line; screenshots of the live page
                      (desktop and phone width); Done hands back (handed_back,
                      the URLs visited), the next result's changes has the
                      report, a second Done is a 404
  tokens_and_origins  a wrong token is a bare 404 on every route; the view link
                      reads /state but cannot answer or drive; a page of another
                      origin cannot open the WebSocket (a real browser tries);
                      /state says casting only while someone watches
  elicitation_and_progress  a client declaring URL-mode elicitation is asked to
                      open the control link; progress every 10 s while it
                      waits; a declined elicitation ends the handoff
  browser_dies_during_handoff  the agent's Chromium killed while a person has
                      it: the live page says so, Done still hands back, the
                      next navigate starts a browser again
  popup_during_handoff a popup the person opens shows in the live page's tabs; a
                      click on its tab shows it; the report counts it
  timeout_and_watchdog with dialog_timeout_s 2: a confirm opened while the person
                      has the task outlives its watchdog; browser_handoff(wait,
                      timeout_s 3) returns timed_out; then the watchdog dismisses
                      it (closed_by watchdog) a full deadline later

Usage: python handoff.py PATH/TO/cdp-supervisor [--only NAME[,NAME…]] [--serial]
"""

from __future__ import annotations

import base64
import json
import os
import tempfile
import re
import time
import urllib.error
import urllib.parse
import urllib.request

import anyio

from common import (
    Fail,
    Scenario,
    call,
    call_raw,
    evaluate,
    exit_with,
    mcp_server,
    page,
    ref_of,
    run_phases,
    set_log_name,
    start_site,
    wait_pending,
)

set_log_name("handoff")

ENV = {"CDP_SUPERVISOR_BROWSER__CHROMIUM_ARGS": '["--host-resolver-rules=MAP *.test 127.0.0.1"]'}
PASSWORD = "Sup3r-Secret-9"
# Where the live page's screenshots go (looked at after a run): a scratch
# folder, so that a test run changes nothing in the repository.
# LIVE_VIEW_SHOTS=docs/live-view refreshes the README's images.
SHOTS = os.environ.get("LIVE_VIEW_SHOTS") or os.path.join(tempfile.gettempdir(), "cdp-supervisor-live-view")


def pages(port: int) -> dict[str, str]:
    b = f"http://b.test:{port}"
    pw_b64 = base64.b64encode(PASSWORD.encode()).decode()
    pos = "position:absolute;left:{}px;top:{}px;width:{}px;height:{}px;margin:0;box-sizing:border-box"
    main = (
        f'<button id=ask style="{pos.format(40, 40, 200, 50)}" onclick="window.answer = confirm(\'Pay 12 EUR?\'); document.title = \'answered:\' + window.answer">Ask</button>'
        f'<input id=name aria-label=Name style="{pos.format(40, 120, 200, 40)}" oninput="document.title=\'name:\'+this.value">'
        f'<input id=pw type=password aria-label=Password style="{pos.format(40, 190, 200, 40)}" '
        f"oninput=\"window.pwOk = (this.value === atob('{pw_b64}'))\">"
        f'<iframe id=fr src="{b}/frame" style="{pos.format(300, 40, 320, 220)};border:0"></iframe>'
        f'<button id=pop style="{pos.format(40, 260, 200, 40)}" onclick="window.open(\'/other\', \'_blank\', \'popup\')">Popup</button>'
        f'<button id=far style="{pos.format(40, 1200, 200, 50)}" onclick="window.farClicks=(window.farClicks||0)+1">Far</button>'
        '<div style="height:2400px"></div>'
    )
    frame = (
        f'<button id=fb style="{pos.format(20, 20, 200, 50)}" onclick="window.clicks=(window.clicks||0)+1">Frame button</button>'
        f'<input id=ft aria-label="Frame text" style="{pos.format(20, 100, 200, 40)}">'
    )
    return {
        "/main": page("Main", main, "addEventListener('click', e => { window.clicks_seen = (window.clicks_seen || []).concat([[e.clientX, e.clientY, scrollY, e.target.id]]); }, true);"),
        "/frame": page("Frame", frame),
        "/other": page("Other", "<form action=/other method=get style='margin:0'><input name=code aria-label=Code style='position:absolute;left:20px;top:20px;width:200px;height:40px'></form>"),
        "/later": page("Later", "<p>confirm soon</p>", "setTimeout(() => { window.r = confirm('Later?'); }, 3000);"),
    }


def http(method: str, url: str, body: dict | None = None, headers: dict | None = None) -> tuple[int, str]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def until(what: str, check, seconds: float = 15.0):
    """check()'s first truthy value, asked every 0.2 s until the deadline."""
    deadline = time.monotonic() + seconds
    while True:
        v = await check()
        if v:
            return v
        if time.monotonic() > deadline:
            raise Fail(f"{what}: not within {seconds:.0f} s")
        await anyio.sleep(0.2)


def ws_try(url: str, origin: str | None, message: str | None = None, read_s: float = 3.0) -> tuple[int, list[str]]:
    """A minimal WebSocket client (stdlib only): the handshake's status, and
    the text frames read within read_s after sending `message` (masked)."""
    import socket
    import struct
    u = urllib.parse.urlsplit(url)
    s = socket.create_connection((u.hostname, u.port), timeout=read_s)
    key = base64.b64encode(os.urandom(16)).decode()
    req = (f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n")
    if origin:
        req += f"Origin: {origin}\r\n"
    s.sendall((req + "\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            break
        head += chunk
    status = int(head.split(b" ", 2)[1]) if head else 0
    rest = head.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in head else b""
    texts: list[str] = []
    if status == 101:
        if message is not None:
            data = message.encode()
            mask = os.urandom(4)
            hdr = bytes([0x81]) + (bytes([0x80 | len(data)]) if len(data) < 126 else bytes([0x80 | 126]) + struct.pack(">H", len(data)))
            s.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
        buf = rest
        deadline = time.monotonic() + read_s
        while time.monotonic() < deadline:
            while len(buf) >= 2:
                n = buf[1] & 0x7F
                off = 2
                if n == 126:
                    if len(buf) < 4:
                        break
                    n, off = struct.unpack(">H", buf[2:4])[0], 4
                elif n == 127:
                    if len(buf) < 10:
                        break
                    n, off = struct.unpack(">Q", buf[2:10])[0], 10
                if len(buf) < off + n:
                    break
                if buf[0] & 0x0F == 1:
                    texts.append(buf[off:off + n].decode(errors="replace"))
                buf = buf[off + n:]
            try:
                chunk = s.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    s.close()
    return status, texts


class Person:
    """The person's browser: our binary over stdio drives a second Chromium
    with real input; it never calls the agent's tools."""

    def __init__(self, client) -> None:
        self.c = client

    async def open(self, url: str) -> None:
        r = await call(self.c, "browser_navigate", {"url": url})
        if r["status"] != "loaded":
            raise Fail(f"the live page did not load: {r}")

    async def js(self, expr: str):
        return await evaluate(self.c, expr)

    async def screen(self) -> dict:
        """Where the screen image is on the live page, and what it shows
        (the supervised page's viewport and scroll: #screen's data-*)."""
        expr = ("(() => { const i = document.getElementById('screen'); if (!i || !i.naturalWidth || !i.dataset.width) return null;"
                " const r = i.getBoundingClientRect(); return {x: r.left, y: r.top, w: r.width, h: r.height,"
                " vw: +i.dataset.width, vh: +i.dataset.height, sy: +i.dataset.scrollY, seq: +i.dataset.seq}; })()")
        last: list = [None]

        async def steady():
            # The same place twice in a row: the live page's layout has settled.
            now = await self.js(expr)
            same = now is not None and now == last[0]
            last[0] = now
            return now if same else None

        return await until("the live page shows a frame of the screen", steady, 20)

    async def point(self, css_x: float, css_y: float) -> tuple[float, float]:
        """Where on the person's window the picture shows the supervised
        page's point (css_x, css_y): the live page is scrolled (as a person
        would) so that it is in the window."""
        r = await self.screen()
        y = r["y"] + css_y / r["vh"] * r["h"]
        inner = await self.js("innerHeight")
        if not 20 <= y <= inner - 20:
            await self.js(f"window.scrollBy(0, {y - inner / 2}); 1")
            r = await self.screen()
            y = r["y"] + css_y / r["vh"] * r["h"]
        return r["x"] + css_x / r["vw"] * r["w"], y

    async def click_image(self, css_x: float, css_y: float) -> None:
        """A real click on the live page's image where the supervised page
        has the point (css_x, css_y) of its viewport."""
        x, y = await self.point(css_x, css_y)
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            p = {"type": kind, "x": x, "y": y}
            if kind != "mouseMoved":
                p.update(button="left", clickCount=1)
            await call(self.c, "browser_cdp", {"method": "Input.dispatchMouseEvent", "params": p})

    async def wheel_image(self, css_x: float, css_y: float, dy: float) -> None:
        x, y = await self.point(css_x, css_y)
        for p in ({"type": "mouseMoved", "x": x, "y": y},
                  {"type": "mouseWheel", "x": x, "y": y, "deltaX": 0, "deltaY": dy}):
            await call(self.c, "browser_cdp", {"method": "Input.dispatchMouseEvent", "params": p})

    async def type_keys(self, text: str) -> None:
        for ch in text:
            await call(self.c, "browser_press_key", {"key": ch})

    async def press(self, name: str) -> None:
        live = await call(self.c, "browser_snapshot", {"find": name})
        await call(self.c, "browser_click", {"ref": ref_of(live["page"], "button", name)})

    async def screenshot(self, name: str, width: int, height: int) -> None:
        """The live page at width × height, saved in SHOTS."""
        await call(self.c, "browser_cdp", {"method": "Emulation.setDeviceMetricsOverride",
                                           "params": {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}})
        await self.screen()
        await anyio.sleep(0.3)
        r = await call(self.c, "browser_cdp", {"method": "Page.captureScreenshot", "params": {"format": "png"}})
        os.makedirs(SHOTS, exist_ok=True)
        with open(os.path.join(SHOTS, name), "wb") as f:
            f.write(base64.b64decode(r["result"]["data"]))
        await call(self.c, "browser_cdp", {"method": "Emulation.clearDeviceMetricsOverride", "params": {}})


DONE = "Done — hand back to the agent"


async def handoff_end_to_end(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, pages)
    main_url = f"http://a.test:{port}/main"
    results: list[str] = []  # every tool result the agent read, text and structured
    notifications: list[str] = []

    async def on_message(m) -> None:
        notifications.append(repr(m))

    async def agent_call(name: str, args: dict | None = None, error_ok: bool = False):
        r = await call_raw(agent, name, args or {})
        results.append(r.text + json.dumps(r.data))
        if r.is_error and not error_ok:
            raise Fail(f"{name} is a tool error: {r.text}")
        return r if error_ok else r.data

    env = {**ENV, "RUST_LOG": "debug"}
    async with mcp_server(sc, binary, "agent", [], transport="http", env=env, message_handler=on_message) as srv, \
            mcp_server(sc, binary, "person", [], env=ENV) as person_srv:
        agent = srv.client
        person = Person(person_srv.client)
        r = await agent_call("browser_navigate", {"url": main_url})
        sc.check(r["status"] == "loaded", f"the agent's page loaded ({r['status']})")
        bad = await agent_call("browser_handoff", {"reason": "Sign in\u202egnp.exe", "wait": False}, error_ok=True)
        sc.check(bad.is_error and "text-direction" in bad.text, "a reason with a text-direction override is refused")
        h = await agent_call("browser_handoff", {"reason": "Please sign in, then press Done.", "wait": False})
        sc.check(h["status"] == "in_progress" and re.fullmatch(r"http://127\.0\.0\.1:\d+/live/[0-9a-f]{32}", h["url"]) is not None,
                 f"browser_handoff(wait:false) gives the control link at once ({h['status']})")
        for name, args in [("browser_navigate", {"url": main_url}), ("browser_dialog", {"action": "accept"}),
                           ("browser_cdp", {"method": "Runtime.evaluate", "params": {"expression": "1"}}),
                           ("browser_tabs", {"action": "new"}), ("browser_click", {"ref": "e1"}),
                           ("browser_handoff", {"reason": "again"}), ("browser_dialog", {"action": "ask_user"})]:
            t = await agent_call(name, args, error_ok=True)
            sc.check(t.is_error and (t.data or {}).get("error") == "person_in_control" and t.data.get("reason") == "Please sign in, then press Done.",
                     f"{name} answers person_in_control at once")
        sc.check("page" in await agent_call("browser_snapshot"), "browser_snapshot still works while the person has the task")
        sc.check((await agent_call("browser_tabs", {"action": "list"}))["tabs"], "browser_tabs list still works")

        await person.open(h["url"])
        state = json.loads(http("GET", h["url"] + "/state")[1])
        sc.check(state["controller"] == "person" and state["access"] == "control" and state["casting"],
                 f"/state: a person has it, the screen is cast ({state['controller']}, casting {state['casting']})")

        # A confirm() of the supervised page, opened by the person's click on the image.
        await person.click_image(140, 65)
        await until("the live page shows the confirm", lambda: person.js("!!document.querySelector('[data-dialog-id] [data-action=accept]')"))
        await person.screenshot("live-dialog-desktop.png", 1100, 820)
        await person.screenshot("live-dialog-phone.png", 390, 844)
        await person.press("OK")

        async def closed():
            s = await agent_call("browser_snapshot", {"page": False})
            return s if not s["pending_dialogs"] and s.get("recent_dialogs") else None

        snap = await until("the confirm closes", closed)
        d = snap["recent_dialogs"][0]
        sc.check(d["type"] == "confirm" and d["closed_by"] == "user" and d["accepted"] is True,
                 f"the person's OK on the live page closed it: closed_by {d['closed_by']}")

        async def title_is(t: str):
            return (await agent_call("browser_snapshot", {"page": False}))["title"] == t

        await until("the page received true", lambda: title_is("answered:true"))
        sc.check(True, "the supervised page's confirm() returned true")
        await until("the live page drops the answered prompt", lambda: person.js("!document.querySelector('[data-dialog-id]')"))

        # Typing: the main frame's field, the password, the OOPIF's button and field.
        await person.click_image(140, 140)
        await person.type_keys("Ada")
        await until("the page's field has what the person typed", lambda: title_is("name:Ada"))
        sc.check(True, "a click on the image focused the main frame's field and the keys typed into it")
        await person.click_image(140, 210)
        await person.type_keys(PASSWORD)
        await person.click_image(300 + 120, 40 + 45)
        await person.click_image(300 + 120, 40 + 120)
        await person.type_keys("in-frame")
        await person.screenshot("live-control-desktop.png", 1100, 820)
        await person.screenshot("live-control-phone.png", 390, 844)
        snap_h = await agent_call("browser_snapshot")
        sc.check("[value=" not in snap_h.get("page", "x [value=") and "textbox \"Name\" [ref=" in snap_h.get("page", ""),
                 f"the snapshot shows no field values while the person has the task:\n{snap_h.get('page')}")

        # Below the fold (at 1,200 px): a wheel on the image scrolls the page, then a click hits the far button.
        await person.wheel_image(400, 300, 1000)

        async def scrolled():
            r = await person.screen()
            return r if r["sy"] >= 900 else None

        first = await until("the page scrolled", scrolled)
        await anyio.sleep(1.0)
        now = await person.screen()
        sc.check(now["sy"] == first["sy"] or now["sy"] >= 900, f"the wheel scrolled the page to {now['sy']} px")
        await person.click_image(140, 1225 - now["sy"])

        await person.press(DONE)
        w = await agent_call("browser_wait", {"event": "handed_back", "timeout_s": 20})
        rep = w.get("handoff") or {}
        sc.check(w["happened"] and rep.get("ended_by") == "person", f"browser_wait(handed_back): ended by the person ({rep})")
        sc.check(rep.get("dialogs_answered") == 1 and rep.get("reason") == "Please sign in, then press Done."
                 and rep.get("started_at", 0) < rep.get("ended_at", 0), "the report counts the answered dialog, keeps the reason and the times")
        nxt = await agent_call("browser_snapshot", {"page": False})
        sc.check((nxt.get("changes") or {}).get("handoff", {}).get("ended_by") == "person", "the next result's changes carries the handoff")
        again = await agent_call("browser_snapshot", {"page": False})
        sc.check("handoff" not in (again.get("changes") or {}), "…once")
        sc.check(http("POST", h["url"] + "/done")[0] == 404, "a second Done is a bare 404")
        sc.check(http("GET", h["url"] + "/state")[0] == 404, "the control link ended with the handoff")
        await until("the person's page says it was handed back",
                    lambda: person.js("document.getElementById('who').textContent.includes('Handed back')"))

        # What the page received; the password is compared in the page, never read back.
        sc.check(await evaluate(agent, "window.pwOk === true") is True, "the password the person typed reached the page")
        sc.check(await evaluate(agent, "window.farClicks || 0") == 1,
                 f"the click below the fold, after the wheel, hit the far button (the page's clicks: {await evaluate(agent, 'window.clicks_seen')})")
        tree = (await agent_call("browser_snapshot", {"page": False}))["frame_tree"]
        frame = next(f for f in tree["children"] if f["is_oopif"])
        sc.check(await evaluate(agent, "window.clicks || 0", frame["frame_id"]) == 1, "the click on the image hit the OOPIF's button")
        sc.check(await evaluate(agent, "document.getElementById('ft').value", frame["frame_id"]) == "in-frame",
                 "the keys typed on the image reached the OOPIF's field")

        everything = "\n".join(results + notifications)
        sc.check(PASSWORD not in everything, f"the password is in none of {len(results)} tool results and {len(notifications)} notifications")
        with open(srv.log_path, errors="replace") as f:
            server_log = f.read()
        sc.check(PASSWORD not in server_log and "Page.javascriptDialogClosed" in server_log,
                 f"the password is in no line of the server's debug log ({len(server_log)} bytes)")
        sc.check(re.search(r"[0-9a-f]{32}", server_log.replace(h["url"].rsplit("/", 1)[1][:6], "")) is None or h["url"].rsplit("/", 1)[1] not in server_log,
                 "no log line holds the whole control token")


async def tokens_and_origins(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, pages)
    async with mcp_server(sc, binary, "agent", [], transport="http", env=ENV) as srv, \
            mcp_server(sc, binary, "person", [], env=ENV) as person_srv:
        agent = srv.client
        person = Person(person_srv.client)
        await call(agent, "browser_navigate", {"url": f"http://a.test:{port}/main"})
        h = await call(agent, "browser_handoff", {"reason": "Tokens.", "wait": False})
        base = h["url"].rsplit("/live/", 1)[0]
        bogus = base + "/live/" + "0" * 32
        for path, method in [("", "GET"), ("/state", "GET"), ("/answer", "POST"), ("/done", "POST"), ("/ws", "GET")]:
            code, body = http(method, bogus + path, {} if method == "POST" else None)
            sc.check(code == 404 and body == "", f"{method} {path or '/'} with a wrong token: a bare 404 ({code})")
        code, _ = http("GET", base + "/live/short")
        sc.check(code == 404, "a malformed token: 404")
        for path, method in [("/done", "GET"), ("/state", "POST"), ("", "DELETE")]:
            code, body = http(method, h["url"] + path, {} if method != "GET" else None)
            sc.check(code == 404 and body == "", f"{method} {path or '/'} (a route asked another way): a bare 404 ({code})")
        first = json.loads(http("GET", h["url"] + "/state")[1])
        await anyio.sleep(1.1)
        second = json.loads(http("GET", h["url"] + "/state")[1])
        sc.check(first["until"] == second["until"] and abs(first["until"] - h["expires_at"]) < 0.01
                 and abs(first["expires_at"] - h["expires_at"]) < 0.5,
                 f"/state's until is the handoff's end, fixed ({first['until']} {second['until']} {h['expires_at']})")
        view = h["view_url"]
        code, body = http("GET", view + "/state")
        st = json.loads(body)
        sc.check(code == 200 and st["access"] == "view" and st["casting"] is False and st["viewers"] == 0,
                 f"the view link reads /state; nobody watches, nothing is cast ({st['viewers']}, {st['casting']})")
        code, body = http("POST", view + "/answer", {"dialog_id": "d-1", "action": "accept"})
        sc.check(code == 403 and "view-only" in body, f"the view link cannot answer ({code})")
        sc.check(http("POST", view + "/done", {})[0] == 403, "the view link cannot press Done")
        code, _ = http("GET", h["url"] + "/state", headers={"Origin": f"http://127.0.0.1:{port}"})
        sc.check(code == 403, "another origin (another port of this machine) cannot read the API")
        status, texts = await anyio.to_thread.run_sync(lambda: ws_try(view.replace("http", "ws", 1) + "/ws", None,
                                                                       json.dumps({"type": "mouse", "event": "down", "x": 0.2, "y": 0.1})))
        sc.check(status == 101 and any("view-only" in t for t in texts), f"input on the view link's WebSocket is refused ({status})")
        status, _ = await anyio.to_thread.run_sync(lambda: ws_try(h["url"].replace("http", "ws", 1) + "/ws", "http://evil.test"))
        sc.check(status == 403, f"a WebSocket from another origin is refused at the handshake ({status})")
        status, texts = await anyio.to_thread.run_sync(lambda: ws_try(h["url"].replace("http", "ws", 1) + "/ws", None,
                                                                       json.dumps({"type": "mouse", "event": "down", "x": 1e308, "y": -5})))
        sc.check(status == 101 and any("off the screen" in t for t in texts), "wild coordinates are refused with a message")
        status, texts = await anyio.to_thread.run_sync(lambda: ws_try(h["url"].replace("http", "ws", 1) + "/ws", None,
                                                                       json.dumps({"type": "text", "text": "x" * 20000})))
        sc.check(status == 101 and any("paste it in parts" in t for t in texts), "a huge text is refused with a message")

        await person.open(view)
        await person.screen()
        st = json.loads(http("GET", view + "/state")[1])
        sc.check(st["viewers"] >= 1 and st["casting"] is True, f"the screen is cast while someone watches ({st['viewers']} viewer(s))")
        # Cross-site WebSocket hijacking: a real browser on a page of another origin tries.
        ws_url = h["url"].replace("http://", "ws://") + "/ws"
        await call(person.c, "browser_navigate", {"url": f"http://127.0.0.1:{port}/other"})
        await evaluate(person.c, f"window.wsr = 'pending'; const w = new WebSocket({json.dumps(ws_url)}); "
                                 "w.onopen = () => window.wsr = 'open'; w.onerror = () => window.wsr = 'refused'; 1")

        async def settled():
            v = await evaluate(person.c, "window.wsr")
            return v if v != "pending" else None

        r = await until("the other origin's WebSocket settles", settled)
        sc.check(r == "refused", f"a page of another origin cannot open the WebSocket ({r})")

        async def idle():
            st = json.loads(http("GET", view + "/state")[1])
            return not st["casting"] and st["viewers"] == 0

        await until("the cast stops when the last viewer leaves", idle)
        sc.check(True, "the screencast stopped with the last viewer")

        # The task ends while a person has it: the page says so, the links end.
        await person.open(h["url"])
        await person.screen()
        url = await http_url_of(srv)
        from mcp import Client
        async with Client(url, mode="legacy", read_timeout_seconds=60) as second:
            await call(second, "browser_navigate", {"url": f"http://a.test:{port}/main"})
            h2 = await call(second, "browser_handoff", {"reason": "Second task.", "wait": False})
            await person.open(h2["url"])
            await person.screen()
        await until("the person's page says the task ended",
                    lambda: person.js("document.getElementById('who').textContent.includes('ended')"))
        sc.check(http("GET", h2["url"] + "/state")[0] == 404, "the ended task's links are 404")
        code, body = http("GET", h["url"] + "/state")
        sc.check(code == 200, f"another task's handoff is untouched ({code} {body[:200]})")


async def http_url_of(srv) -> str:
    with open(srv.log_path, errors="replace") as f:
        m = re.search(r"listening on (http://\S+)", f.read())
    if not m:
        raise Fail("no listening line in the HTTP server's log")
    return m.group(1)


async def timeout_and_watchdog(sc: Scenario, binary: str) -> None:
    """dialog_timeout_s 2; the page opens a confirm 3 s after load, while a
    handoff (timeout_s 10) runs. The watchdog waits while the person has
    the task (the confirm is still pending 3 s after it opened); at the
    hand-back (timed_out) its deadline restarts: the watchdog closes it no
    sooner than 2 s after."""
    port = await start_site(sc, pages)
    env = {**ENV, "CDP_SUPERVISOR_BROWSER__DIALOG_TIMEOUT_S": "2"}
    async with mcp_server(sc, binary, "agent", [], transport="http", env=env) as srv:
        agent = srv.client
        r = await call(agent, "browser_navigate", {"url": f"http://a.test:{port}/later"})
        sc.check(r["status"] == "loaded", "loaded")
        h = await call(agent, "browser_handoff", {"reason": "Wait for me.", "timeout_s": 10, "wait": False})
        started = h["expires_at"] - 10
        d = await wait_pending(sc, agent, "confirm", "Later?", "the page's own confirm")
        if d["opened_at"] >= started:
            async def three_s_later():
                return time.time() >= d["opened_at"] + 3.0

            await until("3 s after the confirm opened", three_s_later)
            s = await call(agent, "browser_snapshot", {"page": False})
            held = http("GET", h["url"] + "/state")[0] == 200
            sc.check(not held or any(p["id"] == d["id"] for p in s["pending_dialogs"]),
                     "the watchdog (2 s) waits while the person has the task")
        else:
            sc.log("the confirm opened before the handoff began (a slow machine): only the restart is checked")
        w = await call(agent, "browser_wait", {"event": "handed_back", "timeout_s": 30})
        rep = w["handoff"]
        sc.check(rep["ended_by"] == "timeout", f"the handoff timed out ({rep['ended_by']})")

        async def closed():
            s = await call(agent, "browser_snapshot", {"page": False})
            return next((x for x in s.get("recent_dialogs", []) if x["id"] == d["id"]), None)

        c = await until("the watchdog acts after the hand-back", closed, 20)
        sc.check(c["closed_by"] == "watchdog", f"closed by the watchdog ({c['closed_by']})")
        if d["opened_at"] >= started:
            sc.check(c["closed_at"] >= rep["ended_at"] + 1.9,
                     f"a full deadline after the hand-back ({c['closed_at'] - rep['ended_at']:.1f} s)")
        timed = await call(agent, "browser_handoff", {"reason": "Quick.", "timeout_s": 1})
        sc.check(timed["status"] == "timed_out" and timed["handoff"]["ended_by"] == "timeout",
                 f"browser_handoff(wait) returns timed_out at its timeout_s ({timed['status']})")


async def elicitation_and_progress(sc: Scenario, binary: str) -> None:
    """A client that declares URL-mode elicitation is asked to open the
    control link; a waiting handoff sends progress every 10 s; the person's
    Done (posted 11 s later) ends it. A declined elicitation ends the
    handoff at once (cancelled)."""
    from mcp import types

    port = await start_site(sc, pages)
    asked: list = []
    decline = [False]

    async def on_elicit(context, params):
        asked.append(params)
        if decline[0]:
            return types.ElicitResult(action="decline")
        url = getattr(params, "url", "")

        async def person_later() -> None:
            await anyio.sleep(11)
            await anyio.to_thread.run_sync(lambda: http("POST", url + "/done", {}))

        tg.start_soon(person_later)
        return types.ElicitResult(action="accept")

    progress: list = []

    async def on_progress(value, total, message) -> None:
        progress.append((value, message))

    async with anyio.create_task_group() as tg, \
            mcp_server(sc, binary, "agent", [], env=ENV, elicitation_callback=on_elicit) as srv:
        agent = srv.client
        await call(agent, "browser_navigate", {"url": f"http://a.test:{port}/main"})
        r = await agent.call_tool("browser_handoff", {"reason": "Sign in, please.", "timeout_s": 60},
                                  progress_callback=on_progress)
        data = r.structured_content or {}
        sc.check(not r.is_error and data.get("status") == "handed_back", f"handed back after the person's Done ({data.get('status')})")
        sc.check(len(asked) == 1 and getattr(asked[0], "mode", "") == "url" and getattr(asked[0], "url", "") == data["url"]
                 and "Sign in, please." in getattr(asked[0], "message", ""),
                 "the client was asked, in URL mode, to open the control link")
        sc.check(len(progress) >= 1 and "Done" in (progress[0][1] or ""), f"progress came while it waited ({progress})")
        decline[0] = True
        r = await agent.call_tool("browser_handoff", {"reason": "Again?", "timeout_s": 60})
        data = r.structured_content or {}
        sc.check(data.get("status") == "cancelled" and data["handoff"]["ended_by"] == "agent",
                 f"a declined elicitation ends the handoff ({data.get('status')})")
        sc.check(http("GET", data["url"] + "/state")[0] == 404, "its link ended with it")
        tg.cancel_scope.cancel()


async def popup_during_handoff(sc: Scenario, binary: str) -> None:
    """A popup the person opens (a sign-in window, say) shows in the live
    page's tab strip; a click on its tab shows it in the picture, the
    person types in it; the report counts the tab."""
    port = await start_site(sc, pages)
    async with mcp_server(sc, binary, "agent", [], transport="http", env={**ENV, "RUST_LOG": "debug"}) as srv, \
            mcp_server(sc, binary, "person", [], env=ENV) as person_srv:
        agent = srv.client
        person = Person(person_srv.client)
        await call(agent, "browser_navigate", {"url": f"http://a.test:{port}/main"})
        h = await call(agent, "browser_handoff", {"reason": "Sign in in the popup.", "wait": False})
        await person.open(h["url"])
        await person.click_image(140, 280)

        async def two_tabs():
            # Its title too: the tab's button is named by it once it has one.
            st = json.loads(http("GET", h["url"] + "/state")[1])
            tabs = st.get("tabs", [])
            return st if len(tabs) == 2 and any(t["title"] == "Other" for t in tabs) else None

        st = await until("the popup shows in the live page's tabs", two_tabs)
        popup = next(t for t in st["tabs"] if not t["current"])
        await until("the popup's tab is a button named by its title",
                    lambda: person.js(f"(document.querySelector('button[data-target-id=\"{popup['target_id']}\"]') || {{}}).textContent === 'Other'"))
        await person.press("Other")

        async def shown():
            st = json.loads(http("GET", h["url"] + "/state")[1])
            cur = next((t for t in st["tabs"] if t["current"]), {})
            return cur.get("target_id") == popup["target_id"] and "/other" in (st.get("url") or "")

        await until("the picked tab is current", shown)
        sc.check(True, "a click on the popup's tab made it current")

        async def popup_frame():
            return await person.js(f"document.getElementById('screen').dataset.height && document.getElementById('screen').dataset.seq && 1")

        await until("a frame of the popup", popup_frame)
        await person.click_image(120, 40)
        await person.type_keys("X7Q9Z")
        await call(person.c, "browser_press_key", {"key": "Enter"})

        async def sent():
            st = json.loads(http("GET", h["url"] + "/state")[1])
            return "code=X7Q9Z" in (st.get("url") or "")

        await until("the person's form went (by GET)", sent)
        during = await call(agent, "browser_snapshot", {"page": False})
        sc.check("X7Q9Z" not in json.dumps(during), f"the agent's snapshot during the handoff shows no query the person's form made: {[(k, v) for k, v in during.items() if 'X7Q9Z' in json.dumps(v)]}")
        await person.press(DONE)
        w = await call(agent, "browser_wait", {"event": "handed_back", "timeout_s": 20})
        rep = w["handoff"]
        sc.check(rep["tabs_opened"] == 1, f"the report counts the popup ({rep['tabs_opened']})")
        sc.check(any(u.endswith("/other") for u in rep["urls"]) and "X7Q9Z" not in json.dumps(rep),
                 f"the report lists where the person went, not what their form sent ({rep['urls']})")
        with open(srv.log_path, errors="replace") as f:
            sc.check("X7Q9Z" not in f.read(), "nor does the server's debug log")


async def browser_dies_during_handoff(sc: Scenario, binary: str) -> None:
    """The agent's Chromium is killed while a person has it: the live page
    says the browser is gone, Done still hands back, and the agent's next
    navigate starts a browser again."""
    from common import descendants, is_chromium, kill_tree

    port = await start_site(sc, pages)
    # A browser of the task's own (over HTTP the default is a context in a
    # shared browser, which a kill relaunches: contexts.py checks that).
    own = {**ENV, "CDP_SUPERVISOR_BROWSER__ISOLATION": "browser"}
    async with mcp_server(sc, binary, "agent", [], transport="http", env=own) as srv, \
            mcp_server(sc, binary, "person", [], env=ENV) as person_srv:
        agent = srv.client
        person = Person(person_srv.client)
        await call(agent, "browser_navigate", {"url": f"http://a.test:{port}/main"})
        h = await call(agent, "browser_handoff", {"reason": "Crash test.", "wait": False})
        await person.open(h["url"])
        await person.screen()
        chromiums = {p: v for p, v in descendants(srv.pid).items() if is_chromium(v[0])}
        sc.check(bool(chromiums), f"the agent's Chromium runs ({len(chromiums)} processes)")
        kill_tree(chromiums)
        await until("the live page says the browser is gone",
                    lambda: person.js("document.getElementById('notice').textContent.includes('browser is gone')"), 30)
        sc.check(True, "the live page says the browser is gone")
        await person.press(DONE)
        w = await call(agent, "browser_wait", {"event": "handed_back", "timeout_s": 20})
        sc.check(w["happened"] and w["handoff"]["ended_by"] == "person", "Done still hands back")
        r = await call(agent, "browser_navigate", {"url": f"http://a.test:{port}/main"})
        sc.check(r["status"] == "loaded", "the agent's next navigate starts a browser again")


SCENARIOS = {
    "handoff_end_to_end": handoff_end_to_end,
    "browser_dies_during_handoff": browser_dies_during_handoff,
    "popup_during_handoff": popup_during_handoff,
    "elicitation_and_progress": elicitation_and_progress,
    "tokens_and_origins": tokens_and_origins,
    "timeout_and_watchdog": timeout_and_watchdog,
}
PHASES = [
    ["handoff_end_to_end", "elicitation_and_progress"],
    ["tokens_and_origins", "timeout_and_watchdog"],
    ["browser_dies_during_handoff", "popup_during_handoff"],
]


async def main() -> int:
    return await run_phases("handoff.py", __doc__, SCENARIOS, PHASES, {"handoff_end_to_end": 240})


if __name__ == "__main__":
    exit_with(main)
