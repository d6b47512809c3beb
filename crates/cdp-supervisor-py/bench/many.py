"""Figures for the Python package (a bench that prints, not a timed test).

In one Python process, through ``cdp_supervisor.hermes``:
1. N supervisors (default 1,000) attached to the project's mock CDP server
   (``cdp-mock``, in its own process, so its sockets are not counted):
   threads added, RSS per supervisor, start and stop times; ``snapshot()``
   latency (p50, p99) across them.
2. On a real headless Chromium: ``snapshot()`` latency on a live page and
   ``respond_to_dialog`` latency (p50, p99), each dialog opened by the page
   and answered from Python.

    cargo build -p cdp-mock --bin cdp-mock
    python crates/cdp-supervisor-py/bench/many.py [--n 1000] [--mock PATH] [--dialogs 200]

The spec's original runs one thread and one asyncio loop per task: N
supervisors there add N threads.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from typing import Callable, List, Optional


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def pct(xs: List[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def timed(fn: Callable[[], object], n: int) -> List[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1e6)
    return out


def find_mock(given: Optional[str]) -> str:
    if given:
        return given
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(root, "target")
    for profile in ("release", "debug", "pydev"):
        p = os.path.join(target, profile, "cdp-mock")
        if os.path.exists(p):
            return p
    raise SystemExit("cdp-mock not found: cargo build -p cdp-mock --bin cdp-mock (or pass --mock PATH)")


def bench_mock(n: int, mock_path: str) -> None:
    from cdp_supervisor.hermes import SUPERVISOR_REGISTRY

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 1000), hard))
    mock = subprocess.Popen([mock_path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert mock.stdout is not None
        url = mock.stdout.readline().strip()
        # The runtime and its threads exist before the first supervisor.
        warm = SUPERVISOR_REGISTRY.get_or_start("warm", url)
        warm.snapshot()
        SUPERVISOR_REGISTRY.stop("warm")
        t0, r0 = threads(), rss_kib()
        start = time.perf_counter()
        sups = [SUPERVISOR_REGISTRY.get_or_start(f"task-{i}", url) for i in range(n)]
        started = time.perf_counter() - start
        time.sleep(1.0)  # let every attach settle
        t1, r1 = threads(), rss_kib()
        calls = iter(range(10_000))
        snaps = timed(lambda: sups[next(calls) % n].snapshot(), 10_000)
        start = time.perf_counter()
        SUPERVISOR_REGISTRY.stop_all()
        stopped = time.perf_counter() - start
        print(f"{n} supervisors on cdp-mock (its own process), one Python process:")
        print(f"  threads: {t0} before, {t1} with {n} supervisors (+{t1 - t0}; the original: +{n})")
        print(f"  RSS: +{(r1 - r0) / 1024:.1f} MiB, {(r1 - r0) / n:.1f} KiB per supervisor")
        print(f"  start: {started:.2f} s for {n} one after another ({started / n * 1000:.2f} ms each)")
        print(f"  stop_all: {stopped:.2f} s")
        print(f"  snapshot() across them: p50 {pct(snaps, 50):.1f} µs, p99 {pct(snaps, 99):.1f} µs ({len(snaps)} calls)")
    finally:
        if mock.stdin:
            mock.stdin.close()
        mock.wait(10)


def bench_chromium(dialogs: int) -> None:
    from cdp_supervisor.hermes import SUPERVISOR_REGISTRY

    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("Chromium not found: the dialog figures are skipped (scripts/ensure-chromium.sh)")
        return
    profile = tempfile.mkdtemp(prefix="cdp-supervisor-bench-")
    proc = subprocess.Popen(
        [chromium, "--headless=new", "--remote-debugging-port=0", f"--user-data-dir={profile}",
         "--no-first-run", "--no-sandbox", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        port_file = os.path.join(profile, "DevToolsActivePort")
        deadline = time.monotonic() + 20
        while not (os.path.exists(port_file) and open(port_file).readline().strip()):
            if time.monotonic() > deadline:
                raise SystemExit("Chromium did not open its DevTools port")
            time.sleep(0.05)
        port = int(open(port_file).readline())
        sup = SUPERVISOR_REGISTRY.get_or_start("chromium", f"http://127.0.0.1:{port}")
        sup.evaluate_runtime("document.title = 'bench'")
        snaps = timed(sup.snapshot, 5_000)
        answers: List[float] = []
        for i in range(dialogs):
            sup.evaluate_runtime(f"setTimeout(() => alert('n{i}'), 0)")
            while not sup.snapshot().pending_dialogs:
                time.sleep(0.001)
            t = time.perf_counter()
            r = sup.respond_to_dialog("accept")
            answers.append((time.perf_counter() - t) * 1e3)
            assert r["ok"], r
        print("one supervisor on headless Chromium:")
        print(f"  snapshot(): p50 {pct(snaps, 50):.1f} µs, p99 {pct(snaps, 99):.1f} µs ({len(snaps)} calls)")
        print(f"  respond_to_dialog: p50 {pct(answers, 50):.2f} ms, p99 {pct(answers, 99):.2f} ms, "
              f"mean {statistics.mean(answers):.2f} ms ({len(answers)} alerts)")
        SUPERVISOR_REGISTRY.stop_all()
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(profile, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--mock")
    ap.add_argument("--dialogs", type=int, default=200)
    a = ap.parse_args()
    bench_mock(a.n, find_mock(a.mock))
    bench_chromium(a.dialogs)


if __name__ == "__main__":
    main()
