"""What every part of the client instance shares: its state (config, client id, loop thread, the
route and broker address tables, the producers and consumers registered by group, the tasks it
runs) and the member registry, with the protocols its members meet
(:class:`ProducerInner`, :class:`ConsumerInner`). The parts are in the ``client/instance_*.py``
modules; :class:`~rocketq.client.instance.ClientInstance` puts them together."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Iterable
from typing import Any, Protocol, TypeVar

from rocketq.client.api import ClientAPI
from rocketq.client.config import ClientConfig
from rocketq.client.loop_thread import LoopThread
from rocketq.client.producer.core import ProducerCore
from rocketq.client.rebalance.log import RebalanceTrigger
from rocketq.errors import ClientStateError, ConfigError
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import (
    ConsumeMessageDirectlyResult,
    ConsumerData,
    ConsumerRunningInfo,
    ConsumeType,
    MessageModel,
    TopicRouteData,
)
from rocketq.protocol.headers import CheckTransactionStateRequestHeader
from rocketq.protocol.message import MessageExt
from rocketq.remoting.client import RemotingClient

__all__ = ["CLIENT_INNER_PRODUCER_GROUP", "ConsumerInner", "InstanceBase", "ProducerInner"]

logger = logging.getLogger("rocketq.client.instance")  # the instance's one logger name, whichever part logs

T = TypeVar("T")

CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"


class ProducerInner(Protocol):
    """What the instance needs of a producer (``MQProducerInner``)."""

    group: str

    def publish_topics(self) -> Iterable[str]: ...

    def is_publish_topic_need_update(self, topic: str) -> bool: ...

    def update_topic_publish_info(self, topic: str, route: TopicRouteData) -> None: ...

    def check_transaction_state(
        self, addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None: ...


class ConsumerInner(Protocol):
    """What the instance needs of a consumer (``MQConsumerInner``)."""

    group: str
    message_model: MessageModel
    consume_type: ConsumeType

    def consumer_data(self) -> ConsumerData: ...

    def subscribed_topics(self) -> Iterable[str]: ...

    def update_topic_subscribe_info(self, topic: str, mqs: frozenset[MessageQueue]) -> None: ...

    async def do_rebalance(self, trigger: RebalanceTrigger) -> None: ...

    async def persist_consumer_offset(self) -> None: ...

    def running_info(self) -> ConsumerRunningInfo: ...

    async def consume_message_directly(
        self, msg: MessageExt, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult: ...

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None: ...


class InstanceBase:
    """The state of one client instance and its member registry (see the module docstring)."""

    def __init__(self, config: ClientConfig, client_id: str) -> None:
        self.config = config
        self.client_id = client_id
        self.namesrv_addrs = config.namesrv_addrs
        self.loop_thread = LoopThread(f"rocketq-{client_id}", use_uvloop=config.use_uvloop)
        self.remoting: RemotingClient | None = None
        self.api: ClientAPI | None = None
        self.topic_route_table: dict[str, TopicRouteData] = {}
        self.broker_addr_table: dict[str, dict[int, str]] = {}
        self.producers: dict[str, ProducerInner] = {}
        self.consumers: dict[str, ConsumerInner] = {}
        self._refs = 0
        self._started = False
        self._closed = False
        self._tasks: list[asyncio.Task[None]] = []
        self._side_tasks: set[asyncio.Task[None]] = set()
        #: periodic heartbeat rounds still waiting for a broker's answer
        self._heartbeat_rounds: set[asyncio.Task[None]] = set()
        self._heartbeat_lock: asyncio.Lock | None = None
        self._route_lock: asyncio.Lock | None = None
        #: brokers an urgent heartbeat is on its way to, and those already told about in the log
        self._urgent: set[str] = set()
        self._urgent_logged: set[str] = set()
        #: broker addresses this client has been connected to (a new connection to one is a reconnect)
        self._connected_once: set[str] = set()
        #: failures of our own code already logged at ERROR (logged once each)
        self._bugs_logged: set[str] = set()
        self.inner_producer: ProducerCore | None = None
        self.start_time_ms = int(time.time() * 1000)
        #: requests of this client waiting for their reply, by correlation id (Java's
        #: ``RequestFutureHolder``): PUSH_REPLY_MESSAGE_TO_CLIENT completes them
        self.requests: dict[str, asyncio.Future[MessageExt]] = {}

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self.loop_thread.loop

    def register_producer(self, group: str, producer: ProducerInner) -> None:
        self._register(self.producers, "producer", group, producer)

    def unregister_producer_local(self, group: str) -> None:
        self.producers.pop(group, None)

    def register_consumer(self, group: str, consumer: ConsumerInner) -> None:
        self._register(self.consumers, "consumer", group, consumer)

    def _register(self, table: dict[str, T], kind: str, group: str, member: T) -> None:
        """One producer or consumer per group and client id, as Java's ``registerProducer/Consumer``."""
        if group in table:
            raise ConfigError(f"{kind} group {group!r} already has a {kind} in client {self.client_id}")
        table[group] = member

    def unregister_consumer_local(self, group: str) -> None:
        self.consumers.pop(group, None)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as a task of this instance (on the loop): cancelled and awaited at close."""
        task = asyncio.get_running_loop().create_task(coro)
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    def _log_bug(self, what: str, exc: BaseException) -> None:
        """A failure of our own code in a background task: at ERROR, once per kind, with what to do."""
        key = f"{what}:{type(exc).__name__}:{exc}"
        if key in self._bugs_logged:
            logger.debug("%s of %s failed again: %r", what, self.client_id, exc)
            return
        self._bugs_logged.add(key)
        logger.error(
            "%s of %s failed: %s: %s. This is a bug in rocketq or a setting it did not check; the brokers "
            "may not know this client, so a consumer receives nothing. Please report it with this log "
            "(logged once; later failures of the same kind go to DEBUG).",
            what,
            self.client_id,
            type(exc).__name__,
            exc,
            exc_info=exc,
        )

    def ensure_running(self) -> None:
        if self._closed or not self.loop_thread.running:
            raise ClientStateError(f"client instance {self.client_id} is shut down")
