"""cdp-supervisor in Python: a browser supervisor for AI agents, in-process.

``Task`` (alias ``Browser``) is one agent task: its methods are the MCP
server's tools (``navigate``, ``snapshot``, ``dialog``, ``cdp``, ``click``,
``type``, ``press_key``, ``select_option``, ``tabs``, ``wait``, ``connect``,
``disconnect``) and return the dicts the tools return. ``AsyncTask`` (or
``task.aio``) has the same methods as coroutines. A tool error raises a
``ToolError``: ``InterruptedByDialog`` (with ``call_id``: the call is queued
in the page, do not resend it), ``NavigationBlocked``, ``DialogError``…
Config is the YAML's ``browser:`` keys as keyword arguments, validated the
same way (``ConfigError``).

``cdp_supervisor.hermes`` is the spec's own API (``SUPERVISOR_REGISTRY``,
``CDPSupervisor``…) for a host that swaps its module for this one.

Blocking calls release the GIL and Ctrl-C interrupts them; any thread may
call; one Rust runtime serves every supervisor; logs go to ``logging``
under ``cdp_supervisor`` (``CDP_SUPERVISOR_LOG`` picks what the Rust side
records, default ``info``). At exit every supervisor is stopped and every
Chromium it launched ends, profile directory and all.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import uuid
from typing import Any, Dict, List, Optional, Union

from . import _aio, _native
from ._native import ConfigError

__all__ = [
    "AsyncTask",
    "Browser",
    "ConfigError",
    "DialogError",
    "InterruptedByDialog",
    "NavigationBlocked",
    "PersonInControl",
    "Task",
    "TaskClosed",
    "ToolError",
]

atexit.register(_native.shutdown)

Json = Dict[str, Any]


class ToolError(Exception):
    """A tool refused or failed; ``str()`` is what the agent reads."""

    def __init__(self, message: str, *, tool: str, structured: Optional[Json] = None) -> None:
        super().__init__(message)
        self.message = message
        self.tool = tool
        self.structured = structured


class InterruptedByDialog(ToolError):
    """A dialog blocks the call: it has not completed, it is still queued in
    the page and runs once the dialog is answered. Do not resend it: its
    outcome comes in ``completed_calls`` under ``call_id``."""

    def __init__(self, message: str, *, tool: str, structured: Json) -> None:
        super().__init__(message, tool=tool, structured=structured)
        self.call_id: str = structured["call_id"]
        self.method: str = structured.get("method", tool)
        self.pending_dialogs: List[Json] = structured.get("pending_dialogs") or []


class NavigationBlocked(ToolError):
    """The navigation policy (``allowed_origins``, ``blocked_origins``,
    ``allow_file_urls``) refuses the URL; ``rule`` names the rule."""

    def __init__(self, message: str, *, tool: str, url: str, rule: str) -> None:
        super().__init__(message, tool=tool)
        self.url = url
        self.rule = rule


class DialogError(ToolError):
    """``dialog`` could not answer: none open, several without
    ``dialog_id``, an unknown id, a bad action, a dialog Chromium will not
    answer."""


class PersonInControl(ToolError):
    """A person has the browser (``handoff``): tools that change the page
    wait for the hand-back. ``since`` and ``until`` are Unix seconds."""

    def __init__(self, message: str, *, tool: str, structured: Json) -> None:
        super().__init__(message, tool=tool, structured=structured)
        self.since: float = structured.get("since", 0.0)
        self.until: float = structured.get("until", 0.0)
        self.reason: str = structured.get("reason", "")


class TaskClosed(ToolError):
    """The task was closed; make a new one."""


def _navigated_url(name: str, args: Json) -> Optional[str]:
    """The URL a call asks the browser to load, if any."""
    if name == "browser_navigate" or (name == "browser_tabs" and args.get("action") == "new"):
        url = args.get("url")
        return url if isinstance(url, str) else None
    if name == "browser_cdp" and args.get("method") == "Target.createTarget":
        url = (args.get("params") or {}).get("url")
        return url if isinstance(url, str) and url else None
    return None


def _typed(session: _native.Session, name: str, args: Json, e: _native.NativeToolError) -> ToolError:
    message, structured_json = e.args
    structured: Optional[Json] = json.loads(structured_json) if structured_json else None
    if session.closed:
        return TaskClosed(message, tool=name)
    if structured and structured.get("interrupted_by_dialog"):
        return InterruptedByDialog(message, tool=name, structured=structured)
    if structured and structured.get("error") == "person_in_control":
        return PersonInControl(message, tool=name, structured=structured)
    if name == "browser_dialog":
        return DialogError(message, tool=name, structured=structured)
    url = _navigated_url(name, args)
    if url is not None:
        rule = session.navigation_refusal(url)
        if rule is not None:
            return NavigationBlocked(message, tool=name, url=url, rule=rule)
    return ToolError(message, tool=name, structured=structured)


def _args(**kwargs: Any) -> Json:
    """Keyword arguments without the ``None`` ones: the tool's defaults apply."""
    return {k: v for k, v in kwargs.items() if v is not None}


class _Base:
    def __init__(
        self,
        task_id: Optional[str] = None,
        *,
        config: Union[str, "os.PathLike[str]", None] = None,
        _session: Optional[_native.Session] = None,
        **browser: Any,
    ) -> None:
        if _session is None:
            path = os.fspath(config) if config is not None else None
            _session = _native.Session(
                task_id or f"task-{uuid.uuid4().hex[:12]}",
                json.dumps({"browser": browser}),
                path,
            )
        self._session = _session

    @property
    def task_id(self) -> str:
        return self._session.task_id

    @property
    def closed(self) -> bool:
        return self._session.closed

    def tool_names(self) -> List[str]:
        """The tools this task offers (a backend with no CDP hides some)."""
        return self._session.tool_names()

    def close(self) -> None:
        """Stops the supervisor and a Chromium it launched; later calls raise ``TaskClosed``."""
        self._session.close()


class Task(_Base):
    """One agent task over one supervised browser; each method is a tool.

    ``Task(dialog_policy="auto_dismiss", cdp_url="http://127.0.0.1:9222")``:
    keyword arguments are the YAML's ``browser:`` keys; ``config=PATH`` reads
    a YAML file first. With no ``cdp_url`` the first ``navigate`` launches a
    local headless Chromium, ended by ``close()`` (or at exit).

    ``Task(isolation="context")``: many tasks, one browser — every such task
    of the process runs in a browser context of its own (cookies, storage,
    downloads apart) in one shared Chromium, launched by the first of them
    and closed with the last; ``close()`` disposes the task's context.
    """

    def __enter__(self) -> "Task":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def aio(self) -> "AsyncTask":
        """The same task, with coroutines for methods."""
        return AsyncTask(_session=self._session)

    def call(self, name: str, args: Optional[Json] = None) -> Json:
        """Calls tool ``name`` (``browser_…``) with ``args``."""
        a = args or {}
        try:
            out: Json = json.loads(self._session.call(name, json.dumps(a)))
        except _native.NativeToolError as e:
            raise _typed(self._session, name, a, e) from None
        return out

    def navigate(self, url: str) -> Json:
        return self.call("browser_navigate", {"url": url})

    def snapshot(
        self,
        page: bool = True,
        page_cursor: Optional[str] = None,
        find: Optional[str] = None,
        full_text: Optional[bool] = None,
    ) -> Json:
        """browser_snapshot: ``page_cursor`` continues a cut outline, ``find``
        keeps the lines whose role or name holds it, ``full_text`` adds all
        visible text."""
        return self.call(
            "browser_snapshot",
            _args(page=page, page_cursor=page_cursor, find=find, full_text=full_text),
        )

    def dialog(
        self,
        action: str,
        prompt_text: Optional[str] = None,
        dialog_id: Optional[str] = None,
        files: Optional[List[str]] = None,
        username: Optional[str] = None,
        password: Optional[str] = None,
    ) -> Json:
        """browser_dialog: ``files`` answers a file_chooser, ``username``
        and ``password`` an http_auth (the password is never shown back)."""
        return self.call(
            "browser_dialog",
            _args(
                action=action,
                prompt_text=prompt_text,
                dialog_id=dialog_id,
                files=files,
                username=username,
                password=password,
            ),
        )

    def cdp(
        self,
        method: str,
        params: Optional[Json] = None,
        frame_id: Optional[str] = None,
        timeout_s: Optional[float] = None,
        target_id: Optional[str] = None,
    ) -> Json:
        return self.call(
            "browser_cdp",
            _args(method=method, params=params, frame_id=frame_id, timeout_s=timeout_s, target_id=target_id),
        )

    def click(self, ref: str, button: Optional[str] = None, click_count: Optional[int] = None) -> Json:
        return self.call("browser_click", _args(ref=ref, button=button, click_count=click_count))

    def type(self, ref: str, text: str, submit: Optional[bool] = None) -> Json:
        return self.call("browser_type", _args(ref=ref, text=text, submit=submit))

    def press_key(self, key: str) -> Json:
        return self.call("browser_press_key", {"key": key})

    def select_option(self, ref: str, values: List[str]) -> Json:
        return self.call("browser_select_option", {"ref": ref, "values": values})

    def tabs(self, action: str = "list", target_id: Optional[str] = None, url: Optional[str] = None) -> Json:
        return self.call("browser_tabs", _args(action=action, target_id=target_id, url=url))

    def wait(self, event: str = "any", timeout_s: Optional[float] = None, since: Optional[int] = None) -> Json:
        return self.call("browser_wait", _args(event=event, timeout_s=timeout_s, since=since))

    def connect(self, cdp_url: str, target_id: Optional[str] = None) -> Json:
        return self.call("browser_connect", _args(cdp_url=cdp_url, target_id=target_id))

    def disconnect(self) -> Json:
        return self.call("browser_disconnect", {})

    def handoff(self, reason: str, timeout_s: Optional[float] = None, wait: Optional[bool] = None) -> Json:
        """browser_handoff: gives the browser to a person through the live
        view. Returns ``{status, url, view_url, expires_at, handoff?}``:
        send ``url`` to your user (it is theirs alone); with ``wait`` (the
        default) this returns when they press Done (``handed_back``) or at
        ``timeout_s`` (``timed_out``); with ``wait=False`` at once, and
        ``wait("handed_back")`` waits. ``handoff`` says what happened,
        never what the person typed."""
        return self.call("browser_handoff", _args(reason=reason, timeout_s=timeout_s, wait=wait))


Browser = Task


class AsyncTask(_Base):
    """``Task`` for asyncio: the same methods, as coroutines; no thread per call."""

    async def __aenter__(self) -> "AsyncTask":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """``close()`` off the loop (it waits for Chromium to end)."""
        await asyncio.get_running_loop().run_in_executor(None, self._session.close)

    async def call(self, name: str, args: Optional[Json] = None) -> Json:
        a = args or {}
        text = json.dumps(a)
        session = self._session
        try:
            raw = await _aio.run(lambda done: session.call_async(name, text, done))
        except _native.NativeToolError as e:
            raise _typed(session, name, a, e) from None
        out: Json = json.loads(raw)
        return out

    async def navigate(self, url: str) -> Json:
        return await self.call("browser_navigate", {"url": url})

    async def snapshot(
        self,
        page: bool = True,
        page_cursor: Optional[str] = None,
        find: Optional[str] = None,
        full_text: Optional[bool] = None,
    ) -> Json:
        """browser_snapshot: ``page_cursor`` continues a cut outline, ``find``
        keeps the lines whose role or name holds it, ``full_text`` adds all
        visible text."""
        return await self.call(
            "browser_snapshot",
            _args(page=page, page_cursor=page_cursor, find=find, full_text=full_text),
        )

    async def dialog(
        self,
        action: str,
        prompt_text: Optional[str] = None,
        dialog_id: Optional[str] = None,
        files: Optional[List[str]] = None,
        username: Optional[str] = None,
        password: Optional[str] = None,
    ) -> Json:
        """browser_dialog: ``files`` answers a file_chooser, ``username``
        and ``password`` an http_auth (the password is never shown back)."""
        return await self.call(
            "browser_dialog",
            _args(
                action=action,
                prompt_text=prompt_text,
                dialog_id=dialog_id,
                files=files,
                username=username,
                password=password,
            ),
        )

    async def cdp(
        self,
        method: str,
        params: Optional[Json] = None,
        frame_id: Optional[str] = None,
        timeout_s: Optional[float] = None,
        target_id: Optional[str] = None,
    ) -> Json:
        return await self.call(
            "browser_cdp",
            _args(method=method, params=params, frame_id=frame_id, timeout_s=timeout_s, target_id=target_id),
        )

    async def click(self, ref: str, button: Optional[str] = None, click_count: Optional[int] = None) -> Json:
        return await self.call("browser_click", _args(ref=ref, button=button, click_count=click_count))

    async def type(self, ref: str, text: str, submit: Optional[bool] = None) -> Json:
        return await self.call("browser_type", _args(ref=ref, text=text, submit=submit))

    async def press_key(self, key: str) -> Json:
        return await self.call("browser_press_key", {"key": key})

    async def select_option(self, ref: str, values: List[str]) -> Json:
        return await self.call("browser_select_option", {"ref": ref, "values": values})

    async def tabs(self, action: str = "list", target_id: Optional[str] = None, url: Optional[str] = None) -> Json:
        return await self.call("browser_tabs", _args(action=action, target_id=target_id, url=url))

    async def wait(self, event: str = "any", timeout_s: Optional[float] = None, since: Optional[int] = None) -> Json:
        return await self.call("browser_wait", _args(event=event, timeout_s=timeout_s, since=since))

    async def connect(self, cdp_url: str, target_id: Optional[str] = None) -> Json:
        return await self.call("browser_connect", _args(cdp_url=cdp_url, target_id=target_id))

    async def disconnect(self) -> Json:
        return await self.call("browser_disconnect", {})

    async def handoff(self, reason: str, timeout_s: Optional[float] = None, wait: Optional[bool] = None) -> Json:
        """``Task.handoff`` as a coroutine: the loop runs on while the person works."""
        return await self.call("browser_handoff", _args(reason=reason, timeout_s=timeout_s, wait=wait))

