"""A large, rustdoc-`Vec`-like page, and the loopback site that serves it.

Shared by cost.py (the tests of issue 33) and bench_step.py (the bench the
README names). Everything here is deterministic: the same page, byte for
byte, on every run, so what a test expects is computed from this module.

The page (`large_page(frame_url)`):
  - 3,000 visible method sections, each a heading holding one link
    (`method-0001` … `method-3000`, unique names, href /target/method-NNNN),
    a signature of spans and a prose paragraph: about 21 nodes each, so the
    document has 60,000+ DOM nodes (rustdoc's Vec page has about 38,000 and
    2,700 links);
  - a header with a few visible links, buttons, a checkbox and a search box;
  - hidden blocks a person cannot see, every link of which is named
    `<marker> method-NNNN` so that a leak shows in the outline and in `find`:
      `hiddenmenu`  a mobile <nav> of 300 links, display:none at any
                    viewport wider than 500 px (the headless default is wider),
      `offcanvas`   an off-canvas drawer (translated out, visibility:hidden),
      `offscreen`   a sliding side menu parked off the left edge (position:
                    fixed, left:-310px, nothing else hiding it): python3-doc's
                    `.menu-wrapper` at this viewport, which Chromium's
                    accessibility tree keeps while the other kinds are dropped,
      `hiddenattr`  a panel with the `hidden` attribute,
      `collapsed`   a closed <details> menu,
      `ariahidden`  a block under aria-hidden="true";
  - after method 1,500, a cross-site <iframe> (`frame_url`, served from the
    other loopback name: an OOPIF) holding 20 links of its own
    (`frame_page()`), two of which also match `find: "method-01"`.

`Site` serves these (and, for the bench, whole directories such as the
Rust docs) on 127.0.0.1 and records every path it was asked for. The same
port is reachable as http://127.0.0.1:PORT and http://localhost:PORT: two
sites, so an iframe from the other one is an OOPIF.
"""

from __future__ import annotations

import html
import http.server
import mimetypes
import os
import posixpath
import sys
import threading
import time
import urllib.parse
from typing import Callable

METHODS = 3000  # visible links named method-NNNN, like rustdoc Vec's ~2,700 links
HIDDEN_MENU_LINKS = 300  # the mobile menu, display:none at the headless viewport
OTHER_HIDDEN_LINKS = 40  # per other hidden block (off-canvas, off-screen, hidden attr, details, aria-hidden)
FRAME_LINKS = 20  # links inside the OOPIF
IFRAME_AFTER = 1500  # the OOPIF sits after this method, deep in the page
TARGET_PREFIX = "/target/"  # where every method link goes; any path under it is a page
FRAME_PATH = "/frame"
LARGE_PATH = "/large"
# The markers of hidden links: none of them may show in an outline.
HIDDEN_MARKERS = ("hiddenmenu", "offcanvas", "offscreen", "hiddenattr", "collapsed", "ariahidden")

HEADER_LINKS = ["std home", "crate source", "all items"]
FOOTER_LINKS = ["back to top"]
BUTTONS = ["Settings", "Copy item path", "Help"]
INPUTS = ["Search docs", "Wrap lines"]  # a search box and a checkbox
SUMMARIES = ["Menu"]  # the closed <details>' own summary is visible (its list is not)

_WORDS = (
    "vector capacity element allocator buffer slice length index growable contiguous heap "
    "reserve shrink truncate iterator borrow mutable owned drain retain dedup splice extend "
    "returns panics guarantees amortized constant memory layout pointer unsafe capacity "
    "the a of to in is that this when if and or which each with without from into"
).split()


def method_name(i: int) -> str:
    return f"method-{i:04d}"


def frame_link_names() -> list[str]:
    """The OOPIF's links: two of them match `method-01`, so `find` must look in frames."""
    names = [f"oopif-link-{i:02d}" for i in range(1, FRAME_LINKS - 1)]
    return names + ["oopif method-01a", "oopif method-01b"]


def top_link_names() -> list[str]:
    """Every link of the top document a person can see (and act on)."""
    return HEADER_LINKS + [method_name(i) for i in range(1, METHODS + 1)] + FOOTER_LINKS


def visible_link_names() -> list[str]:
    """Every visible link of the page, the OOPIF's included."""
    return top_link_names() + frame_link_names()


def hidden_link_names() -> list[str]:
    names = [f"hiddenmenu {method_name(i)}" for i in range(1, HIDDEN_MENU_LINKS + 1)]
    for marker in HIDDEN_MARKERS[1:]:
        # 0095…0134: some of each block match `method-01`.
        names += [f"{marker} {method_name(i)}" for i in range(95, 95 + OTHER_HIDDEN_LINKS)]
    return names


def matching(query: str) -> set[str]:
    """The visible links whose name contains query (case-insensitive): what
    `browser_snapshot(find: query)` must return with refs, and nothing else."""
    q = query.lower()
    return {n for n in visible_link_names() if q in n.lower()}


def actionable_count() -> int:
    """Elements that get a ref: visible links, buttons, inputs, the summary."""
    return len(visible_link_names()) + len(BUTTONS) + len(INPUTS) + len(SUMMARIES)


class _Prose:
    """Deterministic filler text (a fixed LCG, no `random` state shared)."""

    def __init__(self, seed: int = 33) -> None:
        self.x = seed

    def word(self) -> str:
        self.x = (self.x * 1103515245 + 12345) & 0x7FFFFFFF
        return _WORDS[self.x % len(_WORDS)]

    def words(self, n: int) -> str:
        return " ".join(self.word() for _ in range(n))


def _links(names: list[str]) -> str:
    return "".join(f'<li><a href="{TARGET_PREFIX}{html.escape(n)}">{html.escape(n)}</a></li>' for n in names)


def _method(i: int, prose: _Prose) -> str:
    name = method_name(i)
    # 10 elements and 11 text nodes, like a rustdoc method: the signature's
    # spans, a docblock.
    return (
        f'<section id="method.{name}" class="method"><h4 class="code-header"><span class="k">fn</span> '
        f'<a class="fn" href="{TARGET_PREFIX}{name}">{name}</a>(<span class="s">&amp;self</span>) -&gt; '
        f'<span class="t">usize</span></h4><div class="docblock"><p>{prose.words(12)} '
        f"<code>{prose.word()}</code> {prose.words(6)} <em>{prose.word()}</em>.</p></div></section>"
    )


STYLE = """
body { font: 14px sans-serif; margin: 0 1em; }
.mobile-nav { display: block; }
@media (min-width: 501px) { .mobile-nav { display: none; } }
.drawer { position: fixed; left: 0; top: 0; width: 300px; height: 100vh; overflow: auto;
          transform: translateX(-100%); visibility: hidden; background: #eee; }
.offscreen-menu { position: fixed; top: 0; left: -310px; width: 300px; height: 100%; overflow-y: auto;
                  background: #eee; }
section.method { margin: 0 0 .5em; }
h4 { margin: .3em 0; }
"""


def large_page(frame_url: str) -> str:
    """The page itself; frame_url is the OOPIF's address (the other site)."""
    prose = _Prose()
    hidden = hidden_link_names()
    menu = hidden[:HIDDEN_MENU_LINKS]
    blocks = {
        m: hidden[HIDDEN_MENU_LINKS + k * OTHER_HIDDEN_LINKS : HIDDEN_MENU_LINKS + (k + 1) * OTHER_HIDDEN_LINKS]
        for k, m in enumerate(HIDDEN_MARKERS[1:])
    }
    parts = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<title>Vec in std::vec - Rust (generated)</title>"
        f"<style>{STYLE}</style></head><body>",
        f'<nav class="mobile-nav" aria-label="Mobile menu"><ul>{_links(menu)}</ul></nav>',
        f'<aside class="drawer" aria-label="Drawer"><ul>{_links(blocks["offcanvas"])}</ul></aside>',
        f'<div class="offscreen-menu"><h3>offscreen menu</h3><ul>{_links(blocks["offscreen"])}</ul></div>',
        f'<div class="panel" hidden><ul>{_links(blocks["hiddenattr"])}</ul></div>',
        f'<details class="menu"><summary>Menu</summary><ul>{_links(blocks["collapsed"])}</ul></details>',
        f'<div class="decor" aria-hidden="true"><ul>{_links(blocks["ariahidden"])}</ul></div>',
        "<header><nav aria-label=Site>"
        + " ".join(f'<a href="{TARGET_PREFIX}{n.replace(" ", "-")}">{n}</a>' for n in HEADER_LINKS)
        + "</nav>"
        '<input type=search aria-label="Search docs" placeholder="Search">'
        "<button onclick=\"window.settingsClicks=(window.settingsClicks||0)+1\">Settings</button>"
        "<button onclick=\"window.copied=(window.copied||0)+1\">Copy item path</button>"
        "<button>Help</button>"
        '<label><input type=checkbox> Wrap lines</label></header>',
        "<main><h1>Struct std::vec::Vec (generated)</h1>",
        f"<p>{prose.words(60)}</p><p>{prose.words(60)}</p>",
        "<h2>Implementations</h2>",
    ]
    for i in range(1, METHODS + 1):
        if i % 250 == 1:
            parts.append(f"<h3>impl block {i // 250 + 1}</h3><p>{prose.words(30)}</p>")
        parts.append(_method(i, prose))
        if i == IFRAME_AFTER:
            parts.append(
                f'<iframe src="{html.escape(frame_url)}" title="Playground" '
                'style="width:640px;height:620px;border:1px solid #888"></iframe>'
            )
    parts.append(
        "</main><footer>"
        + "".join(f'<a href="{TARGET_PREFIX}{n.replace(" ", "-")}">{n}</a>' for n in FOOTER_LINKS)
        + "</footer></body></html>"
    )
    return "".join(parts)


def frame_page() -> str:
    """The OOPIF: a heading and 20 links, all visible inside the iframe."""
    items = "".join(
        f'<li><a href="{TARGET_PREFIX}{n.replace(" ", "-")}" target=_top>{n}</a></li>' for n in frame_link_names()
    )
    return (
        "<!doctype html><html><head><meta charset=utf-8><title>Playground</title>"
        "<style>body{font:13px sans-serif;margin:4px} li{line-height:24px}</style></head>"
        f"<body><h2>Playground</h2><ul>{items}</ul></body></html>"
    )


def target_page(path: str) -> str:
    name = html.escape(urllib.parse.unquote(path[len(TARGET_PREFIX) :]))
    return (
        f"<!doctype html><html><head><meta charset=utf-8><title>Target {name}</title></head>"
        f"<body><h1>Target {name}</h1><p>You followed {name}.</p></body></html>"
    )


# --- the site -----------------------------------------------------------------------


Route = Callable[[int], str]  # port -> HTML


class _QuietServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # Chromium drops connections it no longer needs (a tab closed, a
        # navigation away): not worth a traceback in the test's log.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class Site:
    """A loopback HTTP server: exact `routes` (path -> port -> HTML), any
    path under TARGET_PREFIX (a small page naming it), and `mounts` (URL
    prefix -> directory, served as static files). Records every request
    path (with its query) in `requests`, in order."""

    def __init__(self, routes: dict[str, Route] | None = None, mounts: dict[str, str] | None = None) -> None:
        self.routes = dict(routes or {})
        self.mounts = {p: os.path.realpath(d) for p, d in (mounts or {}).items() if d}
        self.requests: list[str] = []
        self._lock = threading.Lock()
        # Cached bodies: the large page is ~2 MB of HTML, built once per port.
        self._cache: dict[str, bytes] = {}
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802
                with site._lock:
                    site.requests.append(self.path)
                found = site._lookup(self.path)
                if found is None:
                    self.send_error(404)
                    return
                ctype, data = found
                self.send_response(200)
                self.send_header("content-type", ctype)
                self.send_header("cache-control", "no-store")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:  # quiet
                pass

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def _lookup(self, raw: str) -> tuple[str, bytes] | None:
        path = urllib.parse.urlsplit(raw).path
        route = self.routes.get(path)
        if route is not None:
            with self._lock:
                data = self._cache.get(path)
            if data is None:
                data = route(self.port).encode()
                if len(data) > 100_000:
                    with self._lock:
                        self._cache[path] = data
            return "text/html; charset=utf-8", data
        if path.startswith(TARGET_PREFIX):
            return "text/html; charset=utf-8", target_page(path).encode()
        for prefix, root in self.mounts.items():
            if path.startswith(prefix):
                rel = posixpath.normpath(urllib.parse.unquote(path[len(prefix) :])).lstrip("/")
                full = os.path.realpath(os.path.join(root, rel))
                if not full.startswith(root + os.sep) or not os.path.isfile(full):
                    return None
                ctype = mimetypes.guess_type(full)[0] or "application/octet-stream"
                if ctype.startswith("text/") or ctype in ("application/javascript", "application/json"):
                    ctype += "; charset=utf-8"
                with open(full, "rb") as f:
                    return ctype, f.read()
        return None

    def asked(self, path: str) -> bool:
        """Whether any request's path (query dropped) was exactly path."""
        with self._lock:
            return any(urllib.parse.urlsplit(r).path == path for r in self.requests)

    def wait_asked(self, path: str, deadline_s: float) -> bool:
        """Blocks (a thread) until path was asked for, or deadline_s passed."""
        end = time.monotonic() + deadline_s
        while not self.asked(path):
            if time.monotonic() > end:
                return False
            time.sleep(0.05)
        return True

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def large_site_routes() -> dict[str, Route]:
    """The large page at LARGE_PATH (site 127.0.0.1) and its OOPIF at
    FRAME_PATH, reached through the other site name (localhost)."""
    return {
        LARGE_PATH: lambda port: large_page(f"http://localhost:{port}{FRAME_PATH}"),
        FRAME_PATH: lambda port: frame_page(),
    }


if __name__ == "__main__":
    # `python largepage.py` prints the page's size figures.
    page = large_page("http://localhost:1/frame")
    print(
        f"{len(page):,} bytes, {page.count('<') - page.count('</'):,} tags opened, "
        f"{len(visible_link_names()):,} visible links, {len(hidden_link_names())} hidden, "
        f"find('method-01') -> {len(matching('method-01'))}"
    )
