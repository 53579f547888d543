"""What the push and lite pull engines share: half of ``MQConsumerInner``, and ``RebalanceImpl``'s hooks.

:class:`ConsumerCore` is the base of :class:`~rocketq.client.consumer.push_core.PushConsumerCore`
and :class:`~rocketq.client.consumer.lite_pull.LitePullCore` (it knows neither). It holds what
a consumer owns whatever its kind - the offset store (the brokers for clustering, a local file for
broadcasting), the :class:`~rocketq.client.rebalance.impl.RebalanceImpl` it drives with itself as
the hooks, the statistics, the queue listeners - and answers what both answer alike: the
heartbeat's consumer data, subscribing, where a new queue starts
(:mod:`~rocketq.client.consumer.start_offset`), forgetting a dirty offset. What differs - pulling,
consuming, releasing a queue - the engines implement.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from rocketq.allocate import AllocationStrategy
from rocketq.client.consumer.offset_store import LocalFileOffsetStore, OffsetStore, RemoteBrokerOffsetStore
from rocketq.client.consumer.process_queue import ProcessQueue
from rocketq.client.consumer.start_offset import StartFrom, compute_pull_from_where
from rocketq.client.consumer.stats import ConsumeStats
from rocketq.client.rebalance.impl import MessageQueueListener, PullRequest, RebalanceImpl
from rocketq.client.rebalance.log import RebalanceLog, RebalanceTrigger
from rocketq.errors import ClientStateError
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import ConsumerData, ConsumeType, MessageModel, SubscriptionData
from rocketq.protocol.codes import CURRENT_VERSION, version_name

if TYPE_CHECKING:
    from rocketq.client.instance import ClientInstance

__all__ = ["ConsumerCore", "ConsumerSettings"]

logger = logging.getLogger(__name__)


class ConsumerSettings(StartFrom, Protocol):
    """What the shared half reads of a consumer's config (both consumers' configs have it)."""

    @property
    def message_model(self) -> MessageModel: ...

    @property
    def offset_store_dir(self) -> str | None: ...

    def strategy(self) -> AllocationStrategy: ...


ConfigT = TypeVar("ConfigT", bound=ConsumerSettings)


class ConsumerCore(ABC, Generic[ConfigT]):
    """A consumer's engine on its client instance's loop: the parts every kind shares."""

    consume_type: ConsumeType

    def __init__(
        self,
        instance: ClientInstance,
        group: str,
        config: ConfigT,
        log: RebalanceLog,
        queue_listeners: list[MessageQueueListener],
        *,
        balance: str = "topic",
        pull_max_idle: float = 120.0,
    ) -> None:
        self.instance = instance
        self.group = group
        self.config = config
        self.message_model = config.message_model
        self.log = log
        self.queue_listeners = queue_listeners
        self.stats = ConsumeStats()
        api = instance.api
        if api is None:
            raise ClientStateError("client instance not started")
        self.api = api
        self.offset_store: OffsetStore
        if self.message_model is MessageModel.BROADCASTING:
            self.offset_store = LocalFileOffsetStore(group, instance.client_id, config.offset_store_dir)
        else:
            self.offset_store = RemoteBrokerOffsetStore(group, api, instance.locate_offset_broker)
        self.rebalance = RebalanceImpl(
            group=group,
            message_model=self.message_model,
            strategy=config.strategy(),
            context=instance,
            hooks=self,
            log=log,
            offset_store=self.offset_store,
            balance=balance,
            pull_max_idle=pull_max_idle,
            consistent_views=getattr(config, "consistent_views", "off"),
            view_agreement_timeout=getattr(config, "view_agreement_timeout", 2.0),
        )
        self.running = False
        self.stopping = False
        self.start_timestamp = 0

    def run_pull_loop(
        self,
        tasks: dict[MessageQueue, asyncio.Task[None]],
        mq: MessageQueue,
        loop: Callable[[], Coroutine[Any, Any, None]],
        *,
        cancel_old: bool = True,
    ) -> None:
        """Start ``loop()`` as ``mq``'s pull task in ``tasks`` (cancelling the one it replaces unless
        ``cancel_old`` is false); the task leaves ``tasks`` when it ends, and a loop that dies is
        logged. Nothing starts once the consumer is stopping."""
        if self.stopping:
            return
        old = tasks.get(mq)
        if cancel_old and old is not None and not old.done():
            old.cancel()
        task = asyncio.get_running_loop().create_task(loop())
        tasks[mq] = task

        def done(t: asyncio.Task[None]) -> None:
            if tasks.get(mq) is t:
                del tasks[mq]
            if not t.cancelled() and t.exception() is not None:
                logger.error("pull loop of %s died", mq, exc_info=t.exception())

        task.add_done_callback(done)

    async def leave(self) -> None:
        """The end of a shutdown: forget the consumer locally and unregister it from every broker
        (so the group rebalances at once)."""
        self.instance.unregister_consumer_local(self.group)
        await self.instance.unregister_client(consumer_group=self.group)
        self.running = False

    # ---------------------------------------------------------------- subscriptions

    async def subscribe(self, sub: SubscriptionData) -> None:
        """Add (or replace) a subscription; while running, route, check (an SQL92 subscription:
        the brokers must serve it, else their refusal is raised and nothing changes), heartbeat
        and rebalance at once."""
        assert sub.topic is not None
        if self.running:
            await self.instance.update_topic_route(sub.topic)
            await self.instance.check_client_in_broker(self.group, (sub,))
        self.rebalance.set_subscription(sub)
        if self.running:
            await self.instance.send_heartbeat_to_all_brokers()
            await self.rebalance.do_rebalance(RebalanceTrigger.SUBSCRIPTION)

    async def unsubscribe(self, topic: str) -> None:
        self.rebalance.subscriptions.pop(topic, None)
        if self.running:
            await self.instance.send_heartbeat_to_all_brokers()
            await self.rebalance.do_rebalance(RebalanceTrigger.SUBSCRIPTION)

    # ---------------------------------------------------------------- ConsumerInner (shared half)

    def consumer_data(self) -> ConsumerData:
        return ConsumerData(
            group_name=self.group,
            consume_type=self.consume_type,
            message_model=self.message_model,
            consume_from_where=self.config.consume_from_where,
            subscription_data_set=tuple(self.rebalance.subscriptions.values()),
            unit_mode=False,
        )

    def is_subscribe_topic_need_update(self, topic: str) -> bool:
        return topic in self.rebalance.subscriptions and topic not in self.rebalance.topic_subscribe_info

    def offset_table(self) -> dict[MessageQueue, int]:
        return self.offset_store.clone_offset_table()

    def running_properties(self, own: dict[str, str], *, thread_pool: int) -> dict[str, str]:
        """GET_CONSUMER_RUNNING_INFO's properties, in the order Java's consumers list them: the
        group, model and start rule, then ``own`` (this kind of consumer's settings), then the
        client facts (``PROP_*``)."""
        return {
            "consumerGroup": self.group,
            "messageModel": str(self.message_model),
            "consumeFromWhere": str(self.config.consume_from_where),
            **own,
            "PROP_NAMESERVER_ADDR": ";".join(self.instance.namesrv_addrs) + ";",
            "PROP_CONSUME_TYPE": str(self.consume_type),
            "PROP_CONSUMEORDERLY": str(self.consume_orderly).lower(),
            "PROP_THREADPOOL_CORE_SIZE": str(thread_pool),
            "PROP_CONSUMER_START_TIMESTAMP": str(self.start_timestamp),
            "PROP_CLIENT_VERSION": version_name(CURRENT_VERSION),
        }

    @abstractmethod
    def owned_queues(self) -> list[MessageQueue]:
        """The queues whose offsets this consumer keeps now."""

    async def persist_consumer_offset(self) -> None:
        """The instance's periodic persist (every 5 s): send the owned queues' offsets."""
        if self.running and not self.stopping:
            await self.offset_store.persist_all(self.owned_queues())

    # ---------------------------------------------------------------- RebalanceHooks

    @property
    def consume_orderly(self) -> bool:
        """Whether queues are consumed in order (the orderly engine says so)."""
        return False

    @property
    def lock_new_queues(self) -> bool:
        """Whether a new queue is locked on the broker before it is consumed (orderly; clean handoff)."""
        return self.consume_orderly

    @property
    def drains_removed_queues(self) -> bool:
        """Whether a queue a rebalance removes is drained before it is dropped (clean handoff)."""
        return False

    def remove_dirty_offset(self, mq: MessageQueue) -> None:
        self.offset_store.remove_offset(mq)

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        """Where a newly owned queue starts (``computePullFromWhere``): see
        :func:`~rocketq.client.consumer.start_offset.compute_pull_from_where`."""
        return await compute_pull_from_where(
            mq,
            start=self.config,
            offset_store=self.offset_store,
            api=self.api,
            locate_master=self.instance.locate_master,
        )

    @abstractmethod
    async def remove_unnecessary_message_queue(self, mq: MessageQueue, pq: ProcessQueue) -> bool: ...

    @abstractmethod
    def dispatch_pull_requests(self, requests: Sequence[PullRequest]) -> None: ...

    @abstractmethod
    async def message_queue_changed(
        self, topic: str, mq_all: frozenset[MessageQueue], mq_divided: frozenset[MessageQueue]
    ) -> None: ...

    def notify_queue_listeners(
        self, topic: str, mq_all: frozenset[MessageQueue], mq_divided: frozenset[MessageQueue]
    ) -> None:
        """Call every ``MessageQueueListener`` (one that raises is logged; the others still hear)."""
        for fn in list(self.queue_listeners):
            try:
                fn(topic, mq_all, mq_divided)
            except Exception:
                logger.exception("message queue listener %r failed", fn)
