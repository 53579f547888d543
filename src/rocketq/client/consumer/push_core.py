"""The push consumer's engine (``DefaultMQPushConsumerImpl``): subscribe, rebalance, long-poll, consume.

:class:`PushConsumerCore` does the work on the client instance's event loop (the synchronous
:class:`~rocketq.client.consumer.push.PushConsumer` picks which core to build and fronts it).
One pull task per owned queue runs RocketMQ's ``pullMessage``:

1. skip the queue once it is dropped; note the pull time (pull expiry is judged from it);
2. flow control: more than ``pull_threshold_for_queue`` (1,000) cached messages, more than
   ``pull_threshold_size_for_queue`` (100) MiB, or (concurrent consumption) a span of more than
   ``consume_concurrently_max_span`` (2,000) between the lowest and highest cached offset: wait
   50 ms and look again;
3. a long-poll ``PULL_MESSAGE`` (broker holds it up to 15 s; client timeout 30 s) for up to 32
   messages, carrying the in-memory committed offset (commit flag set when > 0, clustering only)
   and the subscription expression when ``post_subscription_when_pull``;
4. FOUND: filter by tag, cache in the process queue, submit to the consume service, pull again;
   NO_NEW_MSG / NO_MATCHED_MSG: move to the next begin offset (and commit it when nothing is
   cached), pull again; OFFSET_ILLEGAL: drop the queue, store the broker's next begin offset,
   persist it and remove the queue so the next rebalance re-adds it; any error: retry in 3 s.

Seams for other consumers (the orderly service, clean handoff): :attr:`PushConsumerCore.consume_orderly`,
:meth:`PushConsumerCore.make_consume_service`, :meth:`PushConsumerCore.pull_precheck`,
:meth:`PushConsumerCore.remove_unnecessary_message_queue` and
:meth:`PushConsumerCore.compute_pull_from_where` may be overridden by a subclass (this module
knows none of them).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from rocketq.client.config import PushConsumerConfig
from rocketq.client.consumer.base_core import ConsumerCore
from rocketq.client.consumer.consume_concurrently import (
    ConsumeMessageConcurrentlyService,
    ConsumeService,
    adapt_listener,
)
from rocketq.client.consumer.offset_store import RemoteBrokerOffsetStore
from rocketq.client.consumer.process_queue import DropReason, ProcessQueue
from rocketq.client.consumer.pull import flow_control_reason, found_messages, pull_sys_flag
from rocketq.client.loop_thread import cancel_and_wait
from rocketq.client.rebalance.impl import MessageQueueListener, PullRequest
from rocketq.client.rebalance.log import RebalanceLog, RebalanceRecord, RebalanceTrigger
from rocketq.clock import now_ms
from rocketq.errors import BrokerError, ConfigError, RocketQError
from rocketq.logsummary import LogSummary
from rocketq.models import MessageQueue, PullResult, PullStatus
from rocketq.protocol import calls
from rocketq.protocol.bodies import (
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    ConsumeType,
    MessageModel,
    SubscriptionData,
)
from rocketq.protocol.codes import MASTER_ID, ResponseCode
from rocketq.protocol.headers import ConsumerSendMsgBackRequestHeader, PullMessageRequestHeader
from rocketq.protocol.message import Message as ProtocolMessage
from rocketq.protocol.message import MessageExt
from rocketq.protocol.properties import MessageConst
from rocketq.protocol.topics import RETRY_GROUP_TOPIC_PREFIX, retry_topic

if TYPE_CHECKING:
    from rocketq.client.instance import ClientInstance
    from rocketq.client.trace import ConsumeTraceHook

__all__ = ["PushConsumerCore", "retry_message"]

logger = logging.getLogger(__name__)
#: failed pulls, one line per broker per 10 s (a broker down fails every queue's pulls)
_pull_warnings = LogSummary(logger)


#: Seconds a rebalance that changed a consumer's queues waits for the heartbeat announcing its new
#: subscription version (ours; Java waits for each broker's answer, up to 3 s each).
HEARTBEAT_WAIT_IN_REBALANCE: Final = 0.5


def retry_message(
    msg: MessageExt, group: str, *, reconsume_times: int, max_reconsume_times: int
) -> ProtocolMessage:
    """``msg`` re-sent to ``%RETRY%<group>`` by the client itself (when the broker would not take a
    CONSUMER_SEND_MSG_BACK, or an orderly message is exhausted): its properties plus the original
    id and topic, the reconsume counts and a delay level of ``3 + reconsume times``, and no
    ``UNIQ_KEY`` (the producer gives it a new one), as Java's ``sendMessageBack`` fallback."""
    props = dict(msg.properties)
    props.setdefault(MessageConst.ORIGIN_MESSAGE_ID, msg.msg_id)
    props[MessageConst.RETRY_TOPIC] = msg.topic
    props[MessageConst.RECONSUME_TIME] = str(reconsume_times)
    props[MessageConst.MAX_RECONSUME_TIMES] = str(max_reconsume_times)
    props[MessageConst.DELAY] = str(3 + msg.reconsume_times)
    props.pop(MessageConst.UNIQ_KEY, None)
    return ProtocolMessage(retry_topic(group), msg.body, msg.flag, props)


class PushConsumerCore(ConsumerCore[PushConsumerConfig]):
    """The push consumer's implementation; every method runs on the instance's event loop."""

    consume_type = ConsumeType.CONSUME_PASSIVELY
    #: Called around each listener call when tracing (``PushConsumer(..., trace=True)``); consume
    #: services call ``trace_hook.before(msgs, start_ms)`` and ``trace_hook.after(token, n, ...)``.
    trace_hook: ConsumeTraceHook | None = None

    def __init__(
        self,
        instance: ClientInstance,
        group: str,
        config: PushConsumerConfig,
        subscriptions: dict[str, SubscriptionData],
        listener: Callable[..., Any],
        log: RebalanceLog,
        queue_listeners: list[MessageQueueListener],
    ) -> None:
        super().__init__(
            instance, group, config, log, queue_listeners,
            balance=config.balance, pull_max_idle=config.pull_max_idle_time,
        )  # fmt: skip
        self.listener = listener
        for sub in subscriptions.values():
            self.rebalance.set_subscription(sub)
        self.consume_service: ConsumeService = self.make_consume_service()
        self.pull_threshold_for_queue = config.pull_threshold_for_queue
        self.pull_threshold_size_for_queue = config.pull_threshold_size_for_queue
        self._pull_tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self._pull_from_which_node: dict[MessageQueue, int] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._flow_control_times = 0
        self.paused = False
        self._rebalance_ready = False  # the service's rebalances wait for the START one
        #: a rebalance asked for (a NOTIFY) while the START one ran: run again right after it
        self._rebalance_missed: RebalanceTrigger | None = None
        #: the view fence: the view digest each queue was last pulled under (its commits carry it)
        self._pulled_views: dict[MessageQueue, str] = {}
        if config.view_fence and isinstance(self.offset_store, RemoteBrokerOffsetStore):
            self.offset_store.view_of = self._pulled_views.get

    # ---------------------------------------------------------------- seams

    def make_consume_service(self) -> ConsumeService:
        """The service that runs the listener (called once, in ``__init__``)."""
        return ConsumeMessageConcurrentlyService(self, adapt_listener(self.listener))

    async def pull_precheck(self, request: PullRequest) -> float | None:
        """Seconds to wait before pulling ``request``'s queue, or ``None`` to pull now.

        Concurrent consumption checks flow control here; an orderly consumer overrides it to also
        wait for the queue's broker lock and, on the first pull after locking, to recompute
        ``request.next_offset`` (``computePullFromWhere``), as ``pullMessage`` does in Java.
        """
        why = flow_control_reason(
            request.pq,
            max_count=self.pull_threshold_for_queue,
            max_size_mib=self.pull_threshold_size_for_queue,
            max_span=None if self.consume_orderly else self.config.consume_concurrently_max_span,
        )
        return None if why is None else self._flow_controlled(why, request)

    def _flow_controlled(self, why: str, request: PullRequest) -> float:
        self._flow_control_times += 1
        if self._flow_control_times % 1000 == 1:
            pq = request.pq
            logger.warning(
                "flow control (%s) on %s: %d cached messages, %d MiB, span %d; pulling again in %.0f ms",
                why, request.mq, pq.msg_count, pq.msg_size // (1024 * 1024), pq.max_span(),
                self.config.pull_time_delay_when_flow_control * 1000,
            )  # fmt: skip
        return self.config.pull_time_delay_when_flow_control

    # ---------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        cfg = self.config
        if self.message_model is MessageModel.CLUSTERING:
            retry = retry_topic(self.group)
            if retry not in self.rebalance.subscriptions:
                self.rebalance.set_subscription(SubscriptionData.build(retry, "*", sub_version=now_ms()))
        await self.offset_store.load()
        self.consume_service.start()
        self.instance.register_consumer(self.group, self)
        self.running = True
        self.start_timestamp = now_ms()
        try:
            for topic in list(self.rebalance.subscriptions):
                await self.instance.update_topic_route(topic)
            await self.instance.check_client_in_broker(self.group, self.rebalance.subscriptions.values())
            await self.instance.send_heartbeat_to_all_brokers(raise_bugs=True)
            await self.rebalance.do_rebalance(RebalanceTrigger.START)
            self._rebalance_ready = True
            missed, self._rebalance_missed = self._rebalance_missed, None
            if missed is not None:
                # the group changed while the START rebalance ran on an older member list
                self.instance.rebalance_immediately(missed)
            if any(t not in self.rebalance.topic_subscribe_info for t in self.rebalance.subscriptions):
                self._spawn(self._look_for_missing_routes())
        except BaseException:
            self.running = False
            self.stopping = True
            self.instance.unregister_consumer_local(self.group)
            await self.consume_service.shutdown(0.0)
            raise
        logger.info(
            "push consumer %s started as %s (%s, %s, strategy %s)",
            self.group,
            self.instance.client_id,
            self.message_model,
            cfg.consume_from_where,
            self.rebalance.strategy.name,
        )

    async def shutdown(self, await_termination: float) -> list[RebalanceRecord]:
        """Stop pulling, finish (bounded) in-flight listeners, persist offsets synchronously,
        release every queue (SHUTDOWN records), unregister from every broker."""
        if not self.running:
            return []
        self.stopping = True
        await cancel_and_wait(self._pull_tasks.values())
        self._pull_tasks.clear()
        await self.consume_service.shutdown(await_termination)
        await cancel_and_wait(self._background)
        await self.offset_store.persist_all(self.owned_queues(), oneway=False)
        records = await self.rebalance.release_all(RebalanceTrigger.SHUTDOWN)
        await self.leave()
        logger.info("push consumer %s (%s) shut down", self.group, self.instance.client_id)
        return records

    async def _look_for_missing_routes(self, interval: float = 1.0, attempts: int = 60) -> None:
        """Poll the routes of subscribed topics that have none yet (the ``%RETRY%`` topic until the
        broker registers it after our first heartbeat) every second for a minute, and rebalance
        as soon as one appears (:meth:`update_topic_subscribe_info`), instead of waiting for the 30 s
        route refresh and the 20 s timer."""
        for _ in range(attempts):
            await asyncio.sleep(interval)
            missing = [
                t for t in self.rebalance.subscriptions if t not in self.rebalance.topic_subscribe_info
            ]
            if not missing:
                return
            for topic in missing:
                await self.instance.update_topic_route(topic)  # a found route triggers a rebalance

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ---------------------------------------------------------------- subscriptions

    # ---------------------------------------------------------------- ConsumerInner

    def subscribed_topics(self) -> list[str]:
        return list(self.rebalance.subscriptions)

    def update_topic_subscribe_info(self, topic: str, mqs: frozenset[MessageQueue]) -> None:
        """A route refresh found ``topic``'s readable queues; a new or changed set rebalances now
        (RocketMQ waits for the 20 s timer)."""
        if topic not in self.rebalance.subscriptions:
            return
        changed = self.rebalance.set_topic_queues(topic, mqs)
        if changed and self._rebalance_ready and not self.stopping:
            self.instance.rebalance_immediately(RebalanceTrigger.ROUTE)

    async def do_rebalance(self, trigger: RebalanceTrigger) -> None:
        if self.running and not self._rebalance_ready and not self.stopping:
            self._rebalance_missed = trigger  # the START rebalance is running: after it (see start)
            return
        if self.running and self._rebalance_ready and not self.stopping and not self.paused:
            # a topic without queues yet (the retry topic before the broker registered it) is
            # looked up now rather than at the next 30 s route refresh
            for topic in list(self.rebalance.subscriptions):
                if topic not in self.rebalance.topic_subscribe_info:
                    await self.instance.update_topic_route(topic)
            await self.rebalance.do_rebalance(trigger)

    def owned_queues(self) -> list[MessageQueue]:
        return list(self.rebalance.process_queue_table)

    def running_info(self) -> ConsumerRunningInfo:
        cfg = self.config
        own = {
            "consumeTimestamp": cfg.consume_timestamp,
            "allocateMessageQueueStrategy": self.rebalance.strategy.name,
            "consumeThreadMin": str(cfg.consume_thread_max),
            "consumeThreadMax": str(cfg.consume_thread_max),
            "consumeConcurrentlyMaxSpan": str(cfg.consume_concurrently_max_span),
            "pullThresholdForQueue": str(self.pull_threshold_for_queue),
            "pullThresholdSizeForQueue": str(self.pull_threshold_size_for_queue),
            "pullThresholdForTopic": str(cfg.pull_threshold_for_topic),
            "pullThresholdSizeForTopic": str(cfg.pull_threshold_size_for_topic),
            "pullInterval": str(int(cfg.pull_interval * 1000)),
            "consumeMessageBatchMaxSize": str(cfg.consume_message_batch_max_size),
            "pullBatchSize": str(cfg.pull_batch_size),
            "postSubscriptionWhenPull": str(cfg.post_subscription_when_pull).lower(),
            "maxReconsumeTimes": str(cfg.max_reconsume_times),
            "suspendCurrentQueueTimeMillis": str(int(cfg.suspend_current_queue_time * 1000)),
            "consumeTimeout": str(int(cfg.consume_timeout // 60)),
            "awaitTerminationMillisWhenShutdown": str(int(cfg.await_termination * 1000)),
            "unitMode": "false",
            "instanceName": self.instance.config.instance_name,
            "clientIP": self.instance.client_id.partition("@")[0],
        }
        props = self.running_properties(own, thread_pool=self.consume_service.core_pool_size)
        mq_table = {
            mq: pq.info(self.offset_store.memory_offset(mq))
            for mq, pq in sorted(self.rebalance.process_queue_table.items())
        }
        subs = tuple(self.rebalance.subscriptions.values())
        status = {t: self.stats.status(t) for t in self.rebalance.subscriptions}
        return ConsumerRunningInfo(
            properties=props, subscription_set=subs, mq_table=mq_table, status_table=status
        )

    async def consume_message_directly(
        self, msg: MessageExt, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult:
        return await self.consume_service.consume_message_directly(msg, broker_name)

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """RESET_CONSUMER_CLIENT_OFFSET (``resetOffset``): drop the topic's queues, write the new
        offsets, and let the next rebalance re-add them from there."""
        was_paused = self.paused
        self.paused = True
        try:
            for mq, pq in list(self.rebalance.process_queue_table.items()):
                if mq.topic == topic and mq in offsets:
                    pq.drop(DropReason.OFFSET_RESET)
                    pq.clear()
            await asyncio.sleep(0.01)
            for mq, offset in offsets.items():
                await self.offset_store.update_consume_offset_to_broker(mq, offset, oneway=False)
                self.rebalance.remove_process_queue(mq, DropReason.OFFSET_RESET)
        finally:
            self.paused = was_paused
        await self.rebalance.do_rebalance(RebalanceTrigger.CORRECTION)

    # ---------------------------------------------------------------- RebalanceHooks

    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool:
        if not self.stopping:
            await self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)
        # its pull task, if in a long poll, ends when the answer comes (and is discarded);
        # shutdown cancels it
        return True

    def dispatch_pull_requests(self, requests: Sequence[PullRequest]) -> None:
        for request in requests:
            self.execute_pull_request(request)
            logger.debug("group %s: pulling %s from %d", self.group, request.mq, request.next_offset)

    async def message_queue_changed(
        self, topic: str, mq_all: frozenset[MessageQueue], mq_divided: frozenset[MessageQueue]
    ) -> None:
        self.rebalance.bump_sub_version(topic)
        cfg = self.config
        count = len(self.rebalance.process_queue_table)
        if count:
            if cfg.pull_threshold_for_topic != -1:
                self.pull_threshold_for_queue = max(1, cfg.pull_threshold_for_topic // count)
            if cfg.pull_threshold_size_for_topic != -1:
                self.pull_threshold_size_for_queue = max(1, cfg.pull_threshold_size_for_topic // count)
        # the new subscription version reaches the brokers before the first pulls (a pull with a
        # version the broker has not heard of is refused) - but a broker that does not answer
        # (its heartbeats lost) must not hold the rebalance for the call's 3 s timeout: the pull
        # retries SUBSCRIPTION_NOT_LATEST soon anyway, and the heartbeat goes on meanwhile
        beat = asyncio.get_running_loop().create_task(self.instance.send_heartbeat_to_all_brokers())
        self._background.add(beat)
        beat.add_done_callback(self._background.discard)
        await asyncio.wait({beat}, timeout=HEARTBEAT_WAIT_IN_REBALANCE)
        self.notify_queue_listeners(topic, mq_all, mq_divided)

    # ---------------------------------------------------------------- pulling

    def execute_pull_request(self, request: PullRequest, delay: float = 0.0) -> None:
        self.run_pull_loop(self._pull_tasks, request.mq, lambda: self._pull_loop(request, delay))

    async def _pull_loop(self, request: PullRequest, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        while not request.pq.dropped and not self.stopping:
            wait = await self.pull_once(request)
            if wait is None:
                return
            if wait > 0:
                await asyncio.sleep(wait)

    async def pull_once(self, request: PullRequest) -> float | None:
        """One ``pullMessage`` round; seconds to wait before the next, or ``None`` to stop."""
        pq, mq, cfg = request.pq, request.mq, self.config
        if pq.dropped:
            return None
        pq.last_pull_timestamp = time.time()
        if self.paused:
            return cfg.pull_time_delay_when_suspend
        wait = await self.pull_precheck(request)
        if wait is not None:
            return wait
        sub = self.rebalance.subscriptions.get(mq.topic)
        if sub is None:
            logger.warning("no subscription for %s; pulling again later", mq)
            return cfg.pull_time_delay_when_exception
        header = self._pull_header(request, sub)
        begin = time.monotonic()
        if pq.first_pull_ms is None:
            pq.first_pull_ms = now_ms()
        addr: str | None = None
        try:
            addr = await self.instance.locate_pull_address(mq, self._pull_from_which_node.get(mq, MASTER_ID))
            view = self.rebalance.views.get((mq.topic, mq.broker_name)) if cfg.view_fence else None
            if view is not None:
                master = self.instance.find_broker_address_in_publish(mq.broker_name)
                if master is not None and addr != master:
                    view = None  # a slave its master suggested: the stamp is the master's epoch
            response = await self.api.call(
                addr, calls.pull_message(header, view=view), cfg.consumer_timeout_when_suspend
            )
        except asyncio.CancelledError:
            raise
        except (RocketQError, OSError) as exc:
            return self._pull_failed(request, exc, addr)
        if pq.dropped or self.stopping:
            return None
        self._pull_from_which_node[mq] = response.suggest_which_broker_id
        status = response.status
        if view is not None and status is not PullStatus.VIEW_CHANGED:
            self._pulled_views[mq] = view  # its commits carry the view it was pulled under
        if status is PullStatus.VIEW_CHANGED:
            return await self._on_view_changed(mq, response)
        return self._on_pulled(request, response, sub, begin)

    def _pull_header(self, request: PullRequest, sub: SubscriptionData) -> PullMessageRequestHeader:
        """The PULL_MESSAGE header of ``request``: its offset, the commit offset to piggy-back
        (clustering), the subscription when posted with each pull, a long poll's suspend time."""
        mq, cfg = request.mq, self.config
        commit_offset = 0
        if self.message_model is MessageModel.CLUSTERING:
            commit_offset = self.offset_store.memory_offset(mq)
        sub_expression = (
            sub.sub_string if cfg.post_subscription_when_pull and not sub.class_filter_mode else None
        )
        sys_flag = pull_sys_flag(
            commit_offset=commit_offset > 0, suspend=True, subscription=sub_expression is not None
        )
        return PullMessageRequestHeader(
            consumer_group=self.group,
            topic=mq.topic,
            queue_id=mq.queue_id,
            queue_offset=request.next_offset,
            max_msg_nums=cfg.pull_batch_size,
            sys_flag=sys_flag,
            commit_offset=max(commit_offset, 0),
            suspend_timeout_millis=int(cfg.broker_suspend_max_time * 1000),
            subscription=sub_expression,
            sub_version=sub.sub_version,
            expression_type=sub.expression_type,
        )

    def _pull_failed(
        self, request: PullRequest, exc: RocketQError | OSError, addr: str | None
    ) -> float | None:
        """A pull that got no answer, or a refusal: seconds to wait before the next (a broker
        that forgot the group is sent a heartbeat now), ``None`` when the queue was dropped."""
        pq, mq, cfg = request.pq, request.mq, self.config
        if pq.dropped or self.stopping:
            return None
        if isinstance(exc, BrokerError) and exc.code == ResponseCode.SUBSCRIPTION_NOT_LATEST:
            # a rebalance bumped our subscription version and the heartbeat announcing it has
            # not reached the broker yet: it will in a moment
            logger.debug("pull of %s: subscription not latest on the broker yet; retrying soon", mq)
            return cfg.pull_time_delay_when_subscription_not_latest
        if (
            isinstance(exc, BrokerError)
            and exc.code in (ResponseCode.SUBSCRIPTION_NOT_EXIST, ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST)
            and addr is not None
        ):
            # the broker forgot us (it restarted): tell it now rather than at the next 30 s round
            self.instance.heartbeat_broker_soon(addr, f"it does not know group {self.group} ({exc})")
            logger.debug("pull of %s: %s; retrying after the heartbeat", mq, exc)
            return cfg.pull_time_delay_when_subscription_not_latest
        if not mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            _pull_warnings.warning(
                f"pull:{mq.broker_name}",
                f"pulls from {mq.broker_name} failed",
                "pull of %s failed: %s; retrying later",
                mq,
                exc,
            )
        return cfg.pull_time_delay_when_exception

    def _on_pulled(
        self, request: PullRequest, response: PullResult, sub: SubscriptionData, begin: float
    ) -> float | None:
        """Act on a pull's answer other than VIEW_CHANGED: the messages found to the consume
        service, the next offset moved on; seconds to wait before the next pull, ``None`` to stop
        (an illegal offset drops the queue, to be corrected and re-added)."""
        pq, mq, cfg = request.pq, request.mq, self.config
        status = response.status
        if status is PullStatus.FOUND:
            msgs = found_messages(response, sub, mq, self.stats, begin)
            if msgs is None:
                return cfg.pull_time_delay_when_exception
            prev = request.next_offset
            request.next_offset = response.next_begin_offset
            if response.next_begin_offset < prev:
                logger.warning(
                    "[BUG] %s: next begin offset %d < requested %d", mq, response.next_begin_offset, prev
                )
            if msgs:
                dispatch = pq.put_messages(msgs)
                self.consume_service.submit_consume_request(msgs, pq, mq, dispatch)
            return cfg.pull_interval
        if status is PullStatus.NO_NEW_MSG or status is PullStatus.NO_MATCHED_MSG:
            request.next_offset = response.next_begin_offset
            if pq.msg_count == 0:
                self.offset_store.update_offset(mq, request.next_offset, True)
            return 0.0
        if status is PullStatus.OFFSET_ILLEGAL:
            logger.warning(
                "pull of %s at %d: offset illegal; restarting at %d",
                mq,
                request.next_offset,
                response.next_begin_offset,
            )
            request.next_offset = response.next_begin_offset
            pq.drop(DropReason.OFFSET_ILLEGAL)
            self._spawn(self._correct_illegal_offset(request))
        return None

    async def _on_view_changed(self, mq: MessageQueue, response: PullResult) -> float:
        """PULL_VIEW_CHANGED: the broker's members or queues differ from what we allocated its
        queues with: fetch nothing from it until a rebalance on its new list has run (which may
        drop this queue)."""
        logger.debug("pull of %s: the broker's view changed; rebalancing first", mq)
        if self.rebalance.broker_said_queue_nums(mq.topic, mq.broker_name, response.view_queue_nums):
            # the topic changed: the name server may know the other brokers' new queues too
            await self.instance.update_topic_route(mq.topic)
        self.instance.rebalance_immediately(RebalanceTrigger.VIEW)
        await self.rebalance.wait_rebalanced(self.config.pull_time_delay_when_exception)
        return 0.0

    async def _correct_illegal_offset(self, request: PullRequest) -> None:
        await asyncio.sleep(self.config.offset_illegal_delay)
        self.offset_store.update_offset(request.mq, request.next_offset, False)
        await self.offset_store.persist(request.mq)
        self.rebalance.remove_process_queue(request.mq, DropReason.OFFSET_ILLEGAL)
        # Java waits for the next 20 s rebalance to re-add the queue; we do it now
        self.instance.rebalance_immediately(RebalanceTrigger.CORRECTION)
        logger.warning("%s: offset corrected to %d and persisted; rebalance will re-add it", request.mq,
                       request.next_offset)  # fmt: skip

    # ---------------------------------------------------------------- send back

    async def send_message_back(self, msg: MessageExt, delay_level: int, broker_name: str | None) -> bool:
        """CONSUMER_SEND_MSG_BACK; if the broker fails, re-send to the retry topic through the
        instance's inner producer. ``False`` when both failed (the caller retries locally)."""
        cfg = self.config
        max_times = cfg.effective_max_reconsume_times
        addr = self.instance.find_broker_address_in_publish(broker_name) if broker_name else None
        if addr is None:
            addr = str(msg.store_host)
        header = ConsumerSendMsgBackRequestHeader(
            offset=msg.commit_log_offset,
            group=self.group,
            delay_level=delay_level,
            origin_msg_id=msg.msg_id,
            origin_topic=msg.topic,
            unit_mode=False,
            max_reconsume_times=max_times,
        )
        try:
            await self.api.call(addr, calls.consumer_send_msg_back(header), 5.0)
            return True
        except RocketQError as exc:
            logger.warning(
                "send back of %s to %s failed (%s); re-sending to the retry topic", msg.msg_id, addr, exc
            )
        producer = self.instance.inner_producer
        if producer is None:
            return False
        retry = retry_message(
            msg, self.group, reconsume_times=msg.reconsume_times + 1, max_reconsume_times=max_times
        )
        try:
            await producer.send(retry)
            return True
        except (RocketQError, ConfigError) as exc:
            logger.warning("re-sending %s to %s failed: %s", msg.msg_id, retry.topic, exc)
            return False
