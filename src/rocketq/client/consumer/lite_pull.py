"""The lite pull consumer (RocketMQ's ``DefaultLitePullConsumer``): you drive the loop with ``poll``.

::

    with LitePullConsumer("my-group", namesrv="127.0.0.1:9876") as consumer:   # starts it
        consumer.subscribe("TopicTest", "TagA")        # automatic rebalance, or assign([...])
        while running:
            for msg in consumer.poll(timeout=1.0):
                handle(msg)
            # offsets are committed every 5 s by poll() (auto_commit), or call commit_sync()

How it works (all state on the client instance's loop thread):

* ``subscribe`` — the group's queues are divided by :class:`~rocketq.client.rebalance.impl.RebalanceImpl`
  exactly as for push consumers (20 s timer, NOTIFY, start), with ``CONSUME_ACTIVELY``; a queue
  taken away has its offset persisted. ``assign`` — the caller picks the queues; no rebalance
  (the two are exclusive, as in Java);
* one pull task per owned queue long-polls (``PULL_MESSAGE`` with the suspend flag, up to
  ``pull_batch_size`` = 10 messages, the broker holds it ``broker_suspend_max_time`` = 20 s)
  and queues what it finds in a buffer; it waits 50 ms while the buffer holds more than
  ``pull_threshold_for_all`` (10,000) messages, the queue caches more than
  ``pull_threshold_for_queue`` (1,000) messages or ``pull_threshold_size_for_queue`` (100) MiB,
  or spans more than ``consume_max_span`` (2,000) offsets; a paused queue is not pulled;
* ``poll(timeout)`` returns the next batch of one queue (the messages of one pull) and moves the
  queue's consumed offset past it — the offset ``commit_sync`` / auto-commit write (every
  ``auto_commit_interval`` = 5 s, checked by ``poll``; ours also sends it to the broker at once,
  one-way, where Java 4.9.4 waits for the 5 s persist);
* ``seek(mq, offset)`` drops what is buffered for the queue and restarts its pull at ``offset``
  (which must lie within the queue's min and max offsets).

Nothing is sent back on failure: a lite pull consumer has no retry topic; what was polled counts
as consumed once committed.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import queue
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rocketq.allocate import AllocationStrategy, get_strategy
from rocketq.client._facade import ConsumerFacade
from rocketq.client.config import (
    ConsumeFromWhere,
    MessageModel,
    ReadOffsetType,
    _half_hour_ago,
    enum_value,
    timestamp_ms,
)
from rocketq.client.consumer.base_core import ConsumerCore
from rocketq.client.consumer.process_queue import DropReason, ProcessQueue
from rocketq.client.consumer.pull import flow_control_reason, found_messages, pull_sys_flag
from rocketq.client.consumer.selector import MessageSelector, subscription_of
from rocketq.client.instance import ClientInstance
from rocketq.client.loop_thread import cancel_and_wait
from rocketq.client.rebalance.impl import MessageQueueListener, PullRequest
from rocketq.client.rebalance.log import RebalanceLog, RebalanceRecord, RebalanceTrigger
from rocketq.client.routes import subscribe_info_from_route
from rocketq.client.validators import check_topic
from rocketq.clock import now_ms
from rocketq.errors import ClientStateError, ConfigError, RocketQError
from rocketq.logsummary import LogSummary
from rocketq.models import MessageQueue, PullStatus
from rocketq.protocol import calls
from rocketq.protocol.bodies import (
    CMResult,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    ConsumeType,
    SubscriptionData,
)
from rocketq.protocol.headers import PullMessageRequestHeader
from rocketq.protocol.message import MessageExt

__all__ = ["LitePullConsumer", "LitePullConsumerConfig", "SubscriptionType"]

logger = logging.getLogger(__name__)
#: failed pulls, one line per broker per 10 s
_pull_warnings = LogSummary(logger)


@dataclass(frozen=True, slots=True, kw_only=True)
class LitePullConsumerConfig:
    """A lite pull consumer's settings (``DefaultLitePullConsumer``; RocketMQ 4.9.4's defaults)."""

    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    #: ``yyyyMMddHHmmss`` local time for CONSUME_FROM_TIMESTAMP (default: half an hour ago).
    consume_timestamp: str = field(default_factory=_half_hour_ago)
    #: Allocation strategy name or instance (``AllocateMessageQueueAveragely``).
    allocate_strategy: str | AllocationStrategy = "AVG"
    #: Commit consumed offsets from ``poll`` every ``auto_commit_interval`` (``autoCommit`` true).
    auto_commit: bool = True
    #: Seconds between auto-commits (``autoCommitIntervalMillis`` 5000, at least 1000).
    auto_commit_interval: float = 5.0
    #: Messages per pull (``pullBatchSize`` 10).
    pull_batch_size: int = 10
    #: Buffered messages of all queues above which pulling waits (``pullThresholdForAll`` 10000).
    pull_threshold_for_all: int = 10000
    #: Cached messages per queue above which pulling waits (``pullThresholdForQueue`` 1000).
    pull_threshold_for_queue: int = 1000
    #: Cached MiB per queue above which pulling waits (``pullThresholdSizeForQueue`` 100).
    pull_threshold_size_for_queue: int = 100
    #: Span of cached offsets per queue above which pulling waits (``consumeMaxSpan`` 2000).
    consume_max_span: int = 2000
    #: Default ``poll`` timeout in seconds (``pollTimeoutMillis`` 5000).
    poll_timeout: float = 5.0
    #: Seconds the broker holds a pull with no message (``brokerSuspendMaxTimeMillis`` 20000).
    broker_suspend_max_time: float = 20.0
    #: Seconds a held pull may take (``consumerTimeoutMillisWhenSuspend`` 30000).
    consumer_timeout_when_suspend: float = 30.0
    #: Retry delay after a failed pull (``pullTimeDelayMillsWhenException`` 1000).
    pull_time_delay_when_exception: float = 1.0
    #: Back-off while over a flow-control threshold (``PULL_TIME_DELAY_MILLS_WHEN_FLOW_CONTROL`` 50).
    pull_time_delay_when_flow_control: float = 0.05
    #: Directory of broadcasting offsets (``~/.rocketmq_offsets``).
    offset_store_dir: str | None = None
    #: Rebalance records kept in memory (ours).
    rebalance_log_size: int = 1024

    def __post_init__(self) -> None:
        for field_name, cls in (("message_model", MessageModel), ("consume_from_where", ConsumeFromWhere)):
            object.__setattr__(self, field_name, enum_value(cls, field_name, getattr(self, field_name)))
        for name in ("pull_batch_size", "pull_threshold_for_all", "pull_threshold_for_queue",
                     "pull_threshold_size_for_queue", "consume_max_span", "broker_suspend_max_time",
                     "rebalance_log_size"):  # fmt: skip
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)!r}")
        if self.auto_commit_interval < 1.0:
            raise ConfigError("auto_commit_interval must be at least 1 s (as RocketMQ)")
        if self.poll_timeout < 0:
            raise ConfigError("poll_timeout must be >= 0")
        if self.consumer_timeout_when_suspend <= self.broker_suspend_max_time:
            raise ConfigError("consumer_timeout_when_suspend must exceed broker_suspend_max_time")
        if len(self.consume_timestamp) != 14 or not self.consume_timestamp.isdigit():
            raise ConfigError(f"consume_timestamp must be yyyyMMddHHmmss, got {self.consume_timestamp!r}")
        if isinstance(self.allocate_strategy, str):
            get_strategy(self.allocate_strategy)

    def strategy(self) -> AllocationStrategy:
        if isinstance(self.allocate_strategy, AllocationStrategy):
            return self.allocate_strategy
        return get_strategy(self.allocate_strategy)

    def consume_timestamp_ms(self) -> int:
        """``consume_timestamp`` as epoch ms (local time, as Java's ``UtilAll.parseDate``)."""
        return timestamp_ms(self.consume_timestamp)


class SubscriptionType(enum.Enum):
    """How the consumer gets its queues (Java's ``SubscriptionType``)."""

    NONE = "NONE"
    SUBSCRIBE = "SUBSCRIBE"
    ASSIGN = "ASSIGN"


class _QueueState:
    """One assigned queue (``AssignedMessageQueue.MessageQueueState``)."""

    __slots__ = ("consume_offset", "paused", "pq", "pull_from", "pull_offset", "resumed", "seek_offset")

    def __init__(self, pq: ProcessQueue, pull_offset: int = -1) -> None:
        self.pq = pq
        self.paused = False
        self.pull_offset = pull_offset
        self.consume_offset = -1
        self.seek_offset = -1
        self.resumed = asyncio.Event()
        #: The broker id the last answer suggested (``suggestWhichBrokerId``; 0 the master, 1 a
        #: slave its master sent us to): where the next pull goes, as Java's ``PullAPIWrapper``.
        self.pull_from = 0


class _Batch:
    __slots__ = ("mq", "msgs", "pq")

    def __init__(self, msgs: list[MessageExt], mq: MessageQueue, pq: ProcessQueue) -> None:
        self.msgs, self.mq, self.pq = msgs, mq, pq


class LitePullCore(ConsumerCore[LitePullConsumerConfig]):
    """The lite pull consumer's implementation; every method runs on the instance's event loop."""

    consume_type = ConsumeType.CONSUME_ACTIVELY

    def __init__(self, instance: ClientInstance, group: str, config: LitePullConsumerConfig,
                 log: RebalanceLog, queue_listeners: list[MessageQueueListener]) -> None:  # fmt: skip
        super().__init__(instance, group, config, log, queue_listeners)
        self.subscription_type = SubscriptionType.NONE
        self.assigned: dict[MessageQueue, _QueueState] = {}
        self.buffer: queue.SimpleQueue[_Batch] = queue.SimpleQueue()
        self.buffered = 0  # messages in the buffer (approximate across threads; Java uses size * batch)
        self._tasks: dict[MessageQueue, asyncio.Task[None]] = {}

    # ---------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        await self.offset_store.load()
        self.instance.register_consumer(self.group, self)
        self.running = True
        self.start_timestamp = now_ms()
        try:
            for topic in self.subscribed_topics():
                await self.instance.update_topic_route(topic)
            await self.instance.check_client_in_broker(self.group, self.rebalance.subscriptions.values())
            await self.instance.send_heartbeat_to_all_brokers(raise_bugs=True)
            if self.subscription_type is SubscriptionType.SUBSCRIBE:
                await self.rebalance.do_rebalance(RebalanceTrigger.START)
            else:
                for mq in list(self.assigned):
                    self._start_task(mq)
        except BaseException:
            self.running = False
            self.instance.unregister_consumer_local(self.group)
            raise

    async def shutdown(self) -> list[RebalanceRecord]:
        if not self.running:
            return []
        self.stopping = True
        await cancel_and_wait(self._tasks.values())
        self._tasks.clear()
        if self.config.auto_commit:
            self.commit_all()
        await self.offset_store.persist_all(self.owned_queues(), oneway=False)
        records: list[RebalanceRecord] = []
        if self.subscription_type is SubscriptionType.SUBSCRIBE:
            records = await self.rebalance.release_all(RebalanceTrigger.SHUTDOWN)
        await self.leave()
        return records

    # ---------------------------------------------------------------- subscriptions and assignment

    async def subscribe(self, sub: SubscriptionData) -> None:
        self.subscription_type = SubscriptionType.SUBSCRIBE
        await super().subscribe(sub)

    async def assign(self, mqs: Sequence[MessageQueue]) -> None:
        self.subscription_type = SubscriptionType.ASSIGN
        target = set(mqs)
        for mq in [m for m in self.assigned if m not in target]:
            self._unassign(mq)
        for mq in sorted(target):
            if mq not in self.assigned:
                self.assigned[mq] = _QueueState(ProcessQueue(now=time.time()))
                if self.running:
                    await self.instance.update_topic_route(mq.topic)
                    self._start_task(mq)

    def _unassign(self, mq: MessageQueue) -> None:
        state = self.assigned.pop(mq, None)
        if state is not None:
            state.pq.drop(DropReason.UNASSIGNED)
            state.resumed.set()
        task = self._tasks.pop(mq, None)
        if task is not None:
            task.cancel()

    def _subscription_for(self, topic: str) -> SubscriptionData:
        sub = self.rebalance.subscriptions.get(topic)
        if sub is None:  # assigned queues are read whole
            sub = SubscriptionData.build(topic, "*", sub_version=self.start_timestamp)
        return sub

    # ---------------------------------------------------------------- ConsumerInner

    def subscribed_topics(self) -> list[str]:
        topics = dict.fromkeys(self.rebalance.subscriptions)
        topics.update(dict.fromkeys(mq.topic for mq in self.assigned))
        return list(topics)

    def update_topic_subscribe_info(self, topic: str, mqs: frozenset[MessageQueue]) -> None:
        if topic not in self.rebalance.subscriptions:
            return
        old = self.rebalance.topic_subscribe_info.get(topic)
        self.rebalance.topic_subscribe_info[topic] = mqs
        if old is not None and old != mqs and self.running and not self.stopping:
            self.instance.rebalance_immediately(RebalanceTrigger.ROUTE)

    async def do_rebalance(self, trigger: RebalanceTrigger) -> None:
        if self.running and not self.stopping and self.subscription_type is SubscriptionType.SUBSCRIBE:
            await self.rebalance.do_rebalance(trigger)

    def owned_queues(self) -> list[MessageQueue]:
        return list(self.assigned)

    def running_info(self) -> ConsumerRunningInfo:
        cfg = self.config
        own = {
            "allocateMessageQueueStrategy": self.rebalance.strategy.name,
            "autoCommit": str(cfg.auto_commit).lower(),
            "autoCommitIntervalMillis": str(int(cfg.auto_commit_interval * 1000)),
            "pullBatchSize": str(cfg.pull_batch_size),
            "pullThresholdForAll": str(cfg.pull_threshold_for_all),
            "pullThresholdForQueue": str(cfg.pull_threshold_for_queue),
            "consumeMaxSpan": str(cfg.consume_max_span),
            "subscriptionType": self.subscription_type.value,
        }
        props = self.running_properties(own, thread_pool=0)
        mq_table = {
            mq: s.pq.info(self.offset_store.memory_offset(mq)) for mq, s in sorted(self.assigned.items())
        }
        status = {t: self.stats.status(t) for t in self.subscribed_topics()}
        return ConsumerRunningInfo(
            properties=props,
            subscription_set=tuple(self.rebalance.subscriptions.values()),
            mq_table=mq_table,
            status_table=status,
        )

    async def consume_message_directly(
        self, msg: MessageExt, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult:
        return ConsumeMessageDirectlyResult(
            order=False,
            auto_commit=True,
            consume_result=CMResult.CR_THROW_EXCEPTION,
            remark="a lite pull consumer has no listener to run",
            spent_time_mills=0,
        )

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET: seek every assigned queue of the reset."""
        for mq, offset in offsets.items():
            if mq.topic == topic and mq in self.assigned:
                await self.offset_store.update_consume_offset_to_broker(mq, offset, oneway=False)
                self.seek_now(mq, offset)

    # ---------------------------------------------------------------- RebalanceHooks

    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        state = self.assigned.get(mq)
        if state is not None and state.consume_offset >= 0 and self.config.auto_commit:
            self.offset_store.update_offset(mq, state.consume_offset, False)
        await self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)
        self._unassign(mq)
        return True

    def dispatch_pull_requests(self, requests: Sequence[PullRequest]) -> None:
        for request in requests:
            self.assigned[request.mq] = _QueueState(request.pq, request.next_offset)
            self._start_task(request.mq)

    async def message_queue_changed(
        self, topic: str, mq_all: frozenset[MessageQueue], mq_divided: frozenset[MessageQueue]
    ) -> None:
        self.notify_queue_listeners(topic, mq_all, mq_divided)

    # ---------------------------------------------------------------- pulling

    def _start_task(self, mq: MessageQueue, *, cancel_old: bool = True) -> None:
        """Start ``mq``'s pull task. ``cancel_old=False`` leaves a previous task to finish its long
        poll and find its state replaced (so the broker's answer still has a taker)."""
        self.run_pull_loop(self._tasks, mq, lambda: self._pull_loop(mq), cancel_old=cancel_old)

    def _flow_controlled(self, pq: ProcessQueue) -> bool:
        cfg = self.config
        return (
            self.buffered > cfg.pull_threshold_for_all
            or flow_control_reason(
                pq,
                max_count=cfg.pull_threshold_for_queue,
                max_size_mib=cfg.pull_threshold_size_for_queue,
                max_span=cfg.consume_max_span,
            )
            is not None
        )

    async def _pull_loop(self, mq: MessageQueue) -> None:
        cfg = self.config
        while not self.stopping:
            state = self.assigned.get(mq)
            if state is None or state.pq.dropped:
                return
            if state.paused:
                state.resumed.clear()
                await state.resumed.wait()
                continue
            if self._flow_controlled(state.pq):
                await asyncio.sleep(cfg.pull_time_delay_when_flow_control)
                continue
            try:
                wait = await self._pull_once(mq, state)
            except asyncio.CancelledError:
                raise
            except (RocketQError, OSError) as exc:
                _pull_warnings.warning(
                    f"pull:{mq.broker_name}",
                    f"pulls from {mq.broker_name} failed",
                    "pull of %s failed: %s; retrying in %.1fs",
                    mq,
                    exc,
                    cfg.pull_time_delay_when_exception,
                )
                wait = cfg.pull_time_delay_when_exception
            if wait:
                await asyncio.sleep(wait)

    async def _pull_once(self, mq: MessageQueue, state: _QueueState) -> float:
        cfg = self.config
        pq = state.pq
        if state.seek_offset != -1:
            offset = state.seek_offset
            state.consume_offset = offset
            state.seek_offset = -1
        else:
            offset = state.pull_offset
        if offset < 0:
            offset = await self.compute_pull_from_where(mq)
            if offset < 0:
                return cfg.pull_time_delay_when_exception
            if state.pull_offset < 0 and state.seek_offset == -1:
                state.pull_offset = offset
        sub = self._subscription_for(mq.topic)
        header = PullMessageRequestHeader(
            consumer_group=self.group,
            topic=mq.topic,
            queue_id=mq.queue_id,
            queue_offset=offset,
            max_msg_nums=cfg.pull_batch_size,
            sys_flag=pull_sys_flag(commit_offset=False, suspend=True, subscription=True),
            commit_offset=0,
            suspend_timeout_millis=int(cfg.broker_suspend_max_time * 1000),
            subscription=sub.sub_string,
            sub_version=sub.sub_version,
            expression_type=sub.expression_type,
        )
        addr = await self.instance.locate_pull_address(mq, state.pull_from)
        pq.last_pull_timestamp = time.time()
        begin = time.monotonic()
        response = await self.api.call(addr, calls.pull_message(header), cfg.consumer_timeout_when_suspend)
        state.pull_from = response.suggest_which_broker_id
        if self.assigned.get(mq) is not state or pq.dropped or state.seek_offset != -1 or state.paused:
            return 0.0  # unassigned, seeked or paused meanwhile: the answer is dropped (pulled again)
        status = response.status
        if status is PullStatus.FOUND:
            msgs = found_messages(response, sub, mq, self.stats, begin)
            if msgs is None:
                return cfg.pull_time_delay_when_exception
            state.pull_offset = response.next_begin_offset
            if msgs:
                pq.put_messages(msgs)
                self.buffered += len(msgs)
                self.buffer.put(_Batch(msgs, mq, pq))
            return 0.0
        if status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
            state.pull_offset = response.next_begin_offset
            return 0.0
        if status is PullStatus.OFFSET_ILLEGAL:
            logger.warning(
                "pull of %s at %d: offset illegal; going on at %d", mq, offset, response.next_begin_offset
            )
            state.pull_offset = response.next_begin_offset
        return 0.0

    # ---------------------------------------------------------------- consuming (called from poll)

    def consumed(self, batch: _Batch) -> list[MessageExt] | None:
        """A batch handed to ``poll``'s caller: forget it and move the consumed offset past it;
        ``None`` when the queue was dropped or seeked since (the batch is stale)."""
        self.buffered = max(0, self.buffered - len(batch.msgs))
        state = self.assigned.get(batch.mq)
        if batch.pq.dropped or state is None or state.pq is not batch.pq:
            return None
        offset = batch.pq.remove_messages(batch.msgs, now=time.time())
        if offset >= 0:
            state.consume_offset = offset
        self.stats.add(batch.mq.topic, "ok", len(batch.msgs))
        return batch.msgs

    def commit_all(self) -> dict[MessageQueue, int]:
        """Write every queue's consumed offset to the offset store's memory (``commitAll``)."""
        out = {}
        for mq, state in self.assigned.items():
            if state.consume_offset >= 0 and not state.pq.dropped:
                self.offset_store.update_offset(mq, state.consume_offset, False)
                out[mq] = state.consume_offset
        return out

    async def commit(
        self, offsets: dict[MessageQueue, int] | None, *, oneway: bool
    ) -> dict[MessageQueue, int]:
        """Commit ``offsets`` (``None``: every consumed offset) and send them to the broker."""
        if offsets is None:
            done = self.commit_all()
        else:
            done = {}
            for mq, offset in offsets.items():
                if mq not in self.assigned:
                    raise ClientStateError(f"{mq} is not assigned to this consumer")
                self.offset_store.update_offset(mq, offset, False)
                self.assigned[mq].consume_offset = offset
                done[mq] = offset
        if self.message_model is MessageModel.BROADCASTING:
            await self.offset_store.persist_all(list(self.assigned))
        else:
            for mq in done:
                await self.offset_store.persist(mq, oneway=oneway)
        return done

    def seek_now(self, mq: MessageQueue, offset: int) -> None:
        """Drop what is cached and buffered for ``mq`` and restart its pull at ``offset``."""
        state = self.assigned.get(mq)
        if state is None:
            raise ClientStateError(f"the message queue is not in assigned list, may be rebalancing: {mq}")
        state.pq.drop(DropReason.SEEK)  # stale batches in the buffer are skipped by poll
        fresh = _QueueState(ProcessQueue(now=time.time()), offset)
        fresh.seek_offset = offset
        fresh.paused = state.paused
        self.assigned[mq] = fresh
        if self.subscription_type is SubscriptionType.SUBSCRIBE and mq in self.rebalance.process_queue_table:
            self.rebalance.process_queue_table[mq] = fresh.pq
        state.resumed.set()
        self._start_task(mq, cancel_old=False)

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        if mq not in self.assigned:
            raise ClientStateError(f"the message queue is not in assigned list, may be rebalancing: {mq}")
        low, high = await self.min_offset(mq), await self.max_offset(mq)
        if not low <= offset <= high:
            raise ConfigError(f"seek offset {offset} of {mq} is outside [{low}, {high}]")
        self.seek_now(mq, offset)

    async def _master(self, mq: MessageQueue) -> str:
        addr = await self.instance.locate_master(mq)
        if addr is None:
            raise ClientStateError(f"The broker[{mq.broker_name}] not exist")
        return addr

    async def min_offset(self, mq: MessageQueue) -> int:
        return await self.api.call(await self._master(mq), calls.get_min_offset(mq))

    async def max_offset(self, mq: MessageQueue) -> int:
        return await self.api.call(await self._master(mq), calls.get_max_offset(mq))

    async def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return await self.api.call(await self._master(mq), calls.search_offset(mq, timestamp_ms))

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        route = await self.api.get_topic_route(topic)
        if route is None:
            raise ClientStateError(f"no route for topic {topic}")
        await self.instance.update_topic_route(topic, route)
        return sorted(subscribe_info_from_route(topic, route))

    def set_paused(self, mqs: Iterable[MessageQueue], paused: bool) -> None:
        for mq in mqs:
            state = self.assigned.get(mq)
            if state is None or state.paused == paused:
                continue
            state.paused = paused
            if not paused:
                state.resumed.set()


class LitePullConsumer(ConsumerFacade[LitePullCore, LitePullConsumerConfig]):
    """A lite pull consumer usable from plain synchronous code (see the module doc).

    ``subscribe`` and ``assign`` may be called before or after :meth:`start`; ``poll`` and the
    offset calls need a started consumer.
    """

    kind = "lite pull consumer"

    def _default_config(self) -> LitePullConsumerConfig:
        return LitePullConsumerConfig()

    def _init_state(self) -> None:
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._assigned: list[MessageQueue] | None = None
        self._next_auto_commit = 0.0

    def _call(self, coro: Any, timeout: float | None = 30.0) -> Any:
        return self.core.instance.loop_thread.call(coro, timeout)

    async def _run(self, fn: Callable[[], Any]) -> Any:
        return fn()

    @staticmethod
    async def _consumed(core: LitePullCore, batch: _Batch) -> list[MessageExt] | None:
        return core.consumed(batch)

    # ---------------------------------------------------------------- setup

    def subscribe(self, topic: str, selector: MessageSelector | str | None = "*") -> None:
        """Consume ``topic`` with the group's automatic rebalance: a tag expression or a
        :class:`~rocketq.client.consumer.selector.MessageSelector` (SQL92 needs a broker with
        ``enablePropertyFilter``, asked as :meth:`PushConsumer.subscribe` says)."""
        check_topic(topic)
        if self._assigned is not None:
            raise ClientStateError("subscribe and assign are mutually exclusive")
        sub = subscription_of(topic, selector, sub_version=now_ms())
        if self._core is not None:
            self._call(self._core.subscribe(sub))
        self._subscriptions[topic] = sub

    def unsubscribe(self, topic: str) -> None:
        self._subscriptions.pop(topic, None)
        if self._core is not None:
            self._call(self._core.unsubscribe(topic))

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Consume exactly ``queues`` (no rebalance); replaces an earlier assignment."""
        if self._subscriptions:
            raise ClientStateError("subscribe and assign are mutually exclusive")
        mqs = sorted(set(queues))
        if not mqs:
            raise ConfigError("assign needs at least one message queue")
        self._assigned = mqs
        if self._core is not None:
            self._call(self._core.assign(mqs))

    # ---------------------------------------------------------------- lifecycle

    def _start_core(self, instance: ClientInstance) -> LitePullCore:
        core = instance.loop_thread.call(self._make_core(instance))
        instance.loop_thread.call(core.start(), timeout=60.0)
        return core

    def _started(self) -> None:
        self._next_auto_commit = time.monotonic() + self.config.auto_commit_interval

    async def _make_core(self, instance: ClientInstance) -> LitePullCore:
        core = LitePullCore(instance, self.group, self.config, self.rebalance_log, self._queue_listeners)
        for sub in self._subscriptions.values():
            core.subscription_type = SubscriptionType.SUBSCRIBE
            core.rebalance.set_subscription(sub)
        if self._assigned is not None:
            await core.assign(self._assigned)
        return core

    def shutdown(self) -> None:
        """Stop pulling, commit (auto-commit) and persist every offset, release the queues, unregister."""
        self._stop(lambda core: core.shutdown(), 60.0)

    close = shutdown

    # ---------------------------------------------------------------- polling

    def poll(self, timeout: float | None = None) -> list[MessageExt]:
        """The next batch of pulled messages (one queue's), or ``[]`` after ``timeout`` seconds
        (default ``poll_timeout``, 5 s). Commits consumed offsets when auto-commit is due."""
        core = self.core
        if self.config.auto_commit and time.monotonic() >= self._next_auto_commit:
            self._next_auto_commit = time.monotonic() + self.config.auto_commit_interval
            self._call(core.commit(None, oneway=True))
        wait = self.config.poll_timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        while True:
            remaining = deadline - time.monotonic()
            try:
                batch = (
                    core.buffer.get(timeout=max(remaining, 0.0))
                    if remaining > 0
                    else core.buffer.get_nowait()
                )
            except queue.Empty:
                return []
            msgs = self._call(self._consumed(core, batch))
            if msgs is not None:
                return list(msgs)
            if time.monotonic() >= deadline:
                return []

    # ---------------------------------------------------------------- offsets

    def commit_sync(self) -> dict[MessageQueue, int]:
        """Commit the consumed offset of every queue and wait for the brokers to store it."""
        return dict(self._call(self.core.commit(None, oneway=False)))

    def commit(self, offsets: dict[MessageQueue, int], *, persist: bool = True) -> None:
        """Commit explicit offsets (the next message to read per queue); ``persist`` waits for the
        brokers, else they get it with the next persist (5 s)."""
        core = self.core
        if persist:
            self._call(core.commit(dict(offsets), oneway=False))
        else:

            async def update() -> None:
                for mq, offset in offsets.items():
                    core.offset_store.update_offset(mq, offset, False)

            self._call(update())

    def committed(self, mq: MessageQueue) -> int:
        """The committed offset of ``mq`` (memory first, then the broker); -1 when none."""
        return int(self._call(self.core.offset_store.read_offset(mq, ReadOffsetType.MEMORY_FIRST_THEN_STORE)))

    def seek(self, mq: MessageQueue, offset: int) -> None:
        """Restart ``mq`` at ``offset`` (within its min and max offsets); buffered messages are dropped."""
        self._call(self.core.seek(mq, offset))

    def seek_to_begin(self, mq: MessageQueue) -> None:
        core = self.core
        self.seek(mq, int(self._call(core.min_offset(mq))))

    def seek_to_end(self, mq: MessageQueue) -> None:
        core = self.core
        self.seek(mq, int(self._call(core.max_offset(mq))))

    def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The first offset of ``mq`` stored at or after ``timestamp_ms`` (SEARCH_OFFSET_BY_TIMESTAMP)."""
        return int(self._call(self.core.offset_for_timestamp(mq, timestamp_ms)))

    # ---------------------------------------------------------------- queues

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop pulling ``queues`` at once: what a long poll in flight brings is dropped (and pulled
        again after ``resume``); messages already buffered are still returned by ``poll``."""
        core = self.core
        mqs = list(queues)
        self._call(self._run(lambda: core.set_paused(mqs, True)))

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        core = self.core
        mqs = list(queues)
        self._call(self._run(lambda: core.set_paused(mqs, False)))

    def is_paused(self, mq: MessageQueue) -> bool:
        core = self.core
        return bool(self._call(self._run(lambda: (s := core.assigned.get(mq)) is not None and s.paused)))

    def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of ``topic`` from the name server."""
        if self._core is None:
            raise ClientStateError("start the consumer first")
        return list(self._call(self._core.fetch_message_queues(topic)))

    def assignment(self) -> list[MessageQueue]:
        """The queues this consumer reads now, sorted."""
        core = self.core
        return sorted(self._call(self._run(lambda: list(core.assigned))))
