"""What an agent reads of a tool result: its data, and the page outline's lines.

Shared by cost.py and bench_step.py. The outline's line shape is DESIGN's
("Acting on the page"): `- role "name" [state…] [ref=eN]`, two spaces of
indent per level; refs in frames other than the top are `f<K>e<N>`.
"""

from __future__ import annotations

import json
import re

from common import Fail, ToolResult, call_raw

LINE_RE = re.compile(r'^\s*- (\S+)(?: "((?:[^"\\]|\\.)*)")?(.*)$')
REF_RE = re.compile(r"\[ref=([A-Za-z0-9]+)\]")
FRAME_REF_RE = re.compile(r"^(f\d+)e\d+$")


def data_of(r: ToolResult) -> dict:
    """The result's structuredContent, else its text as JSON (the outline may
    travel as plain text beside it: issue 33 allows that)."""
    if r.data is not None:
        return r.data
    try:
        d = json.loads(r.text)
    except ValueError:
        raise Fail(f"no structuredContent and the text is not JSON: {r.text[:300]!r}") from None
    if not isinstance(d, dict):
        raise Fail(f"the result is not an object: {r.text[:300]!r}")
    return d


async def call_ok(c, name: str, args: dict | None = None) -> tuple[dict, ToolResult]:
    """A tool call that must succeed: (its data, the raw result)."""
    r = await call_raw(c, name, args or {})
    if r.is_error:
        raise Fail(f"{name}({json.dumps(args)[:200]}) is a tool error: {r.text[:500]}")
    return data_of(r), r


def outline_of(d: dict, what: str) -> str:
    p = d.get("page")
    if not isinstance(p, str):
        raise Fail(f"{what}: the result has no `page` outline (keys {sorted(d)})")
    return p


class Line:
    """One line of an outline: role, name, ref (or None), the raw text."""

    __slots__ = ("role", "name", "ref", "raw")

    def __init__(self, raw: str) -> None:
        self.raw = raw
        m = LINE_RE.match(raw)
        self.role = m.group(1) if m else None
        self.name = (m.group(2) or "").replace('\\"', '"') if m else ""
        r = REF_RE.search(m.group(3) if m else "")
        self.ref = r.group(1) if r else None


def lines_of(text: str) -> list[Line]:
    return [Line(x) for x in text.split("\n") if x.strip()]
