"""Broker leases on queues: locking, renewing, retrying and releasing them (``RebalanceImpl.lock*``).

A *lease* is RocketMQ's queue lock (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ): a client consumes a leased
queue only while the broker says the lock is its own. Two consumption modes use leases, and both
take them from here:

* **orderly consumption** (:mod:`rocketq.client.consumer.consume_orderly`): a queue is locked
  before it is consumed, its lock renewed every ``rebalance_lock_interval`` (20 s; the broker
  keeps one 60 s), and it is unlocked after its offset is committed when a rebalance takes it away;
* **clean handoff** (:mod:`rocketq.client.consumer.clean_handoff`): the same, plus retrying, with a
  growing delay, the locks of allocated queues another client still holds.

Pure parts, driven by ``now``: :func:`apply_lock_result` (what a LOCK_BATCH_MQ answer means for
the process queues) and :class:`LeaseRetry` (when to try an unavailable lease again). On the loop:
:func:`lock_all` (renew every owned queue's lease, broker by broker), :func:`lock_one`,
:func:`commit_offset_sync` (the commit awaited before a release) and :class:`LeaseKeeper`, which
runs renewal and retries for one consumer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from rocketq.client.api import ClientAPI
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.loop_thread import cancel_and_wait
from rocketq.client.rebalance.impl import RebalanceImpl
from rocketq.client.rebalance.log import RebalanceLog, RebalanceRecord, RebalanceTrigger
from rocketq.errors import RocketQError
from rocketq.models import MessageQueue
from rocketq.protocol import calls

__all__ = [
    "LeaseContext",
    "LeaseHolder",
    "LeaseKeeper",
    "LeaseRetry",
    "apply_lock_result",
    "commit_offset_sync",
    "lock_all",
    "lock_one",
]

logger = logging.getLogger(__name__)


class LeaseContext(Protocol):
    """What leases need of the client instance (:class:`~rocketq.client.instance.ClientInstance`)."""

    @property
    def client_id(self) -> str: ...

    @property
    def api(self) -> ClientAPI | None: ...

    def queues_by_broker(
        self, mqs: Iterable[MessageQueue]
    ) -> Iterator[tuple[str, str, list[MessageQueue]]]: ...

    async def locate_master(self, mq: MessageQueue) -> str | None: ...

    async def lock_queues(self, group: str, mqs: Sequence[MessageQueue]) -> set[MessageQueue]: ...

    def uses_leases(self, group: str) -> bool: ...

    async def unlock_queues(self, group: str, mqs: Sequence[MessageQueue], *, oneway: bool) -> None: ...


class LeaseSettings(Protocol):
    """The intervals a :class:`LeaseKeeper` reads (fields of
    :class:`~rocketq.client.config.PushConsumerConfig`)."""

    @property
    def rebalance_lock_interval(self) -> float: ...

    @property
    def lease_retry_min(self) -> float: ...

    @property
    def lease_retry_max(self) -> float: ...


class LeaseHolder(Protocol):
    """The consumer a :class:`LeaseKeeper` works for (a push consumer's engine)."""

    @property
    def group(self) -> str: ...

    @property
    def instance(self) -> LeaseContext: ...

    @property
    def config(self) -> LeaseSettings: ...

    @property
    def rebalance(self) -> RebalanceImpl: ...

    @property
    def log(self) -> RebalanceLog: ...

    @property
    def running(self) -> bool: ...

    @property
    def stopping(self) -> bool: ...


# ------------------------------------------------------------------------------------ pure parts


def apply_lock_result(
    table: Mapping[MessageQueue, ProcessQueue],
    requested: Iterable[MessageQueue],
    locked: set[MessageQueue],
    now: float,
) -> list[MessageQueue]:
    """Record a LOCK_BATCH_MQ answer on the process queues (``RebalanceImpl.lockAll``).

    Queues the broker locked are confirmed at ``now``; requested queues it did not lock lose
    their lock (another client holds it: consuming them stops). Returns the lost ones.

    >>> q0, q1 = MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)
    >>> table = {q0: ProcessQueue(now=0.0), q1: ProcessQueue(now=0.0)}
    >>> table[q1].locked = True
    >>> apply_lock_result(table, [q0, q1], {q0}, now=5.0)
    [MessageQueue(topic='T', broker_name='b', queue_id=1)]
    >>> table[q0].locked, table[q0].last_lock_timestamp, table[q1].locked
    (True, 5.0, False)
    """
    lost = []
    for mq in requested:
        pq = table.get(mq)
        if pq is None:
            continue
        if mq in locked:
            pq.lock_confirmed(now)
        else:
            if pq.locked:
                lost.append(mq)
            pq.locked = False
    return lost


@dataclass(slots=True)
class _Attempt:
    trigger: RebalanceTrigger
    failures: int = 0
    next_at: float = 0.0


@dataclass(slots=True)
class LeaseRetry:
    """When to try again to lock queues allocated to this consumer but locked by another.

    The first retry comes ``min_delay`` after the failed lock, each next one 1.5x later, capped at
    ``max_delay``; a queue leaves the schedule when it is acquired or no longer allocated.

    >>> r = LeaseRetry(min_delay=0.05, max_delay=1.0)
    >>> q = MessageQueue("T", "b", 0)
    >>> r.want([q], RebalanceTrigger.NOTIFY, now=10.0)
    >>> r.due(10.0), r.due(10.05)
    ([], [MessageQueue(topic='T', broker_name='b', queue_id=0)])
    >>> r.failed([q], now=10.05); round(r.next_delay(10.05), 6)
    0.075
    >>> r.acquired([q]); r.next_delay(10.05) is None
    True
    """

    min_delay: float = 0.05
    max_delay: float = 1.0
    factor: float = 1.5
    _pending: dict[MessageQueue, _Attempt] = field(default_factory=dict)

    def want(self, mqs: Iterable[MessageQueue], trigger: RebalanceTrigger, *, now: float) -> None:
        """``mqs`` are allocated but not locked (a lock just failed): schedule their first retry.

        The schedule is replaced: queues not in ``mqs`` are forgotten (no longer allocated to us,
        or acquired meanwhile); queues already scheduled keep their back-off."""
        wanted = set(mqs)
        self.keep_only(wanted)
        for mq in wanted:
            if mq not in self._pending:
                self._pending[mq] = _Attempt(trigger, 1, now + self.min_delay)

    def due(self, now: float) -> list[MessageQueue]:
        """Queues whose next attempt is due at ``now``."""
        return sorted(mq for mq, a in self._pending.items() if a.next_at <= now)

    def trigger_of(self, mq: MessageQueue) -> RebalanceTrigger:
        a = self._pending.get(mq)
        return a.trigger if a is not None else RebalanceTrigger.MANUAL

    def failed(self, mqs: Iterable[MessageQueue], *, now: float) -> None:
        for mq in mqs:
            a = self._pending.get(mq)
            if a is not None:
                a.failures += 1
                a.next_at = now + self.delay(a.failures)

    def keep_only(self, mqs: Iterable[MessageQueue]) -> None:
        """Forget the queues not in ``mqs`` (acquired, or no longer allocated)."""
        keep = set(mqs)
        for mq in [m for m in self._pending if m not in keep]:
            del self._pending[mq]

    def acquired(self, mqs: Iterable[MessageQueue]) -> None:
        for mq in mqs:
            self._pending.pop(mq, None)

    def delay(self, failures: int) -> float:
        """The wait after the ``failures``-th failed attempt."""
        return float(min(self.max_delay, self.min_delay * self.factor ** max(failures - 1, 0)))

    def next_delay(self, now: float) -> float | None:
        """Seconds until the next due attempt (0 when one is due), ``None`` when nothing is pending."""
        if not self._pending:
            return None
        return max(0.0, min(a.next_at for a in self._pending.values()) - now)

    def __len__(self) -> int:
        return len(self._pending)


# ------------------------------------------------------------------------------------ on the loop


async def lock_all(
    instance: LeaseContext,
    group: str,
    table: Mapping[MessageQueue, ProcessQueue],
    *,
    skip: Iterable[MessageQueue] = (),
    now: float | None = None,
) -> list[MessageQueue]:
    """Renew the locks of every owned queue, broker by broker (``RebalanceImpl.lockAll``).

    Dropped queues and ``skip`` (queues being handed over) are not renewed. A broker that does not
    answer leaves its queues' state as it was (they expire client-side after 30 s). Returns the
    queues whose lock another client holds now."""
    api = instance.api
    if api is None:
        return []
    skipped = set(skip)
    owned = [mq for mq, pq in table.items() if not pq.dropped and mq not in skipped]
    lost: list[MessageQueue] = []
    lease = instance.uses_leases(group)
    for name, addr, mqs in instance.queues_by_broker(owned):
        try:
            locked = await api.call(addr, calls.lock_batch_mq(group, instance.client_id, mqs, lease=lease))
        except RocketQError as exc:
            logger.warning("renewing the locks of %d queue(s) on %s failed: %s", len(mqs), name, exc)
            continue
        # a queue dropped while the request was out is not resurrected
        live = [mq for mq in mqs if mq in table and not table[mq].dropped]
        lost += apply_lock_result(table, live, locked, time.time() if now is None else now)
    for mq in lost:
        logger.warning("group %s: the lock of %s is held by another client; not consuming it", group, mq)
    return lost


async def lock_one(instance: LeaseContext, group: str, mq: MessageQueue, pq: ProcessQueue) -> bool:
    """Lock one queue (``RebalanceImpl.lock``); records the result on ``pq``."""
    locked = await instance.lock_queues(group, [mq])
    if mq in locked and not pq.dropped:
        pq.lock_confirmed(time.time())
        return True
    return False


async def commit_offset_sync(
    instance: LeaseContext, group: str, mq: MessageQueue, offset: int, *, attempts: int = 3
) -> bool:
    """UPDATE_CONSUMER_OFFSET awaited (not one-way), retried ``attempts`` times 100 ms apart."""
    api = instance.api
    if api is None:
        return False
    for attempt in range(attempts):
        try:
            addr = await instance.locate_master(mq)
            if addr is None:
                raise RocketQError(f"broker {mq.broker_name} not found")
            await api.call(addr, calls.update_consumer_offset(group, mq, offset))
            return True
        except RocketQError as exc:
            logger.warning("committing offset %d of %s failed (attempt %d): %s", offset, mq, attempt + 1, exc)
            if attempt + 1 < attempts:
                await asyncio.sleep(0.1)
    return False


class LeaseKeeper:
    """Renews a consumer's leases and acquires the ones it is still waiting for, on its loop.

    Orderly consumers renew with it; clean-handoff consumers (and orderly ones in clean mode,
    ``retry=True``) also retry the leases of allocated queues another client still holds.
    ``renew_lock`` serialises renewals with releases (a renewal in flight cannot re-take a
    released queue). :meth:`start` once the consumer's START rebalance is done, :meth:`rebalanced`
    after each of its own rebalances, :meth:`stop` at shutdown.
    """

    def __init__(self, core: LeaseHolder, *, retry: bool) -> None:
        self.core = core
        cfg = core.config
        self.retry = (
            LeaseRetry(min_delay=cfg.lease_retry_min, max_delay=cfg.lease_retry_max) if retry else None
        )
        self.renew_lock = asyncio.Lock()
        self.handing_off: set[MessageQueue] = set()
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._renew_loop()))
        if self.retry is not None:
            self._tasks.append(loop.create_task(self._acquire_loop()))
            # every rebalance, whoever ran it (timer, NOTIFY, ``PushConsumer.rebalance()``)
            self.core.log.add_listener(self._on_record)
        self.after_rebalance(RebalanceTrigger.START)

    def rebalanced(self, trigger: RebalanceTrigger) -> None:
        """The consumer rebalanced (``trigger``): retry what it could not lock, unless it is stopping."""
        if self.core.running and not self.core.stopping:
            self.after_rebalance(trigger)

    def _on_record(self, record: RebalanceRecord) -> None:
        if record.trigger is not RebalanceTrigger.SHUTDOWN and self.core.running and not self.core.stopping:
            self.after_rebalance(record.trigger)

    async def stop(self) -> None:
        if self.retry is not None and self._tasks:
            self.core.log.remove_listener(self._on_record)
        await cancel_and_wait(self._tasks)
        self._tasks = []

    async def renew(self) -> list[MessageQueue]:
        core = self.core
        async with self.renew_lock:
            return await lock_all(
                core.instance, core.group, core.rebalance.process_queue_table, skip=self.handing_off
            )

    async def _renew_loop(self) -> None:
        interval = self.core.config.rebalance_lock_interval
        await asyncio.sleep(min(1.0, interval))  # Java: first renewal 1 s after start
        while True:
            await self._logged(self.renew, "lock renewal")
            await asyncio.sleep(interval)

    def after_rebalance(self, trigger: RebalanceTrigger) -> None:
        """Schedule retries for the allocated queues the rebalance could not lock."""
        if self.retry is None:
            return
        pending = [mq for mqs in self.core.rebalance.pending().values() for mq in mqs]
        self.retry.want(pending, trigger, now=time.monotonic())
        if pending:
            self._wake.set()

    async def _acquire_loop(self) -> None:
        assert self.retry is not None
        retry = self.retry
        while True:
            delay = retry.next_delay(time.monotonic())
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), delay)
            except TimeoutError:
                pass
            await self._logged(self.acquire_due, "acquiring leases")

    async def _logged(self, step: Callable[[], Awaitable[object]], what: str) -> None:
        """``await step()``, logging a failure so that the loop calling it goes on."""
        try:
            await step()
        except Exception:  # not a cancellation: CancelledError is no Exception
            logger.exception("group %s: %s failed", self.core.group, what)

    async def acquire_due(self) -> list[RebalanceRecord]:
        """Try to lock the due queues still allocated and not owned; adopt the ones locked."""
        assert self.retry is not None
        core, retry = self.core, self.retry
        if not core.running or core.stopping:
            return []
        pending = {mq for mqs in core.rebalance.pending().values() for mq in mqs}
        retry.keep_only(pending)
        due = [mq for mq in retry.due(time.monotonic()) if mq in pending]
        if not due:
            return []
        locked = await core.instance.lock_queues(core.group, due)
        retry.failed([mq for mq in due if mq not in locked], now=time.monotonic())
        got = [mq for mq in due if mq in locked]
        records: list[RebalanceRecord] = []
        by_topic: dict[str, list[MessageQueue]] = {}
        for mq in got:
            by_topic.setdefault(mq.topic, []).append(mq)
        for topic, mqs in sorted(by_topic.items()):
            record = await core.rebalance.adopt(topic, mqs, retry.trigger_of(mqs[0]))
            if record is not None:
                records.append(record)
                logger.info(
                    "group %s: leases of %s acquired after a retry",
                    core.group,
                    [q.short for q in record.added],
                )
        adopted = {mq for r in records for mq in r.added}
        retry.acquired(adopted)
        # locked but not adopted (no longer allocated, or no start offset): let go again, and back
        # off before the next attempt
        retry.failed([mq for mq in got if mq not in adopted], now=time.monotonic())
        stray = [mq for mq in got if mq not in adopted and mq not in core.rebalance.process_queue_table]
        if stray:
            async with self.renew_lock:
                await core.instance.unlock_queues(core.group, stray, oneway=False)
        return records
