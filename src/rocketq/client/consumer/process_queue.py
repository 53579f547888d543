"""A consumer's local state for one queue it owns (RocketMQ's ``ProcessQueue``).

The cache of pulled messages not yet consumed, keyed by queue offset, and the rules that make
at-least-once delivery safe:

* :meth:`ProcessQueue.remove_messages` returns the offset to commit: the **lowest offset still
  cached** (in flight), or one past the highest ever cached when nothing is left. A finished
  message never moves the committed offset past an unfinished one.
* flow control reads :attr:`msg_count`, :attr:`msg_size` and :meth:`max_span`;
* :meth:`ProcessQueue.drop` is the one way a queue is let go (:class:`DropReason`: a rebalance
  gave it away, its pull went idle, its topic was unsubscribed, the consumer shut down, an
  illegal or reset offset, a lite pull seek or unassignment, a clean handoff finished): it sets
  :attr:`~ProcessQueue.dropped`, after which its pull loop stops, no listener call starts on it
  and consume results for it no longer move its offset;
* ``take_messages`` / ``commit`` / ``rollback`` / ``make_messages_to_consume_again`` are the
  orderly consumer's view (messages taken out for consumption stay counted until committed).

Not thread-safe by design: every call happens on the client's event loop thread (listeners run
on a thread pool but their results come back to the loop). Times are passed in (``now``, epoch
seconds), so tests drive them.

Speed: the cache is a dict by offset plus a deque of the cached offsets in ascending order that
may still hold offsets already removed; the lowest and highest cached offsets are found by
dropping stale ends of the deque, so :meth:`~ProcessQueue.min_offset` costs amortised O(1) however
the cache is drained (a dict alone would have to step over every deleted slot at its front).
Offsets arrive ascending from pulls; anything else (an orderly rollback) re-sorts the deque once.
"""

from __future__ import annotations

import enum
import threading
from collections import deque
from collections.abc import Iterable, Sequence

from rocketq.protocol.bodies import ProcessQueueInfo
from rocketq.protocol.message import MessageExt
from rocketq.protocol.properties import MessageConst

__all__ = ["DropReason", "ProcessQueue"]


class DropReason(enum.StrEnum):
    """Why a consumer let a queue go (:meth:`ProcessQueue.drop`)."""

    #: a rebalance allocated it to another consumer
    REBALANCED = "rebalanced"
    #: not pulled for ``pull_max_idle_time`` (120 s): dropped until the next rebalance
    PULL_EXPIRED = "pull-expired"
    #: its topic is no longer subscribed
    UNSUBSCRIBED = "unsubscribed"
    #: the consumer shut down and released every queue
    SHUTDOWN = "shutdown"
    #: the broker answered OFFSET_ILLEGAL; the next rebalance re-adds it at the corrected offset
    OFFSET_ILLEGAL = "offset-illegal"
    #: RESET_CONSUMER_CLIENT_OFFSET: the next rebalance re-adds it at the reset offset
    OFFSET_RESET = "offset-reset"
    #: a lite pull ``seek``: a fresh process queue replaces it
    SEEK = "seek"
    #: a lite pull ``assign`` without it, or a rebalance took it from a lite pull consumer
    UNASSIGNED = "unassigned"
    #: a clean handoff drained it, committed its offset and released its lease
    HANDED_OVER = "handed-over"
    #: the group's epoch on its broker jumped past one this consumer saw: another member may have
    #: pulled it meanwhile, so it is added again at the group's committed offset
    VIEW_JUMPED = "view-jumped"


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
        "_order",
        "_order_valid",
        "consume_lock",
        "consuming",
        "drop_reason",
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
        # every cached offset, ascending, plus possibly some already removed (dropped lazily)
        self._order: deque[int] = deque()
        self._order_valid = True  # False: rebuild _order from _msgs before reading it
        self._consuming_orderly: dict[int, MessageExt] = {}
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0
        #: set by :meth:`drop` (never cleared): the queue is no longer this consumer's to consume
        self.dropped = False
        self.drop_reason: DropReason | None = None
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

    def drop(self, reason: DropReason) -> None:
        """Let the queue go: its pull loop ends, no new listener call starts on it, and results of
        calls still running no longer move its offset (``ProcessQueue.setDropped(true)``). The
        first reason stays."""
        if not self.dropped:
            self.dropped = True
            self.drop_reason = reason

    # ---------------------------------------------------------------- cache

    def _ordered(self) -> deque[int]:
        """The offset deque, rebuilt if an out-of-order insert invalidated it."""
        if not self._order_valid:
            self._order = deque(sorted(self._msgs))
            self._order_valid = True
        return self._order

    def put_messages(self, msgs: Iterable[MessageExt]) -> bool:
        """Cache pulled messages; returns whether the orderly consumer should be dispatched
        (messages are cached and no orderly consumption is running)."""
        table = self._msgs
        order = self._order
        added = size = 0
        last: MessageExt | None = None
        for msg in msgs:
            offset = msg.queue_offset
            if offset in table:
                continue
            if self._order_valid:
                if not order or offset > order[-1]:
                    order.append(offset)
                else:
                    self._order_valid = False
            table[offset] = msg
            added += 1
            size += len(msg.body)
            last = msg
        if last is not None:
            self.queue_offset_max = last.queue_offset  # as Java: the last message put
        self.msg_count += added
        self.msg_size += size
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
        removed = size = 0
        pop = table.pop
        for msg in msgs:
            prev = pop(msg.queue_offset, None)
            if prev is not None:
                removed += 1
                size += len(prev.body)
        self.msg_count -= removed
        self.msg_size -= size
        if table:
            return self.min_offset()
        self._order.clear()
        self._order_valid = True
        return self.queue_offset_max + 1

    def min_offset(self) -> int:
        """Lowest cached offset (-1 when empty)."""
        table = self._msgs
        if not table:
            return -1
        order = self._ordered()
        while order[0] not in table:
            order.popleft()
        return order[0]

    def max_offset(self) -> int:
        """Highest cached offset (-1 when empty)."""
        table = self._msgs
        if not table:
            return -1
        order = self._ordered()
        while order[-1] not in table:
            order.pop()
        return order[-1]

    def max_span(self) -> int:
        """Highest minus lowest cached offset (0 when empty): ``ProcessQueue.getMaxSpan``."""
        if not self._msgs:
            return 0
        return self.max_offset() - self.min_offset()

    def has_temp_message(self) -> bool:
        return bool(self._msgs)

    def cached(self) -> list[MessageExt]:
        """The cached messages in offset order (a copy)."""
        table = self._msgs
        return [table[o] for o in self._ordered() if o in table]

    def clear(self) -> None:
        self._msgs.clear()
        self._order.clear()
        self._order_valid = True
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
        out: list[MessageExt] = []
        table = self._msgs
        order = self._ordered()
        while table and len(out) < batch_size:
            offset = order.popleft()
            msg = table.pop(offset, None)
            if msg is None:
                continue  # removed meanwhile
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
        self._order_valid = False
        self._consuming_orderly.clear()

    def make_messages_to_consume_again(self, msgs: Iterable[MessageExt]) -> None:
        """Orderly: put these taken messages back to be consumed again."""
        for msg in msgs:
            self._consuming_orderly.pop(msg.queue_offset, None)
            self._msgs[msg.queue_offset] = msg
        self._order_valid = False

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
