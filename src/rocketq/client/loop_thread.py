"""The synchronous facade's engine: an event loop running in a background thread.

Each :class:`~rocketq.client.instance.ClientInstance` owns one :class:`LoopThread` (uvloop when
installed). Plain code calls :meth:`LoopThread.call` (blocks for the result) or
:meth:`LoopThread.submit` (a ``concurrent.futures.Future``); asyncio code awaits
:meth:`LoopThread.wrap` (the same future, awaitable from any other loop). Calls made from the
loop thread itself must not block on it: they raise :class:`~rocketq.errors.ClientStateError`.

:meth:`~LoopThread.call` runs every blocking call that needs the loop (a blocking send's
attempts go straight to its connection instead, see
:meth:`~rocketq.client.producer.core.ProducerCore.send_blocking`), so it avoids
``asyncio.run_coroutine_threadsafe``: callers append to a queue and only the caller that finds
the queue idle wakes the loop (one ``call_soon_threadsafe``, one self-pipe write, per batch of
calls rather than per call); the loop starts a task for every queued call, and each caller waits
on a pre-acquired lock of its own that the task's completion releases. :meth:`~LoopThread.submit`
shares the queue, its future completed from the loop. From many threads this
halves the hand-off's CPU cost per call (``python bench/bench_client.py --handoff``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections import deque
from collections.abc import Coroutine, Iterable
from typing import Any, Generic, TypeVar

from rocketq.errors import ClientStateError
from rocketq.remoting.loop import new_event_loop

__all__ = ["LoopThread", "cancel_and_wait"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait until each has ended (whatever it raised)."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class _Call(Generic[T]):
    """One pending :meth:`LoopThread.call`: its coroutine, its task and how it ended.

    ``done`` is acquired at creation and released (on the loop) when the outcome is set; the
    calling thread blocks on acquiring it again.
    """

    __slots__ = ("cancelled", "coro", "done", "error", "result", "task")

    def __init__(self, coro: Coroutine[Any, Any, T]) -> None:
        self.coro: Coroutine[Any, Any, T] | None = coro
        self.task: asyncio.Task[T] | None = None
        self.result: T | None = None
        self.error: BaseException | None = None
        self.cancelled = False
        self.done = threading.Lock()
        self.done.acquire()

    def gave_up(self) -> bool:
        """Whether the caller stopped waiting before the loop started the call."""
        return self.cancelled

    def finish(self, task: asyncio.Task[T]) -> None:
        """The task's done callback (loop thread): record its outcome and wake the caller."""
        if task.cancelled():
            self.error = concurrent.futures.CancelledError()
        else:
            error = task.exception()
            if error is None:
                self.result = task.result()
            else:
                self.error = error
        self.task = None
        self.done.release()

    def fail(self, error: BaseException) -> None:
        """End a call that never started (loop thread, or the loop's teardown)."""
        coro, self.coro = self.coro, None
        if coro is not None:
            coro.close()
        self.error = error
        self.done.release()


class _Submitted(_Call[T]):
    """One :meth:`LoopThread.submit`: the outcome goes to a ``concurrent.futures.Future``.

    The future stays pending while the task runs (so that ``future.cancel()`` still works and
    cancels the task), as ``asyncio.run_coroutine_threadsafe`` does.
    """

    __slots__ = ("future", "owner")

    def __init__(self, coro: Coroutine[Any, Any, T], owner: LoopThread) -> None:
        self.coro = coro  # no lock, no result fields: nobody blocks on this call
        self.task = None
        self.owner = owner
        self.future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def on_future_done(self, future: concurrent.futures.Future[T]) -> None:
        """The future's done callback (any thread): a cancelled future cancels the task."""
        if future.cancelled():
            try:
                self.owner.loop.call_soon_threadsafe(LoopThread._cancel, self)
            except RuntimeError:
                pass  # the loop is closed; its teardown ended the call

    def gave_up(self) -> bool:
        return self.future.cancelled()

    def finish(self, task: asyncio.Task[T]) -> None:
        self.task = None
        future = self.future
        if task.cancelled():
            future.cancel()
        if not future.set_running_or_notify_cancel():
            return
        error = task.exception()
        if error is None:
            future.set_result(task.result())
        else:
            future.set_exception(error)

    def fail(self, error: BaseException) -> None:
        coro, self.coro = self.coro, None
        if coro is not None:
            coro.close()
        if self.future.set_running_or_notify_cancel():
            self.future.set_exception(error)


class LoopThread:
    """An event loop in a daemon thread; started on construction, stopped by :meth:`stop`."""

    def __init__(self, name: str, *, use_uvloop: bool | None = None) -> None:
        self.loop = new_event_loop(use_uvloop=use_uvloop)
        self._ready = threading.Event()
        # Calls waiting for the loop to start them; ``_closed`` refuses new ones at teardown.
        self._queue: deque[_Call[Any]] = deque()
        self._queue_lock = threading.Lock()
        self._closed = False
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
                with self._queue_lock:
                    self._closed = True
                    queued = list(self._queue)
                    self._queue.clear()
                for call in queued:
                    call.fail(ClientStateError("the client's event loop stopped before running the call"))
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
        """Schedule ``coro`` on the loop; its future, usable from any thread.

        Cancelling the future cancels ``coro``; when the loop stops first, the future ends
        cancelled (calls in flight) or with :class:`~rocketq.errors.ClientStateError` (queued).
        """
        call = _Submitted(coro, self)
        self._enqueue(call)
        call.future.add_done_callback(call.on_future_done)
        return call.future

    def _enqueue(self, call: _Call[Any]) -> None:
        """Queue ``call`` for the loop, waking it when the queue was idle."""
        wake = False
        with self._queue_lock:
            closed = self._closed or not self.running
            if not closed:
                wake = not self._queue  # else a wake-up is already on its way
                self._queue.append(call)
        if closed:
            coro, call.coro = call.coro, None
            if coro is not None:
                coro.close()
            raise ClientStateError("the client's event loop is not running (shut down?)")
        if wake:
            try:
                self.loop.call_soon_threadsafe(self._drain)
            except RuntimeError:  # closed between the check and the wake-up: _run failed the call
                pass

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (from a thread other than the loop's).

        Raises what ``coro`` raised (its own type and traceback); ``TimeoutError`` after
        ``timeout`` seconds, having cancelled ``coro``; ``concurrent.futures.CancelledError``
        when the loop cancelled it (shutdown); :class:`~rocketq.errors.ClientStateError` on the
        loop's own thread or when the loop is not running.
        """
        if self.in_loop_thread:
            coro.close()
            raise ClientStateError(
                "blocking call made on the client's own event loop thread; use the async API"
            )
        call = _Call(coro)
        self._enqueue(call)
        try:
            if timeout is None:
                call.done.acquire()
            elif not call.done.acquire(timeout=max(timeout, 0.0)):
                raise TimeoutError(f"the call did not finish within {timeout} s")
        except BaseException:  # the timeout, or KeyboardInterrupt while waiting: stop the call
            call.cancelled = True
            try:
                self.loop.call_soon_threadsafe(self._cancel, call)
            except RuntimeError:
                pass  # the loop is closed; its teardown ended the call
            raise
        error = call.error
        if error is not None:
            call.error = None  # no reference cycle through the traceback
            raise error
        return call.result  # type: ignore[return-value]

    def _drain(self) -> None:
        """Loop thread: start a task for every queued call (one wake-up serves them all)."""
        with self._queue_lock:
            calls = list(self._queue)
            self._queue.clear()
        create_task = self.loop.create_task
        for call in calls:
            coro, call.coro = call.coro, None
            assert coro is not None
            if call.gave_up():  # the caller gave up before the loop got to it
                coro.close()
                call.fail(concurrent.futures.CancelledError())
                continue
            task = create_task(coro)
            call.task = task
            task.add_done_callback(call.finish)

    @staticmethod
    def _cancel(call: _Call[Any]) -> None:
        """Loop thread: cancel a call whose caller stopped waiting (its task, if started)."""
        if call.task is not None:
            call.task.cancel()

    async def wrap(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` run on this loop from another asyncio loop (or this one)."""
        if self.in_loop_thread:
            return await coro
        return await asyncio.wrap_future(self.submit(coro))

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop (pending tasks are cancelled, queued calls failed) and join the thread."""
        if self._thread.is_alive() and not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.loop.stop)
        if not self.in_loop_thread:
            self._thread.join(timeout)
