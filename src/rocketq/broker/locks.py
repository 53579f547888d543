"""The broker's queue lock table: LOCK_BATCH_MQ / UNLOCK_BATCH_MQ for ordered consumption.

A consumer that consumes in order must own the queues it consumes. It asks the broker that hosts
them to lock a batch of queues for its (consumer group, client id); the broker answers with the
subset it now holds. The facts, from RocketMQ 4.9.4's ``RebalanceLockManager``:

* a lock belongs to the pair (group, client id) and is kept per (group, message queue);
* it lives :attr:`QueueLockConfig.rebalance_lock_max_live_time` (60 s) after its last renewal: a
  lock is *expired* once ``now - last_renewed`` is strictly greater than that;
* asking again for a queue one already holds renews it (and it is in the answer);
* a queue held by another client's live lock is left out of the answer;
* a queue with no lock, or with an expired lock of anyone (the asker included), is taken over;
* unlocking removes only the locks the asker owns (expired or not); other owners' locks stay;
* nothing is released when a client disconnects: its locks simply stop being renewed and expire.
  (:meth:`QueueLockTable.purge_expired` drops dead entries to bound memory; since an expired
  entry behaves exactly like a missing one, purging never changes an answer.)

Time is the caller's ``now`` in float seconds. RocketMQ measures lock age on the wall clock
(``System.currentTimeMillis()``); any clock works as long as one table always gets the same one.

Concurrency: the table is plain single-threaded state. The broker drives it from its asyncio
event loop, where each call runs to completion without awaiting, so no lock is needed; do not
share one table between threads.

>>> from rocketq.models import MessageQueue
>>> table = QueueLockTable()
>>> q0, q1 = MessageQueue("T", "broker-a", 0), MessageQueue("T", "broker-a", 1)
>>> sorted(table.try_lock_batch("G", [q0, q1], "client-1", now=0.0)) == [q0, q1]
True
>>> table.try_lock_batch("G", [q0], "client-2", now=30.0)     # held by client-1: refused
set()
>>> table.try_lock_batch("G", [q0], "client-2", now=60.5) == {q0}  # 60.5 s unrenewed: taken over
True
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from rocketq.errors import ConfigError
from rocketq.models import MessageQueue

__all__ = ["REBALANCE_LOCK_MAX_LIVE_TIME", "LockInfo", "QueueLockConfig", "QueueLockTable"]

log = logging.getLogger(__name__)

REBALANCE_LOCK_MAX_LIVE_TIME = 60.0
"""RocketMQ's ``REBALANCE_LOCK_MAX_LIVE_TIME``: 60 000 ms (system property
``rocketmq.broker.rebalance.lockMaxLiveTime``), here in seconds."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueLockConfig:
    """Settings of the lock table; the default is RocketMQ's own."""

    rebalance_lock_max_live_time: float = REBALANCE_LOCK_MAX_LIVE_TIME
    """Seconds a lock survives without renewal (RocketMQ: 60 s)."""

    def __post_init__(self) -> None:
        if not self.rebalance_lock_max_live_time > 0:
            raise ConfigError(
                f"rebalance_lock_max_live_time must be positive, got {self.rebalance_lock_max_live_time!r}"
            )


@dataclass(frozen=True, slots=True)
class LockInfo:
    """One lock as the admin view shows it."""

    group: str
    queue: MessageQueue
    client_id: str
    last_renewed: float
    expired: bool


class _Entry:
    __slots__ = ("client_id", "last_renewed", "lease")

    def __init__(self, client_id: str, last_renewed: float, lease: bool = False) -> None:
        self.client_id = client_id
        self.last_renewed = last_renewed
        #: a clean handoff's lease (freed when its holder leaves the group), not an orderly lock
        self.lease = lease


class QueueLockTable:
    """RocketMQ's ``RebalanceLockManager`` as a pure table driven by ``now``.

    Not thread-safe by design (see the module docstring): call it from one event loop.
    """

    __slots__ = ("_max_live", "_table")

    def __init__(self, config: QueueLockConfig | None = None) -> None:
        self._max_live = (config or QueueLockConfig()).rebalance_lock_max_live_time
        self._table: dict[str, dict[MessageQueue, _Entry]] = {}

    def _expired(self, entry: _Entry, now: float) -> bool:
        return now - entry.last_renewed > self._max_live

    def try_lock_batch(
        self, group: str, mqs: Iterable[MessageQueue], client_id: str, now: float, *, lease: bool = False
    ) -> set[MessageQueue]:
        """Lock (or renew) what can be locked of ``mqs`` for ``client_id``; return that subset.

        Queues ``client_id`` already holds are renewed and returned; free queues and queues whose
        lock has expired (whoever held it) become ``client_id``'s; queues under another client's
        live lock are left out. ``lease``: the locks are a clean handoff's leases (see
        :meth:`release_departed`).
        """
        locked: set[MessageQueue] = set()
        entries = self._table.get(group)
        if entries is None:
            entries = self._table[group] = {}
        for mq in mqs:
            entry = entries.get(mq)
            if entry is None:
                entries[mq] = _Entry(client_id, now, lease)
                log.info("lock: %s in group %s is free, now held by %s", mq, group, client_id)
                locked.add(mq)
                continue
            if entry.client_id == client_id and not self._expired(entry, now):
                entry.last_renewed = now
                entry.lease = lease
                locked.add(mq)
                continue
            if self._expired(entry, now):
                log.warning(
                    "lock: %s in group %s expired under %s, now held by %s",
                    mq,
                    group,
                    entry.client_id,
                    client_id,
                )
                entry.client_id = client_id
                entry.last_renewed = now
                entry.lease = lease
                locked.add(mq)
                continue
            log.warning(
                "lock: %s in group %s is held by %s, refused to %s", mq, group, entry.client_id, client_id
            )
        if not entries:
            del self._table[group]
        return locked

    def try_lock(self, group: str, mq: MessageQueue, client_id: str, now: float) -> bool:
        """:meth:`try_lock_batch` for one queue (RocketMQ's ``tryLock``)."""
        return bool(self.try_lock_batch(group, (mq,), client_id, now))

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> set[MessageQueue]:
        """Release the locks ``client_id`` owns among ``mqs``; return the queues released.

        A queue locked by someone else keeps its lock (and is logged): only the owner unlocks.
        An expired lock still counts as the owner's for this purpose, as in RocketMQ.
        """
        released: set[MessageQueue] = set()
        entries = self._table.get(group)
        if entries is None:
            log.warning("unlock: group %s holds no locks (asked by %s)", group, client_id)
            return released
        for mq in mqs:
            entry = entries.get(mq)
            if entry is None:
                log.warning("unlock: %s in group %s is not locked (asked by %s)", mq, group, client_id)
            elif entry.client_id == client_id:
                del entries[mq]
                released.add(mq)
                log.info("unlock: %s in group %s released by %s", mq, group, client_id)
            else:
                log.warning(
                    "unlock: %s in group %s is held by %s, not by %s: kept",
                    mq,
                    group,
                    entry.client_id,
                    client_id,
                )
        if not entries:
            del self._table[group]
        return released

    def release_departed(self, group: str, members: Iterable[str]) -> set[MessageQueue]:
        """Release ``group``'s leases held by clients not among ``members`` (rocketq only: a member
        that left the group - its connection closed, it unregistered or it expired - must not
        keep its queues unconsumed for the lock's 60 s; RocketMQ keeps them until then). Only
        leases (the clean handoff's, concurrent consumption) are released: an orderly consumer
        cut off or frozen may still be processing what it holds, and its lock must outlive the
        30 s it trusts it for. Returns the queues released."""
        entries = self._table.get(group)
        if not entries:
            return set()
        live = set(members)
        gone = {mq for mq, e in entries.items() if e.lease and e.client_id not in live}
        for mq in gone:
            log.info("lock: %s in group %s released: %s left the group", mq, group, entries[mq].client_id)
            del entries[mq]
        if not entries:
            del self._table[group]
        return gone

    def is_locked(self, group: str, mq: MessageQueue, client_id: str, now: float) -> bool:
        """Whether ``client_id`` holds a live lock on ``mq`` in ``group`` (a query: renews nothing)."""
        return self.owner_of(group, mq, now) == client_id

    def owner_of(self, group: str, mq: MessageQueue, now: float) -> str | None:
        """The client id holding a live lock on ``mq`` in ``group``, or ``None``."""
        entries = self._table.get(group)
        if entries is None:
            return None
        entry = entries.get(mq)
        if entry is None or self._expired(entry, now):
            return None
        return entry.client_id

    def locks(self, now: float, group: str | None = None) -> list[LockInfo]:
        """Every lock entry (of one group, or all), expired ones flagged, for admin views."""
        groups = [group] if group is not None else list(self._table)
        return [
            LockInfo(g, mq, e.client_id, e.last_renewed, self._expired(e, now))
            for g in groups
            for mq, e in self._table.get(g, {}).items()
        ]

    def purge_expired(self, now: float) -> int:
        """Drop expired entries (they answer exactly as missing ones would); return how many."""
        dropped = 0
        for group in list(self._table):
            entries = self._table[group]
            dead = [mq for mq, e in entries.items() if self._expired(e, now)]
            for mq in dead:
                del entries[mq]
            dropped += len(dead)
            if not entries:
                del self._table[group]
        return dropped

    def __len__(self) -> int:
        """Number of lock entries held (live or expired but not yet purged)."""
        return sum(len(e) for e in self._table.values())
