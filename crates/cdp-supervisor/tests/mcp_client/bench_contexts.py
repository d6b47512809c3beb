"""Many tasks, one browser: what a task costs (issue 41). A measurement, not a test.

For each mode (`browser.isolation: browser`, a Chromium per task, and
`context`, a browser context per task in one shared Chromium) and each
count N, starts `cdp-supervisor mcp --http` on loopback, opens N MCP
sessions at once through the official MCP Python SDK, and in each calls
browser_navigate to a small loopback page. Reports:

  first call   per task, from the session's start (before `initialize`) to
               its first browser_navigate answered — with all N starting at
               once (median and p90, seconds)
  memory       once every task has loaded its page and 2 s passed: the PSS
               (/proc/PID/smaps_rollup) of the server and every process under
               it (browsers, renderers, zygotes, utilities), summed, and that
               sum divided by N

Prints a Markdown table (the README's). One run; the machine's load counts.

Usage: python bench_contexts.py PATH/TO/cdp-supervisor [--modes context,browser]
                               [--counts 1,16,64] [--browser-max N]
  --browser-max N  skips `browser` runs past N tasks (a Chromium each)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

import anyio
from mcp import Client

from common import (
    Scenario,
    descendants,
    http_address,
    kill_tree,
    page,
    server_env,
    scratch_dir,
    start_site,
    stop_http_server,
    wait_dead,
)


def pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def kind_of(pid: int, server: int) -> str:
    """server, browser, or Chromium's --type= (renderer, gpu-process, utility, zygote)."""
    if pid == server:
        return "server"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "gone"
    for a in args.split():
        if a.startswith("--type="):
            return a[len("--type="):]
    return "browser"


def browsers_under(pid: int) -> int:
    n = 0
    for p, (name, _) in descendants(pid).items():
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                args = f.read()
        except OSError:
            continue
        if "chrom" in name.lower() and args and b"--type=" not in args:
            n += 1
    return n


async def run_one(sc: Scenario, binary: str, mode: str, n: int, site: str) -> dict:
    label = f"{mode}{n}"
    log_path = os.path.join(sc.tmp, f"server-{label}.stderr")
    errlog = open(log_path, "w")
    env = server_env(f"bench-{label}")
    env["TMPDIR"] = scratch_dir(sc, label)
    env["CDP_SUPERVISOR_BROWSER__ISOLATION"] = mode
    proc = subprocess.Popen(
        [binary, "mcp", "--http", "127.0.0.1:0", "--max-sessions", str(max(16, n))],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errlog,
    )
    latencies: list[float] = []
    errors: list[str] = []
    loaded = anyio.Event()
    done = anyio.Event()
    ready = [0]
    result: dict = {}
    try:
        url = await http_address(proc, log_path, label)

        async def task(i: int) -> None:
            t0 = time.monotonic()
            try:
                async with Client(url, read_timeout_seconds=600, cache=None, mode="legacy") as c:
                    r = await c.call_tool("browser_navigate", {"url": f"{site}/?t={i}"})
                    took = time.monotonic() - t0
                    if r.is_error or (r.structured_content or {}).get("status") != "loaded":
                        errors.append(f"task {i}: {''.join(getattr(x, 'text', '') for x in r.content)[:200]}")
                    latencies.append(took)
                    ready[0] += 1
                    if ready[0] == n:
                        loaded.set()
                    await done.wait()
            except Exception as e:  # noqa: BLE001
                errors.append(f"task {i}: {type(e).__name__}: {e}")
                ready[0] += 1
                if ready[0] == n:
                    loaded.set()

        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(task, i)
            with anyio.fail_after(900):
                await loaded.wait()
            await anyio.sleep(2.0)
            pids = [proc.pid, *descendants(proc.pid)]
            by_kind: dict[str, list[int]] = {}
            for p in pids:
                by_kind.setdefault(kind_of(p, proc.pid), []).append(pss_kib(p))
            total = sum(sum(v) for v in by_kind.values())
            result = {
                "mode": mode,
                "n": n,
                "ok": n - len(errors),
                "failed": len(errors),
                "errors": errors[:3],
                "processes": len(pids),
                "by_kind_mib": {k: (len(v), round(sum(v) / 1024, 1)) for k, v in sorted(by_kind.items())},
                "browsers": browsers_under(proc.pid),
                "pss_mib": total / 1024,
                "per_task_mib": total / 1024 / n,
                "p50": statistics.median(latencies) if latencies else float("nan"),
                "p90": sorted(latencies)[max(0, int(len(latencies) * 0.9) - 1)] if latencies else float("nan"),
            }
            done.set()
    finally:
        seen = descendants(proc.pid)
        await stop_http_server(sc, label, proc)
        if not await wait_dead(seen, 10.0):
            kill_tree(seen)
        errlog.close()
    return result


async def main() -> int:
    argv = sys.argv[1:]
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.realpath(argv[0])
    modes = ["context", "browser"]
    counts = [1, 16, 64]
    browser_max = 64
    rest = argv[1:]
    while rest:
        a = rest.pop(0)
        if a == "--modes" and rest:
            modes = rest.pop(0).split(",")
        elif a == "--counts" and rest:
            counts = [int(x) for x in rest.pop(0).split(",")]
        elif a == "--browser-max" and rest:
            browser_max = int(rest.pop(0))
        else:
            print(__doc__, file=sys.stderr)
            return 2
    sc = Scenario("bench")
    rows = []
    async with sc.stack:
        port = await start_site(sc, lambda port: {"/": page("Bench", "<h1>a task's page</h1><p>" + "text " * 200 + "</p>")})
        site = f"http://127.0.0.1:{port}"
        for n in counts:
            for mode in modes:
                if mode == "browser" and n > browser_max:
                    print(f"skipping browser x{n} (--browser-max {browser_max})", file=sys.stderr, flush=True)
                    continue
                r = await run_one(sc, binary, mode, n, site)
                print(f"{r}", file=sys.stderr, flush=True)
                rows.append(r)
    print("| tasks | isolation | browser processes | all processes | PSS total (MiB) | PSS per task (MiB) | first call p50 (s) | first call p90 (s) | failed |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['n']} | {r['mode']} | {r['browsers']} | {r['processes']} | {r['pss_mib']:.0f} | {r['per_task_mib']:.1f} "
              f"| {r['p50']:.2f} | {r['p90']:.2f} | {r['failed']} |")
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
