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
  up to 0.5 s, while the queue stays allocated to it;
* a consumer shutting down gracefully commits every offset synchronously, then unlocks every
  queue, then unregisters.

A consumer that **crashes** (or is cut off, or frozen past the broker's expiry) cannot hand over.
Its locks are leases (``rqLease`` on LOCK_BATCH_MQ), and rocketq's broker frees them the moment it
leaves the group (``BrokerConfig.release_departed_locks``), so its queues move as soon as with
RocketMQ's handoff. A RocketMQ broker keeps them until it expires them (60 s,
``rocketmq.broker.rebalance.lockMaxLiveTime``): against a RocketMQ cluster the clean handoff buys
zero duplicates on graceful scaling with slower failover after crashes, and ``handoff="rocketmq"``
is the other choice.

The decisions are pure and driven by ``now`` (:class:`QueueHandoff` here; the lease rules,
:class:`~rocketq.client.rebalance.leases.LeaseRetry` and
:func:`~rocketq.client.rebalance.leases.apply_lock_result`, in :mod:`rocketq.client.rebalance.leases`,
shared with orderly consumption); :class:`CleanHandoffPushCore` runs them on the client's loop.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from dataclasses import dataclass
from typing import Any

from rocketq.client.consumer.consume_concurrently import (
    ConsumeMessageConcurrentlyService,
    ConsumeService,
    adapt_listener,
)
from rocketq.client.consumer.leased_core import LeasedPushConsumerCore
from rocketq.client.consumer.process_queue import DropReason, ProcessQueue
from rocketq.client.consumer.push_core import PushConsumerCore
from rocketq.client.rebalance.impl import PullRequest
from rocketq.client.rebalance.leases import commit_offset_sync
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import MessageModel

__all__ = ["CleanHandoffPushCore", "HandoffConsumeService", "HandoffStep", "QueueHandoff"]

logger = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------ pure parts


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


class CleanHandoffPushCore(LeasedPushConsumerCore):
    """A concurrent push consumer whose queues change owners without overlap (see the module doc)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.handoffs: list[QueueHandoff] = []  # the last ones, for tests and the lab
        self._relock_at: dict[MessageQueue, float] = {}

    @property
    def retries_leases(self) -> bool:
        return True

    @property
    def drains_removed_queues(self) -> bool:
        return self.message_model is MessageModel.CLUSTERING

    def make_consume_service(self) -> ConsumeService:
        return HandoffConsumeService(self, adapt_listener(self.listener))

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
            if await self.lock_queue(mq, pq):
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
            # drain: the rebalance left the queue undropped (drains_removed_queues), no new pull
            # is sent (pull_precheck); the cached messages — and what a long poll in flight may
            # still bring — are consumed and their results applied meanwhile
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
            pq.drop(DropReason.HANDED_OVER)
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
            pq.drop(DropReason.HANDED_OVER)
            self.offset_store.remove_offset(mq)
        self.handoffs = [*self.handoffs[-255:], handoff]
        log = logger.warning if handoff.abandoned or not handoff.commit_ok else logger.info
        log("group %s handed over %s", self.group, handoff.summary())
        return True
