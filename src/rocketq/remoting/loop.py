"""Event loops for rocketq: uvloop when it is installed, asyncio's own otherwise.

uvloop (a default dependency on Linux and macOS) runs the transport's read and write paths in C and makes
request round trips markedly faster (see ``bench/bench_codec.py``). Set the environment variable
``ROCKETQ_NO_UVLOOP=1`` to use asyncio's default loop even when uvloop is importable.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["loop_factory", "new_event_loop", "run", "uvloop_available", "uvloop_enabled"]

T = TypeVar("T")

_DISABLE_ENV = "ROCKETQ_NO_UVLOOP"


def uvloop_available() -> bool:
    """True when the ``uvloop`` package can be imported."""
    try:
        return importlib.util.find_spec("uvloop") is not None
    except (ImportError, ValueError):
        return False


def uvloop_enabled() -> bool:
    """True when :func:`new_event_loop` will make a uvloop loop (installed and not disabled)."""
    return os.environ.get(_DISABLE_ENV, "") not in ("1", "true", "yes") and uvloop_available()


def loop_factory(*, use_uvloop: bool | None = None) -> Callable[[], asyncio.AbstractEventLoop]:
    """A function making new loops: uvloop's when ``use_uvloop`` (default: :func:`uvloop_enabled`)."""
    if use_uvloop is None:
        use_uvloop = uvloop_enabled()
    if use_uvloop:
        factory: Callable[[], asyncio.AbstractEventLoop] = importlib.import_module("uvloop").new_event_loop
        return factory
    return asyncio.new_event_loop


def new_event_loop(*, use_uvloop: bool | None = None) -> asyncio.AbstractEventLoop:
    """A new event loop: uvloop's if enabled and installed, else asyncio's default."""
    return loop_factory(use_uvloop=use_uvloop)()


def run(main: Coroutine[Any, Any, T], *, use_uvloop: bool | None = None, debug: bool | None = None) -> T:
    """Run ``main`` to completion on a new loop from :func:`new_event_loop`, as ``asyncio.run`` does.

    When no loop can be made (``use_uvloop=True`` without uvloop installed) ``main`` is closed
    before the error propagates, so no "coroutine was never awaited" warning follows it."""
    try:
        factory = loop_factory(use_uvloop=use_uvloop)
    except BaseException:
        main.close()
        raise
    with asyncio.Runner(debug=debug, loop_factory=factory) as runner:
        return runner.run(main)
