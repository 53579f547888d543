"""A consumer's local state for one queue it owns (RocketMQ's ``ProcessQueue``).

The cache of pulled messages not yet consumed, keyed by queue offset, and the rules that make
at-least-once delivery safe:

* :meth:`ProcessQueue.remove_messages` returns the offset to commit: the **lowest offset still
  cached** (in flight), or one past the highest ever cached when nothing is left. A finished
  message never moves the committed offset past an unfinished one.
* flow control reads :attr:`msg_count`, :attr:`msg_size` and :meth:`max_span`;
* :attr:`dropped` is set when the queue is taken away (rebalance, offset illegal, shutdown):
  consume results for it then no longer move its offset;
* ``take_messages`` / ``commit`` / ``rollback`` / ``make_messages_to_consume_again`` are the
  orderly consumer's view (messages taken out for consumption stay counted until committed).

Not thread-safe by design: every call happens on the client's event loop thread (listeners run
on a thread pool but their results come back to the loop). Times are passed in (``now``, epoch
seconds), so tests drive them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from rocketq.protocol.bodies import ProcessQueueInfo
from rocketq.protocol.message import MessageExt
from rocketq.protocol.properties import MessageConst

__all__ = ["ProcessQueue"]


class ProcessQueue:
    """Messages pulled from one queue and not yet consumed, with the queue's flags and times.

    >>> from rocketq.protocol import MessageExt
    >>> pq = ProcessQueue(now=0.0)
    >>> pq.put_messages([MessageExt("T", b"x", queue_offset=o) for o in (5, 6, 7)])
    True
    >>> pq.remove_messages([MessageExt("T", b"x", queue_offset=6)], now=1.0)  # 5 is still in flight
    5
    >>> done = [MessageExt("T", b"x", queue_offset=5), MessageExt("T", b"x", queue_offset=7)]
    >>> pq.remove_messages(done, now=2.0)
    8
    """

    __slots__ = (
        "_consuming_orderly",
        "_msgs",
        "_sorted",
        "consume_lock",
        "consuming",
        "dropped",
        "first_pull_ms",
        "last_consume_timestamp",
        "last_lock_timestamp",
        "last_pull_timestamp",
        "locked",
        "msg_acc_cnt",
        "msg_count",
        "msg_size",
        "queue_offset_max",
        "try_unlock_times",
    )

    def __init__(self, *, now: float) -> None:
        self._msgs: dict[int, MessageExt] = {}
        self._sorted = True  # keys were inserted in ascending order (the usual case)
        self._consuming_orderly: dict[int, MessageExt] = {}
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0
        self.dropped = False
        self.locked = False
        self.consuming = False
        self.msg_acc_cnt = 0
        self.try_unlock_times = 0
        self.last_pull_timestamp = now
        self.last_consume_timestamp = now
        self.last_lock_timestamp = now
        #: held by the thread running an orderly listener on this queue (Java's ``consumeLock``):
        #: a rebalance that takes it knows no listener is running and none will start
        self.consume_lock = threading.Lock()
        #: wall-clock ms when the first pull of this queue was sent (``None``: not yet): the time
        #: from owning a queue to reading it
        self.first_pull_ms: int | None = None

    def __repr__(self) -> str:
        return (
            f"<ProcessQueue count={self.msg_count} span={self.max_span()} "
            f"max={self.queue_offset_max} dropped={self.dropped}>"
        )

    # ---------------------------------------------------------------- cache

    def _keys_sorted(self) -> None:
        if not self._sorted:
            self._msgs = dict(sorted(self._msgs.items()))
            self._sorted = True

    def put_messages(self, msgs: Iterable[MessageExt]) -> bool:
        """Cache pulled messages; returns whether the orderly consumer should be dispatched
        (messages are cached and no orderly consumption is running)."""
        table = self._msgs
        added = 0
        last: MessageExt | None = None
        for msg in msgs:
            offset = msg.queue_offset
            if offset in table:
                continue
            if table and self._sorted and offset < next(reversed(table)):
                self._sorted = False
            table[offset] = msg
            added += 1
            self.msg_size += len(msg.body)
            self.queue_offset_max = offset  # as Java: the last message put
            last = msg
        self.msg_count += added
        dispatch = False
        if table and not self.consuming:
            dispatch = True
            self.consuming = True
        if last is not None:
            max_offset = last.properties.get(MessageConst.MAX_OFFSET)
            if max_offset is not None and max_offset.lstrip("-").isdigit():
                self.msg_acc_cnt = max(int(max_offset) - last.queue_offset, 0)
        return dispatch

    def remove_messages(self, msgs: Sequence[MessageExt], *, now: float) -> int:
        """Forget consumed messages; the offset to commit (-1 when nothing was ever cached).

        The result is the lowest offset still cached, or ``queue_offset_max + 1`` when the cache
        is empty — RocketMQ's ``ProcessQueue.removeMessage``.
        """
        self.last_consume_timestamp = now
        table = self._msgs
        if not table:
            return -1
        result = self.queue_offset_max + 1
        removed = 0
        for msg in msgs:
            prev = table.pop(msg.queue_offset, None)
            if prev is not None:
                removed += 1
                self.msg_size -= len(prev.body)
        self.msg_count -= removed
        if table:
            result = self.min_offset()
        return result

    def min_offset(self) -> int:
        """Lowest cached offset (-1 when empty)."""
        if not self._msgs:
            return -1
        self._keys_sorted()
        return next(iter(self._msgs))

    def max_offset(self) -> int:
        """Highest cached offset (-1 when empty)."""
        if not self._msgs:
            return -1
        self._keys_sorted()
        return next(reversed(self._msgs))

    def max_span(self) -> int:
        """Highest minus lowest cached offset (0 when empty): ``ProcessQueue.getMaxSpan``."""
        if not self._msgs:
            return 0
        return self.max_offset() - self.min_offset()

    def has_temp_message(self) -> bool:
        return bool(self._msgs)

    def cached(self) -> list[MessageExt]:
        """The cached messages in offset order (a copy)."""
        self._keys_sorted()
        return list(self._msgs.values())

    def clear(self) -> None:
        self._msgs.clear()
        self._consuming_orderly.clear()
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0

    def is_pull_expired(self, now: float, max_idle: float) -> bool:
        """Not pulled for more than ``max_idle`` seconds (``isPullExpired``)."""
        return now - self.last_pull_timestamp > max_idle

    def is_lock_expired(self, now: float, max_lock_time: float) -> bool:
        """The broker lock was last confirmed more than ``max_lock_time`` seconds ago
        (``isLockExpired``; the client judges 30 s while the broker keeps a lock 60 s)."""
        return now - self.last_lock_timestamp > max_lock_time

    def lock_confirmed(self, now: float) -> None:
        """The broker (re)granted this queue's lock at ``now``."""
        self.locked = True
        self.last_lock_timestamp = now

    def holds_valid_lock(self, now: float, max_lock_time: float) -> bool:
        """Locked and the lock not expired client-side: consuming may go on."""
        return self.locked and not self.is_lock_expired(now, max_lock_time)

    # ---------------------------------------------------------------- orderly view

    def take_messages(self, batch_size: int) -> list[MessageExt]:
        """Move up to ``batch_size`` lowest cached messages into the consuming set (orderly).

        When nothing is left to take, ``consuming`` becomes false (the next put dispatches)."""
        self._keys_sorted()
        out: list[MessageExt] = []
        table = self._msgs
        while table and len(out) < batch_size:
            offset = next(iter(table))
            msg = table.pop(offset)
            self._consuming_orderly[offset] = msg
            out.append(msg)
        if not out:
            self.consuming = False
        return out

    def commit(self) -> int:
        """Orderly: the taken messages are done; returns the offset to commit (-1 if none)."""
        if not self._consuming_orderly:
            return -1
        offset = max(self._consuming_orderly) + 1
        self.msg_count -= len(self._consuming_orderly)
        self.msg_size -= sum(len(m.body) for m in self._consuming_orderly.values())
        self._consuming_orderly.clear()
        return offset

    def rollback(self) -> None:
        """Orderly: put every taken message back into the cache."""
        self._msgs.update(self._consuming_orderly)
        self._sorted = False
        self._consuming_orderly.clear()

    def make_messages_to_consume_again(self, msgs: Iterable[MessageExt]) -> None:
        """Orderly: put these taken messages back to be consumed again."""
        for msg in msgs:
            self._consuming_orderly.pop(msg.queue_offset, None)
            self._msgs[msg.queue_offset] = msg
        self._sorted = False

    # ---------------------------------------------------------------- reporting

    def info(self, commit_offset: int) -> ProcessQueueInfo:
        """The ``ProcessQueueInfo`` a GET_CONSUMER_RUNNING_INFO answer carries for this queue."""
        return ProcessQueueInfo(
            commit_offset=commit_offset,
            cached_msg_min_offset=max(self.min_offset(), 0),
            cached_msg_max_offset=max(self.max_offset(), 0),
            cached_msg_count=self.msg_count,
            cached_msg_size_in_mib=self.msg_size // (1024 * 1024),
            transaction_msg_min_offset=min(self._consuming_orderly, default=0),
            transaction_msg_max_offset=max(self._consuming_orderly, default=0),
            transaction_msg_count=len(self._consuming_orderly),
            locked=self.locked,
            try_unlock_times=self.try_unlock_times,
            last_lock_timestamp=int(self.last_lock_timestamp * 1000),
            droped=self.dropped,
            last_pull_timestamp=int(self.last_pull_timestamp * 1000),
            last_consume_timestamp=int(self.last_consume_timestamp * 1000),
        )
