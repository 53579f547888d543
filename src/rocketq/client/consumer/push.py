"""The push consumer you use (``DefaultMQPushConsumer``): subscribe, register a listener, start.

:class:`PushConsumer` is the synchronous front. It picks the engine :meth:`PushConsumer.start`
builds - :class:`~rocketq.client.consumer.push_core.PushConsumerCore` (concurrent consumption),
:class:`~rocketq.client.consumer.consume_orderly.OrderlyPushConsumerCore` (an orderly listener) or
:class:`~rocketq.client.consumer.clean_handoff.CleanHandoffPushCore` (``handoff="clean"``) - so the
base engine never needs to know its subclasses. How the engine pulls and consumes is told in
:mod:`rocketq.client.consumer.push_core`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from rocketq.client._facade import ConsumerFacade
from rocketq.client.config import PushConsumerConfig
from rocketq.client.consumer.clean_handoff import CleanHandoffPushCore
from rocketq.client.consumer.consume_orderly import OrderlyPushConsumerCore
from rocketq.client.consumer.push_core import PushConsumerCore
from rocketq.client.consumer.selector import MessageSelector, subscription_of
from rocketq.client.instance import ClientInstance
from rocketq.client.producer.facade import trace_dispatcher
from rocketq.client.rebalance.log import RebalanceListener, RebalanceRecord, RebalanceTrigger
from rocketq.client.trace import ConsumerTracing
from rocketq.client.validators import check_topic
from rocketq.clock import now_ms
from rocketq.errors import ClientStateError, ConfigError
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import ConsumerRunningInfo, MessageModel, SubscriptionData

__all__ = ["PushConsumer"]

logger = logging.getLogger(__name__)


class PushConsumer(ConsumerFacade[PushConsumerCore, PushConsumerConfig]):
    """A push consumer usable from plain synchronous code.

    ::

        consumer = PushConsumer("my-group", namesrv="127.0.0.1:9876")
        consumer.subscribe("TopicTest", "TagA || TagB")
        consumer.register_listener(lambda msgs, ctx: ConsumeConcurrentlyStatus.CONSUME_SUCCESS)
        consumer.start()
        ...
        consumer.shutdown()

    Listeners are ordinary functions run on the consumer's thread pool: ``fn(msgs, context)`` or
    ``fn(msgs)``, returning :class:`ConsumeConcurrentlyStatus` (``None`` or an exception means
    RECONSUME_LATER, as in Java).

    ``core_class`` is the implementation :meth:`start` builds; consumers with other consumption
    rules (orderly, clean handoff) set it to a :class:`PushConsumerCore` subclass.
    """

    core_class: type[PushConsumerCore] = PushConsumerCore

    kind = "push consumer"

    def _check_group_name(self, group: str) -> None:
        if group == "DEFAULT_CONSUMER":
            raise ConfigError("the consumer group cannot be DEFAULT_CONSUMER (as in RocketMQ); name one")

    def _default_config(self) -> PushConsumerConfig:
        return PushConsumerConfig()

    def _init_state(self) -> None:
        self._subscriptions: dict[str, SubscriptionData] = {}
        self._listener: Callable[..., Any] | None = None
        self._orderly = False
        self._tracing: ConsumerTracing | None = None

    # ---------------------------------------------------------------- setup

    def subscribe(self, topic: str, selector: MessageSelector | str | None = "*") -> None:
        """Subscribe to ``topic``: a tag expression (``"*"``, ``"TagA || TagB"``) or a
        :class:`~rocketq.client.consumer.selector.MessageSelector` (``MessageSelector.by_sql(
        "a > 5")``: the broker must have ``enablePropertyFilter``; each broker is asked at start,
        or at once when already started, and a refusal raises its :class:`~rocketq.errors.BrokerError`)."""
        check_topic(topic)
        sub = subscription_of(topic, selector, sub_version=now_ms())
        if self._core is not None:
            core = self._core
            core.instance.loop_thread.call(core.subscribe(sub))
        self._subscriptions[topic] = sub

    def unsubscribe(self, topic: str) -> None:
        self._subscriptions.pop(topic, None)
        if self._core is not None:
            core = self._core
            core.instance.loop_thread.call(core.unsubscribe(topic))

    def register_listener(self, fn: Callable[..., Any], *, orderly: bool = False) -> None:
        """The listener: ``fn(msgs, context)`` or ``fn(msgs)``.

        Concurrent (default): returns :class:`ConsumeConcurrentlyStatus`. With ``orderly=True``
        (Java's ``MessageListenerOrderly``): each queue is consumed by one thread at a time, in
        offset order, under a broker lock; ``fn`` gets a :class:`ConsumeOrderlyContext` and
        returns :class:`ConsumeOrderlyStatus` (``None`` or an exception means
        SUSPEND_CURRENT_QUEUE_A_MOMENT). See :mod:`rocketq.client.consumer.consume_orderly`.
        """
        if self._core is not None:
            raise ClientStateError("register the listener before start()")
        self._listener = fn
        self._orderly = orderly

    def register_orderly_listener(self, fn: Callable[..., Any]) -> None:
        """``register_listener(fn, orderly=True)``."""
        self.register_listener(fn, orderly=True)

    @property
    def orderly(self) -> bool:
        """Whether the registered listener consumes orderly."""
        return self._orderly

    def _core_class(self) -> type[PushConsumerCore]:
        """The implementation to build: orderly, clean handoff, or ``core_class``."""
        if self._orderly:
            return OrderlyPushConsumerCore
        if self.config.handoff == "clean" and self.config.message_model is MessageModel.CLUSTERING:
            return CleanHandoffPushCore
        return self.core_class

    register_message_listener = register_listener

    def remove_rebalance_listener(self, fn: RebalanceListener) -> None:
        self.rebalance_log.remove_listener(fn)

    # ---------------------------------------------------------------- lifecycle

    def _check_startable(self) -> None:
        if self._listener is None:
            raise ClientStateError("register a listener before start()")
        if not self._subscriptions:
            raise ClientStateError("subscribe to at least one topic before start()")

    def _start_core(self, instance: ClientInstance) -> PushConsumerCore:
        try:
            core = instance.loop_thread.call(self._make_core(instance))
            if self.config.trace:
                dispatcher = trace_dispatcher(
                    self.group, "CONSUMER", client_id=instance.client_id,
                    client_config=self.client_config, trace_topic=self.config.trace_topic,
                )  # fmt: skip
                self._tracing = ConsumerTracing(dispatcher.start(), self.rebalance_log)
                core.trace_hook = self._tracing.hook
            instance.loop_thread.call(core.start(), timeout=60.0)
        except BaseException:
            self._stop_tracing()
            raise
        return core

    async def _make_core(self, instance: ClientInstance) -> PushConsumerCore:
        assert self._listener is not None
        return self._core_class()(
            instance, self.group, self.config, dict(self._subscriptions), self._listener, self.rebalance_log,
            self._queue_listeners,
        )  # fmt: skip

    def shutdown(self, await_termination: float | None = None) -> None:
        """Graceful: stop pulling, wait (bounded) for listeners, persist offsets, unregister."""
        wait = self.config.await_termination if await_termination is None else await_termination
        self._stop(lambda core: core.shutdown(wait), wait + 30.0)

    def _stopped(self, core: PushConsumerCore) -> None:
        self._stop_tracing()  # after the SHUTDOWN records, so they are published

    def _stop_tracing(self) -> None:
        if self._tracing is not None:
            self._tracing.shutdown()
            self._tracing = None

    close = shutdown

    # ---------------------------------------------------------------- control and views

    def pause(self) -> None:
        """Stop pulling (queues stay owned); ``resume`` restarts (``suspend``/``resume`` in Java)."""
        self.core.paused = True

    def resume(self) -> None:
        core = self.core
        core.paused = False
        core.instance.rebalance_immediately(RebalanceTrigger.MANUAL)

    def rebalance(self) -> list[RebalanceRecord]:
        """Rebalance now (trigger MANUAL) and return the records."""
        core = self.core
        return core.instance.loop_thread.call(core.rebalance.do_rebalance(RebalanceTrigger.MANUAL))

    def assigned_queues(self, topic: str | None = None) -> list[MessageQueue]:
        """The queues this consumer owns now (of one topic when given), sorted."""
        core = self.core

        async def snapshot() -> list[MessageQueue]:
            return sorted(
                mq for mq in core.rebalance.process_queue_table if topic is None or mq.topic == topic
            )

        return core.instance.loop_thread.call(snapshot())

    def first_pull_times(self) -> dict[MessageQueue, int | None]:
        """Wall-clock ms when each owned queue's first pull was sent (``None``: not yet).

        Compare with the ``end_ms`` of the rebalance record that added the queue to see how long
        a newly owned queue waited for its first pull."""
        core = self.core

        async def snapshot() -> dict[MessageQueue, int | None]:
            return {mq: pq.first_pull_ms for mq, pq in sorted(core.rebalance.process_queue_table.items())}

        return core.instance.loop_thread.call(snapshot())

    def committed_offsets(self) -> dict[MessageQueue, int]:
        """The in-memory committed offsets (what the next persist writes)."""
        core = self.core

        async def snapshot() -> dict[MessageQueue, int]:
            return core.offset_store.clone_offset_table()

        return core.instance.loop_thread.call(snapshot())

    def running_info(self) -> ConsumerRunningInfo:
        core = self.core

        async def snapshot() -> ConsumerRunningInfo:
            return core.running_info()

        return core.instance.loop_thread.call(snapshot())
