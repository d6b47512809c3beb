"""Asyncio twins: a native call that runs on the Rust runtime and resolves an
asyncio future of the caller's loop, with no thread per call.

The runtime calls ``done(ok, value)`` on one of its threads; the future is
resolved on its own loop (``call_soon_threadsafe``). Cancelling the awaiting
task aborts the Rust call.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from . import _native


def _resolve(fut: "asyncio.Future[Any]", ok: bool, value: object) -> None:
    if fut.done():
        return
    if ok:
        fut.set_result(value)
    elif isinstance(value, BaseException):
        fut.set_exception(value)
    else:
        fut.set_exception(RuntimeError(str(value)))


async def run(start: Callable[[_native.Callback], _native.CallHandle]) -> Any:
    """Starts a native call with ``start(callback)`` and awaits its value."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()

    def done(ok: bool, value: object) -> None:
        try:
            loop.call_soon_threadsafe(_resolve, fut, ok, value)
        except RuntimeError:
            pass  # the loop closed meanwhile: nobody waits any more

    handle = start(done)
    try:
        return await fut
    except asyncio.CancelledError:
        handle.cancel()
        raise
