"""The spec's test plan (spec/browser-supervisor.md "Testing", the host
agent's ``tests/tools/test_browser_supervisor.py``) through
``cdp_supervisor.hermes``, on a real headless Chromium launched by the test
as the spec's are (``--remote-debugging-port``), pages served on loopback.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any, Dict, Iterator, Tuple

import pytest
from conftest import wait_until

from cdp_supervisor.hermes import (
    CONSOLE_HISTORY_MAX,
    DEFAULT_DIALOG_POLICY,
    DEFAULT_DIALOG_TIMEOUT_S,
    DIALOG_POLICY_AUTO_DISMISS,
    FRAME_TREE_MAX_ENTRIES,
    FRAME_TREE_MAX_OOPIF_DEPTH,
    RECENT_DIALOGS_MAX,
    SUPERVISOR_REGISTRY,
    CDPSupervisor,
    FrameInfo,
    PendingDialog,
    SupervisorRegistry,
    SupervisorSnapshot,
)


@pytest.fixture
def registry() -> Iterator[SupervisorRegistry]:
    yield SUPERVISOR_REGISTRY
    SUPERVISOR_REGISTRY.stop_all()


def cdp(sup: CDPSupervisor, method: str, params: Dict[str, Any], session_id: Any = None) -> Dict[str, Any]:
    """What the host's ``browser_cdp`` does: ``_cdp`` run on ``_loop``."""
    fut = asyncio.run_coroutine_threadsafe(
        sup._cdp(method, params, session_id=session_id, timeout=10.0), sup._loop
    )
    reply: Dict[str, Any] = fut.result(timeout=12.0)
    return reply


def navigate(sup: CDPSupervisor, url: str) -> None:
    """Navigates the supervised page and waits for its load."""
    cdp(sup, "Page.navigate", {"url": url}, session_id=sup._page_session_id)
    wait_until(
        f"{url} loaded",
        lambda: sup.evaluate_runtime("location.href + ' ' + document.readyState").get("result")
        == f"{url} complete",
    )


def wait_for_dialog(sup: CDPSupervisor, timeout: float = 5.0) -> Tuple[PendingDialog, ...]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        snap = sup.snapshot()
        if snap.pending_dialogs:
            return snap.pending_dialogs
        time.sleep(0.05)
    return ()


def test_constants_are_the_spec_s() -> None:
    assert DEFAULT_DIALOG_POLICY == "must_respond"
    assert DEFAULT_DIALOG_TIMEOUT_S == 300.0
    assert (FRAME_TREE_MAX_ENTRIES, FRAME_TREE_MAX_OOPIF_DEPTH) == (30, 2)
    assert (RECENT_DIALOGS_MAX, CONSOLE_HISTORY_MAX) == (20, 50)
    with pytest.raises(ValueError, match="must_respond"):
        CDPSupervisor("t", "http://127.0.0.1:1", dialog_policy="sometimes")


def test_star_import_brings_every_name_the_host_module_exports() -> None:
    # A host's tools/browser_supervisor.py becomes `from cdp_supervisor.hermes
    # import *`; what its callers import from it must come through, the
    # host's `_SupervisorRegistry` (in its __all__) included.
    names: Dict[str, Any] = {}
    exec("from cdp_supervisor.hermes import *", names)
    for name in (
        "CDPSupervisor", "ConsoleEvent", "DEFAULT_DIALOG_POLICY", "DEFAULT_DIALOG_TIMEOUT_S",
        "DIALOG_POLICY_AUTO_ACCEPT", "DIALOG_POLICY_AUTO_DISMISS", "DIALOG_POLICY_MUST_RESPOND",
        "DialogRecord", "FrameInfo", "PendingDialog", "SUPERVISOR_REGISTRY", "SupervisorSnapshot",
        "_SupervisorRegistry",
    ):
        assert name in names, name
    assert names["_SupervisorRegistry"] is SupervisorRegistry


def test_supervisor_start_and_snapshot(chrome_cdp: str, site: str, registry: SupervisorRegistry) -> None:
    sup = registry.get_or_start(task_id="pytest-1", cdp_url=chrome_cdp)
    navigate(sup, f"{site}/main.html")
    snap = sup.snapshot()
    assert isinstance(snap, SupervisorSnapshot)
    assert snap.active is True
    assert snap.task_id == "pytest-1"
    assert snap.pending_dialogs == ()
    top = snap.frame_tree.get("top")
    assert top is not None and top["url"] == f"{site}/main.html"
    assert [c["url"] for c in snap.frame_tree["children"]] == [f"{site}/inner.html"]
    with pytest.raises(AttributeError):
        snap.active = False  # type: ignore[misc]
    d = snap.to_dict()
    assert set(d) == {"pending_dialogs", "frame_tree"}


def test_main_frame_alert_detection_and_dismiss(chrome_cdp: str, site: str, registry: SupervisorRegistry) -> None:
    sup = registry.get_or_start(task_id="pytest-2", cdp_url=chrome_cdp)
    navigate(sup, f"{site}/main.html")
    sup.evaluate_runtime("setTimeout(() => alert('PYTEST-MAIN-ALERT'), 50)")
    dialogs = wait_for_dialog(sup)
    assert dialogs, "no dialog detected"
    d = dialogs[0]
    assert d.type == "alert"
    assert "PYTEST-MAIN-ALERT" in d.message
    assert d.cdp_session_id and d.bridge_request_id is None
    result = sup.respond_to_dialog("dismiss")
    assert result["ok"] is True
    assert result["dialog"]["message"] == "PYTEST-MAIN-ALERT"
    assert sup.snapshot().pending_dialogs == ()
    recent = sup.snapshot().recent_dialogs
    assert [(r.id, r.closed_by) for r in recent] == [(d.id, "agent")]
    assert "recent_dialogs" in sup.snapshot().to_dict()


def test_iframe_contentwindow_alert(chrome_cdp: str, site: str, registry: SupervisorRegistry) -> None:
    sup = registry.get_or_start(task_id="pytest-3", cdp_url=chrome_cdp)
    navigate(sup, f"{site}/main.html")
    sup.evaluate_runtime(
        "setTimeout(() => document.querySelector('#inner').contentWindow.alert('PYTEST-IFRAME'), 50)"
    )
    dialogs = wait_for_dialog(sup)
    assert dialogs, "no iframe dialog detected"
    assert any("PYTEST-IFRAME" in d.message for d in dialogs)
    assert sup.respond_to_dialog("accept")["ok"] is True


def test_prompt_dialog_with_response_text(chrome_cdp: str, site: str, registry: SupervisorRegistry) -> None:
    sup = registry.get_or_start(task_id="pytest-4", cdp_url=chrome_cdp)
    navigate(sup, f"{site}/main.html")
    sup.evaluate_runtime(
        "setTimeout(() => { window.__promptResult = prompt('give me a token', 'default-x'); }, 50)"
    )
    dialogs = wait_for_dialog(sup)
    assert dialogs
    d = dialogs[0]
    assert d.type == "prompt"
    assert d.default_prompt == "default-x"
    assert sup.respond_to_dialog("accept", prompt_text="PYTEST-PROMPT-REPLY")["ok"] is True
    wait_until(
        "the page received the text",
        lambda: sup.evaluate_runtime("window.__promptResult").get("result") == "PYTEST-PROMPT-REPLY",
    )


def test_respond_with_nothing_pending_is_a_clean_error(
    chrome_cdp: str, site: str, registry: SupervisorRegistry
) -> None:
    sup = registry.get_or_start(task_id="pytest-5", cdp_url=chrome_cdp)
    assert sup.respond_to_dialog("dismiss") == {"ok": False, "error": "no dialog is currently open"}
    bad = sup.respond_to_dialog("maybe")
    assert bad["ok"] is False and "accept" in bad["error"] and "dismiss" in bad["error"]
    navigate(sup, f"{site}/main.html")
    sup.evaluate_runtime("setTimeout(() => alert('one'), 10); setTimeout(() => document.querySelector('#inner').contentWindow.confirm('two'), 10)")
    wait_until("a dialog", lambda: bool(sup.snapshot().pending_dialogs))
    unknown = sup.respond_to_dialog("accept", dialog_id="d-999")
    assert unknown["ok"] is False and "d-999" in unknown["error"]
    while sup.snapshot().pending_dialogs:
        assert sup.respond_to_dialog("accept", dialog_id=sup.snapshot().pending_dialogs[0].id)["ok"]


def test_auto_dismiss_records_auto_policy(chrome_cdp: str, site: str, registry: SupervisorRegistry) -> None:
    sup = registry.get_or_start(
        task_id="pytest-6", cdp_url=chrome_cdp, dialog_policy=DIALOG_POLICY_AUTO_DISMISS
    )
    navigate(sup, f"{site}/main.html")
    sup.evaluate_runtime("setTimeout(() => alert('AUTO'), 50)")
    wait_until("the dialog recorded", lambda: bool(sup.snapshot().recent_dialogs))
    snap = sup.snapshot()
    assert snap.pending_dialogs == ()
    r = snap.recent_dialogs[-1]
    assert r.closed_by == "auto_policy"
    assert r.closed_at >= r.opened_at
    assert r.message == "AUTO"


def test_get_or_start_is_idempotent_and_stop_ends_it(chrome_cdp: str, registry: SupervisorRegistry) -> None:
    a = registry.get_or_start(task_id="pytest-7", cdp_url=chrome_cdp)
    b = registry.get_or_start(task_id="pytest-7", cdp_url=chrome_cdp)
    assert a is b
    assert registry.get("pytest-7") is a
    registry.stop("pytest-7")
    assert registry.get("pytest-7") is None
    assert a.snapshot().active is False
    # Safe after stop: each call says so.
    assert a.respond_to_dialog("accept") == {"ok": False, "error": "supervisor is not active"}
    assert a.evaluate_runtime("1")["ok"] is False
    assert a._page_session_id is None
    a.stop()  # twice is fine
    c = registry.get_or_start(task_id="pytest-7", cdp_url=chrome_cdp)
    assert c is not a and c.snapshot().active


def test_stop_makes_active_false(chrome_cdp: str) -> None:
    sup = CDPSupervisor("pytest-8", chrome_cdp)
    sup.start(timeout=15.0)
    assert sup.snapshot().active is True
    sup.stop()
    assert sup.snapshot().active is False


def test_start_failure_raises_with_the_url_redacted() -> None:
    sup = CDPSupervisor("pytest-9", "ws://user:secret@127.0.0.1:9/devtools/browser/x")
    with pytest.raises((RuntimeError, TimeoutError)) as e:
        sup.start(timeout=5.0)
    assert "secret" not in str(e.value)


def test_evaluate_runtime(chrome_cdp: str, site: str, registry: SupervisorRegistry) -> None:
    sup = registry.get_or_start(task_id="pytest-10", cdp_url=chrome_cdp)
    navigate(sup, f"{site}/main.html")
    assert sup.evaluate_runtime("1 + 2") == {"ok": True, "result": 3, "result_type": "number"}
    assert sup.evaluate_runtime("({a: 1, b: [2]})") == {
        "ok": True,
        "result": {"a": 1, "b": [2]},
        "result_type": "object",
    }
    err = sup.evaluate_runtime("definitelyNotDefined")
    assert err["ok"] is False and "ReferenceError" in err["error"]
    node = sup.evaluate_runtime("document.body")
    assert node["ok"] is True and node["result"] == {}
    for expr, text in [("Infinity", "Infinity"), ("NaN", "NaN"), ("-0", "-0"), ("10n", "10n")]:
        assert sup.evaluate_runtime(expr)["result"] == text, expr
    assert sup.evaluate_runtime("undefined") == {"ok": True, "result": None, "result_type": "undefined"}
    assert sup.evaluate_runtime("Promise.resolve(7)")["result"] == 7


def test_browser_cdp_reaches_past_the_public_names(
    chrome_cdp: str, site: str, registry: SupervisorRegistry
) -> None:
    """What the host's browser_cdp(frame_id) does: _state_lock, _frames,
    _page_session_id, _cdp on _loop; a frame the caller adds is routed by
    its cdp_session_id."""
    sup = registry.get_or_start(task_id="pytest-11", cdp_url=chrome_cdp)
    navigate(sup, f"{site}/oopif.html")
    b_origin = site.replace("a.test", "b.test")
    wait_until(
        "the OOPIF attached",
        lambda: any(c.get("session_id") for c in sup.snapshot().frame_tree["children"]),
    )
    child = next(c for c in sup.snapshot().frame_tree["children"] if c.get("is_oopif"))
    with sup._state_lock:
        raw = sup._frames.get(child["frame_id"])
    assert raw is not None and raw.is_oopif and raw.cdp_session_id == child["session_id"]
    assert raw.to_dict()["session_id"] == child["session_id"]
    reply = cdp(
        sup,
        "Runtime.evaluate",
        {"expression": "location.origin", "returnByValue": True},
        session_id=raw.cdp_session_id,
    )
    assert reply["result"]["result"]["value"] == b_origin
    # A frame the caller adds is routed by its session.
    sup._frames["caller-frame"] = FrameInfo(
        frame_id="caller-frame",
        url="x",
        origin="x",
        parent_frame_id=None,
        is_oopif=True,
        cdp_session_id=raw.cdp_session_id,
    )
    with sup._state_lock:
        added = sup._frames.get("caller-frame")
    assert added is not None and added.cdp_session_id == raw.cdp_session_id
    # The page session, and a CDP error raising as the spec's _cdp does.
    top = cdp(sup, "Runtime.evaluate", {"expression": "location.host", "returnByValue": True}, sup._page_session_id)
    assert top["result"]["result"]["value"] == site.split("//")[1]
    with pytest.raises(RuntimeError):
        cdp(sup, "Nope.nothing", {}, sup._page_session_id)


def test_calls_from_a_running_asyncio_loop_and_any_thread(
    chrome_cdp: str, site: str, registry: SupervisorRegistry
) -> None:
    sup = registry.get_or_start(task_id="pytest-12", cdp_url=chrome_cdp)

    async def inside() -> bool:
        return sup.snapshot().active and sup.evaluate_runtime("1")["ok"] is True

    assert asyncio.run(inside())
    out: Dict[str, Any] = {}
    t = threading.Thread(target=lambda: out.update(r=sup.respond_to_dialog("accept")))
    t.start()
    t.join(10)
    assert out["r"] == {"ok": False, "error": "no dialog is currently open"}


def test_no_thread_per_supervisor(chrome_cdp: str, registry: SupervisorRegistry) -> None:
    def threads() -> int:
        return len(os.listdir("/proc/self/task"))

    registry.get_or_start(task_id="pytest-warm", cdp_url=chrome_cdp)
    before = threads()
    for i in range(10):
        registry.get_or_start(task_id=f"pytest-many-{i}", cdp_url=chrome_cdp)
    assert threads() <= before + 1, (before, threads())


def test_a_new_url_stops_the_old_supervisor(chrome_cdp: str, registry: SupervisorRegistry) -> None:
    old = registry.get_or_start(task_id="pytest-13", cdp_url=chrome_cdp)
    other = chrome_cdp.replace("127.0.0.1", "localhost")
    new = registry.get_or_start(task_id="pytest-13", cdp_url=other)
    assert new is not old
    assert new.snapshot().active is True and new.cdp_url == other
    assert old.snapshot().active is False
    assert registry.get("pytest-13") is new
