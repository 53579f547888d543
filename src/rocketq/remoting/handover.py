"""Waiting for a response from outside the connection's event loop.

A :class:`~rocketq.remoting.RemotingConnection` lives on one event loop. Blocking clients call it
from plain threads (:meth:`~rocketq.remoting.RemotingConnection.invoke_threadsafe`) and asyncio
applications from their own loops (:meth:`~rocketq.remoting.RemotingConnection.invoke_from_loop`).
Both hand the encoded request over with a *waiter*; the connection's loop records the waiter
beside its own futures (it has the same ``done`` / ``set_result`` / ``set_exception`` methods)
and completes it when the response comes or the connection closes:

* :class:`ThreadWaiter` wakes one blocked thread by releasing a lock the thread holds;
* :class:`LoopWaiter` completes an asyncio future of another loop through that loop's
  :class:`LoopMailbox`, which delivers every completion posted while it was waking the loop in one
  ``call_soon_threadsafe``: one wake-up of the other loop per batch, not per response (asyncio's
  own ``call_soon_threadsafe`` writes to the loop's self-pipe on every call).

A waiter whose caller stopped waiting (timeout, cancellation) is marked ``abandoned``: the loop
does not send a request it has not sent yet, and forgets one it has.

:class:`HandoverQueue` is the hand-over itself, one per connection: the calling thread does the
work it can (RPC hooks, numbering and encoding the frame, through the connection core's
:meth:`~rocketq.protocol.connection.ConnectionCore.prepare_request`), queues it, and wakes the
connection's loop once per batch; the loop records the waiter in the core and writes the bytes.
Each caller times itself out on its own thread or loop.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from typing import TYPE_CHECKING, Protocol, TypeAlias

from rocketq.errors import RemotingTimeoutError
from rocketq.protocol.command import RemotingCommand

if TYPE_CHECKING:
    from rocketq.remoting.connection import RemotingConnection

__all__ = [
    "Handover",
    "HandoverQueue",
    "LoopMailbox",
    "LoopWaiter",
    "ThreadWaiter",
    "Waiter",
    "mailbox_of",
    "timeout_error",
]


class Waiter(Protocol):
    """What waits for a response on a connection: an asyncio future of the connection's loop,
    a :class:`ThreadWaiter` or a :class:`LoopWaiter`. Completed on the connection's loop only."""

    def done(self) -> bool: ...
    def set_result(self, result: RemotingCommand, /) -> None: ...
    def set_exception(self, exception: BaseException, /) -> None: ...


class ThreadWaiter:
    """A thread blocked until its response comes: it holds ``lock`` and blocks acquiring it again."""

    __slots__ = ("abandoned", "error", "lock", "response")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lock.acquire()
        self.response: RemotingCommand | None = None
        self.error: BaseException | None = None
        self.abandoned = False

    def done(self) -> bool:
        return self.response is not None or self.error is not None

    def set_result(self, result: RemotingCommand, /) -> None:
        self.response = result
        self.lock.release()

    def set_exception(self, exception: BaseException, /) -> None:
        self.error = exception
        self.lock.release()


class LoopMailbox:
    """Completions for futures of one event loop, posted from another thread, delivered in batches."""

    __slots__ = ("_items", "_lock", "_loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # weakly: the registry below is keyed weakly by the loop, and a strong reference from
        # its value would keep every loop that ever awaited a response alive
        self._loop = weakref.ref(loop)
        self._items: deque[
            tuple[asyncio.Future[RemotingCommand], RemotingCommand | None, BaseException | None]
        ]
        self._items = deque()
        self._lock = threading.Lock()

    def post(
        self,
        future: asyncio.Future[RemotingCommand],
        result: RemotingCommand | None,
        error: BaseException | None,
    ) -> None:
        """Complete ``future`` (on its loop, soon) with ``result`` or ``error``."""
        with self._lock:
            wake = not self._items  # else a delivery is already on its way
            self._items.append((future, result, error))
        if not wake:
            return
        loop = self._loop()
        try:
            if loop is None:
                raise RuntimeError("the loop is gone")
            loop.call_soon_threadsafe(self._deliver)
        except RuntimeError:  # that loop is closed: nobody awaits its futures any more
            with self._lock:
                self._items.clear()  # and holding them would keep the loop alive

    def _deliver(self) -> None:
        with self._lock:
            items = list(self._items)
            self._items.clear()
        for future, result, error in items:
            if future.done():  # cancelled, or timed out, meanwhile
                continue
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)  # type: ignore[arg-type]


_mailboxes: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopMailbox] = weakref.WeakKeyDictionary()
_mailboxes_lock = threading.Lock()


def mailbox_of(loop: asyncio.AbstractEventLoop) -> LoopMailbox:
    """The mailbox of ``loop`` (one per loop, kept while the loop lives)."""
    box = _mailboxes.get(loop)
    if box is None:
        with _mailboxes_lock:
            box = _mailboxes.get(loop)
            if box is None:
                box = _mailboxes[loop] = LoopMailbox(loop)
    return box


class LoopWaiter:
    """A coroutine on ``loop`` (not the connection's) awaiting ``future``, a future of ``loop``."""

    __slots__ = ("_done", "abandoned", "future", "mailbox")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.mailbox = mailbox_of(loop)
        self.future: asyncio.Future[RemotingCommand] = loop.create_future()
        self._done = False
        self.abandoned = False

    def done(self) -> bool:
        return self._done

    def set_result(self, result: RemotingCommand, /) -> None:
        self._done = True
        self.mailbox.post(self.future, result, None)

    def set_exception(self, exception: BaseException, /) -> None:
        self._done = True
        self.mailbox.post(self.future, None, exception)


#: A request handed over to a connection's loop: opaque, request code, waiter, and the encoded
#: frame's two parts.
Handover: TypeAlias = tuple[int, int, ThreadWaiter | LoopWaiter, bytes, bytes]


def timeout_error(peer: str, code: int, opaque: int, timeout: float) -> RemotingTimeoutError:
    """The error of a request to ``peer`` that got no answer within ``timeout`` seconds."""
    return RemotingTimeoutError(
        f"no response from {peer} to request code {code} (opaque {opaque}) within {timeout:.3f}s"
    )


def _time_out(
    future: asyncio.Future[RemotingCommand], peer: str, code: int, opaque: int, timeout: float
) -> None:
    if not future.done():
        future.set_exception(timeout_error(peer, code, opaque, timeout))


class HandoverQueue:
    """Requests of other threads and loops for one connection's loop (see the module docstring)."""

    __slots__ = ("_conn", "_items", "_lock", "_loop")

    def __init__(self, conn: RemotingConnection) -> None:
        self._conn = conn
        self._loop = conn.loop
        self._items: deque[Handover] = deque()
        self._lock = threading.Lock()

    def call_threadsafe(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send ``request`` from a plain thread and block for its response (see
        :meth:`~rocketq.remoting.RemotingConnection.invoke_threadsafe`)."""
        conn = self._conn
        opaque, head, body = conn.prepare_request(request)
        waiter = ThreadWaiter()
        self._hand_over((opaque, request.code, waiter, head, body))
        if not waiter.lock.acquire(timeout=max(timeout, 0.0)):
            waiter.abandoned = True
            self._abandon_threadsafe(opaque, request.code, timed_out=True)
            raise timeout_error(conn.remote_address, request.code, opaque, timeout)
        if waiter.error is not None:
            raise waiter.error
        response = waiter.response
        assert response is not None
        conn.after_response(request, response)
        return response

    async def call_from_loop(
        self, loop: asyncio.AbstractEventLoop, request: RemotingCommand, timeout: float
    ) -> RemotingCommand:
        """Send ``request`` from a coroutine of ``loop`` (not the connection's) and await its
        response (see :meth:`~rocketq.remoting.RemotingConnection.invoke_from_loop`)."""
        conn = self._conn
        opaque, head, body = conn.prepare_request(request)
        waiter = LoopWaiter(loop)
        future = waiter.future
        self._hand_over((opaque, request.code, waiter, head, body), wake_from=loop)
        timer = loop.call_later(
            max(timeout, 0.0), _time_out, future, conn.remote_address, request.code, opaque, timeout
        )
        try:
            response = await future
        except BaseException as exc:  # the timeout, or the caller was cancelled
            waiter.abandoned = True
            self._abandon_threadsafe(opaque, request.code, timed_out=isinstance(exc, RemotingTimeoutError))
            raise
        finally:
            timer.cancel()
        conn.after_response(request, response)
        return response

    def _hand_over(self, handover: Handover, *, wake_from: asyncio.AbstractEventLoop | None = None) -> None:
        """Queue a request for the connection's loop (from another thread), waking it if idle.

        From another event loop (``wake_from``) the wake-up waits for the end of that loop's
        turn, so the requests of all its tasks that turn cost one cross-thread wake-up."""
        with self._lock:
            wake = not self._items  # else a wake-up is already on its way
            self._items.append(handover)
        if not wake:
            return
        if wake_from is not None:
            wake_from.call_soon(self._wake)
            return
        try:
            self._loop.call_soon_threadsafe(self.take)
        except RuntimeError:  # the loop is closed: nobody will send it
            raise self._conn.closed_error(f"request code {handover[1]}") from None

    def _wake(self) -> None:
        try:
            self._loop.call_soon_threadsafe(self.take)
        except RuntimeError:  # the loop is closed: fail what waits to be sent
            for _opaque, code, waiter, _head, _body in self._take_all():
                waiter.set_exception(self._conn.closed_error(f"request code {code}"))

    def _take_all(self) -> list[Handover]:
        with self._lock:
            handovers = list(self._items)
            self._items.clear()
        return handovers

    def take(self) -> None:
        """Loop thread: send what callers handed over (fail it, if the connection is closed)."""
        conn = self._conn
        for opaque, code, waiter, head, body in self._take_all():
            if waiter.abandoned:
                continue
            if conn.is_closed:
                waiter.set_exception(conn.closed_error(f"request code {code}"))
                continue
            conn.track(opaque, code, waiter, head, body)  # the caller's own thread or loop times it out

    def _abandon_threadsafe(self, opaque: int, code: int, *, timed_out: bool) -> None:
        try:
            self._loop.call_soon_threadsafe(self._conn.abandon, opaque, code, timed_out)
        except RuntimeError:
            pass  # the loop is closed; nothing is pending any more
