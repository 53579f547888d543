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
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from typing import Protocol, TypeAlias

from rocketq.protocol.command import RemotingCommand

__all__ = ["Handover", "LoopMailbox", "LoopWaiter", "ThreadWaiter", "Waiter", "mailbox_of"]


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
