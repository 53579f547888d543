"""The synchronous facade's engine: an event loop running in a background thread.

Each :class:`~rocketq.client.instance.ClientInstance` owns one :class:`LoopThread` (uvloop when
installed). Plain code calls :meth:`LoopThread.call` (blocks for the result) or
:meth:`LoopThread.submit` (a ``concurrent.futures.Future``); asyncio code awaits
:meth:`LoopThread.wrap` (the same future, awaitable from any other loop). Calls made from the
loop thread itself must not block on it: they raise :class:`~rocketq.errors.ClientStateError`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from rocketq.errors import ClientStateError
from rocketq.remoting.loop import new_event_loop

__all__ = ["LoopThread"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class LoopThread:
    """An event loop in a daemon thread; started on construction, stopped by :meth:`stop`."""

    def __init__(self, name: str, *, use_uvloop: bool | None = None) -> None:
        self.loop = new_event_loop(use_uvloop=use_uvloop)
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        try:
            self.loop.run_forever()
        finally:
            try:
                pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
                for task in pending:
                    task.cancel()
                if pending:
                    self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            finally:
                self.loop.close()

    @property
    def in_loop_thread(self) -> bool:
        return threading.get_ident() == self._thread.ident

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self.loop.is_closed()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop; its future, usable from any thread."""
        if not self.running:
            coro.close()
            raise ClientStateError("the client's event loop is not running (shut down?)")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (from a thread other than the loop's)."""
        if self.in_loop_thread:
            coro.close()
            raise ClientStateError(
                "blocking call made on the client's own event loop thread; use the async API"
            )
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    async def wrap(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` run on this loop from another asyncio loop (or this one)."""
        if self.in_loop_thread:
            return await coro
        return await asyncio.wrap_future(self.submit(coro))

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop (pending tasks are cancelled) and join the thread."""
        if self._thread.is_alive() and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.loop.stop)
        if not self.in_loop_thread:
            self._thread.join(timeout)
