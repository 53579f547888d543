"""Long polling: pull requests held until a message arrives on their queue or their time is up.

A PULL_MESSAGE that finds nothing new (PULL_NOT_FOUND) and carries the suspend flag is not
answered at once: the broker parks it here, keyed by (topic, queue id), with the offset it wants
to read from and a deadline. From RocketMQ 4.9.4's ``PullRequestHoldService``/``ManyPullRequest``:

* the deadline is the suspend time + the request's ``suspendTimeoutMillis`` (the Java push
  consumer sends 15 s) when long polling is on, or ``shortPollingTimeMills`` (1 s) when the broker
  runs with ``longPollingEnable=false`` (see :meth:`LongPollingConfig.hold_time`);
* when a message is stored, the queue's held requests are examined in arrival order: a request
  whose offset is below the queue's new max offset is *ready* if the arrived message's tag code
  passes its filter (or no tag code is known, or the request has no tag filter); a request whose
  deadline has come is ready too; the others stay held;
* a periodic check (every 5 s with long polling, every ``shortPollingTimeMills`` without) runs the
  same rule for every key with the store's current max offset and no tag code, which both catches
  anything missed and answers expired requests.

"Ready" means: run the pull again, now without permission to suspend, and answer with whatever it
finds (FOUND, or PULL_NOT_FOUND for a timed-out request). This table only decides *which*
requests to re-run; the broker adapter does the pulling and the I/O. It never touches a clock:
every method takes ``now`` (float seconds; the broker uses the same clock for the deadlines it
passes to :meth:`PullHoldTable.hold`). Not thread-safe: one asyncio loop drives it.

Beyond RocketMQ, :meth:`PullHoldTable.next_deadline` lets the adapter wake exactly when the
earliest request times out instead of up to 5 s late, and :meth:`PullHoldTable.drop` forgets
requests of a closed connection.

>>> table: PullHoldTable[str] = PullHoldTable()
>>> _ = table.hold(("T", 0), "pull-a", deadline=15.0, offset=10)
>>> table.on_arrival("T", 0, max_offset=10, now=1.0)   # offset 10 not yet readable
[]
>>> table.on_arrival("T", 0, max_offset=11, now=2.0)
['pull-a']
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from rocketq.errors import ConfigError

__all__ = [
    "LONG_POLLING_CHECK_INTERVAL",
    "SHORT_POLLING_TIME_MILLS",
    "HeldPull",
    "LongPollingConfig",
    "PullHoldTable",
    "java_int",
]

R = TypeVar("R")

LONG_POLLING_CHECK_INTERVAL = 5.0
"""Seconds between checks of all held requests with long polling on (``waitForRunning(5 * 1000)``)."""

SHORT_POLLING_TIME_MILLS = 1.0
"""RocketMQ's ``BrokerConfig.shortPollingTimeMills`` (1000 ms), here in seconds."""


def java_int(value: int) -> int:
    """``Long.intValue()``: the low 32 bits of ``value`` as a signed int.

    RocketMQ compares a consume-queue tag code (a long) with a subscription's code set (ints)
    through this narrowing, so we do too.

    >>> java_int(2**32 + 5), java_int(2**31)
    (5, -2147483648)
    """
    return ((value + 0x80000000) & 0xFFFFFFFF) - 0x80000000


@dataclass(frozen=True, slots=True, kw_only=True)
class LongPollingConfig:
    """Long-polling settings, defaults from RocketMQ's ``BrokerConfig``."""

    long_polling_enable: bool = True
    """``longPollingEnable``: hold requests for their own suspend timeout (else for the short time)."""
    short_polling_time: float = SHORT_POLLING_TIME_MILLS
    """``shortPollingTimeMills`` in seconds: the hold time (and check period) without long polling."""

    def __post_init__(self) -> None:
        if not self.short_polling_time > 0:
            raise ConfigError(f"short_polling_time must be positive, got {self.short_polling_time!r}")

    @property
    def check_interval(self) -> float:
        """How often RocketMQ re-checks every held request (5 s, or the short polling time)."""
        return LONG_POLLING_CHECK_INTERVAL if self.long_polling_enable else self.short_polling_time

    def hold_time(self, suspend_timeout: float) -> float:
        """Seconds to hold a pull that asked to be suspended for ``suspend_timeout`` seconds."""
        return suspend_timeout if self.long_polling_enable else self.short_polling_time


@dataclass(frozen=True, slots=True)
class HeldPull(Generic[R]):
    """One parked pull: what it waits for, until when, and the caller's request object."""

    topic: str
    queue_id: int
    offset: int
    """The queue offset the request reads from: it is ready once the max offset exceeds this."""
    deadline: float
    tag_codes: frozenset[int] | None
    """The tag hash codes the subscription accepts, or ``None`` to accept every message."""
    request: R
    property_filter: Callable[[Mapping[str, str]], bool] | None = None
    """The subscription's filter on message properties (SQL92), if it has one."""

    def matches(self, tag_code: int | None, properties: Mapping[str, str] | None = None) -> bool:
        """Whether a message with ``tag_code`` and ``properties`` (``None``: unknown) passes
        this request's filters (RocketMQ's arriving listener: the consume-queue filter, then the
        commit-log one when the properties are known)."""
        if tag_code is not None and self.tag_codes is not None and java_int(tag_code) not in self.tag_codes:
            return False
        return properties is None or self.property_filter is None or self.property_filter(properties)


class PullHoldTable(Generic[R]):
    """Held pull requests per (topic, queue id); ``R`` is whatever the adapter needs to answer."""

    __slots__ = ("_deadlines", "_live", "_seq", "_table")

    def __init__(self) -> None:
        # Each held pull carries a sequence number: the deadline heap refers to pulls by it and
        # skips numbers no longer live, so answering a pull never has to search the heap.
        self._table: dict[tuple[str, int], list[tuple[int, HeldPull[R]]]] = {}
        self._deadlines: list[tuple[float, int]] = []
        self._live: set[int] = set()
        self._seq = 0

    def hold(
        self,
        key: tuple[str, int],
        request: R,
        deadline: float,
        *,
        offset: int,
        tag_codes: Iterable[int] | None = None,
        property_filter: Callable[[Mapping[str, str]], bool] | None = None,
    ) -> HeldPull[R]:
        """Park ``request`` on queue ``key`` until the queue grows past ``offset`` or ``deadline``.

        ``tag_codes`` is the subscription's code set for a tag filter other than ``*``; leave it
        ``None`` for "every message" (``*``, SQL92 and class filters). ``property_filter`` is an
        SQL92 subscription's: an arriving message whose properties it refuses wakes nothing.
        """
        topic, queue_id = key
        codes = None if tag_codes is None else frozenset(tag_codes)
        held = HeldPull(topic, queue_id, offset, deadline, codes, request, property_filter)
        self._seq += 1
        seq = self._seq
        bucket = self._table.get(key)
        if bucket is None:
            self._table[key] = [(seq, held)]
        else:
            bucket.append((seq, held))
        self._live.add(seq)
        heap = self._deadlines
        heapq.heappush(heap, (deadline, seq))
        if len(heap) > 2 * len(self._live) + 1024:
            # Entries of answered pulls linger until they surface; compact now and then.
            self._deadlines = [(h.deadline, s) for b in self._table.values() for s, h in b]
            heapq.heapify(self._deadlines)
        return held

    def on_arrival(
        self,
        topic: str,
        queue_id: int,
        max_offset: int,
        now: float,
        tag_code: int | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> list[R]:
        """A message reached queue (topic, queue_id), whose max offset is now ``max_offset``.

        ``max_offset`` is the queue's offset past the new message (its consume-queue offset + 1,
        what RocketMQ's arriving listener passes); ``tag_code`` is the message's tag hash and
        ``properties`` its properties, when known.

        Returns, in the order they were held, the requests to answer now: those whose offset is
        below ``max_offset`` and whose filters accept the message, and those whose deadline has
        come (``now >= deadline``). The rest stay held. Cheap when nothing is held on the queue.
        """
        key = (topic, queue_id)
        bucket = self._table.get(key)
        if bucket is None:
            return []
        return self._take(
            key,
            bucket,
            lambda h: (max_offset > h.offset and h.matches(tag_code, properties)) or now >= h.deadline,
        )

    def check(self, now: float, max_offset_of: Callable[[str, int], int]) -> list[R]:
        """RocketMQ's periodic ``checkHoldRequest``: :meth:`on_arrival` for every held queue.

        ``max_offset_of(topic, queue_id)`` gives the store's current max offset; no tag code is
        known, so every request behind the max offset is ready, as are the timed-out ones.
        """
        ready: list[R] = []
        for topic, queue_id in list(self._table):
            ready.extend(self.on_arrival(topic, queue_id, max_offset_of(topic, queue_id), now))
        return ready

    def expired(self, now: float) -> list[R]:
        """Remove and return every request whose deadline has come (``now >= deadline``)."""
        deadline = self.next_deadline()
        if deadline is None or deadline > now:
            return []
        out: list[R] = []
        for key, bucket in list(self._table.items()):
            out.extend(self._take(key, bucket, lambda h: now >= h.deadline))
        return out

    def drop(self, predicate: Callable[[R], bool]) -> list[R]:
        """Forget (and return) held requests for which ``predicate(request)`` is true.

        For a connection that closed: its answers could not be delivered anyway.
        """
        out: list[R] = []
        for key, bucket in list(self._table.items()):
            out.extend(self._take(key, bucket, lambda h: predicate(h.request)))
        return out

    def next_deadline(self) -> float | None:
        """The earliest deadline among held requests, or ``None`` when nothing is held."""
        heap = self._deadlines
        while heap and heap[0][1] not in self._live:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def held(self, topic: str, queue_id: int) -> list[HeldPull[R]]:
        """The requests held on one queue, oldest first."""
        return [h for _, h in self._table.get((topic, queue_id), ())]

    def keys(self) -> list[tuple[str, int]]:
        """The (topic, queue id) pairs with held requests."""
        return list(self._table)

    def __len__(self) -> int:
        return len(self._live)

    def _take(
        self,
        key: tuple[str, int],
        bucket: list[tuple[int, HeldPull[R]]],
        ready: Callable[[HeldPull[R]], bool],
    ) -> list[R]:
        out: list[R] = []
        keep: list[tuple[int, HeldPull[R]]] = []
        for item in bucket:
            if ready(item[1]):
                out.append(item[1].request)
                self._live.discard(item[0])
            else:
                keep.append(item)
        if not out:
            return out
        if keep:
            self._table[key] = keep
        else:
            del self._table[key]
        return out
