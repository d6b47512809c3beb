"""What the model reads (DESIGN "Acting on the page", "What the model reads").

A tool result's structuredContent carries every field; its text content is
the cheapest faithful rendering for an LLM reader: one line of compact JSON
(what is empty or was shown unchanged left out), then the page outline as
its plain lines. `unfaithful` checks that the text drops nothing the agent
must always see: a pending dialog, page_blocked, changes, a cut outline's
page_cursor, the outline itself.
"""

from __future__ import annotations

import json


def split_text(text: str) -> tuple[dict, str]:
    """(the JSON line, the outline lines after it)."""
    head, _, rest = text.partition("\n")
    line = json.loads(head)
    if not isinstance(line, dict):
        raise ValueError(f"the first line is not a JSON object: {head[:200]!r}")
    return line, rest


def unfaithful(name: str, text: str, data: dict) -> str | None:
    """Why the text is not a faithful rendering of data (None: it is)."""
    try:
        line, outline = split_text(text)
    except ValueError as e:
        return f"{name}: the text's first line is not a JSON object ({e}): {text[:200]!r}"
    for k, v in line.items():
        if k not in data:
            return f"{name}: the text has {k!r}, structuredContent has not"
        if k not in ("changes", "snapshot", *LISTS) and v != data[k] and not isinstance(v, (dict, list)):
            return f"{name}: {k} is {v!r} in the text, {data[k]!r} in structuredContent"
    shown = {d.get("id"): d for d in line.get("pending_dialogs") or []}
    for d in data.get("pending_dialogs") or []:
        if shown.get(d["id"], {}).get("message") != d.get("message"):
            return f"{name}: pending dialog {d['id']} is missing from the text: {text[:300]!r}"
    if data.get("page_blocked") is True and line.get("page_blocked") is not True:
        return f"{name}: page_blocked is missing from the text"
    if data.get("page_cursor") and line.get("page_cursor") != data["page_cursor"]:
        return f"{name}: page_cursor is missing from the text"
    page = data.get("page")
    if page and outline != page:
        return f"{name}: the outline in the text is not the page's lines"
    ch = data.get("changes") or {}
    for key, items in ch.items():
        for it in items if isinstance(items, list) else [items]:
            needle = it.get("id") or it.get("target_id") or it.get("url") if isinstance(it, dict) else it
            if needle and str(needle) not in text:
                return f"{name}: change {key} {it} is missing from the text: {text[:300]!r}"
    return None


# Lists of which the text gives only the entries it has not shown yet.
LISTS = ("console_errors", "recent_dialogs", "downloads", "blocked_navigations", "completed_calls",
         "tabs", "frame_tree", "frame_refs")
