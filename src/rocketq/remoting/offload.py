"""Large requests without a stalled event loop: their decoding runs on a worker thread, their
effects in slices that yield the loop.

Decoding a request body is pure Python and costs in proportion to its size: a 16 MiB heartbeat
or a registration of 100,000 topics takes seconds. Done on the event loop, that stalls every
other peer of the server for as long. A server therefore hands the bodies of large requests (over
``ServerConfig.offload_threshold`` bytes) to an :class:`Offloader`:

* **one request per code at a time**: :meth:`Offloader.admit` charges the body to the server's
  :class:`~rocketq.remoting.guard.InputBudget` (a request that would take it past its bound is
  answered ``SYSTEM_BUSY``, as RocketMQ answers a request its full thread pool rejects), pauses
  reading of the connection it came on (its later requests wait, so they are handled in the order
  sent, and a peer holds at most one large request in flight) and waits for the code's turn. So at
  most one decoded large request per code is alive at once, whatever the number of peers: that
  bounds the memory decoding can take (``docs/limits.md``);
* **off the loop**: :meth:`Offloader.run` calls the decoder on the server's worker thread. The
  loop thread gets the GIL back at least every switch interval (``sys.getswitchinterval()``;
  ``rocketq server`` sets 0.5 ms), so other peers wait about that much per loop wake-up instead of
  the whole decode;
* **in slices**: what the decoded request changes (registries, route tables) belongs to the loop;
  :class:`TimeSlice` lets a handler apply it part by part, yielding the loop once a slice of time
  is used up.

Small bodies, the usual case, are decoded inline as before: the threshold is checked with one
comparison.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final, ParamSpec, TypeVar

from rocketq.errors import BrokerError
from rocketq.protocol.codes import ResponseCode
from rocketq.remoting.guard import InputBudget

if TYPE_CHECKING:
    from rocketq.remoting.connection import RemotingConnection

__all__ = ["OVERLOAD_REMARK", "Offloader", "TimeSlice"]

logger = logging.getLogger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

OVERLOAD_REMARK: Final = "[OVERLOAD]system busy, start flow control for a while"
"""RocketMQ's remark when it refuses a request its thread pool has no room for (``SYSTEM_BUSY``);
its clients back off and retry on it."""


class Offloader:
    """The worker thread and the per-code turns of one server's large requests.

    ``threshold``: bodies of more bytes are large; ``budget``: the server's input budget, charged
    with each large body from admission to completion; ``name``: the worker thread's name.
    """

    def __init__(
        self,
        *,
        threshold: int,
        budget: InputBudget | None,
        name: str = "rocketq-offload",
        pause_gc: bool = True,
    ) -> None:
        self.threshold = threshold
        self._budget = budget
        self._name = name
        self._executor: ThreadPoolExecutor | None = None
        self._turns: dict[int, asyncio.Lock] = {}
        self._closed = False
        #: large requests admitted so far (for tests and figures)
        self.admitted = 0
        #: pause CPython's automatic garbage collection while large requests are in progress
        self.pause_gc = pause_gc
        self._gc_holds = 0
        self._gc_was_enabled = True

    def wants(self, size: int) -> bool:
        """Whether a body of ``size`` bytes is large (decoded off the loop)."""
        return size > self.threshold

    def admit(
        self,
        conn: RemotingConnection,
        code: int,
        size: int,
        work: Callable[[], Awaitable[T]],
        *,
        in_turn: bool = True,
    ) -> Coroutine[Any, Any, T]:
        """Admit a large request of ``code`` with a ``size``-byte body from ``conn``: ``work()``
        is awaited once the code's turn comes (at once with ``in_turn=False``, for requests
        whose decoded form is no bigger than their body, such as a batch's records), with
        ``conn``'s reading held (from now, so the requests behind it in the same read wait too)
        and ``size`` bytes charged to the input budget until it ends. Raises ``SYSTEM_BUSY`` at
        once if the budget has no room."""
        budget = self._budget
        if budget is not None:
            if budget.used + size > budget.limit:
                raise BrokerError(ResponseCode.SYSTEM_BUSY, OVERLOAD_REMARK)
            budget.used += size
        conn.hold_reading()
        return self._admitted(conn, code if in_turn else None, size, work)

    async def _admitted(
        self, conn: RemotingConnection, code: int | None, size: int, work: Callable[[], Awaitable[T]]
    ) -> T:
        try:
            if code is None:
                return await self._work(conn, work)
            turn = self._turns.get(code)
            if turn is None:
                turn = self._turns[code] = asyncio.Lock()
            async with turn:
                return await self._work(conn, work)
        finally:
            conn.release_reading()
            if self._budget is not None:
                self._budget.used -= size

    async def _work(self, conn: RemotingConnection, work: Callable[[], Awaitable[T]]) -> T:
        if conn.is_closed:  # its peer is gone: nobody waits for this any more
            raise BrokerError(ResponseCode.SYSTEM_ERROR, "the connection closed")
        self.admitted += 1
        self._gc_hold()
        try:
            return await work()
        finally:
            self._gc_release()

    def _gc_hold(self) -> None:
        # CPython's cyclic collector holds the GIL while it scans every tracked object; the
        # hundreds of thousands a large body decodes to make its full collections take 0.1-0.4 s,
        # a stall of every peer. They are freed by reference counting once the request is done,
        # so automatic collection waits until no large request is in progress.
        if self.pause_gc:
            if not self._gc_holds:
                self._gc_was_enabled = gc.isenabled()
                gc.disable()
            self._gc_holds += 1

    def _gc_release(self) -> None:
        if self.pause_gc:
            self._gc_holds -= 1
            if not self._gc_holds and self._gc_was_enabled:
                gc.enable()

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` on the worker thread; its exception, if any, is raised here."""
        if self._closed:
            raise BrokerError(ResponseCode.SYSTEM_BUSY, OVERLOAD_REMARK)
        executor = self._executor
        if executor is None:
            executor = self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(executor, lambda: fn(*args, **kwargs))

    def close(self) -> None:
        """Stop the worker thread (a job it is running finishes; queued ones are dropped)."""
        self._closed = True
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)


class TimeSlice:
    """Loop time for a handler that applies a large request part by part.

    Call :meth:`tick` after each part: once ``seconds`` have passed since the slice began, it
    yields the event loop for one round (every ready peer is served) and begins a new slice.

    >>> async def apply(parts: list[int]) -> int:
    ...     done, ticks = 0, TimeSlice(0.005)
    ...     for part in parts:
    ...         done += part
    ...         await ticks.tick()
    ...     return done
    >>> asyncio.run(apply([1, 2, 3]))
    6
    """

    __slots__ = ("_deadline", "seconds", "yields")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._deadline = time.perf_counter() + seconds
        #: how many times it has yielded
        self.yields = 0

    async def tick(self) -> None:
        if time.perf_counter() >= self._deadline:
            await asyncio.sleep(0)
            self.yields += 1
            self._deadline = time.perf_counter() + self.seconds
