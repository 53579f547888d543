"""The client instance: what every producer and consumer of one client id shares (``MQClientInstance``).

One instance per client id (``ip@instanceName``) per process, made on first use and closed when
its last producer or consumer shuts down. It owns:

* a background event-loop thread (:class:`~rocketq.client.loop_thread.LoopThread`) where all client
  I/O and state changes happen, and one :class:`~rocketq.remoting.RemotingClient` (a blocking
  or other-loop send encodes its request in its own thread and hands it to a connection on
  this loop: ``invoke_threadsafe`` / ``invoke_from_loop``);
* the route table (refreshed every ``poll_name_server_interval``, 30 s) and the broker address
  table built from it;
* heartbeats to every broker (every 30 s, and at once when a subscription changes), offset
  persistence (every 5 s after 10 s) and the rebalance service
  (:class:`~rocketq.client.rebalance.service.RebalanceService`: every 20 s, and **at once** when a
  broker sends NOTIFY_CONSUMER_IDS_CHANGED on this client's connection, at most once a second);
* answers to the requests brokers send clients: NOTIFY_CONSUMER_IDS_CHANGED,
  GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY, RESET_CONSUMER_CLIENT_OFFSET,
  GET_CONSUMER_STATUS_FROM_CLIENT, CHECK_TRANSACTION_STATE (handed to the producer of the half
  message's group, which asks its checker) and PUSH_REPLY_MESSAGE_TO_CLIENT (a reply to one of
  this client's requests, handed to the request waiting for it: :attr:`ClientInstance.requests`);
* the internal producer ``CLIENT_INNER_PRODUCER`` consumers use to send back messages when the
  broker cannot take a CONSUMER_SEND_MSG_BACK.

Producers and consumers register as :class:`ProducerInner` / :class:`ConsumerInner`, the
seams through which the instance drives them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Protocol, TypeVar

from rocketq.client.api import ClientAPI
from rocketq.client.config import ClientConfig, ProducerConfig
from rocketq.client.loop_thread import LoopThread, cancel_and_wait
from rocketq.client.producer.core import ProducerCore
from rocketq.client.rebalance.log import RebalanceTrigger
from rocketq.client.rebalance.service import RebalanceService
from rocketq.client.routes import broker_addr_table, subscribe_info_from_route
from rocketq.errors import BrokerError, ClientStateError, ConfigError, RemoteProtocolError, RocketQError
from rocketq.models import MessageQueue
from rocketq.protocol import calls
from rocketq.protocol.bodies import (
    ConsumeMessageDirectlyResult,
    ConsumerData,
    ConsumerRunningInfo,
    ConsumeType,
    GetConsumerStatusBody,
    HeartbeatData,
    MessageModel,
    ProducerData,
    ResetOffsetBody,
    SubscriptionData,
    TopicRouteData,
)
from rocketq.protocol.codes import MASTER_ID, RequestCode, ResponseCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    CheckTransactionStateRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    ReplyMessageRequestHeader,
    ResetOffsetRequestHeader,
)
from rocketq.protocol.message import MessageExt, decode_message, decompress_body
from rocketq.protocol.message_id import HostPort
from rocketq.protocol.properties import MessageConst, string_to_properties
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.config import RemotingClientConfig
from rocketq.remoting.connection import ConnectionListener, RemotingConnection

__all__ = ["CLIENT_INNER_PRODUCER_GROUP", "ClientInstance", "ConsumerInner", "ProducerInner"]

logger = logging.getLogger(__name__)

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


_registry: dict[str, ClientInstance] = {}
_registry_lock = threading.Lock()


class ClientInstance:
    """Shared state and periodic services of one client id. Get one with :meth:`acquire`."""

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
        self.rebalance_service = RebalanceService(
            self.do_rebalance,
            wait_interval=config.rebalance_interval,
            min_interval=config.rebalance_min_interval,
        )
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

    def __repr__(self) -> str:
        return f"<ClientInstance {self.client_id} producers={list(self.producers)} consumers={list(self.consumers)}>"  # noqa: E501

    # -------------------------------------------------------------- registry

    @classmethod
    def acquire(cls, config: ClientConfig) -> ClientInstance:
        """The running instance for ``config``'s client id, made and started if needed."""
        client_id = config.client_id()
        with _registry_lock:
            inst = _registry.get(client_id)
            if inst is None or inst._closed:
                inst = cls(config, client_id)
                _registry[client_id] = inst
                try:
                    inst.loop_thread.call(inst._start())
                except BaseException:
                    _registry.pop(client_id, None)
                    inst.loop_thread.stop()
                    raise
            inst._refs += 1
            return inst

    def release(self) -> None:
        """Drop one reference; the last one shuts the instance down (from a non-loop thread)."""
        with _registry_lock:
            self._refs -= 1
            if self._refs > 0:
                return
            if _registry.get(self.client_id) is self:
                del _registry[self.client_id]
        if self.loop_thread.running:
            if self.loop_thread.in_loop_thread:
                self.loop_thread.loop.create_task(self._close())
                return
            with contextlib.suppress(Exception):
                self.loop_thread.call(self._close(), timeout=10.0)
        self.loop_thread.stop()

    # -------------------------------------------------------------- lifecycle (on the loop)

    async def _start(self) -> None:
        if self._started:
            return
        self._started = True
        self.remoting = RemotingClient(
            config=RemotingClientConfig(request_timeout=self.config.mq_client_api_timeout)
        )
        self.api = ClientAPI(self.remoting, self.namesrv_addrs, timeout=self.config.mq_client_api_timeout)
        self._heartbeat_lock = asyncio.Lock()
        self._route_lock = asyncio.Lock()
        r = self.remoting
        r.add_listener(_Reconnects(self))
        r.register_handler(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_notify_consumer_ids_changed)
        r.register_handler(RequestCode.GET_CONSUMER_RUNNING_INFO, self._on_get_consumer_running_info)
        r.register_handler(RequestCode.CONSUME_MESSAGE_DIRECTLY, self._on_consume_message_directly)
        r.register_handler(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, self._on_reset_offset)
        r.register_handler(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, self._on_get_consumer_status)
        r.register_handler(RequestCode.CHECK_TRANSACTION_STATE, self._on_check_transaction_state)
        r.register_handler(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, self._on_push_reply_message)
        self.inner_producer = ProducerCore(self, CLIENT_INNER_PRODUCER_GROUP, ProducerConfig())
        self.producers[CLIENT_INNER_PRODUCER_GROUP] = self.inner_producer
        cfg = self.config
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(
                self._every(0.01, cfg.poll_name_server_interval, self.update_all_routes, "route")
            ),
            loop.create_task(
                self._every(1.0, cfg.heartbeat_broker_interval, self._heartbeat_tick, "heartbeat")
            ),
            loop.create_task(
                self._every(
                    cfg.persist_consumer_offset_initial_delay,
                    cfg.persist_consumer_offset_interval,
                    self.persist_all_consumer_offsets,
                    "persist offsets",
                )
            ),
        ]
        self.rebalance_service.start()

    async def _close(self) -> None:
        self._closed = True
        for future in self.requests.values():
            if not future.done():
                future.set_exception(ClientStateError(f"client instance {self.client_id} shut down"))
        self.requests.clear()
        await cancel_and_wait([*self._tasks, *self._side_tasks])
        self._tasks = []
        await self.rebalance_service.close()
        if self.inner_producer is not None:
            await self.inner_producer.unregister()
        if self.remoting is not None:
            await self.remoting.close()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self.loop_thread.loop

    async def _every(
        self, first: float, interval: float, fn: Callable[[], Awaitable[object]], what: str
    ) -> None:
        await asyncio.sleep(first)
        while True:
            try:
                await fn()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("periodic %s task failed", what)
            await asyncio.sleep(interval)

    async def _heartbeat_tick(self) -> None:
        """The periodic heartbeat: a round of its own, not waited for - a broker that does not
        answer (its heartbeats lost on the way) would otherwise hold every broker's next
        heartbeat for its 3 s timeout, and a broker with a short expiry would drop a client that
        is fine. At most 4 rounds in flight."""
        rounds = self._heartbeat_rounds
        if len(rounds) >= 4:
            return
        task = asyncio.get_running_loop().create_task(self.send_heartbeat_to_all_brokers())
        rounds.add(task)
        self._side_tasks.add(task)
        task.add_done_callback(rounds.discard)
        task.add_done_callback(self._side_tasks.discard)

    # -------------------------------------------------------------- members

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

    async def unregister_client(
        self, *, producer_group: str | None = None, consumer_group: str | None = None
    ) -> None:
        """UNREGISTER_CLIENT to every known broker address (so a group rebalances at once)."""
        assert self.api is not None
        pending = []
        for addrs in self.broker_addr_table.values():
            for addr in addrs.values():
                call = calls.unregister_client(
                    self.client_id, producer_group=producer_group, consumer_group=consumer_group
                )
                pending.append(self.api.call(addr, call))
        for result in await asyncio.gather(*pending, return_exceptions=True):
            if isinstance(result, Exception):
                logger.warning("unregister of %s from a broker failed: %s", self.client_id, result)

    # -------------------------------------------------------------- routes

    async def update_all_routes(self) -> None:
        """Refresh the route of every topic a producer or consumer of this client uses."""
        topics: set[str] = set()
        for consumer in list(self.consumers.values()):
            topics.update(consumer.subscribed_topics())
        for producer in list(self.producers.values()):
            topics.update(producer.publish_topics())
        for topic in sorted(topics):
            await self.update_topic_route(topic)
        self._clean_offline_brokers()

    async def update_topic_route(self, topic: str, route: TopicRouteData | None = None) -> bool:
        """Fetch ``topic``'s route (unless given) and update every table that depends on it.

        Returns whether a route is known afterwards. Errors are logged, not raised.
        """
        assert self.api is not None
        assert self._route_lock is not None
        async with self._route_lock:
            if route is None:
                try:
                    route = await self.api.get_topic_route(topic)
                except RocketQError as exc:
                    logger.debug("route of %s not updated: %s", topic, exc)
                    return topic in self.topic_route_table
                if route is None:
                    if not topic.startswith("%RETRY%"):
                        logger.debug("no route for topic %s", topic)
                    return False
            old = self.topic_route_table.get(topic)
            changed = old != route
            if not changed:
                changed = any(p.is_publish_topic_need_update(topic) for p in self.producers.values()) or any(
                    topic in c.subscribed_topics() and self._needs_subscribe_info(c, topic)
                    for c in self.consumers.values()
                )
            if not changed:
                return True
            self.topic_route_table[topic] = route
            known = {a for addrs in self.broker_addr_table.values() for a in addrs.values()}
            for name, addrs in broker_addr_table(route).items():
                self.broker_addr_table[name] = addrs
            if any(a not in known for addrs in broker_addr_table(route).values() for a in addrs.values()):
                # a broker we never talked to: tell it who we are now rather than in up to 30 s
                task = asyncio.get_running_loop().create_task(self.send_heartbeat_to_all_brokers())
                self._side_tasks.add(task)
                task.add_done_callback(self._side_tasks.discard)
            for producer in list(self.producers.values()):
                if topic in set(producer.publish_topics()):
                    producer.update_topic_publish_info(topic, route)
            mqs = subscribe_info_from_route(topic, route)
            for consumer in list(self.consumers.values()):
                if topic in set(consumer.subscribed_topics()):
                    consumer.update_topic_subscribe_info(topic, mqs)
            return True

    def refresh_route_soon(self, topic: str) -> None:
        """Fetch ``topic``'s route in the background (on the loop): its brokers then learn of this
        client at once (:meth:`update_topic_route` greets a new broker with a heartbeat)."""
        if self._closed:
            return

        async def refresh() -> None:
            await self.update_topic_route(topic)

        task = asyncio.get_running_loop().create_task(refresh())
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    @staticmethod
    def _needs_subscribe_info(consumer: ConsumerInner, topic: str) -> bool:
        check = getattr(consumer, "is_subscribe_topic_need_update", None)
        return bool(check(topic)) if check is not None else False

    def _clean_offline_brokers(self) -> None:
        live: set[str] = set()
        for route in self.topic_route_table.values():
            for bd in route.broker_datas:
                live.update(bd.broker_addrs.values())
        for name in list(self.broker_addr_table):
            addrs = {i: a for i, a in self.broker_addr_table[name].items() if a in live}
            if addrs:
                self.broker_addr_table[name] = addrs
            else:
                del self.broker_addr_table[name]

    def find_broker_address_in_publish(self, broker_name: str) -> str | None:
        return self.broker_addr_table.get(broker_name, {}).get(MASTER_ID)

    def find_broker_address_in_subscribe(self, broker_name: str, broker_id: int = MASTER_ID) -> str | None:
        """The address of ``broker_id`` of ``broker_name`` (else any address of it)."""
        addrs = self.broker_addr_table.get(broker_name)
        if not addrs:
            return None
        addr = addrs.get(broker_id)
        if addr is None:
            addr = next(iter(addrs.values()))
        return addr

    def queues_by_broker(self, mqs: Iterable[MessageQueue]) -> Iterator[tuple[str, str, list[MessageQueue]]]:
        """``mqs`` grouped by broker name (in name order), each with its broker's address (as
        :meth:`find_broker_address_in_subscribe`, looked up as the group is reached); brokers
        without a known address are skipped. For the batch calls (lock, unlock) a client makes
        broker by broker."""
        by_broker: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            by_broker.setdefault(mq.broker_name, []).append(mq)
        for name, qs in sorted(by_broker.items()):
            addr = self.find_broker_address_in_subscribe(name)
            if addr is not None:
                yield name, addr, qs

    async def locate_pull_address(self, mq: MessageQueue, broker_id: int = MASTER_ID) -> str:
        """Where to pull ``mq``: broker ``broker_id`` of its broker (else any address of it),
        refreshing the topic's route once when none is known; :class:`ClientStateError` when the
        broker stays unknown."""
        addr = self.find_broker_address_in_subscribe(mq.broker_name, broker_id)
        if addr is None:
            await self.update_topic_route(mq.topic)
            addr = self.find_broker_address_in_subscribe(mq.broker_name)
        if addr is None:
            raise ClientStateError(f"The broker[{mq.broker_name}] not exist")
        return addr

    async def locate_master(self, mq: MessageQueue) -> str | None:
        """The master address of ``mq``'s broker, refreshing the topic's route once if unknown."""
        addr = self.find_broker_address_in_publish(mq.broker_name)
        if addr is None:
            await self.update_topic_route(mq.topic)
            addr = self.find_broker_address_in_publish(mq.broker_name)
        return addr

    async def locate_offset_broker(self, mq: MessageQueue) -> str | None:
        """Where ``mq``'s committed offset is read and written: its master, else - after one
        route refresh - any broker of its name, a slave while the master is gone (as Java's
        ``RemoteBrokerOffsetStore`` finds it)."""
        addr = self.find_broker_address_in_publish(mq.broker_name)
        if addr is None:
            await self.update_topic_route(mq.topic)
            addr = self.find_broker_address_in_subscribe(mq.broker_name)
        return addr

    def _find_broker_addr_by_topic(self, topic: str) -> str | None:
        route = self.topic_route_table.get(topic)
        if route is None or not route.broker_datas:
            return None
        bd = random.choice(route.broker_datas)
        addr = bd.broker_addrs.get(MASTER_ID)
        if addr is None and bd.broker_addrs:
            addr = random.choice(list(bd.broker_addrs.values()))
        return addr

    async def find_consumer_id_list(self, topic: str, group: str) -> list[str] | None:
        """The group's client ids from one broker serving ``topic`` (``findConsumerIdList``)."""
        assert self.api is not None
        addr = self._find_broker_addr_by_topic(topic)
        if addr is None:
            await self.update_topic_route(topic)
            addr = self._find_broker_addr_by_topic(topic)
        if addr is None:
            return None
        try:
            return await self.api.call(addr, calls.get_consumer_list_by_group(group))
        except RocketQError as exc:
            logger.warning("GET_CONSUMER_LIST_BY_GROUP %s from %s failed: %s", group, addr, exc)
            return None

    async def find_consumer_views(
        self, topic: str, group: str
    ) -> dict[str, tuple[list[str], int, str | None] | None]:
        """The group's client ids, the broker's read queue count of ``topic`` (-1: a broker that
        does not say, RocketMQ's) and its view stamp (the group's epoch there; ``None`` from
        RocketMQ's) from every broker serving ``topic`` (its masters), asked at once: broker name
        -> its view, or None when it did not answer (consistent views; ours)."""
        assert self.api is not None
        api = self.api
        route = self.topic_route_table.get(topic)
        if route is None or not route.broker_datas:
            await self.update_topic_route(topic)
            route = self.topic_route_table.get(topic)
        if route is None:
            return {}
        targets = [(bd.broker_name or "", bd.broker_addrs.get(MASTER_ID)) for bd in route.broker_datas]

        async def one(name: str, addr: str | None) -> tuple[list[str], int, str | None] | None:
            if addr is None:
                return None
            try:
                return await api.call(addr, calls.get_consumer_view(group, topic))
            except RocketQError as exc:
                logger.debug("GET_CONSUMER_LIST_BY_GROUP %s from %s (%s) failed: %s", group, name, addr, exc)
                return None

        answers = await asyncio.gather(*(one(name, addr) for name, addr in targets))
        return {name: ids for (name, _addr), ids in zip(targets, answers, strict=True)}

    async def check_client_in_broker(self, group: str, subscriptions: Iterable[SubscriptionData]) -> None:
        """Ask the brokers whether they can serve ``group``'s subscriptions that are not tag
        expressions (SQL92), as a Java consumer does at start (``checkClientInBroker``): one
        CHECK_CLIENT_CONFIG per subscription to every master of its topic's route (Java asks one
        broker, taking the cluster's configs as equal). A refusal is raised as the broker's
        :class:`~rocketq.errors.BrokerError` (its remark says what to turn on, or what is wrong
        with the expression); a topic without a route yet is not checked."""
        assert self.api is not None
        for sub in subscriptions:
            if sub.expression_type in (None, "", "TAG") or sub.topic is None:
                continue
            route = self.topic_route_table.get(sub.topic)
            if route is None:
                continue
            for bd in route.broker_datas:
                addr = bd.broker_addrs.get(MASTER_ID)
                if addr is None:
                    continue
                try:
                    await self.api.call(addr, calls.check_client_config(group, self.client_id, sub))
                except BrokerError as exc:
                    raise BrokerError.for_code(
                        exc.code,
                        f"broker {bd.broker_name} ({addr}) cannot serve the {sub.expression_type} "
                        f"subscription of group {group} to {sub.topic}: {exc.remark}",
                    ) from None

    async def lock_queues(self, group: str, mqs: Sequence[MessageQueue]) -> set[MessageQueue]:
        """LOCK_BATCH_MQ for ``mqs`` on their brokers; the queues now locked for this client (as
        leases when :meth:`uses_leases`)."""
        assert self.api is not None
        lease = self.uses_leases(group)
        locked: set[MessageQueue] = set()
        for name, addr, qs in self.queues_by_broker(mqs):
            try:
                locked |= await self.api.call(
                    addr, calls.lock_batch_mq(group, self.client_id, qs, lease=lease)
                )
            except RocketQError as exc:
                logger.warning("LOCK_BATCH_MQ on %s failed: %s", name, exc)
        return locked

    def uses_leases(self, group: str) -> bool:
        """Whether ``group``'s consumer locks queues as the clean handoff's leases (it retries
        leases and is not orderly): its LOCK_BATCH_MQ requests say so (``calls.LEASE_FIELD``)."""
        consumer = self.consumers.get(group)
        return bool(getattr(consumer, "retries_leases", False)) and not getattr(
            consumer, "consume_orderly", False
        )

    async def unlock_queues(self, group: str, mqs: Sequence[MessageQueue], *, oneway: bool) -> None:
        assert self.api is not None
        for name, addr, qs in self.queues_by_broker(mqs):
            try:
                await self.api.call(addr, calls.unlock_batch_mq(group, self.client_id, qs, oneway=oneway))
            except RocketQError as exc:
                logger.warning("UNLOCK_BATCH_MQ on %s failed: %s", name, exc)

    # -------------------------------------------------------------- heartbeats

    def heartbeat_data(self) -> HeartbeatData:
        return HeartbeatData(
            client_id=self.client_id,
            producer_data_set=tuple(ProducerData(group_name=g) for g in self.producers),
            consumer_data_set=tuple(c.consumer_data() for c in self.consumers.values()),
        )

    async def send_heartbeat_to_all_brokers(self, *, raise_bugs: bool = False) -> None:
        """HEART_BEAT to every broker (masters only when this client has no consumer).

        A broker that cannot be reached is logged as a warning (the next round retries). A
        heartbeat that cannot even be built or sent because of a bug of ours (or a config value
        nothing caught) raises with ``raise_bugs`` (a consumer's ``start()``), else is logged at
        ERROR once: without heartbeats the brokers do not know this client."""
        assert self.api is not None
        assert self._heartbeat_lock is not None
        async with self._heartbeat_lock:
            try:
                data = self.heartbeat_data()
            except Exception as exc:
                if raise_bugs:
                    raise
                self._log_bug("heartbeat", exc)
                return
            if not data.producer_data_set and not data.consumer_data_set:
                return
            no_consumer = not data.consumer_data_set
            pending: list[asyncio.Task[int]] = []
            loop = asyncio.get_running_loop()
            for addrs in list(self.broker_addr_table.values()):
                for broker_id, addr in addrs.items():
                    if no_consumer and broker_id != MASTER_ID:
                        continue
                    # tasks, written in this order before the next round's: a broker that does
                    # not answer (its heartbeats lost) must not hold the next round to the others
                    pending.append(loop.create_task(self.api.call(addr, calls.send_heartbeat(data))))
        if pending:
            for result in await asyncio.gather(*pending, return_exceptions=True):
                if isinstance(result, RocketQError | OSError):
                    logger.warning("heartbeat of %s failed: %s", self.client_id, result)
                elif isinstance(result, Exception):
                    if raise_bugs:
                        raise result
                    self._log_bug("heartbeat", result)

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

    def heartbeat_broker_soon(self, addr: str, why: str) -> None:
        """Send this client's heartbeat to the broker at ``addr`` at once (one in flight per broker),
        because it does not know us any more (``why``: it answered SUBSCRIPTION_NOT_EXIST, or we
        reconnected to it, as after its restart). Logged once until a heartbeat gets through."""
        if self._closed or addr in self._urgent or self.api is None:
            return
        self._urgent.add(addr)
        if addr not in self._urgent_logged:
            self._urgent_logged.add(addr)
            logger.info("broker %s: %s; sending %s's heartbeat now", addr, why, self.client_id)

        async def beat() -> None:
            assert self.api is not None
            try:
                data = self.heartbeat_data()
                if data.producer_data_set or data.consumer_data_set:
                    await self.api.call(addr, calls.send_heartbeat(data))
                self._urgent_logged.discard(addr)
            except (RocketQError, OSError) as exc:
                logger.debug("heartbeat of %s to %s failed: %s", self.client_id, addr, exc)
            except Exception as exc:
                self._log_bug("heartbeat", exc)
            finally:
                self._urgent.discard(addr)

        task = asyncio.get_running_loop().create_task(beat())
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    def _connected(self, addr: str) -> None:
        """A connection to ``addr`` opened: to a broker we were connected to before, a reconnect."""
        known = any(addr in addrs.values() for addrs in self.broker_addr_table.values())
        if not known:
            return
        if addr in self._connected_once:
            self.heartbeat_broker_soon(addr, "reconnected (it may have restarted and forgotten this client)")
        self._connected_once.add(addr)

    # -------------------------------------------------------------- offsets and rebalance

    async def persist_all_consumer_offsets(self) -> None:
        for consumer in list(self.consumers.values()):
            try:
                await consumer.persist_consumer_offset()
            except Exception:
                logger.exception("persisting offsets of group %s failed", consumer.group)

    def rebalance_immediately(self, trigger: RebalanceTrigger = RebalanceTrigger.MANUAL) -> None:
        """Wake the rebalance service now (thread-safe; it still keeps its minimum interval)."""
        if self.loop_thread.in_loop_thread:
            self.rebalance_service.wakeup(trigger)
        elif self.loop_thread.running:
            self.loop.call_soon_threadsafe(self.rebalance_service.wakeup, trigger)

    async def do_rebalance(self, trigger: RebalanceTrigger) -> None:
        for consumer in list(self.consumers.values()):
            try:
                await consumer.do_rebalance(trigger)
            except Exception as exc:
                self._log_bug(f"rebalance of group {consumer.group}", exc)

    # -------------------------------------------------------------- server-initiated requests

    def _on_notify_consumer_ids_changed(self, conn: RemotingConnection, request: RemotingCommand) -> None:
        try:
            group = NotifyConsumerIdsChangedRequestHeader.from_ext_fields(request.ext_fields).consumer_group
        except RemoteProtocolError:
            group = "?"
        logger.info(
            "broker %s: consumer ids of group %s changed; rebalancing now", conn.remote_address, group
        )
        self.rebalance_immediately(RebalanceTrigger.NOTIFY)

    def _on_get_consumer_running_info(
        self, conn: RemotingConnection, request: RemotingCommand
    ) -> RemotingCommand:
        try:
            header = GetConsumerRunningInfoRequestHeader.from_ext_fields(request.ext_fields)
        except RemoteProtocolError as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        consumer = self.consumers.get(header.consumer_group)
        if consumer is None:
            return self._no_such_consumer(request, header.consumer_group)
        info = consumer.running_info()
        return request.response(ResponseCode.SUCCESS, body=info.encode())

    async def _on_consume_message_directly(
        self, conn: RemotingConnection, request: RemotingCommand
    ) -> RemotingCommand:
        try:
            header = ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(request.ext_fields)
            msg, _ = decode_message(request.body)
        except RemoteProtocolError as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        consumer = self.consumers.get(header.consumer_group)
        if consumer is None:
            return self._no_such_consumer(request, header.consumer_group)
        result = await consumer.consume_message_directly(msg, header.broker_name)
        return request.response(ResponseCode.SUCCESS, body=result.encode())

    @staticmethod
    def _no_such_consumer(request: RemotingCommand, group: str) -> RemotingCommand:
        return request.response(
            ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{group}> not exist in this consumer"
        )

    async def _on_reset_offset(self, conn: RemotingConnection, request: RemotingCommand) -> None:
        try:
            header = ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)
            body = ResetOffsetBody.decode(request.body) if request.body else ResetOffsetBody()
        except RemoteProtocolError as exc:
            logger.warning("bad RESET_CONSUMER_CLIENT_OFFSET from %s: %s", conn.remote_address, exc)
            return
        consumer = self.consumers.get(header.group)
        if consumer is not None:
            await consumer.reset_offset(header.topic, dict(body.offset_table))

    def _on_get_consumer_status(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        try:
            header = GetConsumerStatusRequestHeader.from_ext_fields(request.ext_fields)
        except RemoteProtocolError as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
        consumer = self.consumers.get(header.group)
        table: dict[MessageQueue, int] = {}
        if consumer is not None:
            offsets = getattr(consumer, "offset_table", None)
            if callable(offsets):
                table = {mq: o for mq, o in offsets().items() if mq.topic == header.topic}
        return request.response(
            ResponseCode.SUCCESS, body=GetConsumerStatusBody(message_queue_table=table).encode()
        )

    def _on_check_transaction_state(self, conn: RemotingConnection, request: RemotingCommand) -> None:
        """CHECK_TRANSACTION_STATE (oneway): the broker asks about a half message; the producer of
        its group (``PGROUP``) asks its checker and answers with END_TRANSACTION (Java's
        ``ClientRemotingProcessor.checkTransactionState``)."""
        try:
            header = CheckTransactionStateRequestHeader.from_ext_fields(request.ext_fields)
            msg, _ = decode_message(request.body)
        except RemoteProtocolError as exc:
            logger.warning("bad CHECK_TRANSACTION_STATE from %s: %s", conn.remote_address, exc)
            return
        group = msg.properties.get(MessageConst.PGROUP)
        if group is None:
            logger.warning("CHECK_TRANSACTION_STATE from %s names no producer group", conn.remote_address)
            return
        producer = self.producers.get(group)
        if producer is None:
            logger.debug("CHECK_TRANSACTION_STATE for producer group %s, which is not here", group)
            return
        producer.check_transaction_state(conn.remote_address, msg, header)

    def _on_push_reply_message(self, conn: RemotingConnection, request: RemotingCommand) -> RemotingCommand:
        """PUSH_REPLY_MESSAGE_TO_CLIENT: a reply to a request of this client, handed to the request
        waiting for it by its ``CORRELATION_ID`` (Java's ``receiveReplyMessage``); a reply no
        request waits for (it timed out) is logged and dropped."""
        arrived = int(time.time() * 1000)
        try:
            h = ReplyMessageRequestHeader.from_ext_fields(request.ext_fields)
            properties = string_to_properties(h.properties or "")
            properties[MessageConst.ARRIVE_TIME] = str(arrived)
            reply = MessageExt(
                h.topic,
                decompress_body(request.body, h.sys_flag),
                h.flag,
                properties,
                queue_id=h.queue_id,
                sys_flag=h.sys_flag,
                born_timestamp=h.born_timestamp,
                born_host=HostPort.parse(h.born_host),
                store_timestamp=h.store_timestamp,
                store_host=HostPort.parse(h.store_host),
                reconsume_times=h.reconsume_times or 0,
            )
        except (RocketQError, ValueError) as exc:
            logger.warning("bad PUSH_REPLY_MESSAGE_TO_CLIENT from %s: %s", conn.remote_address, exc)
            return request.response(ResponseCode.SYSTEM_ERROR, "process reply message fail")
        correlation_id = properties.get(MessageConst.CORRELATION_ID, "")
        future = self.requests.pop(correlation_id, None)
        if future is None or future.done():
            logger.warning(
                "reply %s from %s matches no waiting request (it may have timed out)",
                correlation_id,
                h.born_host,
            )
        else:
            future.set_result(reply)
        return request.response()

    # -------------------------------------------------------------- helpers for the facades

    def ensure_running(self) -> None:
        if self._closed or not self.loop_thread.running:
            raise ClientStateError(f"client instance {self.client_id} is shut down")


class _Reconnects(ConnectionListener):
    """Tells the instance of every new connection (a reconnect to a broker gets a heartbeat at once)."""

    def __init__(self, instance: ClientInstance) -> None:
        self.instance = instance

    def on_connect(self, conn: RemotingConnection) -> None:
        self.instance._connected(conn.remote_address)
