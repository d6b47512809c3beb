"""Every prompt the browser raises (issue 30): HTTP authentication as a
pending dialog, checked with the official MCP Python SDK.

Drives the real `cdp-supervisor mcp` binary over stdio; the server launches
its own headless Chromium. The site is served on 127.0.0.1 (and as
http://localhost, another site: an OOPIF); its /secret pages answer 401 with
a Basic challenge until the right login comes, and the server records every
Authorization header it received, so a check reads what the site really got.

  accept_after_a_wrong_login  browser_navigate to a page behind Basic auth
                              returns dialog_pending with an http_auth
                              (origin, realm, scheme, url) that the
                              snapshot lists and the subscribed client hears
                              of (resources/updated); a wrong login brings a
                              new http_auth back; the right one loads the
                              page: its text in the next snapshot, the site
                              saw that login; an evaluate sent while the top
                              document's login is asked for is interrupted
                              (Chromium holds the tab's commands) and
                              delivered once; ask_user on it is a tool error
                              naming elicitation; nothing the agent reads,
                              and nothing in the server's stderr at
                              RUST_LOG=trace, holds either password
  dismiss_shows_the_401       dismiss cancels the login: the page shows the
                              server's 401 body; recent_dialogs says agent,
                              accepted false
  stored_credentials          browser.credentials (password_env) answers by
                              itself: browser_navigate says loaded, the
                              page's text is the secret one, recent_dialogs
                              has the http_auth closed_by auto_policy; the
                              password is in no output and not in stderr at
                              RUST_LOG=trace
  same_origin_iframe_login    a same-origin iframe behind auth: an http_auth
                              with the iframe's frame_id; the page's own
                              calls are not blocked meanwhile; accepted, the
                              iframe's content loads and the page's load
                              event fires
  same_origin_iframe_watchdog the same, left alone under a 2 s watchdog: it
                              cancels (closed_by watchdog), the iframe shows
                              the 401 body and the page's load completes
  cross_origin_iframe         an iframe from the other site behind auth: no
                              prompt, no hang; the OOPIF shows the 401 body
  download_50_mib             a click on a link to a 50 MiB attachment
                              returns; the session keeps answering while it
                              streams; browser_wait(download_done) wakes; the
                              snapshot's downloads says completed with every
                              byte, the file is under its suggested name in
                              the task's directory with the site's sha256;
                              the click's own result has it in
                              downloads_started; the next result's
                              changes.downloads tells it
                              once; the server's RSS did not grow by the
                              file's size; the directory is gone with the
                              session
  download_past_max_bytes     downloads.max_bytes 4 MiB: a 24 MiB download
                              sent with no Content-Length is canceled, says
                              why, and leaves no file
  changes_tell_what_a_policy_did  under confirm=auto_dismiss, a confirm()
                              a page timer opens after the agent's call is
                              answered by the policy; the next result's
                              changes tell it opened and closed
                              (closed_by auto_policy), and the result after
                              that does not tell it again
  download_from_a_blocked_origin  a download link to an origin the policy
                              blocks: in blocked_navigations, never in
                              downloads, no file on disk
  download_on_a_browser_we_did_not_launch  (issue 44) a Chromium this
                              test launched, attached through a loopback
                              --cdp-url: a click-started download from the
                              non-secure http://a.test completes (Chromium's
                              default behaviour held it as insecure for
                              ever) into the task's directory here, gone
                              with the session
  download_on_a_remote_browser  the same Chromium reached through this
                              machine's non-loopback address (a remote
                              browser): the download completes into a
                              directory on the browser's disk, its path
                              and a note saying so
  a_click_returns_with_what_it_started  a click on a link to a page the
                              server answers late returns once that page
                              committed (its own changes.navigated says so);
                              a link answered 204 returns and the page
                              stays; a link to an attachment returns with
                              downloads_started naming it; a link with a
                              download attribute (no navigation) has its
                              download told in a result's changes;
                              browser_navigate to an attachment returns
                              loaded with downloads_started and a note, the
                              page unchanged; a javascript: link returns
                              without waiting; a link in an OOPIF returns
                              with its download

Every scenario has its own server process, Chromium, user-data-dir, ports
and site, and cleans up even when it fails. Every wait has a deadline; no
assertion depends on how fast the machine is.

Usage: python prompts.py PATH/TO/cdp-supervisor [--only NAME[,NAME…]] [--serial]
"""

from __future__ import annotations

import base64
import glob
import hashlib
import http.server
import json
import os
import threading
import time
import warnings
from typing import Any

import anyio
from mcp import types
from mcp.shared.exceptions import MCPDeprecationWarning

from common import (
    Fail,
    Scenario,
    launch_chromium,
    call,
    call_raw,
    evaluate,
    exit_with,
    mcp_server,
    recent_has,
    run_phases,
    set_log_name,
    snapshot,
    wait_pending,
)

set_log_name("prompts")
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

SNAPSHOT_URI = "browser://snapshot"
USER = "staff"
PASSWORD = "c0rrect-h0rse-7781"  # must never show in anything the server writes
WRONG = "wr0ng-pa55-1243"
REALM = "Staff area"
# Seconds.
LOAD_DEADLINE_S = 20.0  # a page's text shows once its login was answered
DOWNLOAD_DEADLINE_S = 90.0  # a 50 MiB download over loopback completes
MIB = 1024 * 1024
BIG_BYTES = 50 * MIB
HUGE_BYTES = 24 * MIB
MAX_BYTES = 4 * MIB
UPDATE_DEADLINE_S = 5.0  # the subscribed client hears of the prompt


# --- the site ---------------------------------------------------------------------


def html(title: str, body: str, script: str = "") -> bytes:
    return (
        f"<!doctype html><html><head><meta charset=utf-8><title>{title}</title></head>"
        f"<body>{body}<script>{script}</script></body></html>"
    ).encode()


class Site:
    """127.0.0.1:port (and localhost:port) with pages behind Basic auth.

    /secret, /frame-secret: 401 + `WWW-Authenticate: Basic realm=…` until the
    right login; logins[path] lists every Authorization the site received."""

    def __init__(self) -> None:
        self.logins: dict[str, list[str]] = {}
        self.lock = threading.Lock()
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                site.serve(self)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def origin(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def received(self, path: str) -> list[str]:
        with self.lock:
            return list(self.logins.get(path, []))

    @staticmethod
    def chunk(i: int) -> bytes:
        """The i-th MiB of a download: not all one byte, so a sha256 means something."""
        return hashlib.sha256(str(i).encode()).digest() * (MIB // 32)

    def file_sha256(self, size: int) -> str:
        h = hashlib.sha256()
        for i in range(size // MIB):
            h.update(self.chunk(i))
        return h.hexdigest()

    def serve_file(self, h: http.server.BaseHTTPRequestHandler, name: str, size: int, length: bool) -> None:
        h.send_response(200)
        h.send_header("content-type", "application/octet-stream")
        h.send_header("content-disposition", f'attachment; filename="{name}"')
        if length:
            h.send_header("content-length", str(size))
        else:
            h.send_header("connection", "close")
        h.end_headers()
        try:
            for i in range(size // MIB):
                h.wfile.write(self.chunk(i))
                if not length:
                    time.sleep(0.05)  # a server that streams: progress arrives on the way
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser canceled

    def serve(self, h: http.server.BaseHTTPRequestHandler) -> None:
        path = h.path.split("?")[0]
        if path == "/confirmed":
            with self.lock:
                self.logins.setdefault("/confirmed", []).append(h.path.split("?", 1)[-1])
            return self.send(h, b"ok")
        if path == "/big.bin":
            return self.serve_file(h, "big data.bin", BIG_BYTES, True)
        if path == "/small.bin":
            return self.serve_file(h, "small.bin", MIB, True)
        if path == "/nothing":
            h.send_response(204)
            h.end_headers()
            return None
        if path == "/slow":
            time.sleep(1.5)  # the click must wait for it, not for a clock
            return self.send(h, html("Arrived", "<h1>the slow page arrived</h1>"))
        if path == "/huge.bin":
            h.close_connection = True
            return self.serve_file(h, "huge.bin", HUGE_BYTES, False)
        if path in ("/secret", "/frame-secret"):
            got = h.headers.get("Authorization")
            if got is not None:
                try:
                    got = base64.b64decode(got.split(" ", 1)[1]).decode()
                except Exception:  # noqa: BLE001 - recorded as sent
                    pass
                with self.lock:
                    self.logins.setdefault(path, []).append(got)
            if got != f"{USER}:{PASSWORD}":
                body = html("Unauthorized", "<h1>401: login required</h1><p>no entry without a login</p>")
                h.send_response(401)
                h.send_header("WWW-Authenticate", f'Basic realm="{REALM}"')
                return self.send(h, body, code_sent=True)
            return self.send(h, html("Secret", "<h1>Welcome, staff</h1><p>the secret page</p>"))
        pages = {
            "/open": html("Open", "<h1>open page</h1>"),
            "/framed": html(
                "Framed",
                '<h1>outer page</h1><iframe id=f src="/frame-secret" width=300 height=100></iframe>',
                "window.loaded = false; window.addEventListener('load', () => { window.loaded = true; });",
            ),
            "/files": html(
                "Files",
                '<h1>files</h1><p><a href="/big.bin">big file</a></p><p><a href="/huge.bin">huge file</a></p>'
                '<p><a href="/small.bin">small file</a></p><p><a href="/slow">slow page</a></p>'
                '<p><a href="/nothing">no content</a></p><p><a href="/small.bin?attr" download>attribute file</a></p>'
                '<p><a href="javascript:void(0)">script link</a></p>'
                f'<p><a href="{self.url("/big.bin", "localhost")}">elsewhere file</a></p>',
            ),
            "/xfiles": html(
                "Framed files",
                f'<h1>outer page</h1><iframe id=f src="{self.url("/inner-files", "localhost")}" width=400 height=100></iframe>',
            ),
            "/inner-files": html("Inner", '<p><a href="/small.bin?oopif">framed file</a></p>'),
            "/timer-confirm": html(
                "Timer",
                "<h1>a page that asks later</h1>",
                "setTimeout(() => { const v = confirm('Proceed?'); fetch('/confirmed?v=' + v); }, 300);",
            ),
            "/xframed": html(
                "Cross framed",
                f'<h1>outer page</h1><iframe id=f src="{self.url("/secret", "localhost")}" width=300 height=100></iframe>',
                "window.loaded = false; window.addEventListener('load', () => { window.loaded = true; });",
            ),
        }
        body = pages.get(path)
        if body is None:
            h.send_error(404)
            return
        self.send(h, body)

    @staticmethod
    def send(h: http.server.BaseHTTPRequestHandler, body: bytes, code_sent: bool = False) -> None:
        if not code_sent:
            h.send_response(200)
        h.send_header("content-type", "text/html; charset=utf-8")
        h.send_header("cache-control", "no-store")
        h.send_header("content-length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)


def site_for(sc: Scenario) -> Site:
    site = Site()
    sc.stack.callback(site.stop)
    return site


# --- helpers ----------------------------------------------------------------------------


class Seen:
    """Every text the agent was given (tool results, notifications): none
    may hold a password."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.updates: list[float] = []

    async def handler(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.updates.append(time.monotonic())
        self.texts.append(repr(message))
        await anyio.lowlevel.checkpoint()

    async def call(self, c: Any, name: str, args: dict | None = None) -> Any:
        r = await call_raw(c, name, args)
        self.texts.append(r.text)
        return r


async def body_text(c: Any, frame_id: str | None = None) -> str:
    v = await evaluate(c, "document.body ? document.body.innerText : ''", frame_id)
    return v or ""


async def wait_text(sc: Scenario, c: Any, want: str, what: str, frame_expr: str | None = None) -> str:
    """Polls the page's text (or an expression) until it holds want."""
    deadline = time.monotonic() + LOAD_DEADLINE_S
    expr = frame_expr or "document.body ? document.body.innerText : ''"
    while True:
        got = await evaluate(c, expr) or ""
        if want in got:
            sc.log(f"ok: {what} ({got[:80]!r})")
            return got
        if time.monotonic() > deadline:
            raise Fail(f"{what}: {want!r} not in the page within {LOAD_DEADLINE_S:.0f} s (got {got[:200]!r})")
        await anyio.sleep(0.1)


def check_shape(sc: Scenario, d: dict, site: Site, path: str, what: str) -> None:
    sc.check(d.get("type") == "http_auth", f"{what}: type http_auth ({d.get('type')})")
    sc.expect(d.get("origin") == site.origin(), f"{what}: origin {d.get('origin')!r} is the site's {site.origin()!r}")
    sc.expect(d.get("realm") == REALM, f"{what}: realm {d.get('realm')!r}")
    sc.expect(d.get("scheme") == "basic", f"{what}: scheme {d.get('scheme')!r}")
    sc.expect(d.get("url") == site.url(path), f"{what}: url {d.get('url')!r}")
    sc.expect(bool(d.get("frame_id")), f"{what}: frame_id {d.get('frame_id')!r}")


def no_password(sc: Scenario, texts: list[str], stderr_path: str, passwords: list[str]) -> None:
    with open(stderr_path, errors="replace") as f:
        log = f.read()
    sc.check(len(log) > 10_000, f"the server's stderr at RUST_LOG=trace has {len(log)} bytes (trace is on)")
    for p in passwords:
        sc.check(p not in log, f"the password {p[:3]}… is not in the server's stderr")
        leaked = [t[:120] for t in texts if p in t]
        sc.check(not leaked, f"the password {p[:3]}… is in none of the {len(texts)} texts the agent read ({leaked})")


# --- scenarios -----------------------------------------------------------------------------


async def accept_after_a_wrong_login(sc: Scenario, binary: str) -> None:
    site = site_for(sc)
    seen = Seen()
    env = {"RUST_LOG": "trace"}

    async def human(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async with mcp_server(
        sc, binary, "s", [], env=env, mode="legacy", message_handler=seen.handler, elicitation_callback=human
    ) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": site.url("/open")})
        await c.subscribe_resource(SNAPSHOT_URI)
        subscribed = time.monotonic()
        r = await seen.call(c, "browser_navigate", {"url": site.url("/secret")})
        sc.check(not r.is_error, f"browser_navigate to the page behind auth is no tool error ({r.text[:200]})")
        nav = r.data
        sc.check(nav.get("status") == "dialog_pending", f"browser_navigate returns dialog_pending ({nav.get('status')}) in {r.seconds:.1f} s")
        d = next((x for x in nav.get("pending_dialogs", []) if x.get("type") == "http_auth"), None)
        sc.check(d is not None, f"its pending_dialogs hold the http_auth ({nav.get('pending_dialogs')})")
        check_shape(sc, d, site, "/secret", "navigate's http_auth")
        listed = await wait_pending(sc, c, "http_auth", None, "the snapshot")
        sc.check(listed["id"] == d["id"], f"the snapshot lists the same {d['id']}")
        deadline = time.monotonic() + UPDATE_DEADLINE_S
        while not [u for u in seen.updates if u >= subscribed] and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        sc.check(bool([u for u in seen.updates if u >= subscribed]), "the subscribed client got resources/updated for it")
        # While the top document's login is asked for, Chromium holds the
        # tab's commands: a call is interrupted, and delivered once later.
        r = await seen.call(c, "browser_cdp", {"method": "Runtime.evaluate", "params": {"expression": "1 + 1", "returnByValue": True}})
        held = (r.data or {}) if r.is_error else {}
        sc.check(held.get("interrupted_by_dialog") is True and held.get("call_id"), f"an evaluate while the login is asked for is interrupted ({r.text[:200]})")
        delivered: list[Any] = []

        r = await seen.call(c, "browser_dialog", {"action": "ask_user"})
        sc.check(r.is_error and "elicitation" in r.text, f"ask_user on an http_auth is a tool error naming elicitation ({r.text[:200]})")
        r = await seen.call(c, "browser_dialog", {"action": "accept"})
        sc.check(r.is_error and "username and password" in r.text, f"accept without a login is a tool error saying what it needs ({r.text[:160]})")

        r = await seen.call(c, "browser_dialog", {"action": "accept", "username": USER, "password": WRONG})
        sc.check(not r.is_error, f"accepting with a wrong login is answered ({r.text[:200]})")
        ans = r.data
        delivered += [x for x in ans.get("completed_calls", []) if x.get("call_id") == held["call_id"]]
        sc.expect(ans.get("answered", {}).get("accepted") is True, f"answered accepted=true ({ans.get('answered')})")
        again = None
        deadline = time.monotonic() + LOAD_DEADLINE_S
        while again is None and time.monotonic() < deadline:
            snap = await snapshot(c)
            again = next((x for x in snap["pending_dialogs"] if x["type"] == "http_auth" and x["id"] != d["id"]), None)
            if again is None:
                await anyio.sleep(0.1)
        sc.check(again is not None, "the wrong login brings the challenge back as a new pending http_auth")
        check_shape(sc, again, site, "/secret", "the second http_auth")
        sc.check(f"{USER}:{WRONG}" in site.received("/secret"), "the site received the wrong login")

        r = await seen.call(c, "browser_dialog", {"action": "accept", "username": USER, "password": PASSWORD, "dialog_id": again["id"]})
        sc.check(not r.is_error, f"accepting with the right login is answered ({r.text[:200]})")
        delivered += [x for x in r.data.get("completed_calls", []) if x.get("call_id") == held["call_id"]]
        await wait_text(sc, c, "Welcome, staff", "the secret page loaded")
        snap = await snapshot(c)
        listed = [x for x in snap.get("completed_calls", []) if x.get("call_id") == held["call_id"]]
        sc.check(len(delivered) <= 1 and (delivered or listed), f"the interrupted evaluate is delivered once ({delivered}, snapshot {listed})")
        seen.texts.append(json.dumps(snap))
        sc.check(snap["url"] == site.url("/secret"), f"the snapshot's url is the secret page ({snap['url']})")
        sc.check(not [x for x in snap["pending_dialogs"] if x["type"] == "http_auth"], "no http_auth is pending any more")
        closed = recent_has(snap, again["id"])
        sc.check(closed is not None and closed.get("closed_by") == "agent", f"recent_dialogs: {again['id']} closed_by agent ({closed})")
        sc.check(f"{USER}:{PASSWORD}" in site.received("/secret"), "the site received the right login")
        # Chromium keeps the realm's login: the page loads again with no prompt.
        nav = await call(c, "browser_navigate", {"url": site.url("/secret") + "?again"})
        sc.expect(nav.get("status") == "loaded", f"the same realm again loads with no prompt ({nav.get('status')}, {nav.get('pending_dialogs')})")
    no_password(sc, seen.texts, srv.log_path, [PASSWORD, WRONG])


async def dismiss_shows_the_401(sc: Scenario, binary: str) -> None:
    site = site_for(sc)
    async with mcp_server(sc, binary, "s", []) as srv:
        c = srv.client
        nav = await call(c, "browser_navigate", {"url": site.url("/secret")})
        sc.check(nav.get("status") == "dialog_pending", f"browser_navigate returns dialog_pending ({nav.get('status')})")
        d = await wait_pending(sc, c, "http_auth", None, "the snapshot")
        ans = await call(c, "browser_dialog", {"action": "dismiss"})
        sc.check(ans.get("answered", {}).get("id") == d["id"], f"dismiss answered {d['id']}")
        await wait_text(sc, c, "401: login required", "the page shows the server's 401 body")
        snap = await snapshot(c)
        closed = recent_has(snap, d["id"])
        sc.check(closed is not None, f"{d['id']} is in recent_dialogs")
        sc.expect(closed.get("closed_by") == "agent", f"closed_by agent ({closed.get('closed_by')})")
        sc.expect(closed.get("accepted") is False, f"accepted false ({closed.get('accepted')})")
        sc.expect(not snap["pending_dialogs"], f"nothing pending ({snap['pending_dialogs']})")


async def stored_credentials(sc: Scenario, binary: str) -> None:
    site = site_for(sc)
    config = os.path.join(sc.tmp, "config.yaml")
    with open(config, "w") as f:
        f.write(
            "browser:\n  credentials:\n"
            f"    \"{site.origin()}\": {{username: {USER}, password_env: STAFF_PASSWORD}}\n"
        )
    seen = Seen()
    env = {"RUST_LOG": "trace", "STAFF_PASSWORD": PASSWORD}
    async with mcp_server(sc, binary, "s", ["--config", config], env=env, message_handler=seen.handler) as srv:
        c = srv.client
        r = await seen.call(c, "browser_navigate", {"url": site.url("/secret")})
        nav = r.data
        sc.check(nav.get("status") == "loaded", f"browser_navigate says loaded with no prompt ({nav.get('status')}, {nav.get('pending_dialogs')})")
        sc.check("Welcome, staff" in await body_text(c), "the page is the secret one")
        snap = await snapshot(c)
        seen.texts.append(json.dumps(snap))
        auth = [x for x in snap["recent_dialogs"] if x.get("type") == "http_auth"]
        sc.check(len(auth) == 1, f"one http_auth in recent_dialogs ({auth})")
        sc.check(auth[0].get("closed_by") == "auto_policy", f"closed_by auto_policy ({auth[0].get('closed_by')})")
        sc.expect(auth[0].get("accepted") is True, f"accepted true ({auth[0].get('accepted')})")
        sc.check(site.received("/secret") == [f"{USER}:{PASSWORD}"], f"the site got the stored login once ({len(site.received('/secret'))} logins)")
    no_password(sc, seen.texts, srv.log_path, [PASSWORD])


async def same_origin_iframe_login(sc: Scenario, binary: str) -> None:
    site = site_for(sc)
    async with mcp_server(sc, binary, "s", []) as srv:
        c = srv.client
        nav = await call(c, "browser_navigate", {"url": site.url("/framed")})
        sc.check(nav.get("status") == "dialog_pending", f"browser_navigate returns dialog_pending ({nav.get('status')})")
        d = await wait_pending(sc, c, "http_auth", None, "the iframe's challenge")
        check_shape(sc, d, site, "/frame-secret", "the iframe's http_auth")
        snap = await snapshot(c)
        top = (snap.get("frame_tree") or {}).get("top") or {}
        sc.check(d["frame_id"] != top.get("frame_id"), f"its frame_id {d['frame_id']} is the iframe's, not the top's")
        sc.check(await evaluate(c, "window.loaded") is False, "the page's own calls answer while it waits (its load has not fired)")
        await call(c, "browser_dialog", {"action": "accept", "username": USER, "password": PASSWORD})
        await wait_text(sc, c, "Welcome, staff", "the iframe's content loaded",
                        "(document.getElementById('f').contentDocument?.body?.innerText) || ''")
        await wait_text(sc, c, "true", "the page's load event fired", "String(window.loaded)")


async def same_origin_iframe_watchdog(sc: Scenario, binary: str) -> None:
    site = site_for(sc)
    async with mcp_server(sc, binary, "s", ["--dialog-timeout-s", "2"]) as srv:
        c = srv.client
        nav = await call(c, "browser_navigate", {"url": site.url("/framed")})
        sc.check(nav.get("status") == "dialog_pending", f"browser_navigate returns dialog_pending ({nav.get('status')})")
        d = await wait_pending(sc, c, "http_auth", None, "the iframe's challenge")
        await wait_text(sc, c, "true", "the page's load completes after the watchdog", "String(window.loaded)")
        text = await evaluate(c, "(document.getElementById('f').contentDocument?.body?.innerText) || ''")
        sc.check("401: login required" in (text or ""), f"the iframe shows the 401 body ({text!r})")
        closed = recent_has(await snapshot(c), d["id"])
        sc.check(closed is not None and closed.get("closed_by") == "watchdog", f"recent_dialogs: closed_by watchdog ({closed})")


async def cross_origin_iframe(sc: Scenario, binary: str) -> None:
    site = site_for(sc)
    async with mcp_server(sc, binary, "s", []) as srv:
        c = srv.client
        nav = await call(c, "browser_navigate", {"url": site.url("/xframed")})
        sc.check(nav.get("status") == "loaded", f"browser_navigate says loaded, no prompt ({nav.get('status')}, {nav.get('pending_dialogs')})")
        snap = await snapshot(c)
        sc.check(not snap["pending_dialogs"], f"nothing pending ({snap['pending_dialogs']})")
        oopif = [ch for ch in (snap.get("frame_tree") or {}).get("children", []) if ch.get("is_oopif")]
        sc.check(len(oopif) == 1, f"the iframe is an OOPIF ({oopif})")
        text = await body_text(c, oopif[0]["frame_id"])
        sc.check("401: login required" in text, f"the OOPIF shows the 401 body ({text!r})")


async def ref_of_link(sc: Scenario, c: Any, name: str) -> str | None:
    found = await call(c, "browser_snapshot", {"find": name})
    ref = None
    for line in found.get("page", "").splitlines():
        if f'link "{name}"' in line and "[ref=" in line:
            ref = line.split("[ref=")[1].split("]")[0]
    sc.check(ref is not None, f"the outline has the link {name!r} ({found.get('page', '')[:300]!r})")
    return ref


async def wait_outline_has(sc: Scenario, c: Any, name: str) -> None:
    """Until the outline lists the link (an iframe's document loads on its own)."""
    deadline = time.monotonic() + LOAD_DEADLINE_S
    while time.monotonic() < deadline:
        if f'link "{name}"' in (await call(c, "browser_snapshot", {"find": name})).get("page", ""):
            return
        await anyio.sleep(0.2)


async def click_link(sc: Scenario, c: Any, name: str) -> dict:
    ref = await ref_of_link(sc, c, name)
    r = await call_raw(c, "browser_click", {"ref": ref})
    sc.check(not r.is_error, f"the click on {name!r} returns, no tool error, in {r.seconds:.1f} s ({r.text[:200]})")
    return r.data


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def download_50_mib(sc: Scenario, binary: str) -> None:
    site = site_for(sc)
    want = await anyio.to_thread.run_sync(site.file_sha256, BIG_BYTES)
    async with mcp_server(sc, binary, "s", []) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": site.url("/files")})
        rss_before = rss_kib(srv.pid)
        clicked = await click_link(sc, c, "big file")
        snap = await snapshot(c)  # the session keeps answering while it streams
        sc.check(snap.get("connection") == "connected", "the session answers while the download streams")
        waited = await call(c, "browser_wait", {"event": "download_done", "timeout_s": DOWNLOAD_DEADLINE_S})
        sc.check(waited.get("happened") is True, f"browser_wait(download_done) wakes ({waited.get('happened')})")
        snap = await snapshot(c)
        downloads = snap.get("downloads", [])
        sc.check(len(downloads) == 1, f"one download listed ({downloads})")
        d = downloads[0]
        sc.check(d["state"] == "completed", f"state completed ({d['state']})")
        sc.check(d["received_bytes"] == BIG_BYTES, f"received_bytes {d['received_bytes']} == {BIG_BYTES}")
        sc.expect(d["total_bytes"] == BIG_BYTES, f"total_bytes {d['total_bytes']}")
        sc.check(d["suggested_filename"] == "big data.bin", f"suggested_filename {d['suggested_filename']!r}")
        sc.check(d["url"] == site.url("/big.bin"), f"url {d['url']}")
        path = d.get("path") or ""
        sc.check(os.path.basename(path) == "big data.bin", f"the file is under its suggested name ({path})")
        got = await anyio.to_thread.run_sync(lambda: hashlib.sha256(open(path, "rb").read()).hexdigest())
        sc.check(got == want, "the file's sha256 is the site's")
        leftovers = [p for p in glob.glob(os.path.join(os.path.dirname(path), "*")) if p != path]
        sc.check(not leftovers, f"nothing else in the download directory ({leftovers})")
        started = [x for x in clicked.get("downloads_started") or [] if x.get("id") == d["id"]]
        sc.check(len(started) == 1 and started[0].get("url") == site.url("/big.bin"), f"the click's result has it in downloads_started ({clicked})")
        told = (clicked.get("downloads_started") or []) + (clicked.get("changes", {}).get("downloads") or [])
        told += snap.get("changes", {}).get("downloads") or []
        told += waited.get("changes", {}).get("downloads") or []
        states = [x.get("state") for x in told if x.get("id") == d["id"]] + (["in_progress"] if any(x.get("id") == d["id"] for x in clicked.get("downloads_started") or []) else [])
        sc.check("completed" in states, f"a result's changes told the completed download ({told})")
        again = await snapshot(c)
        sc.check(not (again.get("changes") or {}).get("downloads"), f"and not twice ({again.get('changes')})")
        grew = rss_kib(srv.pid) - rss_before
        sc.check(grew < 25 * 1024, f"the server's RSS grew by {grew} KiB, not by the file's 50 MiB")
        directory = os.path.dirname(path)
    sc.check(not os.path.exists(directory), f"the task's download directory is gone with the session ({directory})")


async def download_past_max_bytes(sc: Scenario, binary: str) -> None:
    site = site_for(sc)
    config = os.path.join(sc.tmp, "config.yaml")
    with open(config, "w") as f:
        f.write(f"browser:\n  downloads:\n    max_bytes: {MAX_BYTES}\n")
    async with mcp_server(sc, binary, "s", ["--config", config]) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": site.url("/files")})
        await click_link(sc, c, "huge file")
        waited = await call(c, "browser_wait", {"event": "download_done", "timeout_s": DOWNLOAD_DEADLINE_S})
        sc.check(waited.get("happened") is True, "browser_wait(download_done) wakes for the cancel")
        d = (await snapshot(c))["downloads"][0]
        sc.check(d["state"] == "canceled", f"state canceled ({d['state']})")
        sc.check("max_bytes" in (d.get("note") or ""), f"it says why ({d.get('note')})")
        sc.check(MAX_BYTES < d["received_bytes"] <= HUGE_BYTES, f"the last figure is kept, not 0: {d['received_bytes']} bytes")
        directory = os.path.dirname(d.get("path") or "/nonexistent/x")
        await anyio.sleep(0.5)
        files = glob.glob(os.path.join(directory, "*"))
        sc.check(not files, f"no file is left ({files})")


async def download_from_a_blocked_origin(sc: Scenario, binary: str) -> None:
    site = site_for(sc)
    async with mcp_server(sc, binary, "s", ["--blocked-origins", site.origin("localhost")]) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": site.url("/files")})
        await click_link(sc, c, "elsewhere file")
        deadline = time.monotonic() + LOAD_DEADLINE_S
        blocked: list = []
        while not blocked and time.monotonic() < deadline:
            snap = await snapshot(c)
            blocked = [b for b in snap.get("blocked_navigations", []) if "big.bin" in b.get("url", "")]
            if not blocked:
                await anyio.sleep(0.1)
        sc.check(bool(blocked), f"the download is in blocked_navigations ({snap.get('blocked_navigations')})")
        sc.check(not snap.get("downloads"), f"and never in downloads ({snap.get('downloads')})")
        scratch = glob.glob(os.path.join(sc.tmp, "**", "big*"), recursive=True) + glob.glob(os.path.join(sc.tmp, "**", "*.crdownload"), recursive=True)
        sc.check(not scratch, f"nothing reached the disk ({scratch})")


async def changes_tell_what_a_policy_did(sc: Scenario, binary: str) -> None:
    site = site_for(sc)
    async with mcp_server(sc, binary, "s", ["--policy", "confirm=auto_dismiss"]) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": site.url("/open")})
        await call(c, "browser_navigate", {"url": site.url("/timer-confirm")})
        # The page's timer asks after the call returned; the site hears the answer.
        deadline = time.monotonic() + LOAD_DEADLINE_S
        while not site.received("/confirmed") and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        sc.check(site.received("/confirmed") == ["v=false"], f"the policy dismissed the confirm ({site.received('/confirmed')})")
        first = await snapshot(c)
        ch = first.get("changes") or {}
        opened = [d for d in ch.get("dialogs_opened", []) if d.get("type") == "confirm"]
        closed = [d for d in ch.get("dialogs_closed", []) if d.get("type") == "confirm"]
        sc.check(len(opened) == 1 and len(closed) == 1, f"the next result's changes tell it opened and closed ({ch})")
        sc.check(closed[0].get("closed_by") == "auto_policy" and closed[0].get("accepted") is False, f"closed_by auto_policy, accepted false ({closed[0]})")
        after = await snapshot(c)
        ch2 = after.get("changes") or {}
        sc.check(not ch2.get("dialogs_opened") and not ch2.get("dialogs_closed"), f"the result after that does not tell it again ({ch2})")


async def a_click_returns_with_what_it_started(sc: Scenario, binary: str) -> None:
    site = site_for(sc)
    async with mcp_server(sc, binary, "s", []) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": site.url("/files")})
        clicked = await click_link(sc, c, "slow page")
        navigated = (clicked.get("changes") or {}).get("navigated")
        sc.check(site.url("/slow") in json.dumps(navigated), f"the click's own result says the tab went there (changes.navigated {navigated})")
        snap = await snapshot(c)
        sc.check(snap.get("url") == site.url("/slow") and snap.get("title") == "Arrived", f"the next snapshot reads the page the click went to ({snap.get('url')}, {snap.get('title')!r})")
        page = (await call(c, "browser_snapshot", {"find": "slow page arrived"})).get("page", "")
        sc.check("the slow page arrived" in page, f"its outline is the new page's ({page[:200]!r})")

        await call(c, "browser_navigate", {"url": site.url("/files")})
        clicked = await click_link(sc, c, "no content")
        snap = await snapshot(c)
        sc.check(snap.get("url") == site.url("/files"), f"a 204 leaves the page where it was ({snap.get('url')})")
        sc.check(not clicked.get("downloads_started"), f"and starts no download ({clicked})")

        clicked = await click_link(sc, c, "small file")
        started = clicked.get("downloads_started") or []
        sc.check(len(started) == 1 and started[0].get("url") == site.url("/small.bin"), f"the click's result names the download it started ({clicked})")
        sc.check(started and started[0].get("suggested_filename") == "small.bin", f"under its suggested name ({started})")
        # A 1 MiB file may be done before any browser_wait could start: read the snapshot.
        deadline = time.monotonic() + DOWNLOAD_DEADLINE_S
        d: list = []
        while time.monotonic() < deadline:
            d = [x for x in (await snapshot(c)).get("downloads", []) if started and x["id"] == started[0].get("id")]
            if d and d[0]["state"] != "in_progress":
                break
            await anyio.sleep(0.1)
        sc.check(len(d) == 1 and d[0]["state"] == "completed" and d[0]["received_bytes"] == MIB, f"it completes with every byte ({d})")

        # browser_navigate to an attachment: the navigation becomes a
        # download (Page.navigate says net::ERR_ABORTED). Not an error: the
        # page stays, the result names the download.
        r = await call_raw(c, "browser_navigate", {"url": site.url("/small.bin?navigated")})
        sc.check(not r.is_error, f"browser_navigate to an attachment is not an error ({r.text[:200]!r})")
        nav = r.data or {}
        got = [x for x in nav.get("downloads_started") or [] if "navigated" in (x.get("url") or "")]
        sc.check(nav.get("status") == "loaded" and len(got) == 1, f"it returns loaded with the download in downloads_started ({nav})")
        sc.check("download" in (nav.get("note") or ""), f"and a note saying the URL was a download ({nav.get('note')!r})")
        sc.check(nav.get("url") == site.url("/files"), f"the page stays where it was ({nav.get('url')})")
        if got:
            done = await wait_download_done(sc, c, got[0]["id"], "the navigated download")
            sc.check(done["state"] == "completed" and done["received_bytes"] == MIB, f"and the download completes ({done})")
        snap = await snapshot(c)
        sc.check(snap.get("url") == site.url("/files"), f"the next snapshot is still on the page ({snap.get('url')})")

        # A javascript: link loads nothing: nothing to wait for (a click that
        # waited for a navigation that never comes would take the 10 s cap).
        r = await call_raw(c, "browser_click", {"ref": await ref_of_link(sc, c, "script link")})
        sc.check(not r.is_error and r.seconds < 8.0, f"a javascript: link's click returns without waiting ({r.seconds:.1f} s, {r.text[:120]})")

        # A link inside a cross-origin iframe (its own renderer): its download
        # is the click's too.
        await call(c, "browser_navigate", {"url": site.url("/xfiles")})
        await wait_outline_has(sc, c, "framed file")
        # Clicked the moment its link shows: the click itself waits until the
        # OOPIF can take input (act.py fresh_oopif_clicks).
        clicked = await click_link(sc, c, "framed file")
        started = [x for x in clicked.get("downloads_started") or [] if "oopif" in (x.get("url") or "")]
        sc.check(len(started) == 1, f"a click in an OOPIF returns with the download it started ({clicked})")

        await call(c, "browser_navigate", {"url": site.url("/files")})
        # A download attribute starts no navigation: the download begins after
        # the click's reply, and a result's changes tell it.
        clicked = await click_link(sc, c, "attribute file")
        told = list(clicked.get("downloads_started") or []) + list((clicked.get("changes") or {}).get("downloads") or [])
        deadline = time.monotonic() + DOWNLOAD_DEADLINE_S
        while not any("attr" in (x.get("url") or "") or x.get("id") not in (None, started[0].get("id") if started else None) for x in told) and time.monotonic() < deadline:
            await anyio.sleep(0.1)
            told += (await snapshot(c)).get("changes", {}).get("downloads") or []
        sc.check(any(x.get("id") not in (None, started[0].get("id") if started else None) for x in told), f"the attribute link's download is told in a result ({told})")


async def wait_download_done(sc: Scenario, c: Any, download_id: str, what: str) -> dict:
    """Polls the snapshot until download_id is no longer in_progress."""
    deadline = time.monotonic() + LOAD_DEADLINE_S
    d: list = []
    while time.monotonic() < deadline:
        d = [x for x in (await snapshot(c)).get("downloads", []) if x.get("id") == download_id]
        if d and d[0].get("state") != "in_progress":
            return d[0]
        await anyio.sleep(0.2)
    raise Fail(f"{what}: {download_id} still not done after {LOAD_DEADLINE_S:.0f} s ({d})")


TEST_HOSTS = "--host-resolver-rules=MAP *.test 127.0.0.1"


async def download_on_a_browser_we_did_not_launch(sc: Scenario, binary: str) -> None:
    site = site_for(sc)
    chromium = await launch_chromium(sc, "x", [TEST_HOSTS])
    async with mcp_server(sc, binary, "s", ["--cdp-url", chromium.http_url]) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": site.url("/files", "a.test")})
        clicked = await click_link(sc, c, "small file")
        started = clicked.get("downloads_started") or []
        sc.check(len(started) == 1, f"the click started one download ({clicked})")
        d = await wait_download_done(sc, c, started[0]["id"], "a download from http://a.test")
        sc.check(d["state"] == "completed" and d["received_bytes"] == MIB, f"it completes with every byte ({d})")
        path = d.get("path") or ""
        sc.check(os.path.basename(path) == "small.bin" and os.path.isfile(path), f"under its suggested name here ({path})")
        sc.check(os.path.getsize(path) == MIB, f"all of it ({os.path.getsize(path)} bytes)")
        sc.check(not d.get("note"), f"no note: it is on this machine ({d.get('note')})")
        directory = os.path.dirname(path)
    sc.check(not os.path.exists(directory), f"the task's download directory is gone with the session ({directory})")


def own_address() -> str:
    """This machine's address on its network (not loopback)."""
    import socket

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("203.0.113.1", 9))  # no packet is sent: it only picks a route
        return s.getsockname()[0]
    finally:
        s.close()


def forward(sc: Scenario, host: str, to_port: int) -> int:
    """A TCP forwarder on host:PORT to 127.0.0.1:to_port; returns PORT."""
    import socket

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind((host, 0))
    listener.listen(16)
    listener.settimeout(0.2)
    stop = threading.Event()

    def pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while True:
                data = a.recv(1 << 16)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        finally:
            for x in (a, b):
                try:
                    x.close()
                except OSError:
                    pass

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except (socket.timeout, OSError):
                continue
            up = socket.create_connection(("127.0.0.1", to_port))
            threading.Thread(target=pipe, args=(conn, up), daemon=True).start()
            threading.Thread(target=pipe, args=(up, conn), daemon=True).start()
        listener.close()

    threading.Thread(target=accept, daemon=True).start()
    sc.stack.callback(stop.set)
    return listener.getsockname()[1]


async def download_on_a_remote_browser(sc: Scenario, binary: str) -> None:
    site = site_for(sc)
    chromium = await launch_chromium(sc, "x", [TEST_HOSTS])
    host = own_address()
    sc.check(not host.startswith("127."), f"this machine has a non-loopback address ({host})")
    port = forward(sc, host, chromium.port)
    async with mcp_server(sc, binary, "s", ["--cdp-url", f"http://{host}:{port}"]) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": site.url("/files", "a.test")})
        clicked = await click_link(sc, c, "small file")
        started = clicked.get("downloads_started") or []
        sc.check(len(started) == 1, f"the click started one download ({clicked})")
        d = await wait_download_done(sc, c, started[0]["id"], "a download on a remote browser")
        sc.check(d["state"] == "completed" and d["received_bytes"] == MIB, f"it completes with every byte ({d})")
        path = d.get("path") or ""
        note = d.get("note") or ""
        sc.check(path.startswith("/tmp/cdp-supervisor-downloads-"), f"into a directory on the browser's disk ({path})")
        sc.check("browser's machine" in note, f"a note says the path is on the browser's machine ({note})")
        # The "remote" browser is on this machine after all: the file is there.
        sc.stack.callback(lambda: __import__("shutil").rmtree(os.path.dirname(path), ignore_errors=True))
        sc.check(os.path.isfile(path) and os.path.getsize(path) == MIB, f"Chromium wrote it there ({path})")


SCENARIOS = {
    "accept_after_a_wrong_login": accept_after_a_wrong_login,
    "dismiss_shows_the_401": dismiss_shows_the_401,
    "stored_credentials": stored_credentials,
    "same_origin_iframe_login": same_origin_iframe_login,
    "same_origin_iframe_watchdog": same_origin_iframe_watchdog,
    "cross_origin_iframe": cross_origin_iframe,
    "changes_tell_what_a_policy_did": changes_tell_what_a_policy_did,
    "download_50_mib": download_50_mib,
    "download_past_max_bytes": download_past_max_bytes,
    "download_from_a_blocked_origin": download_from_a_blocked_origin,
    "a_click_returns_with_what_it_started": a_click_returns_with_what_it_started,
    "download_on_a_browser_we_did_not_launch": download_on_a_browser_we_did_not_launch,
    "download_on_a_remote_browser": download_on_a_remote_browser,
}
PHASES = [
    ["accept_after_a_wrong_login", "dismiss_shows_the_401", "stored_credentials"],
    ["same_origin_iframe_login", "same_origin_iframe_watchdog", "cross_origin_iframe", "changes_tell_what_a_policy_did"],
    # Apart: a 50 MiB download loads a 2-core machine enough that another
    # scenario's click can miss the supervisor's 1 s element deadline.
    ["download_50_mib"],
    ["download_past_max_bytes", "download_from_a_blocked_origin"],
    # Apart too: beside a download past max_bytes, an action on a loaded
    # 2-core machine can miss the navigation it started (an OOPIF link's
    # download, a slow page's commit: issue 44's open "click that never
    # arrives" hunt), and this scenario checks exactly what a click returns.
    ["a_click_returns_with_what_it_started"],
    ["download_on_a_browser_we_did_not_launch", "download_on_a_remote_browser"],
]


async def main() -> int:
    return await run_phases("prompts.py", __doc__, SCENARIOS, PHASES)


if __name__ == "__main__":
    exit_with(main)
