"""What one agent step costs, measured through the MCP Python SDK (issue 33).

Run by scripts/bench-step.sh (it builds nothing: give it a binary). One
`cdp-supervisor mcp --cdp-url` server attached to our own headless Chromium,
a loopback site serving largepage.py's generated page (and its OOPIF) and,
when they are on this machine, the real rustdoc `std::vec::Vec` page (the
whole Rust html dir) and python3-doc's `library/stdtypes.html`. Prints per
page:

  snapshot   the first browser_snapshot after the page loaded, and the median
             of 5 more (ms)
  tokens     of the snapshot's text content (what the agent reads), and of it
             plus every page_cursor continuation it names (cl100k through the
             `bpe-openai` package when importable, else bytes/4: the header
             says which)
  refs       distinct refs reachable over all parts, links among them
  lines      outline lines over all parts (parts)

and for the server process (VmRSS / VmHWM of /proc/PID/status; Chromium is
not its child here): RSS idle (a small page, 2 s idle), after each large
page, after all of them (2 s idle), and the peak; then browser_click by ref
on a local counter, median of 20. A compact table ends the output.

Usage: python bench_step.py PATH/TO/cdp-supervisor [--rustdoc DIR] [--pydoc DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

import anyio

import largepage as lp
from common import Scenario, exit_with, launch_chromium, log, mcp_server, page, run_scenario, set_log_name
from outline import call_ok, lines_of, outline_of

set_log_name("bench")

SNAPSHOTS = 5  # timed snapshots per page after the first (their median is the figure)
CLICKS = 20
SETTLE_S = 1.0  # after a large page loads, as peers_bench.py S9 waits
IDLE_S = 2.0  # before an RSS reading "after": what the server gives back when idle
MAX_PARTS = 200  # continuations followed per page at most
BENCH_DEADLINE_S = 600.0
COUNTER = page(
    "Counter",
    "<button onclick=\"window.count=(window.count||0)+1;"
    " document.getElementById('out').textContent='Count: '+window.count\">Increment</button>"
    "<p id=out>Count: 0</p>",
)


def tokenizer():
    """(encode, label): cl100k through bpe-openai (tiktoken-compatible,
    offline), else a byte proxy."""
    try:
        import bpe_openai  # type: ignore[import-not-found]

        enc = bpe_openai.get_encoding("cl100k_base")
        return enc.encode, "cl100k_base (bpe-openai)"
    except Exception:  # noqa: BLE001 - any failure means: no tokenizer here
        return None, "bytes/4 (bpe-openai not importable)"


def count_tokens(encode, text: str) -> int:
    """cl100k tokens; long texts cut at line ends into <= 50k-char pieces
    (bpe-openai refuses one input over 200k tokens; as peers_bench.py)."""
    if encode is None:
        return len(text.encode()) // 4
    total, start = 0, 0
    while start < len(text):
        end = min(len(text), start + 50_000)
        if end < len(text):
            nl = text.rfind("\n", start, end)
            if nl > start:
                end = nl + 1
        total += len(encode(text[start:end]))
        start = end
    return total


def status_kib(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def mib(kib: int) -> str:
    return f"{kib / 1024:.0f}"


def default_rustdoc() -> str | None:
    try:
        sysroot = subprocess.run(["rustc", "--print", "sysroot"], capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    d = os.path.join(sysroot, "share/doc/rust/html")
    return d if sysroot and os.path.isfile(os.path.join(d, "std/vec/struct.Vec.html")) else None


def default_pydoc() -> str | None:
    if not shutil.which("dpkg"):
        return None
    out = subprocess.run(["dpkg", "-L", "python3-doc"], capture_output=True, text=True).stdout.split("\n")
    for d in out:
        if d.endswith("/html") and os.path.isfile(os.path.join(d, "library/stdtypes.html")):
            return d
    return None


async def measure_page(sc: Scenario, c, pid: int, encode, name: str, url: str) -> dict:
    d, r = await call_ok(c, "browser_navigate", {"url": url})
    if d.get("status") != "loaded":
        raise RuntimeError(f"{name}: browser_navigate {url}: {d.get('status')}")
    await anyio.sleep(SETTLE_S)
    _, first = await call_ok(c, "browser_snapshot", {})
    times = []
    for _ in range(SNAPSHOTS):
        last, r = await call_ok(c, "browser_snapshot", {})
        times.append(r.seconds)
    last_text = r.text
    tokens = count_tokens(encode, last_text)
    text = outline_of(last, name)
    parts, tokens_all, all_lines = 1, tokens, lines_of(text)
    cursor = last.get("page_cursor") if last.get("page_truncated") else None
    cont_s = 0.0
    while isinstance(cursor, str) and cursor and parts < MAX_PARTS:
        more, r = await call_ok(c, "browser_snapshot", {"page_cursor": cursor})
        parts += 1
        cont_s += r.seconds
        tokens_all += count_tokens(encode, r.text)
        all_lines += lines_of(outline_of(more, f"{name} part {parts}"))
        cursor = more.get("page_cursor") if more.get("page_truncated") else None
    refs = {x.ref for x in all_lines if x.ref}
    link_refs = {x.ref for x in all_lines if x.ref and x.role == "link"}
    rec = {
        "page": name,
        "first_ms": first.seconds * 1000,
        "median_ms": statistics.median(times) * 1000,
        "tokens": tokens,
        "tokens_all": tokens_all,
        "text_bytes": len(last_text.encode()),
        "parts": parts,
        "continuations_ms": cont_s * 1000,
        "refs": len(refs),
        "link_refs": len(link_refs),
        "lines": len(all_lines),
        "first_part_truncated": bool(last.get("page_truncated")),
        "rss_after_kib": status_kib(pid, "VmRSS"),
    }
    sc.log(
        f"{name}: first {rec['first_ms']:.0f} ms, median {rec['median_ms']:.0f} ms; {tokens:,} tokens "
        f"({tokens_all:,} over {parts} parts, continuations {cont_s * 1000:.0f} ms); {len(refs):,} refs "
        f"({len(link_refs):,} links); {len(all_lines):,} lines; RSS {mib(rec['rss_after_kib'])} MiB"
    )
    return rec


async def bench(sc: Scenario, binary: str, args: argparse.Namespace, out: dict) -> None:
    encode, label = tokenizer()
    out["tokenizer"] = label
    mounts = {"/rustdoc/": args.rustdoc, "/pydoc/": args.pydoc}
    site = lp.Site({**lp.large_site_routes(), "/counter": lambda port: COUNTER}, {k: v for k, v in mounts.items() if v})
    sc.stack.callback(site.stop)
    pages = [("generated (3,000 links, OOPIF)", site.url(lp.LARGE_PATH))]
    if args.rustdoc:
        pages.append(("rust std::vec::Vec", site.url("/rustdoc/std/vec/struct.Vec.html")))
    if args.pydoc:
        pages.append(("python stdtypes", site.url("/pydoc/library/stdtypes.html")))
    out["missing"] = [n for n, d in (("rustdoc Vec", args.rustdoc), ("python3-doc stdtypes", args.pydoc)) if not d]
    chromium = await launch_chromium(sc, "b")
    async with mcp_server(sc, binary, "s", ["--cdp-url", chromium.http_url]) as srv:
        c = srv.client
        pid = srv.pid
        await call_ok(c, "browser_navigate", {"url": site.url("/counter")})
        await call_ok(c, "browser_snapshot", {})
        await anyio.sleep(IDLE_S)
        out["rss_idle_kib"] = status_kib(pid, "VmRSS")
        out["pages"] = []
        for name, url in pages:
            out["pages"].append(await measure_page(sc, c, pid, encode, name, url))
        await anyio.sleep(IDLE_S)
        out["rss_after_kib"] = status_kib(pid, "VmRSS")
        out["rss_peak_kib"] = status_kib(pid, "VmHWM")
        await call_ok(c, "browser_navigate", {"url": site.url("/counter")})
        snap, _ = await call_ok(c, "browser_snapshot", {})
        ref = next(x.ref for x in lines_of(outline_of(snap, "counter")) if x.role == "button" and x.name == "Increment")
        times = []
        for _ in range(CLICKS):
            _, r = await call_ok(c, "browser_click", {"ref": ref})
            times.append(r.seconds * 1000)
        out["click_median_ms"] = statistics.median(times)
        out["click_min_ms"], out["click_max_ms"] = min(times), max(times)
        v, _ = await call_ok(
            c, "browser_cdp", {"method": "Runtime.evaluate", "params": {"expression": "window.count", "returnByValue": True}}
        )
        out["click_count"] = ((v.get("result") or {}).get("result") or {}).get("value")


def table(out: dict, binary: str) -> str:
    rows = [
        f"cdp-supervisor step bench — {binary}",
        f"tokens: {out.get('tokenizer')}; load {' '.join(open('/proc/loadavg').read().split()[:3])}",
        "",
        f"{'page':32} {'first ms':>9} {'median ms':>10} {'tokens':>8} {'tokens all':>11} {'parts':>6} "
        f"{'refs':>6} {'links':>6} {'lines':>7} {'RSS MiB':>8}",
    ]
    for p in out.get("pages", []):
        rows.append(
            f"{p['page'][:32]:32} {p['first_ms']:9.0f} {p['median_ms']:10.0f} {p['tokens']:8,} {p['tokens_all']:11,} "
            f"{p['parts']:6} {p['refs']:6,} {p['link_refs']:6,} {p['lines']:7,} {mib(p['rss_after_kib']):>8}"
        )
    for m in out.get("missing", []):
        rows.append(f"{m:32} (not given or not installed: skipped)")
    rows += [
        "",
        f"server RSS: idle {mib(out.get('rss_idle_kib', 0))} MiB, peak (VmHWM) {mib(out.get('rss_peak_kib', 0))} MiB, "
        f"after the large pages + {IDLE_S:.0f} s idle {mib(out.get('rss_after_kib', 0))} MiB",
    ]
    if "click_median_ms" in out:
        rows.append(
            f"browser_click by ref: median {out['click_median_ms']:.1f} ms of {CLICKS} "
            f"(min {out['click_min_ms']:.1f}, max {out['click_max_ms']:.1f}); the page counted {out.get('click_count')}"
        )
    return "\n".join(rows)


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--rustdoc", default=os.environ.get("RUSTDOC_HTML") or default_rustdoc(), help="Rust html docs dir")
    ap.add_argument("--pydoc", default=os.environ.get("PYDOC_HTML") or default_pydoc(), help="python3-doc html dir")
    ap.add_argument("--json", help="also write the figures here")
    args = ap.parse_args()
    binary = os.path.realpath(args.binary)
    if not os.access(binary, os.X_OK):
        log(f"{args.binary} is not an executable")
        return 2
    out: dict = {}
    started = time.monotonic()
    outcome = await run_scenario("bench", lambda sc: bench(sc, binary, args, out), BENCH_DEADLINE_S)
    out["seconds"] = time.monotonic() - started
    print(table(out, binary))
    print(f"({out['seconds']:.0f} s)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    if not outcome.ok:
        for p in outcome.problems:
            log(f"FAILED: {p}")
        return 1
    return 0


if __name__ == "__main__":
    exit_with(main)
