"""The spec's own API (``tools/browser_supervisor.py`` of the host agent),
backed by the Rust supervisor in-process.

A host checkout's module can become ``from cdp_supervisor.hermes import *``:
the same names (``SUPERVISOR_REGISTRY``, ``CDPSupervisor``,
``SupervisorSnapshot``, ``PendingDialog``, ``DialogRecord``, ``FrameInfo``,
``ConsoleEvent``, the ``DIALOG_POLICY_*`` and size constants), the same
return dicts and error strings, and the private attributes the host's
``browser_cdp`` tool reaches for (``_state_lock``, ``_frames``,
``_page_session_id``, ``_loop``, ``_cdp``). What differs from the original,
deliberately (DESIGN.md "Python: the spec's own API, in-process"): no
thread and no asyncio loop per supervisor (one Rust runtime serves them
all; ``_loop`` is one shared loop thread, made on first use); accepting a
``prompt`` without ``prompt_text`` answers with its default text; dialogs
are caught by Chromium's native events (the dialog bridge is the library's
Browserbase path), so ``bridge_request_id`` is ``None``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

from . import _aio, _native

__all__ = [
    "CONSOLE_HISTORY_MAX",
    "DEFAULT_DIALOG_POLICY",
    "DEFAULT_DIALOG_TIMEOUT_S",
    "DIALOG_POLICY_AUTO_ACCEPT",
    "DIALOG_POLICY_AUTO_DISMISS",
    "DIALOG_POLICY_MUST_RESPOND",
    "FRAME_TREE_MAX_ENTRIES",
    "FRAME_TREE_MAX_OOPIF_DEPTH",
    "RECENT_DIALOGS_MAX",
    "SUPERVISOR_REGISTRY",
    "CDPSupervisor",
    "ConsoleEvent",
    "DialogRecord",
    "FrameInfo",
    "PendingDialog",
    "SupervisorRegistry",
    "SupervisorSnapshot",
    "_SupervisorRegistry",
]

DIALOG_POLICY_MUST_RESPOND = "must_respond"
DIALOG_POLICY_AUTO_DISMISS = "auto_dismiss"
DIALOG_POLICY_AUTO_ACCEPT = "auto_accept"
_VALID_POLICIES = frozenset(
    {DIALOG_POLICY_MUST_RESPOND, DIALOG_POLICY_AUTO_DISMISS, DIALOG_POLICY_AUTO_ACCEPT}
)
DEFAULT_DIALOG_POLICY = DIALOG_POLICY_MUST_RESPOND
DEFAULT_DIALOG_TIMEOUT_S = 300.0
# The library's caps (spec: snapshot size bounds).
FRAME_TREE_MAX_ENTRIES = 30
FRAME_TREE_MAX_OOPIF_DEPTH = 2
RECENT_DIALOGS_MAX = 20
CONSOLE_HISTORY_MAX = 50


@dataclass
class PendingDialog:
    """A JS dialog open now on some frame's session."""

    id: str
    type: str
    message: str
    default_prompt: str
    opened_at: float
    cdp_session_id: str
    frame_id: Optional[str] = None
    bridge_request_id: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "message": self.message,
            "default_prompt": self.default_prompt,
            "opened_at": self.opened_at,
            "frame_id": self.frame_id,
        }


@dataclass
class DialogRecord:
    """A dialog that closed (``recent_dialogs``)."""

    id: str
    type: str
    message: str
    opened_at: float
    closed_at: float
    closed_by: str
    frame_id: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "message": self.message,
            "opened_at": self.opened_at,
            "closed_at": self.closed_at,
            "closed_by": self.closed_by,
            "frame_id": self.frame_id,
        }


@dataclass
class FrameInfo:
    """One frame; ``cdp_session_id`` is an OOPIF's own session."""

    frame_id: str
    url: str
    origin: str
    parent_frame_id: Optional[str]
    is_oopif: bool
    cdp_session_id: Optional[str] = None
    name: str = ""

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {
            "frame_id": self.frame_id,
            "url": self.url,
            "origin": self.origin,
            "is_oopif": self.is_oopif,
        }
        if self.cdp_session_id:
            d["session_id"] = self.cdp_session_id
        if self.parent_frame_id:
            d["parent_frame_id"] = self.parent_frame_id
        if self.name:
            d["name"] = self.name
        return d


@dataclass
class ConsoleEvent:
    """A console error or an uncaught exception (``console_errors``)."""

    ts: float
    level: str
    text: str
    url: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        return {"ts": self.ts, "level": self.level, "text": self.text, "url": self.url}


@dataclass(frozen=True)
class SupervisorSnapshot:
    """What the supervisor knows, frozen."""

    pending_dialogs: Tuple[PendingDialog, ...]
    recent_dialogs: Tuple[DialogRecord, ...]
    frame_tree: Dict[str, Any]
    console_errors: Tuple[ConsoleEvent, ...]
    active: bool
    cdp_url: str
    task_id: str

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {
            "pending_dialogs": [d.to_dict() for d in self.pending_dialogs],
            "frame_tree": self.frame_tree,
        }
        if self.recent_dialogs:
            out["recent_dialogs"] = [d.to_dict() for d in self.recent_dialogs]
        return out


def _pending(d: Dict[str, Any], session_of: Dict[str, str], page_session: str) -> PendingDialog:
    frame_id = d.get("frame_id")
    return PendingDialog(
        id=d["id"],
        type=d["type"],
        message=d["message"],
        default_prompt=d.get("default_prompt", ""),
        opened_at=d["opened_at"],
        cdp_session_id=session_of.get(frame_id or "", page_session),
        frame_id=frame_id,
    )


def _record(d: Dict[str, Any]) -> DialogRecord:
    return DialogRecord(
        id=d["id"],
        type=d["type"],
        message=d["message"],
        opened_at=d["opened_at"],
        closed_at=d["closed_at"],
        closed_by=d["closed_by"],
        frame_id=d.get("frame_id"),
    )


def _frames_of(tree: Dict[str, Any]) -> Dict[str, FrameInfo]:
    frames: Dict[str, FrameInfo] = {}
    top = tree.get("top")
    if top:
        frames[top["frame_id"]] = FrameInfo(
            frame_id=top["frame_id"],
            url=top["url"],
            origin=top["origin"],
            parent_frame_id=None,
            is_oopif=False,
        )
    for c in tree.get("children") or []:
        frames[c["frame_id"]] = FrameInfo(
            frame_id=c["frame_id"],
            url=c["url"],
            origin=c["origin"],
            parent_frame_id=c.get("parent_frame_id"),
            is_oopif=bool(c.get("is_oopif")),
            cdp_session_id=c.get("session_id"),
        )
    return frames


class _FrameMap(MutableMapping):  # type: ignore[type-arg]
    """``_frames``: frame id → ``FrameInfo``, read live from the supervisor;
    a frame a caller adds is kept (and routed by its ``cdp_session_id``)."""

    def __init__(self, owner: "CDPSupervisor") -> None:
        self._owner = owner
        self._added: Dict[str, FrameInfo] = {}

    def _all(self) -> Dict[str, FrameInfo]:
        native = self._owner._native
        live = _frames_of(json.loads(native.snapshot_json())["frame_tree"]) if native else {}
        live.update(self._added)
        return live

    def __getitem__(self, frame_id: str) -> FrameInfo:
        return self._all()[frame_id]

    def __setitem__(self, frame_id: str, info: FrameInfo) -> None:
        self._added[frame_id] = info

    def __delitem__(self, frame_id: str) -> None:
        del self._added[frame_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


_loop_lock = threading.Lock()
_shared_loop: Optional[asyncio.AbstractEventLoop] = None


def _background_loop() -> asyncio.AbstractEventLoop:
    """One asyncio loop in a daemon thread, shared by every supervisor: what
    ``_loop`` is (callers schedule ``_cdp`` on it)."""
    global _shared_loop
    with _loop_lock:
        if _shared_loop is None or _shared_loop.is_closed():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def main() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            threading.Thread(target=main, name="cdp-supervisor-hermes-loop", daemon=True).start()
            ready.wait(5.0)
            _shared_loop = loop
        return _shared_loop


_call_ids = itertools.count(1)


class CDPSupervisor:
    """One supervisor per (task_id, cdp_url): the library's, in-process."""

    def __init__(
        self,
        task_id: str,
        cdp_url: str,
        *,
        dialog_policy: str = DEFAULT_DIALOG_POLICY,
        dialog_timeout_s: float = DEFAULT_DIALOG_TIMEOUT_S,
    ) -> None:
        if dialog_policy not in _VALID_POLICIES:
            raise ValueError(
                f"Invalid dialog_policy {dialog_policy!r}; must be one of {sorted(_VALID_POLICIES)}"
            )
        self.task_id = task_id
        self.cdp_url = cdp_url
        self.dialog_policy = dialog_policy
        self.dialog_timeout_s = float(dialog_timeout_s)
        self._state_lock = threading.Lock()
        self._native: Optional[_native.Supervisor] = None
        self._frames = _FrameMap(self)

    @classmethod
    def _adopt(
        cls, native: _native.Supervisor, task_id: str, cdp_url: str, policy: str, timeout_s: float
    ) -> "CDPSupervisor":
        s = cls(task_id, cdp_url, dialog_policy=policy, dialog_timeout_s=timeout_s)
        s._native = native
        return s

    def __repr__(self) -> str:
        return f"<CDPSupervisor task_id={self.task_id!r} active={self._running()}>"

    def _running(self) -> bool:
        return self._native is not None and self._native.is_running()

    # ── public sync API ──────────────────────────────────────────────────

    def start(self, timeout: float = 15.0) -> None:
        """Attaches within ``timeout`` s; raises ``TimeoutError`` or
        ``RuntimeError`` (the URL redacted). A started one: no-op."""
        if self._running():
            return
        self._native = _native.Supervisor.start(
            self.cdp_url, self.dialog_policy, self.dialog_timeout_s, timeout
        )

    def stop(self, timeout: float = 5.0) -> None:
        """Stops it (idempotent); the snapshot says ``active: False`` after."""
        if self._native is not None:
            self._native.stop(timeout)

    def snapshot(self) -> SupervisorSnapshot:
        native = self._native
        if native is None:
            return SupervisorSnapshot((), (), {"top": None, "children": [], "truncated": False}, (), False, self.cdp_url, self.task_id)
        snap = json.loads(native.snapshot_json())
        tree = snap["frame_tree"]
        pending_raw: List[Dict[str, Any]] = snap.get("pending_dialogs") or []
        pending: Tuple[PendingDialog, ...] = ()
        if pending_raw:
            session_of = {
                c["frame_id"]: c["session_id"]
                for c in tree.get("children") or []
                if c.get("session_id")
            }
            page = native.page_session_id() or ""
            pending = tuple(_pending(d, session_of, page) for d in pending_raw)
        return SupervisorSnapshot(
            pending_dialogs=pending,
            recent_dialogs=tuple(_record(d) for d in snap.get("recent_dialogs") or []),
            frame_tree=tree,
            console_errors=tuple(
                ConsoleEvent(ts=c["at"], level=c["level"], text=c["text"], url=c.get("url"))
                for c in snap.get("console_errors") or []
            ),
            active=native.is_running() and snap.get("connection") == "connected",
            cdp_url=self.cdp_url,
            task_id=self.task_id,
        )

    def respond_to_dialog(
        self,
        action: str,
        *,
        prompt_text: Optional[str] = None,
        dialog_id: Optional[str] = None,
        timeout: float = 10.0,
    ) -> Dict[str, Any]:
        """``{"ok": True, "dialog": {…}}`` or ``{"ok": False, "error": "…"}``."""
        if self._native is None:
            if action not in ("accept", "dismiss"):
                return {"ok": False, "error": f"action must be 'accept' or 'dismiss', got {action!r}"}
            return {"ok": False, "error": _native.NOT_ACTIVE}
        out: Dict[str, Any] = json.loads(
            self._native.respond_to_dialog(action, prompt_text, dialog_id, timeout)
        )
        if out.get("ok"):
            d = out["dialog"]
            out["dialog"] = {
                "id": d["id"],
                "type": d["type"],
                "message": d["message"],
                "default_prompt": d.get("default_prompt", ""),
                "opened_at": d["opened_at"],
                "frame_id": d.get("frame_id"),
            }
        return out

    def evaluate_runtime(
        self,
        expression: str,
        *,
        return_by_value: bool = True,
        await_promise: bool = True,
        timeout: float = 10.0,
    ) -> Dict[str, Any]:
        """``{"ok": True, "result": value, "result_type": "…"}`` or
        ``{"ok": False, "error": "…"}`` (a JS exception names its type)."""
        if self._native is None:
            return {"ok": False, "error": _native.NOT_ACTIVE}
        out = json.loads(self._native.evaluate(expression, return_by_value, await_promise, timeout))
        if (
            not out["ok"]
            and return_by_value
            and "reference chain is too long" in str(out.get("error", "")).lower()
        ):
            # Deep DOM structures overflow CDP's by-value serializer: the
            # object's description instead, as the spec does.
            out = json.loads(self._native.evaluate(expression, False, await_promise, timeout))
        if not out["ok"]:
            return {"ok": False, "error": out["error"]}
        reply: Dict[str, Any] = out["reply"]
        details = reply.get("exceptionDetails")
        if details:
            text = details.get("text") or "JavaScript exception"
            description = (details.get("exception") or {}).get("description")
            return {"ok": False, "error": f"{text}: {description}" if description else text}
        result: Dict[str, Any] = reply.get("result") or {}
        result_type = result.get("type", "undefined")
        if "unserializableValue" in result:
            value: Any = result["unserializableValue"]
        elif "value" in result:
            value = result["value"]
        elif result_type == "undefined":
            value = None
        else:
            value = result.get("description")
        return {"ok": True, "result": value, "result_type": result_type}

    # ── what the host's browser_cdp reaches for ──────────────────────────

    @property
    def _loop(self) -> asyncio.AbstractEventLoop:
        return _background_loop()

    @property
    def _page_session_id(self) -> Optional[str]:
        if not self._running():
            return None
        assert self._native is not None
        return self._native.page_session_id()

    async def _cdp(
        self,
        method: str,
        params: Optional[Dict[str, Any]] = None,
        *,
        session_id: Optional[str] = None,
        timeout: float = 10.0,
    ) -> Dict[str, Any]:
        """Sends one CDP command (on ``session_id``; none: the browser) and
        returns the whole reply, ``{"id": n, "result": {…}}``; a CDP error
        raises ``RuntimeError``."""
        native = self._native
        if native is None or not native.is_running():
            raise RuntimeError("supervisor WebSocket is not connected")
        params_json = json.dumps(params) if params else None
        raw = await _aio.run(
            lambda done: native.cdp_on_session_async(method, params_json, session_id, timeout, done)
        )
        return {"id": next(_call_ids), "result": json.loads(raw)}


class SupervisorRegistry:
    """task_id → supervisor, idempotent; safe from any thread."""

    def __init__(self) -> None:
        self._native = _native.Registry()
        self._lock = threading.Lock()
        self._by_task: Dict[str, CDPSupervisor] = {}

    def _wrap(self, task_id: str, native: _native.Supervisor, cdp_url: str, policy: str, timeout_s: float) -> CDPSupervisor:
        with self._lock:
            known = self._by_task.get(task_id)
            if known is not None and known._native is not None and known._native.id == native.id:
                return known
            s = CDPSupervisor._adopt(native, task_id, cdp_url, policy, timeout_s)
            self._by_task[task_id] = s
            return s

    def get(self, task_id: str) -> Optional[CDPSupervisor]:
        native = self._native.get(task_id)
        if native is None:
            with self._lock:
                self._by_task.pop(task_id, None)
            return None
        with self._lock:
            known = self._by_task.get(task_id)
        if known is not None and known._native is not None and known._native.id == native.id:
            return known
        return self._wrap(task_id, native, native.endpoint, DEFAULT_DIALOG_POLICY, DEFAULT_DIALOG_TIMEOUT_S)

    def get_or_start(
        self,
        task_id: str,
        cdp_url: str,
        *,
        dialog_policy: Optional[str] = None,
        dialog_timeout_s: Optional[float] = None,
        start_timeout: float = 15.0,
    ) -> CDPSupervisor:
        """The same object for the same task and URL; a new URL stops the
        old supervisor once a fresh one attached."""
        policy = dialog_policy or DEFAULT_DIALOG_POLICY
        if policy not in _VALID_POLICIES:
            raise ValueError(f"Invalid dialog_policy {policy!r}; must be one of {sorted(_VALID_POLICIES)}")
        timeout_s = DEFAULT_DIALOG_TIMEOUT_S if dialog_timeout_s is None else float(dialog_timeout_s)
        native = self._native.get_or_start(task_id, cdp_url, policy, timeout_s, start_timeout)
        return self._wrap(task_id, native, cdp_url, policy, timeout_s)

    def stop(self, task_id: str) -> None:
        with self._lock:
            self._by_task.pop(task_id, None)
        self._native.stop(task_id)

    def stop_all(self) -> None:
        with self._lock:
            self._by_task.clear()
        self._native.stop_all()


# The host module's own name for the class (in its ``__all__``, so its
# callers import it; a ``from cdp_supervisor.hermes import *`` must bring it).
_SupervisorRegistry = SupervisorRegistry

SUPERVISOR_REGISTRY = SupervisorRegistry()
