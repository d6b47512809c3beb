"""pytest plugin: a host agent checkout's own supervisor tests, run against
``cdp_supervisor.hermes`` instead of the host's supervisor.

``tests/host/run.sh`` loads it (``-p hermes_host``) with the checkout's own
``tests/tools/test_browser_supervisor.py``; nothing of the host is copied
into this repository or changed in the checkout. The plugin:

- installs ``browser_supervisor.py`` beside it (``from cdp_supervisor.hermes
  import *``) as the host's ``tools.browser_supervisor`` before any test
  imports it, so the host's tool handlers (``browser_dialog``,
  ``browser_cdp(frame_id=…)``) run unchanged over our module;
- skips the tests our module deliberately fails, each with its reason (the
  crate's README, "Deliberate differences");
- turns every other skip into a failure: the host's tests skip when Chrome
  is missing or slow to start, and here a test that did not run must not
  pass unnoticed.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Dict, Generator

import pytest

from cdp_supervisor import hermes

# Tests our module fails on purpose: test name → why (the README says more).
DELIBERATE: Dict[str, str] = {
    "test_bridge_captures_prompt_and_returns_reply_text": (
        "deliberate difference (crates/cdp-supervisor-py/README.md): on a local "
        "Chromium, Chromium's own dialog events catch the prompt and "
        "bridge_request_id is None; the dialog bridge is on only for cloud "
        "backends that auto-dismiss native dialogs (Browserbase), and it is a "
        "same-origin path that cannot run on a data: page anyway"
    ),
}

# Tests the host skips itself, whatever the supervisor: test name → why.
HOST_SKIPS: Dict[str, str] = {
    "test_browser_cdp_frame_id_real_oopif_smoke_documented": (
        "the host's placeholder for a manual smoke test: it always skips"
    ),
}


def _install_shim() -> None:
    """Makes ``tools.browser_supervisor`` our one-line re-export."""
    import tools  # type: ignore[import-not-found]  # the host checkout's package (run.sh puts it on sys.path)

    path = Path(__file__).with_name("browser_supervisor.py")
    spec = importlib.util.spec_from_file_location("tools.browser_supervisor", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tools.browser_supervisor"] = module
    spec.loader.exec_module(module)
    setattr(tools, "browser_supervisor", module)
    imported = importlib.import_module("tools.browser_supervisor")
    assert imported.CDPSupervisor is hermes.CDPSupervisor, "the host's own supervisor is still in place"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: the host's real-browser tests")
    _install_shim()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        reason = DELIBERATE.get(item.name)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.skipped and item.name not in DELIBERATE and item.name not in HOST_SKIPS:
        report.outcome = "failed"
        report.longrepr = f"{item.nodeid} skipped, but it must run here: {report.longrepr}"
    return report
