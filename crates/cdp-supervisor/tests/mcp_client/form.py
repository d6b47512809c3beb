"""Filling forms, and what the model reads (issues 43 and 44), checked with
the official MCP Python SDK on the real binary and a real headless Chromium
(*.test mapped to 127.0.0.1, so b.test inside a.test is an OOPIF):

  fill_top          browser_fill_form fills a whole form in the top document in
                    one call: text, email, password, textarea, number typed over
                    what they held; a <select> by label; a checkbox and a radio
                    set true; date, time, datetime-local, month, week, color and
                    range set as their pickers do. The page's DOM holds every
                    value and saw input and change for each; the result says
                    what each field got (a password not shown)
  fill_oopif        the same form inside a cross-origin iframe (refs f<K>e<N>)
  pickers_typed     browser_type into a date, time, color, range and number sets
                    the value with input/change (issue 44: it said typed and set
                    nothing); a malformed date, an out-of-range range value and a
                    non-number are errors naming the format, nothing set
  dialog_midway     a <select> whose change handler opens alert(): the form stops
                    there: the error says which fields were filled (the first),
                    which input is queued (the select: it runs once the alert is
                    answered, delivered once in completed_calls) and which were not
                    (the last, untouched); nothing is filled twice
  text_reads        the text content: the outline as plain lines after one JSON
                    line; a pending dialog, page_blocked-free results, changes and
                    a cut outline's page_cursor always in it; an unchanged frame
                    tree not repeated; asked with snapshot: true, a navigation or a
                    click returns the page's outline once done (no snapshot call
                    needed; its refs work), not asked it returns none

Usage: python form.py PATH/TO/cdp-supervisor [--only NAME[,NAME…]] [--serial]
"""

from __future__ import annotations

import json
import re
import time

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
    run_phases,
    set_log_name,
    start_site,
    wait_pending,
)
from reads import split_text

set_log_name("form")

ENV = {"CDP_SUPERVISOR_BROWSER__CHROMIUM_ARGS": '["--host-resolver-rules=MAP *.test 127.0.0.1"]'}

# Every field records its input and change events: window.ev[id] = ["input", "change", …].
FORM = (
    "<form id=f onsubmit='event.preventDefault()'>"
    "<label>Full name <input id=name value='old text'></label>"
    "<label>Email <input id=email type=email></label>"
    "<label>Password <input id=pw type=password></label>"
    "<label>Notes <textarea id=notes></textarea></label>"
    "<label>Quantity <input id=qty type=number min=1 max=9></label>"
    "<label>Country <select id=country><option value=''>Pick</option><option value=fr>France</option>"
    "<option value=uk>United Kingdom</option></select></label>"
    "<label><input id=terms type=checkbox> I agree</label>"
    "<label><input id=std type=radio name=ship value=std> Standard</label>"
    "<label><input id=exp type=radio name=ship value=exp> Express</label>"
    "<label>Delivery date <input id=date type=date></label>"
    "<label>Delivery time <input id=time type=time></label>"
    "<label>Meeting <input id=dtl type=datetime-local></label>"
    "<label>Card expiry <input id=month type=month></label>"
    "<label>Week <input id=week type=week></label>"
    "<label>Colour <input id=color type=color></label>"
    "<label>Volume <input id=vol type=range min=0 max=100 step=5></label>"
    "<button>Send</button></form>"
)
EVENTS = (
    "window.ev = {};"
    "for (const el of document.querySelectorAll('input,select,textarea'))"
    " for (const t of ['input', 'change'])"
    "  el.addEventListener(t, () => (window.ev[el.id] = window.ev[el.id] || []).push(t));"
)
# (role, accessible name, value, element id, the value the DOM holds after)
FIELDS = [
    ("textbox", "Full name", "Ada Lovelace", "name", "Ada Lovelace"),
    ("textbox", "Email", "ada@example.test", "email", "ada@example.test"),
    ("textbox", "Password", "correct-horse", "pw", "correct-horse"),
    ("textbox", "Notes", "Leave at the door", "notes", "Leave at the door"),
    ("spinbutton", "Quantity", "3", "qty", "3"),
    ("combobox", "Country", "United Kingdom", "country", "uk"),
    ("checkbox", "I agree", "true", "terms", True),
    ("radio", "Express", "true", "exp", True),
    ("Date", "Delivery date", "2025-03-14", "date", "2025-03-14"),
    ("InputTime", "Delivery time", "14:30", "time", "14:30"),
    ("DateTime", "Meeting", "2025-03-14T09:15", "dtl", "2025-03-14T09:15"),
    ("DateTime", "Card expiry", "2027-11", "month", "2027-11"),
    ("DateTime", "Week", "2025-W07", "week", "2025-W07"),
    ("ColorWell", "Colour", "#00ff7f", "color", "#00ff7f"),
    ("slider", "Volume", "40", "vol", "40"),
]

MIDWAY = (
    "<form onsubmit='event.preventDefault()'>"
    "<label>First <input id=first></label>"
    "<label>Size <select id=size onchange=\"window.sizes=(window.sizes||0)+1; alert('size changed')\">"
    "<option value=s>Small</option><option value=l>Large</option></select></label>"
    "<label>Last <input id=last></label></form>"
)


def pages(port: int) -> dict[str, str]:
    b = f"http://b.test:{port}"
    frame = '<iframe src="{}" style="width:700px;height:700px;border:0"></iframe>'
    big = "".join(f"<button>b{i}</button>" for i in range(2500))
    return {
        "/form": page("Form", FORM, EVENTS),
        "/outer": page("Outer", "<h1>Outer</h1>" + frame.format(f"{b}/form")),
        "/midway": page("Midway", MIDWAY, EVENTS),
        "/links": page("Links", '<a href="/form">To the form</a> <button onclick="document.title=\'t2\'">Stay</button>'),
        "/big": page("Big", big),
        "/alert": page("Alert", "<button onclick=\"alert('hello there')\">Greet</button>"),
    }


def ref_by_id_order(text: str) -> list[tuple[str, str, str]]:
    """(role, name, ref) of every line with a ref."""
    out = []
    for m in re.finditer(r'^\s*- (\S+)(?: "((?:[^"\\]|\\.)*)")?[^\n]*\[ref=([a-z0-9]+)\]', text, re.M):
        out.append((m.group(1), m.group(2) or "", m.group(3)))
    return out


def ref_named(text: str, name: str, prefix: str = "") -> str:
    for _, n, ref in ref_by_id_order(text):
        if n == name and ref.startswith(prefix):
            return ref
    raise Fail(f"no ref named {name!r} (prefix {prefix!r}) in the outline:\n{text[:3000]}")


async def outline(c) -> dict:
    snap = await call(c, "browser_snapshot")
    if not isinstance(snap.get("page"), str):
        raise Fail(f"no page outline (keys {sorted(snap)})")
    return snap


async def fill_and_check(sc: Scenario, c, text: str, prefix: str, frame_id: str | None, who: str) -> None:
    fields = [{"ref": ref_named(text, name, prefix), "value": value} for _, name, value, _, _ in FIELDS]
    r = await call_raw(c, "browser_fill_form", {"fields": fields})
    sc.check(not r.is_error, f"{who}: browser_fill_form succeeds ({r.text[:300]})")
    filled = (r.data or {}).get("filled") or {}
    sc.log(f"{who}: filled {json.dumps(filled)}")
    sc.check(len(filled) == len(FIELDS), f"{who}: the result names every field ({len(filled)} of {len(FIELDS)})")
    for f, (_, name, value, el, want) in zip(fields, FIELDS):
        expr = f"(e => e.type === 'checkbox' || e.type === 'radio' ? e.checked : e.value)(document.getElementById('{el}'))"
        got = await evaluate(c, expr, frame_id)
        sc.expect(got == want, f"{who}: {name} holds {want!r} in the DOM (got {got!r})")
        events = await evaluate(c, f"(window.ev || {{}})['{el}'] || []", frame_id)
        sc.expect("input" in events and "change" in events, f"{who}: {name} fired input and change ({events})")
        if el == "pw":
            sc.expect(value not in json.dumps(filled), f"{who}: the password is not echoed ({filled.get(f['ref'])})")
        elif el not in ("terms", "exp"):
            sc.expect(str(filled.get(f["ref"])) == str(want), f"{who}: the result says {name} got {want!r} ({filled.get(f['ref'])!r})")
    sc.check(await evaluate(c, "document.getElementById('std').checked", frame_id) is False, f"{who}: the other radio is off")


async def fill_top(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, pages)
    async with mcp_server(sc, binary, "t", [], env=ENV) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"http://a.test:{port}/form"})
        snap = await outline(c)
        sc.log("outline:\n" + snap["page"])
        await fill_and_check(sc, c, snap["page"], "e", None, "top")
        # A value a field cannot take: an error naming it, nothing filled.
        snap = await outline(c)
        r = await call_raw(c, "browser_fill_form", {"fields": [
            {"ref": ref_named(snap["page"], "Full name"), "value": "Bea"},
            {"ref": ref_named(snap["page"], "Delivery date"), "value": "14/03/2025"}]})
        sc.check(r.is_error and "YYYY-MM-DD" in r.text, f"a malformed date is an error naming the format ({r.text[:300]})")
        sc.check(await evaluate(c, "document.getElementById('name').value") == "Ada Lovelace", "nothing was filled")


async def fill_oopif(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, pages)
    async with mcp_server(sc, binary, "o", [], env=ENV) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"http://a.test:{port}/outer"})
        deadline = time.monotonic() + 10
        while True:
            snap = await outline(c)
            if snap.get("frame_refs") or time.monotonic() > deadline:
                break
            await anyio.sleep(0.2)
        refs = snap.get("frame_refs") or {}
        sc.check(len(refs) == 1, f"the OOPIF's refs are named in frame_refs ({refs})")
        k, fid = next(iter(refs.items()))
        await fill_and_check(sc, c, snap["page"], k + "e", fid, "OOPIF")


async def pickers_typed(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, pages)
    async with mcp_server(sc, binary, "p", [], env=ENV) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"http://a.test:{port}/form"})
        text = (await outline(c))["page"]
        for name, value, el in [("Delivery date", "2025-03-14", "date"), ("Delivery time", "14:30", "time"),
                                ("Meeting", "2025-03-14T09:15", "dtl"), ("Card expiry", "2027-11", "month"),
                                ("Week", "2025-W07", "week"), ("Colour", "#00ff7f", "color"),
                                ("Volume", "40", "vol"), ("Quantity", "3", "qty")]:
            r = await call(c, "browser_type", {"ref": ref_named(text, name), "text": value})
            got = await evaluate(c, f"document.getElementById('{el}').value")
            sc.expect(got == value, f"browser_type into {name} sets {value!r} (the DOM has {got!r}; result {r})")
            events = await evaluate(c, f"window.ev['{el}'] || []")
            sc.expect("input" in events, f"browser_type into {name} fired input ({events})")
            if el != "qty":
                sc.expect("change" in events, f"browser_type into {name} fired change ({events})")
        for name, value, el, word in [("Delivery date", "14/03/2025", "date", "YYYY-MM-DD"),
                                      ("Volume", "42", "vol", "steps of 5"),
                                      ("Quantity", "three", "qty", "a number")]:
            before = await evaluate(c, f"document.getElementById('{el}').value")
            r = await call_raw(c, "browser_type", {"ref": ref_named(text, name), "text": value})
            sc.expect(r.is_error and word in r.text, f"browser_type {value!r} into {name} is an error saying {word!r} ({r.text[:300]})")
            after = await evaluate(c, f"document.getElementById('{el}').value")
            sc.expect(after == before, f"nothing was set in {name} ({before!r} → {after!r})")


async def dialog_midway(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, pages)
    async with mcp_server(sc, binary, "d", [], env=ENV) as srv:
        c = srv.client
        await call(c, "browser_navigate", {"url": f"http://a.test:{port}/midway"})
        text = (await outline(c))["page"]
        first, size, last = ref_named(text, "First"), ref_named(text, "Size"), ref_named(text, "Last")
        r = await call_raw(c, "browser_fill_form", {"fields": [
            {"ref": first, "value": "one"}, {"ref": size, "value": "Large"}, {"ref": last, "value": "three"}]})
        d = r.data or {}
        sc.log(f"fill_form interrupted: {r.text[:600]}")
        sc.check(r.is_error and d.get("interrupted_by_dialog") is True, f"the form is interrupted by the alert ({d})")
        sc.check(d.get("method") == "browser_fill_form", f"its method is browser_fill_form ({d.get('method')})")
        sc.check(list((d.get("filled") or {}).keys()) == [first], f"filled: the first field only ({d.get('filled')})")
        sc.check(d.get("queued") == size and d.get("not_filled") == [last], f"queued: the select; not filled: the last ({d})")
        sc.check("size changed" in r.text, "the text shows the pending alert's message")
        sc.check(first in r.text and last in r.text, "the text names what was filled and what was not")
        await wait_pending(sc, c, "alert", "size changed", "the change handler's alert")
        ans = await call(c, "browser_dialog", {"action": "accept"})
        done = [x for x in ans.get("completed_calls", []) if x.get("call_id") == d.get("call_id")]
        sc.check(len(done) == 1 and done[0].get("method") == "browser_fill_form", f"completed_calls carries the queued input once ({ans.get('completed_calls')})")
        got = await evaluate(c, "[first.value, size.value, last.value, window.sizes, (window.ev.first||[]).filter(e => e === 'input').length]")
        sc.check(got == ["one", "l", "", 1, 1], f"first once, the select once, the last untouched ({got})")
        # The rest, as the error said: only the fields not filled (wait_pending's
        # snapshots gave new refs).
        last = ref_named((await outline(c))["page"], "Last")
        await call(c, "browser_fill_form", {"fields": [{"ref": last, "value": "three"}]})
        got = await evaluate(c, "[first.value, size.value, last.value, window.sizes]")
        sc.check(got == ["one", "l", "three", 1], f"after the second call every field is filled, none twice ({got})")


async def text_reads(sc: Scenario, binary: str) -> None:
    port = await start_site(sc, pages)
    async with mcp_server(sc, binary, "r", [], env=ENV) as srv:
        c = srv.client
        # Asked for (snapshot: true), the navigation's own result carries the loaded page's outline.
        r = await call_raw(c, "browser_navigate", {"url": f"http://a.test:{port}/links", "snapshot": True})
        line, lines = split_text(r.text)
        sc.check(r.data.get("status") == "loaded" and 'link "To the form"' in lines, f"browser_navigate returns the page's outline as plain lines ({r.text[:300]!r})")
        sc.check("page" not in line and "\\n" not in r.text.split("\n")[0], "the outline is not a JSON string in the text")
        link = ref_named(lines, "To the form")
        stay = ref_named(lines, "Stay")
        r = await call_raw(c, "browser_click", {"ref": stay})
        sc.check(not r.is_error and "page" not in (r.data or {}), f"a click not asked for the outline returns none ({r.text[:200]!r})")
        r = await call_raw(c, "browser_click", {"ref": stay, "snapshot": True})
        sc.check(not r.is_error and 'button "Stay"' in (r.data or {}).get("page", ""), f"asked, a click on the same page returns its outline ({r.text[:200]!r})")
        link = ref_named(r.data["page"], "To the form")
        r = await call_raw(c, "browser_click", {"ref": link, "snapshot": True})
        sc.check(not r.is_error and 'textbox "Full name"' in (r.data or {}).get("page", ""), f"a click that loads a page returns its outline ({r.text[:300]!r})")
        line, lines = split_text(r.text)
        sc.check('textbox "Full name"' in lines and lines.startswith('- RootWebArea "Form"') and r.data.get("title") == "Form",
                 f"…in the text too, its first line naming the new title once ({line})")
        sc.check("title" not in line, f"the title is not repeated in the JSON line ({line})")
        # Its refs are the tab's: act on them with no snapshot call.
        f = await call(c, "browser_fill_form", {"fields": [{"ref": ref_named(lines, "Full name"), "value": "Cy"}]})
        sc.check(list(f["filled"].values()) == ["Cy"], f"the returned outline's refs work ({f})")
        # A frame tree shown once is not repeated while unchanged.
        await call(c, "browser_navigate", {"url": f"http://a.test:{port}/outer"})
        deadline = time.monotonic() + 10
        while not (await outline(c)).get("frame_refs") and time.monotonic() < deadline:
            await anyio.sleep(0.2)
        first = await call_raw(c, "browser_snapshot", {})
        second = await call_raw(c, "browser_snapshot", {})
        sc.expect("frame_tree" not in split_text(second.text)[0], f"an unchanged frame tree is not repeated ({second.text[:300]!r})")
        sc.check(second.data.get("frame_tree", {}).get("children"), "structuredContent still has the frame tree")
        sc.log(f"snapshot text: first {len(first.text)} chars, second {len(second.text)} chars")
        # A cut outline's continuation is in the text.
        await call(c, "browser_navigate", {"url": f"http://a.test:{port}/big"})
        r = await call_raw(c, "browser_snapshot", {})
        sc.check(r.data.get("page_cursor") and r.data["page_cursor"] in r.text.split("\n")[0], f"page_cursor is in the text's JSON line ({r.text[:200]!r})")
        # A pending dialog, and the change that reports it, are in the text.
        await call(c, "browser_navigate", {"url": f"http://a.test:{port}/alert"})
        text = (await outline(c))["page"]
        r = await call_raw(c, "browser_click", {"ref": ref_named(text, "Greet")})
        sc.check(r.is_error and "hello there" in r.text, f"the interrupted click's text shows the alert ({r.text[:300]!r})")
        r = await call_raw(c, "browser_snapshot", {"page": False})
        sc.check("hello there" in r.text and "pending_dialogs" in r.text, f"the snapshot's text shows the pending alert ({r.text[:300]!r})")
        await call(c, "browser_dialog", {"action": "accept"})
        await evaluate(c, "setTimeout(() => alert('second one'), 0); 1")
        await wait_pending(sc, c, "alert", "second one", "a script's alert")
        await call(c, "browser_dialog", {"action": "dismiss"})
        r = await call_raw(c, "browser_snapshot", {"page": False})
        sc.log(f"after the dismiss: {r.text[:400]}")
        sc.check("second one" not in split_text(r.text)[0].get("pending_dialogs", []).__repr__(), "no longer pending")


SCENARIOS = {
    "fill_top": fill_top,
    "fill_oopif": fill_oopif,
    "pickers_typed": pickers_typed,
    "dialog_midway": dialog_midway,
    "text_reads": text_reads,
}
PHASES = [["fill_top", "fill_oopif"], ["pickers_typed", "dialog_midway"], ["text_reads"]]


async def main() -> int:
    return await run_phases("form.py", __doc__, SCENARIOS, PHASES)


if __name__ == "__main__":
    exit_with(main)
