"""The store's background threads: group commit (sync flush) and the periodic services.

**Group commit** (RocketMQ's ``GroupCommitService``). Under ``flush="sync"`` every append asks
for durability with :meth:`GroupCommitService.request`, which returns the
``concurrent.futures.Future`` of the *next* fsync - one future shared by every append that asks
before that fsync starts. The thread swaps in a fresh future, reads how far the log has been
written (at least as far as every requester's bytes, since they asked after writing), fsyncs up
to there, and completes the old future. While one fsync runs, all newcomers pile onto the next
one, so N concurrent appenders cost far fewer than N fsyncs (``fsync_count`` counts them; the
tests and ``bench/bench_store.py`` measure the ratio). asyncio callers await the future with
``asyncio.wrap_future`` without blocking their loop.

Under async flush RocketMQ's ``FlushRealTimeService`` flushes only once 4 pages are dirty
(or every 10 s); rocketq simply fsyncs whatever was appended, every ``flush_interval``.

**Periodic service** (RocketMQ's ``FlushRealTimeService``, ``FlushConsumeQueueService``,
``CleanCommitLogService`` and the broker's offset/config persistence timer, in one thread):
flushes the commit log every ``flush_interval`` under async flush, the consume queues and the
checkpoint every ``flush_consume_queue_interval``, persists dirty config files every
``config_flush_interval`` and runs retention every ``clean_resource_interval``. Each task is a
plain method of the store, so tests call them directly with an injected ``now``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

from rocketq.errors import StoreError

__all__ = ["GroupCommitService", "PeriodicService"]

log = logging.getLogger(__name__)


class GroupCommitService:
    """One thread fsyncing the commit log for every waiting appender at once.

    Without care, concurrent appenders split into two groups that alternate: while the fsync
    of one group runs, the other group's appends collect for the next fsync, and the group just
    released re-joins one round late. Each fsync then covers about half of the appenders in
    flight. So the thread estimates how many appenders are in flight (those its last fsync
    released plus those that already asked for the next one) and, before the next fsync, waits
    for that many requests - but never longer than ``max_wait`` or the last fsync's duration,
    whichever is shorter, so a lone or departing appender is not held back. One appender at a
    time never waits at all.
    """

    def __init__(
        self,
        flush: Callable[[], int],
        on_error: Callable[[BaseException], None],
        *,
        max_wait: float = 0.002,
    ) -> None:
        self._flush = flush
        self._on_error = on_error
        self._max_wait = max_wait
        self._cond = threading.Condition(threading.Lock())
        self._pending: Future[None] | None = None
        self._pending_count = 0
        self._target = 1
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="rocketq-group-commit", daemon=True)
        #: fsync rounds done (each completes every append that asked before it began).
        self.fsync_count = 0
        #: Appends acknowledged through those rounds.
        self.request_count = 0

    def start(self) -> None:
        self._thread.start()

    def request(self) -> Future[None]:
        """The future of the next fsync; call after your bytes are written."""
        with self._cond:
            if self._stopping:
                fut: Future[None] = Future()
                fut.set_exception(StoreError("the message store is closing"))
                return fut
            pending = self._pending
            if pending is None:
                pending = self._pending = Future()
            self._pending_count += 1
            # wake the thread only when it can act: on the first request of a round, and when
            # the round has gathered as many requests as it waits for
            if self._pending_count in (1, self._target):
                self._cond.notify()
            return pending

    def _run(self) -> None:
        in_flight = 1
        last_duration = 0.0
        cond = self._cond
        while True:
            with cond:
                while self._pending is None and not self._stopping:
                    cond.wait()
                if in_flight > 1 and not self._stopping:
                    deadline = time.monotonic() + min(self._max_wait, last_duration)
                    while self._pending_count < in_flight and not self._stopping:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            break
                        cond.wait(remaining)
                pending = self._pending
                count = self._pending_count
                self._pending = None
                self._pending_count = 0
                if pending is None:  # stopping with nothing left
                    return
            started = time.monotonic()
            try:
                self._flush()
                self.fsync_count += 1
                self.request_count += count
            except BaseException as exc:
                log.error("group commit fsync failed: %s", exc)
                self._on_error(exc)
                pending.set_exception(StoreError(f"fsync of the commit log failed: {exc}"))
            else:
                pending.set_result(None)
            last_duration = time.monotonic() - started
            with cond:
                in_flight = count + self._pending_count
                self._target = in_flight

    def stop(self) -> None:
        """Finish the pending fsync (if any) and end the thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join()


class PeriodicService:
    """One thread running named tasks, each at its own period; a failing task is logged and
    retried at its next period."""

    def __init__(self, tasks: list[tuple[str, float, Callable[[], object]]]) -> None:
        self._tasks = tasks
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rocketq-store-service", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        start = time.monotonic()
        due = [start + period for _name, period, _fn in self._tasks]
        while not self._stop.is_set():
            now = time.monotonic()
            for i, (name, period, fn) in enumerate(self._tasks):
                if now >= due[i]:
                    try:
                        fn()
                    except Exception:
                        log.exception("store task %s failed", name)
                    due[i] = max(due[i] + period, now)
            if self._stop.wait(max(0.0, min(due) - time.monotonic())):
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
