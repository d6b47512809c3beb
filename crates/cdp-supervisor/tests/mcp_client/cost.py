"""What an agent pays per step (issue 33), checked with the official MCP Python SDK.

Drives the real `cdp-supervisor mcp` binary over stdio; the server launches
its own headless Chromium. The large page is largepage.py's (3,000 visible
links, hidden menus, 60,000+ DOM nodes, an OOPIF with 20 links), served on
127.0.0.1 with its iframe from localhost (another site: an OOPIF).

  every_link_reachable      browser_snapshot, then browser_snapshot(page_cursor)
                            until no cursor: every visible link has a ref,
                            each once; no link of a hidden block (mobile menu
                            display:none, off-canvas, a fixed menu parked
                            off the left edge, `hidden`, closed <details>,
                            aria-hidden) shows; the OOPIF's links
                            have f<K>e<N> refs and frame_refs maps f<K> to the
                            OOPIF's frame_id; each cut part ends with a line
                            saying how many nodes remain and naming the call
                            that continues (page_cursor); refs are unique and
                            no more than the page's actionable elements
  find_returns_the_matches  browser_snapshot(find: "method-01") gives refs to
                            exactly the 102 visible links whose name holds
                            it (two inside the OOPIF) and to nothing else, no
                            hidden link; a ref it gave clicks through
  continuation_ref_clicks   a ref from a page_cursor continuation (a link far
                            down the page) clicks through: the site is asked
                            for its target and the next snapshot's url is it;
                            a ref of the first part still acts after the
                            continuations were read
  tabs_in_result_and_changes a target=_blank link's click returns tabs_opened;
                            a popup a page timer opens ~1.5 s after another
                            click (when the site says go, after that click's
                            result) is in the next result's changes.tabs_opened,
                            and in no result after that
  twenty_clicks_twenty      twenty clicks by ref on a counter: the page counts
                            20 and the next outline shows "Count: 20"; logs
                            the median click time (a figure, not an assertion)
  console_errors_one_line   uncaught exceptions, console.error(Error), a
                            rejected promise with deep stacks, a multi-line and
                            a 5,000-char message: each console_errors entry is
                            one line of at most 300 chars that still names it

Every scenario has its own server process, Chromium, user-data-dir, ports and
fixture site, and cleans up even when it fails. Every wait has a deadline; no
assertion depends on how fast the machine is.

Usage: python cost.py PATH/TO/cdp-supervisor [--only NAME[,NAME…]] [--serial]
"""

from __future__ import annotations

import collections
import json
import re
import statistics
import time
from typing import Any

import anyio

import largepage as lp
from common import (
    Fail,
    Scenario,
    call_raw,
    exit_with,
    mcp_server,
    page,
    run_phases,
    set_log_name,
)
from outline import FRAME_REF_RE, Line, call_ok, lines_of, outline_of

set_log_name("cost")

# Seconds. A large page's outline is read part by part; each call has the
# SDK's own 60 s read timeout, the whole scenario this.
LARGE_SCENARIO_DEADLINE_S = 400.0
OOPIF_DEADLINE_S = 20.0  # the OOPIF shows in frame_tree and its links are parsed
NAVIGATED_DEADLINE_S = 15.0  # a click's navigation reaches the site and the snapshot
POPUP_DEADLINE_S = 15.0  # the timer's popup asks the site for its page
CONSOLE_DEADLINE_S = 10.0  # the page's errors show in console_errors

MAX_PARTS = 200  # a continuation chain longer than this never ends
PART_MAX_LINES = 2_001  # DESIGN: 2,000 lines by default, plus the line that says what remains
REF_SLACK = 10  # refs beyond the page's actionable elements (its own count) that are still sane
CONSOLE_LINE_MAX = 300  # one short line per console_errors entry
FIND_QUERY = "method-01"
FAR_LINK = lp.method_name(2900)  # a link far down the page, past the first part
TIMER_POPUP_AFTER_S = 1.5  # the popup opens this long after the click, and after its result

# --- calls ------------------------------------------------------------------------------


async def evaluate(c, expression: str, frame_id: str | None = None) -> Any:
    """Runtime.evaluate through browser_cdp; the value."""
    args: dict[str, Any] = {"method": "Runtime.evaluate", "params": {"expression": expression, "returnByValue": True}}
    if frame_id:
        args["frame_id"] = frame_id
    d, _ = await call_ok(c, "browser_cdp", args)
    reply = d.get("result")
    if not isinstance(reply, dict) or "result" not in reply or "exceptionDetails" in reply:
        raise Fail(f"Runtime.evaluate {expression!r}: {str(reply)[:300]}")
    return reply["result"].get("value")


async def navigate(sc: Scenario, c, url: str) -> None:
    d, r = await call_ok(c, "browser_navigate", {"url": url})
    sc.check(d.get("status") == "loaded", f"browser_navigate {url} loaded in {r.seconds:.1f} s ({d.get('status')})")


def hidden_leaks(lines: list[Line]) -> list[str]:
    return [x.raw.strip() for x in lines if any(m in x.raw for m in lp.HIDDEN_MARKERS)]


def sample(items: list, n: int = 8) -> str:
    return f"{items[:n]}{' …' if len(items) > n else ''}"


# --- the large page ----------------------------------------------------------------------


async def large_site(sc: Scenario, extra: dict | None = None) -> lp.Site:
    site = lp.Site({**lp.large_site_routes(), **(extra or {})})
    sc.stack.callback(site.stop)
    return site


async def open_large(sc: Scenario, c, site: lp.Site) -> str:
    """Navigates to the large page and waits (deadline) for its OOPIF to be
    listed and its links parsed; checks the fixture is what the tests
    assume (60,000+ DOM nodes, the mobile menu display:none, 20 links in the
    OOPIF); returns the OOPIF's frame_id."""
    await navigate(sc, c, site.url(lp.LARGE_PATH))
    frame_url = site.url(lp.FRAME_PATH, "localhost")
    deadline = time.monotonic() + OOPIF_DEADLINE_S
    frame_id = None
    while True:
        d, _ = await call_ok(c, "browser_snapshot", {"page": False})
        kids = (d.get("frame_tree") or {}).get("children") or []
        hit = [f for f in kids if f.get("url") == frame_url and f.get("is_oopif")]
        if hit:
            frame_id = hit[0]["frame_id"]
            links = await evaluate(c, "document.readyState === 'complete' ? document.links.length : -1", frame_id)
            if links == lp.FRAME_LINKS:
                break
        if time.monotonic() > deadline:
            raise Fail(f"the OOPIF {frame_url} with {lp.FRAME_LINKS} links never showed: frame_tree {kids}")
        await anyio.sleep(0.2)
    sc.log(f"the OOPIF is frame {frame_id}")
    facts = await evaluate(
        c,
        "[(() => { const w = document.createTreeWalker(document); let n = 1; while (w.nextNode()) n++; return n; })(),"
        " innerWidth,"
        " getComputedStyle(document.querySelector('.mobile-nav')).display, document.links.length,"
        " document.querySelector('.offscreen-menu').getBoundingClientRect().right]",
    )
    nodes, width, menu_display, links, offscreen_right = facts
    sc.check(nodes >= 60_000, f"fixture: the page has 60,000+ DOM nodes ({nodes:,})")
    sc.check(menu_display == "none", f"fixture: the mobile menu is display:none at this viewport ({width} px wide)")
    sc.check(offscreen_right <= 0, f"fixture: the off-screen menu ends left of the viewport (right edge {offscreen_right})")
    sc.check(
        links == len(lp.top_link_names()) + len(lp.hidden_link_names()),
        f"fixture: the top document holds {links} links, {len(lp.top_link_names())} of them visible",
    )
    return frame_id


class Parts:
    """A whole outline: the first browser_snapshot and every continuation it named."""

    def __init__(self) -> None:
        self.data: list[dict] = []
        self.lines: list[list[Line]] = []
        self.seconds: list[float] = []
        self.remaining_said: list[int | None] = []  # what each cut part's last line says remains

    def all_lines(self) -> list[tuple[int, Line]]:
        return [(i, x) for i, ls in enumerate(self.lines) for x in ls]

    def frame_refs(self, sc: Scenario) -> dict[str, str]:
        merged: dict[str, str] = {}
        for i, d in enumerate(self.data):
            for k, f in (d.get("frame_refs") or {}).items():
                if merged.get(k, f) != f:
                    raise Fail(f"part {i}: frame_refs maps {k} to {f}, an earlier part to {merged[k]}")
                merged[k] = f
        return merged


async def read_outline(sc: Scenario, c, args: dict, what: str) -> Parts:
    """browser_snapshot(args), then browser_snapshot(page_cursor) while a
    cursor comes back (at most MAX_PARTS parts). Checks each cut part: it
    says page_truncated, carries a cursor, and its last line says how many
    nodes remain and names the continuing call."""
    parts = Parts()
    cursor: str | None = None
    while True:
        i = len(parts.data)
        if i >= MAX_PARTS:
            raise Fail(f"{what}: the outline still had a page_cursor after {MAX_PARTS} parts: it never ends")
        d, r = await call_ok(c, "browser_snapshot", args if cursor is None else {"page_cursor": cursor})
        text = outline_of(d, f"{what} part {i}")
        ls = lines_of(text)
        parts.data.append(d)
        parts.lines.append(ls)
        parts.seconds.append(r.seconds)
        truncated = d.get("page_truncated")
        nxt = d.get("page_cursor")
        sc.log(
            f"{what} part {i}: {len(ls)} lines, {len(text):,} chars, page_truncated={truncated}, "
            f"page_cursor={'yes' if nxt else 'no'}, {r.seconds * 1000:.0f} ms"
        )
        if truncated is not True:
            sc.check(not nxt, f"{what} part {i}: not truncated and no page_cursor")
            parts.remaining_said.append(None)
            break
        if not isinstance(nxt, str) or not nxt:
            # The checks on what was read still run (and say what it lacks).
            sc.expect(
                False,
                f"{what} part {i} is page_truncated but carries no page_cursor: the rest of the outline "
                f"cannot be reached (DESIGN 'Acting on the page'); its last line: {ls[-1].raw if ls else ''!r}",
            )
            parts.remaining_said.append(None)
            break
        sc.expect(len(ls) <= PART_MAX_LINES, f"{what} part {i}: at most {PART_MAX_LINES} lines ({len(ls)})")
        last = ls[-1].raw if ls else ""
        said = last.replace(nxt, "")
        numbers = [int(n.replace(",", "").replace("_", "")) for n in re.findall(r"\d[\d,_]*", said)]
        if i == 0:
            sc.log(f"{what}: a cut part ends with: {last!r}")
        sc.check(
            "page_cursor" in last and bool(numbers),
            f"{what} part {i}: its last line says how many nodes remain and names the continuing call "
            f"(page_cursor): {last[:200]!r}",
        )
        parts.remaining_said.append(numbers[0])
        cursor = nxt
    # What each cut part said remains, against what the later parts held
    # (their node lines, without their own closing line).
    for i, said in enumerate(parts.remaining_said):
        if said is None:
            continue
        later = sum(len(ls) - (1 if parts.remaining_said[j] is not None else 0) for j, ls in enumerate(parts.lines) if j > i)
        sc.expect(
            0.9 * later <= said <= 1.1 * later + 5,
            f"{what} part {i}: it says {said:,} nodes remain; the later parts hold {later:,} node lines",
        )
    return parts


# --- scenarios ---------------------------------------------------------------------------


async def every_link_reachable(sc: Scenario, binary: str) -> None:
    site = await large_site(sc)
    async with mcp_server(sc, binary, "a", []) as srv:
        c = srv.client
        frame_id = await open_large(sc, c, site)
        parts = await read_outline(sc, c, {}, "outline")
        sc.expect(len(parts.data) > 1, f"the large page's outline is cut into parts ({len(parts.data)})")
        everything = parts.all_lines()
        total_chars = sum(len(outline_of(d, "outline")) for d in parts.data)
        refd = [(i, x) for i, x in everything if x.ref]
        sc.log(
            f"FIGURE the whole outline: {len(parts.data)} parts, {len(everything):,} lines, {total_chars:,} chars, "
            f"{len(refd):,} refs; first part {parts.seconds[0] * 1000:.0f} ms, continuations "
            f"{sum(parts.seconds[1:]) * 1000:.0f} ms in all"
        )
        leaks = hidden_leaks([x for _, x in everything])
        sc.expect(not leaks, f"no link of a hidden block shows ({len(leaks)} lines do: {sample(leaks)})")
        links = collections.Counter(x.name for _, x in refd if x.role == "link")
        missing = [n for n in lp.top_link_names() if links[n] == 0]
        sc.expect(
            not missing,
            f"every visible link of the top document has a ref: {len(lp.top_link_names()) - len(missing):,} "
            f"of {len(lp.top_link_names()):,} (missing {sample(missing)})",
        )
        twice = sorted(n for n, k in links.items() if k > 1)
        sc.expect(not twice, f"each link shows once across all parts ({len(twice)} more often: {sample(twice)})")
        refs = collections.Counter(x.ref for _, x in refd)
        reused = sorted(r for r, k in refs.items() if k > 1)
        sc.expect(not reused, f"every ref is unique across parts ({sample(reused)} repeat)")
        sc.expect(
            len(refs) <= lp.actionable_count() + REF_SLACK,
            f"refs are sane: {len(refs):,} for {lp.actionable_count():,} actionable elements",
        )
        frame_refs = parts.frame_refs(sc)
        sc.log(f"frame_refs across parts: {frame_refs}")
        in_frame = {x.name: x.ref for _, x in refd if x.name in set(lp.frame_link_names())}
        absent = [n for n in lp.frame_link_names() if n not in in_frame]
        sc.check(not absent, f"the OOPIF's {lp.FRAME_LINKS} links are in the outline with refs (missing {sample(absent)})")
        keys = {FRAME_REF_RE.match(r).group(1) if FRAME_REF_RE.match(r) else None for r in in_frame.values()}
        sc.check(None not in keys and len(keys) == 1, f"the OOPIF's links have f<K>e<N> refs of one frame ({sorted(in_frame.values())[:4]} …)")
        k = keys.pop()
        sc.check(frame_refs.get(k) == frame_id, f"frame_refs maps {k} to the OOPIF's frame_id {frame_id} ({frame_refs.get(k)})")
        top_refs = [x.ref for _, x in refd if x.name in set(lp.top_link_names())]
        sc.expect(
            all(re.fullmatch(r"e\d+", r) for r in top_refs),
            "the top document's links have e<N> refs",
        )


async def find_returns_the_matches(sc: Scenario, binary: str) -> None:
    site = await large_site(sc)
    async with mcp_server(sc, binary, "b", []) as srv:
        c = srv.client
        frame_id = await open_large(sc, c, site)
        d, r = await call_ok(c, "browser_snapshot", {"find": FIND_QUERY})
        text = outline_of(d, f"find {FIND_QUERY!r}")
        ls = lines_of(text)
        sc.log(f"find {FIND_QUERY!r}: {len(ls)} lines, {len(text):,} chars, {r.seconds * 1000:.0f} ms; first lines:\n" + "\n".join(x.raw for x in ls[:12]))
        sc.check(d.get("page_truncated") is not True, f"the {len(lp.matching(FIND_QUERY))} matches fit in one result (page_truncated {d.get('page_truncated')})")
        expected = lp.matching(FIND_QUERY)
        refd = [x for x in ls if x.ref]
        got = collections.Counter(x.name for x in refd)
        others = [x.raw.strip() for x in refd if x.role != "link" or FIND_QUERY not in x.name.lower()]
        sc.expect(not others, f"nothing but matching links has a ref ({len(others)} others: {sample(others, 5)})")
        leaks = hidden_leaks(ls)
        sc.expect(not leaks, f"no hidden link matches ({len(leaks)} do: {sample(leaks, 5)})")
        missing = sorted(expected - set(got))
        extra = sorted(set(got) - expected)
        sc.check(
            not missing and not extra,
            f"refs go to exactly the {len(expected)} visible links holding {FIND_QUERY!r} "
            f"(missing {len(missing)}: {sample(missing, 5)}; extra {len(extra)}: {sample(extra, 5)})",
        )
        sc.check(all(k == 1 for k in got.values()), "each match shows once")
        in_frame = {x.name: x.ref for x in refd if x.name.startswith("oopif ")}
        frame_refs = d.get("frame_refs") or {}
        sc.check(
            all((m := FRAME_REF_RE.match(ref)) and frame_refs.get(m.group(1)) == frame_id for ref in in_frame.values()),
            f"the OOPIF's matches have f<K>e<N> refs that frame_refs maps to its frame ({in_frame}, {frame_refs})",
        )
        # A ref that find gave is a ref like any other.
        target = lp.method_name(150)
        ref = next(x.ref for x in refd if x.name == target)
        await call_ok(c, "browser_click", {"ref": ref})
        path = lp.TARGET_PREFIX + target
        asked = await anyio.to_thread.run_sync(site.wait_asked, path, NAVIGATED_DEADLINE_S)
        sc.check(asked, f"a click on the ref find gave for {target} reached the site ({path})")


async def continuation_ref_clicks(sc: Scenario, binary: str) -> None:
    site = await large_site(sc)
    async with mcp_server(sc, binary, "c", []) as srv:
        c = srv.client
        await open_large(sc, c, site)
        parts = await read_outline(sc, c, {}, "outline")
        where = {x.name: (i, x.ref) for i, x in parts.all_lines() if x.ref and x.role == "link"}
        sc.check(FAR_LINK in where, f"{FAR_LINK} has a ref in some part ({len(where):,} link refs in {len(parts.data)} parts)")
        part, far = where[FAR_LINK]
        sc.check(part >= 1, f"{FAR_LINK} came from a page_cursor continuation (part {part}, ref {far})")
        # Every part's refs stay valid together: a button of the first part still acts.
        settings = next((x.ref for x in parts.lines[0] if x.role == "button" and x.name == "Settings"), None)
        sc.check(settings is not None, "the first part has the Settings button with a ref")
        await call_ok(c, "browser_click", {"ref": settings})
        sc.check(await evaluate(c, "window.settingsClicks") == 1, "a ref of the first part still clicks after the continuations")
        d, r = await call_ok(c, "browser_click", {"ref": far})
        sc.log(f"browser_click {far} ({FAR_LINK}) returned in {r.seconds * 1000:.0f} ms: {json.dumps(d)[:300]}")
        path = lp.TARGET_PREFIX + FAR_LINK
        asked = await anyio.to_thread.run_sync(site.wait_asked, path, NAVIGATED_DEADLINE_S)
        sc.check(asked, f"the site was asked for {path}")
        deadline = time.monotonic() + NAVIGATED_DEADLINE_S
        while True:
            d, _ = await call_ok(c, "browser_snapshot", {"page": False})
            if d.get("url") == site.url(path) or time.monotonic() > deadline:
                break
            await anyio.sleep(0.2)
        sc.check(d.get("url") == site.url(path), f"the next snapshot's url is the link's target ({d.get('url')})")
        sc.expect(d.get("title") == f"Target {FAR_LINK}", f"and its title ({d.get('title')!r})")


def tab_pages(go: dict) -> dict:
    poll = (
        "window.polling = setInterval(async () => {"
        " const r = await fetch('/late-go', {cache: 'no-store'});"
        " if ((await r.text()) === 'go') { clearInterval(window.polling); window.open('/late', '_blank'); }"
        "}, 100);"
    )
    return {
        "/tabs": lambda port: page(
            "Tabs",
            '<p><a href="/popped" target=_blank>Open help</a></p>'
            f'<p><button onclick="{poll}">Open later</button></p>',
        ),
        "/popped": lambda port: page("Popped", "<h1>Popped</h1>"),
        "/late": lambda port: page("Late", "<h1>Late</h1>"),
        "/late-go": lambda port: "go" if go.get("go") else "wait",
    }


def opened_ids(entries: Any) -> list[str]:
    return [e.get("target_id") for e in entries or [] if isinstance(e, dict)]


async def tabs_in_result_and_changes(sc: Scenario, binary: str) -> None:
    go: dict = {}
    site = lp.Site(tab_pages(go))
    sc.stack.callback(site.stop)
    async with mcp_server(sc, binary, "d", []) as srv:
        c = srv.client
        await navigate(sc, c, site.url("/tabs"))
        d, _ = await call_ok(c, "browser_snapshot", {})
        ls = lines_of(outline_of(d, "tabs page"))
        link = next((x.ref for x in ls if x.role == "link" and x.name == "Open help"), None)
        later = next((x.ref for x in ls if x.role == "button" and x.name == "Open later"), None)
        sc.check(bool(link and later), f"refs for the link and the button ({link}, {later})")
        d, r = await call_ok(c, "browser_click", {"ref": link})
        sc.log(f"the target=_blank click returned in {r.seconds * 1000:.0f} ms: {json.dumps(d)[:300]}")
        first = opened_ids(d.get("tabs_opened"))
        sc.check(len(first) == 1, f"the target=_blank click returns tabs_opened in its own result ({d.get('tabs_opened')})")
        d, _ = await call_ok(c, "browser_snapshot", {"page": False})
        sc.expect(
            first[0] not in opened_ids((d.get("changes") or {}).get("tabs_opened")),
            f"the next result's changes do not tell that tab again ({d.get('changes')})",
        )
        clicked = time.monotonic()
        d, r = await call_ok(c, "browser_click", {"ref": later})
        sc.log(f"the Open later click returned in {r.seconds * 1000:.0f} ms: {json.dumps(d)[:300]}")
        # The popup opens when the site says go: after this click's result, and
        # about TIMER_POPUP_AFTER_S after the click, whatever the machine's speed.
        await anyio.sleep(max(0.0, TIMER_POPUP_AFTER_S - (time.monotonic() - clicked)))
        go["go"] = True
        asked = await anyio.to_thread.run_sync(site.wait_asked, "/late", POPUP_DEADLINE_S)
        sc.check(asked, "the page's timer opened the popup (the site was asked for /late)")
        d, _ = await call_ok(c, "browser_snapshot", {"page": False})
        changes = d.get("changes")
        sc.log(f"changes of the next result: {json.dumps(changes)[:400]}")
        told = opened_ids((changes or {}).get("tabs_opened") if isinstance(changes, dict) else None)
        after, _ = await call_ok(c, "browser_tabs", {"action": "list"})
        late = [t["target_id"] for t in after.get("tabs", []) if t.get("url") == site.url("/late")]
        sc.check(len(late) == 1, f"browser_tabs lists the popup ({after.get('tabs')})")
        sc.check(late[0] in told, f"the next result's changes.tabs_opened names the popup {late[0]} ({changes})")
        sc.check(
            not opened_ids((after.get("changes") or {}).get("tabs_opened")),
            f"the result after that tells no tab opened ({after.get('changes')})",
        )


COUNTER = page(
    "Counter",
    "<button onclick=\"window.count=(window.count||0)+1;"
    " document.getElementById('out').textContent='Count: '+window.count\">Increment</button>"
    "<p id=out>Count: 0</p>",
)
CLICKS = 20


async def twenty_clicks_twenty(sc: Scenario, binary: str) -> None:
    site = lp.Site({"/counter": lambda port: COUNTER})
    sc.stack.callback(site.stop)
    async with mcp_server(sc, binary, "e", []) as srv:
        c = srv.client
        await navigate(sc, c, site.url("/counter"))
        d, _ = await call_ok(c, "browser_snapshot", {})
        ref = next((x.ref for x in lines_of(outline_of(d, "counter")) if x.role == "button" and x.name == "Increment"), None)
        sc.check(ref is not None, f"the Increment button has a ref ({ref})")
        times = []
        for i in range(CLICKS):
            r = await call_raw(c, "browser_click", {"ref": ref})
            if r.is_error:
                raise Fail(f"click {i + 1} of {CLICKS} on {ref} is a tool error: {r.text[:300]}")
            times.append(r.seconds)
        sc.log(
            f"FIGURE browser_click by ref: median {statistics.median(times) * 1000:.1f} ms over {CLICKS} "
            f"(min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f})"
        )
        count = await evaluate(c, "window.count")
        sc.check(count == CLICKS, f"the page counted {CLICKS} clicks ({count})")
        d, _ = await call_ok(c, "browser_snapshot", {})
        text = outline_of(d, "counter after")
        shown = re.findall(r"Count: \d+", text)
        sc.check(shown == [f"Count: {CLICKS}"], f"the next outline shows 'Count: {CLICKS}' ({shown})")


ERRORS_SCRIPT = r"""
function deep(n, msg) { if (n === 0) throw new Error(msg); return deep(n - 1, msg); }
setTimeout(() => deep(40, 'boom-uncaught from a deep stack'), 0);
try { deep(40, 'boom-logged from a deep stack'); } catch (e) { console.error(e); }
console.error('boom-multiline first line\nsecond line\n    at nowhere (x.js:1:1)');
console.error('boom-long ' + 'x'.repeat(5000));
Promise.reject(new Error('boom-rejected from a promise'));
"""
ERROR_MARKERS = ["boom-uncaught", "boom-logged", "boom-multiline", "boom-long", "boom-rejected"]


async def console_errors_one_line(sc: Scenario, binary: str) -> None:
    site = lp.Site({"/errors": lambda port: page("Errors", "<h1>Errors</h1>", ERRORS_SCRIPT)})
    sc.stack.callback(site.stop)
    async with mcp_server(sc, binary, "f", []) as srv:
        c = srv.client
        await navigate(sc, c, site.url("/errors"))
        deadline = time.monotonic() + CONSOLE_DEADLINE_S
        while True:
            d, _ = await call_ok(c, "browser_snapshot", {"page": False})
            entries = d.get("console_errors") or []
            flat = json.dumps(entries)
            if all(m in flat for m in ERROR_MARKERS) or time.monotonic() > deadline:
                break
            await anyio.sleep(0.2)
        sc.log(f"console_errors ({len(flat):,} chars of JSON): " + "\n".join(json.dumps(e)[:400] for e in entries))
        for m in ERROR_MARKERS:
            sc.check(any(m in json.dumps(e) for e in entries), f"an entry names {m}")
        for e in entries:
            text = e.get("text", e.get("message"))
            sc.check(isinstance(text, str), f"the entry keeps a text ({sorted(e)})")
            strings = {k: v for k, v in e.items() if isinstance(v, str)}
            multi = [k for k, v in strings.items() if "\n" in v]
            long = {k: len(v) for k, v in strings.items() if len(v) > CONSOLE_LINE_MAX}
            sc.expect(
                not multi and not long,
                f"entry {text[:40]!r}… is one line of at most {CONSOLE_LINE_MAX} chars "
                f"(multi-line: {multi}, longer: {long})",
            )


SCENARIOS = {
    "every_link_reachable": every_link_reachable,
    "find_returns_the_matches": find_returns_the_matches,
    "continuation_ref_clicks": continuation_ref_clicks,
    "tabs_in_result_and_changes": tabs_in_result_and_changes,
    "twenty_clicks_twenty": twenty_clicks_twenty,
    "console_errors_one_line": console_errors_one_line,
}
# The large page alone (its own Chromium and a 2 MB document on a 2-core
# machine); the small ones two at a time.
PHASES = [
    ["every_link_reachable"],
    ["find_returns_the_matches"],
    ["continuation_ref_clicks"],
    ["tabs_in_result_and_changes", "console_errors_one_line"],
    ["twenty_clicks_twenty"],
]

DEADLINES = {n: LARGE_SCENARIO_DEADLINE_S for n in ("every_link_reachable", "find_returns_the_matches", "continuation_ref_clicks")}


async def main() -> int:
    return await run_phases("cost.py", __doc__, SCENARIOS, PHASES, deadlines=DEADLINES)


if __name__ == "__main__":
    exit_with(main)
