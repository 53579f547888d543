"""Clean handoff: concurrent consumption under broker leases, queues handed over commit-then-unlock.

Why RocketMQ re-delivers on a rebalance: when a queue moves, its old owner drops it and commits
its offset *one-way* (and the periodic 5 s persist may not have run), while the new owner —
already told by NOTIFY_CONSUMER_IDS_CHANGED — reads the broker's committed offset at once. The
two overlap: the new owner starts from a stale offset and consumes again what the old owner had
consumed but not yet committed.

Clean handoff (``PushConsumerConfig(handoff="clean")``, ours, opt-in) removes the overlap using
only requests a RocketMQ 4.9 broker serves (LOCK_BATCH_MQ, UNLOCK_BATCH_MQ, QUERY/UPDATE_CONSUMER_OFFSET):

* a queue is consumed only under its **broker lease** (the orderly consumer's queue lock): a new
  queue is locked before its offset is read and its first pull is sent; leases are renewed every
  ``rebalance_lock_interval`` (20 s; the broker keeps one 60 s), and a queue whose lease was not
  confirmed for ``rebalance_lock_max_live_time`` (30 s) is not pulled;
* the **old owner**, when a rebalance takes a queue away (:class:`QueueHandoff`): sends no new
  pull, lets the queue's cached messages (and what a long poll in flight still brings) be consumed
  for up to ``handoff_await`` seconds (messages still unconsumed then are abandoned — they stay
  above the committed offset, and a pull answer arriving later is dropped), **commits the
  offset and waits for the broker's answer**, and only then releases the lease
  (UNLOCK_BATCH_MQ, awaited). Lease renewal skips a queue being handed over, and renewal and
  release are serialised, so a renewal cannot re-take a released queue;
* the **new owner** reads the offset only once it holds the lease. When the lock fails (the old
  owner has not let go yet: both were told of the change at the same moment) it does not wait for
  the next 20 s rebalance: :class:`LeaseRetry` tries again after 50 ms, growing 1.5x per failure
  up to 1 s, while the queue stays allocated to it;
* a consumer shutting down gracefully commits every offset synchronously, then unlocks every
  queue, then unregisters.

The trade-off: a consumer that **crashes** keeps its leases until the broker expires them (60 s in
RocketMQ, ``rocketmq.broker.rebalance.lockMaxLiveTime``; ``BrokerConfig.rebalance_lock_max_live_time``
in ours), so its queues pause that long, where the default mode moves them as soon as the broker
expires the consumer's connection (~2 minutes in RocketMQ without a clean close, but at once on a
broken TCP connection). Clean handoff buys zero duplicates on graceful scaling with slower
failover after crashes.

The decisions are pure and driven by ``now`` (:class:`LeaseRetry`, :class:`QueueHandoff`,
:func:`apply_lock_result`); :class:`CleanHandoffPushCore` runs them on the client's loop.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rocketq.client.consume_concurrently import (
    ConsumeMessageConcurrentlyService,
    ConsumeService,
    adapt_listener,
)
from rocketq.client.process_queue import ProcessQueue
from rocketq.client.push_consumer import PushConsumerCore
from rocketq.client.rebalance import PullRequest
from rocketq.client.rebalance_log import RebalanceRecord, RebalanceTrigger
from rocketq.errors import RocketQError
from rocketq.models import MessageQueue
from rocketq.protocol import calls
from rocketq.protocol.bodies import MessageModel

if TYPE_CHECKING:
    from rocketq.client.instance import ClientInstance

__all__ = [
    "CleanHandoffPushCore",
    "HandoffStep",
    "LeaseRetry",
    "QueueHandoff",
    "apply_lock_result",
    "lock_all",
]

logger = logging.getLogger(__name__)


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
    >>> r.failed([q], now=10.05); r.next_delay(10.05)
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


class HandoffStep(enum.StrEnum):
    """Where the old owner is in handing a queue over."""

    #: not pulled any more; cached messages are being consumed and committed
    DRAIN = "drain"
    #: writing the offset to the broker, awaiting its answer
    COMMIT = "commit"
    #: releasing the lease (UNLOCK_BATCH_MQ, awaited)
    RELEASE = "release"
    DONE = "done"


@dataclass(slots=True)
class QueueHandoff:
    """One queue leaving this consumer: drain (bounded) → commit (awaited) → release → done.

    >>> h = QueueHandoff(MessageQueue("T", "b", 0), started=100.0, max_wait=3.0)
    >>> h.poll(cached=2, now=100.5)
    <HandoffStep.DRAIN: 'drain'>
    >>> h.poll(cached=0, now=100.6)
    <HandoffStep.COMMIT: 'commit'>
    >>> h.committed(42, ok=True, now=100.61); h.released(now=100.62); h.step, h.abandoned
    (<HandoffStep.DONE: 'done'>, 0)
    """

    mq: MessageQueue
    started: float
    max_wait: float
    step: HandoffStep = HandoffStep.DRAIN
    #: cached messages left unconsumed when the wait ran out (the new owner delivers them)
    abandoned: int = 0
    offset: int = -1
    commit_ok: bool = False
    drained_at: float = 0.0
    committed_at: float = 0.0
    released_at: float = 0.0

    @property
    def deadline(self) -> float:
        return self.started + self.max_wait

    def poll(self, *, cached: int, now: float) -> HandoffStep:
        """While draining: move on when nothing is cached any more or the wait ran out."""
        if self.step is HandoffStep.DRAIN and (cached == 0 or now >= self.deadline):
            self.abandoned = cached
            self.drained_at = now
            self.step = HandoffStep.COMMIT
        return self.step

    def committed(self, offset: int, *, ok: bool, now: float) -> None:
        """The commit was answered (``ok``) or given up; the lease is released either way — the
        consumer is leaving the queue, and holding it would only stall the new owner."""
        if self.step is not HandoffStep.COMMIT:
            raise RuntimeError(f"handoff of {self.mq} is at {self.step}, not commit")
        self.offset, self.commit_ok, self.committed_at = offset, ok, now
        self.step = HandoffStep.RELEASE

    def released(self, *, now: float) -> None:
        if self.step is not HandoffStep.RELEASE:
            raise RuntimeError(f"handoff of {self.mq} is at {self.step}, not release")
        self.released_at = now
        self.step = HandoffStep.DONE

    def summary(self) -> str:
        def ms(a: float, b: float) -> float:
            return (b - a) * 1000.0

        return (
            f"{self.mq.short}: offset {self.offset} committed={'ok' if self.commit_ok else 'FAILED'}, "
            f"abandoned {self.abandoned}, drain {ms(self.started, self.drained_at):.1f} ms, "
            f"commit {ms(self.drained_at, self.committed_at):.1f} ms, "
            f"release {ms(self.committed_at, self.released_at):.1f} ms"
        )


# ------------------------------------------------------------------------------------ lock helpers


async def lock_all(
    instance: ClientInstance,
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
    for name, addr, mqs in instance.queues_by_broker(owned):
        try:
            locked = await api.call(addr, calls.lock_batch_mq(group, instance.client_id, mqs))
        except RocketQError as exc:
            logger.warning("renewing the locks of %d queue(s) on %s failed: %s", len(mqs), name, exc)
            continue
        # a queue dropped while the request was out is not resurrected
        live = [mq for mq in mqs if mq in table and not table[mq].dropped]
        lost += apply_lock_result(table, live, locked, time.time() if now is None else now)
    for mq in lost:
        logger.warning("group %s: the lock of %s is held by another client; not consuming it", group, mq)
    return lost


async def lock_one(instance: ClientInstance, group: str, mq: MessageQueue, pq: ProcessQueue) -> bool:
    """Lock one queue (``RebalanceImpl.lock``); records the result on ``pq``."""
    locked = await instance.lock_queues(group, [mq])
    if mq in locked and not pq.dropped:
        pq.lock_confirmed(time.time())
        return True
    return False


async def commit_offset_sync(
    instance: ClientInstance, group: str, mq: MessageQueue, offset: int, *, attempts: int = 3
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

    Shared by :class:`CleanHandoffPushCore` and the orderly consumer in clean mode. ``renew_lock``
    serialises renewals with releases (a renewal in flight cannot re-take a released queue).
    """

    def __init__(self, core: PushConsumerCore, *, retry: bool) -> None:
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

    def _on_record(self, record: RebalanceRecord) -> None:
        if record.trigger is not RebalanceTrigger.SHUTDOWN and self.core.running and not self.core.stopping:
            self.after_rebalance(record.trigger)

    async def stop(self) -> None:
        if self.retry is not None and self._tasks:
            self.core.log.remove_listener(self._on_record)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
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
            try:
                await self.renew()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("group %s: lock renewal failed", self.core.group)
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
            try:
                await self.acquire_due()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("group %s: acquiring leases failed", self.core.group)

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


# ------------------------------------------------------------------------------------ the consumer


class HandoffConsumeService(ConsumeMessageConcurrentlyService):
    """The concurrent service, signalling each applied result so a handoff can wait without polling."""

    def __init__(self, consumer: PushConsumerCore, listener: Any) -> None:
        super().__init__(consumer, listener)
        self.progress = asyncio.Event()

    def _apply_results(self) -> None:
        super()._apply_results()
        self.progress.set()

    def _task_done(self, task: asyncio.Task[None]) -> None:
        super()._task_done(task)
        self.progress.set()


class CleanHandoffPushCore(PushConsumerCore):
    """A concurrent push consumer whose queues change owners without overlap (see the module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lease = LeaseKeeper(self, retry=True)
        self.handoffs: list[QueueHandoff] = []  # the last ones, for tests and the lab
        self._relock_at: dict[MessageQueue, float] = {}

    @property
    def lock_new_queues(self) -> bool:
        return self.message_model is MessageModel.CLUSTERING

    def make_consume_service(self) -> ConsumeService:
        return HandoffConsumeService(self, adapt_listener(self.listener))

    async def start(self) -> None:
        await super().start()
        if self.message_model is MessageModel.CLUSTERING:
            self.lease.start()
            self.lease.after_rebalance(RebalanceTrigger.START)

    async def do_rebalance(self, trigger: RebalanceTrigger) -> None:
        await super().do_rebalance(trigger)
        if self.running and not self.stopping:
            self.lease.after_rebalance(trigger)

    async def shutdown(self, await_termination: float) -> list[RebalanceRecord]:
        await self.lease.stop()
        return await super().shutdown(await_termination)

    async def pull_precheck(self, request: PullRequest) -> float | None:
        wait = await super().pull_precheck(request)
        if wait is not None or self.message_model is not MessageModel.CLUSTERING:
            return wait
        pq, mq = request.pq, request.mq
        if mq in self.lease.handing_off:
            return self.config.pull_time_delay_when_flow_control  # draining: the loop ends at the drop
        now = time.time()
        if pq.holds_valid_lock(now, self.config.rebalance_lock_max_live_time):
            return None
        # lost or expired lease: try to get it back now and then, never pull without it
        if time.monotonic() >= self._relock_at.get(mq, 0.0):
            self._relock_at[mq] = time.monotonic() + self.config.lease_retry_max
            async with self.lease.renew_lock:
                if await lock_one(self.instance, self.group, mq, pq):
                    return None
        return self.config.lease_retry_max

    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        if self.message_model is not MessageModel.CLUSTERING:
            return await super().remove_unnecessary_message_queue(mq, pq)
        handoff = QueueHandoff(
            mq, started=time.monotonic(), max_wait=0.0 if self.stopping else self.config.handoff_await
        )
        self.lease.handing_off.add(mq)
        try:
            # drain: no new pull is sent (pull_precheck); the cached messages — and what a long
            # poll in flight may still bring — are consumed and their results applied meanwhile
            pq.dropped = False
            service = self.consume_service
            progress = service.progress if isinstance(service, HandoffConsumeService) else None
            while handoff.poll(cached=pq.msg_count, now=time.monotonic()) is HandoffStep.DRAIN:
                remaining = handoff.deadline - time.monotonic()
                if progress is None:
                    await asyncio.sleep(min(0.01, remaining))
                    continue
                progress.clear()
                try:
                    await asyncio.wait_for(progress.wait(), remaining)
                except TimeoutError:
                    pass
            # what is left is abandoned: workers skip it, its results and a late pull answer are ignored
            pq.dropped = True
            offset = self.offset_store.memory_offset(mq)
            ok = True
            if offset >= 0:
                ok = await commit_offset_sync(self.instance, self.group, mq, offset)
            handoff.committed(offset, ok=ok, now=time.monotonic())
            self.offset_store.remove_offset(mq)  # nothing may persist it after the release
            async with self.lease.renew_lock:
                await self.instance.unlock_queues(self.group, [mq], oneway=False)
                pq.locked = False
            handoff.released(now=time.monotonic())
        finally:
            self.lease.handing_off.discard(mq)
            self._relock_at.pop(mq, None)
            pq.dropped = True
            self.offset_store.remove_offset(mq)
        self.handoffs = [*self.handoffs[-255:], handoff]
        log = logger.warning if handoff.abandoned or not handoff.commit_ok else logger.info
        log("group %s handed over %s", self.group, handoff.summary())
        return True
