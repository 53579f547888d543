"""The broker as a running component (RocketMQ's ``BrokerController``, in asyncio form).

:class:`Broker` composes

* a :class:`~rocketq.store.MessageStore` in ``config.store_dir`` (opened, and recovered after a
  crash, in a worker thread so the loop stays free);
* the state machines: topic configs (in ``topics.json``), subscription groups
  (``subscriptionGroup.json``) - tables the store loads and writes for the broker - the consumer
  and producer registries, the queue lock table and the long-polling hold table;
* a :class:`~rocketq.remoting.RemotingServer` with the handlers of :mod:`rocketq.broker.handlers`,
  each processor given the broker as its narrow context (:mod:`rocketq.broker.context`);
* the :class:`~rocketq.broker.schedule.ScheduleService` (delayed messages and retries);
* the :class:`~rocketq.broker.transactions.TransactionalMessageService` (half messages, END_TRANSACTION,
  and a check round every ``transaction_check_interval``);
* a :class:`~rocketq.broker.registration.NamesrvRegistrar` (REGISTER_BROKER every 30 s and on
  every topic change, UNREGISTER_BROKER at close);
* replication (:mod:`rocketq.broker.ha`, ``docs/replication.md``): a master's HA listener (and,
  as a sync master, sends answered once a slave acknowledged them), or a slave's link to its
  master and its periodic copy of the master's tables (a slave refuses sends);
* housekeeping: a connection listener that drops a closed connection's consumers, producers and
  held pulls and notifies the groups it left; a scan every ``client_scan_interval`` for clients
  silent longer than ``channel_expired_timeout``; the periodic check of held pulls.

Handlers run on the event loop and append to the store synchronously (a ``pwrite`` into the page
cache); under sync flush a send waits for the group commit's fsync through an asyncio future, so
the loop never blocks on the disk's flush.

::

    async with Broker(BrokerConfig(port=0, data_dir=tmp, namesrv_addrs=(ns.address,))) as broker:
        print(broker.address)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar, overload

from rocketq.broker.coalesce import NotifyCoalescer
from rocketq.broker.config import BrokerConfig
from rocketq.broker.consumers import Changes, ConsumerGroupEvent, ConsumerRegistry, ConsumerRegistryConfig
from rocketq.broker.ha import HAClient, HAMaster, SlaveSynchronize
from rocketq.broker.handlers import (
    AdminProcessor,
    ClientProcessor,
    OffsetProcessor,
    PullProcessor,
    ReplyProcessor,
    SendProcessor,
    TransactionProcessor,
    java_properties_string,
)
from rocketq.broker.locks import QueueLockConfig, QueueLockTable
from rocketq.broker.producers import ProducerRegistry
from rocketq.broker.registration import NamesrvRegistrar
from rocketq.broker.schedule import ScheduleService, schedule_tags_code_function
from rocketq.broker.stats import BrokerStats
from rocketq.broker.subscriptions import SubscriptionGroupManager, SubscriptionGroupTable
from rocketq.broker.topics import (
    PERM_RW,
    TopicChange,
    TopicConfigManager,
    TopicConfigTable,
    TopicManagerConfig,
)
from rocketq.broker.transactions import CheckResult, TransactionalMessageService
from rocketq.broker.view_fence import next_boot_generation
from rocketq.clock import ms
from rocketq.errors import ClientStateError, RemotingError, StoreError
from rocketq.lifecycle import AsyncStartClose
from rocketq.models import from_fields
from rocketq.protocol.bodies import TopicConfig
from rocketq.protocol.codes import RequestCode, ResponseCode, RocketQRequestCode
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.headers import (
    CheckTransactionStateRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    RegisterBrokerResponseHeader,
)
from rocketq.protocol.message_id import HostPort
from rocketq.protocol.topics import RMQ_SYS_SCHEDULE_TOPIC
from rocketq.remoting import ConnectionListener, Handler, RemotingConnection, RemotingServer
from rocketq.store import FileIO, MessageStore
from rocketq.store.message_store import PutResult

if TYPE_CHECKING:
    from rocketq.broker.acl import AclManager

__all__ = ["Broker", "BrokerStats"]

log = logging.getLogger(__name__)

_NOTIFY_TIMEOUT = 3.0

T = TypeVar("T")


#: A send answered once its fsync round completes: the connection, the request, the response.
_Waiter = tuple[RemotingConnection, RemotingCommand, RemotingCommand]


def _answer_round(waiters: list[_Waiter], exc: BaseException | None) -> None:
    """Write the responses of one fsync round (FLUSH_DISK_TIMEOUT if the fsync failed or timed out)."""
    answered = waiters[:]
    waiters.clear()  # answered once: the other of timer and completion finds nothing left
    if isinstance(exc, TimeoutError):
        remark = "the message is stored but its flush to disk timed out"
    elif exc is not None:  # the OS's text goes to the log (the store logs it), not to the peer
        remark = "the message is stored but flushing it to disk failed"
    for conn, request, response in answered:
        if exc is not None:
            response.code = ResponseCode.FLUSH_DISK_TIMEOUT
            response.remark = remark
        if not request.is_oneway and not conn.is_closed:
            conn.send_response(request, response)


def _answer_replica(
    conn: RemotingConnection, request: RemotingCommand, response: RemotingCommand, acked: bool | None
) -> None:
    """Write a sync master's answer: ``acked`` None means no slave was available, False that
    none acknowledged in time."""
    if acked is None:
        response.code = ResponseCode.SLAVE_NOT_AVAILABLE
        response.remark = "the message is stored on the master but no slave is available"
    elif not acked:
        response.code = ResponseCode.FLUSH_SLAVE_TIMEOUT
        response.remark = "the message is stored on the master but the slave did not ack it in time"
    if not request.is_oneway and not conn.is_closed:
        conn.send_response(request, response)


class _Listener(ConnectionListener):
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    def on_close(self, conn: RemotingConnection) -> None:
        self._broker._connection_closed(conn)


class _AfterStart(Generic[T]):
    """A part of the :class:`Broker` made by ``start()``, read from the attribute of the same name
    with a leading underscore: reading it before the broker started raises."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.slot = "_" + name

    @overload
    def __get__(self, obj: None, owner: type) -> Self: ...
    @overload
    def __get__(self, obj: object, owner: type) -> T: ...
    def __get__(self, obj: object | None, owner: type) -> T | Self:
        if obj is None:
            return self
        value: T | None = getattr(obj, self.slot)
        if value is None:
            raise ClientStateError(f"Broker.{self.name} is available only after start()")
        return value


class Broker(AsyncStartClose):
    """A RocketMQ-compatible broker; see the module docstring. Use ``async with`` or
    :meth:`start` / :meth:`close`. ``clock`` is the wall clock (seconds since the epoch)."""

    def __init__(
        self,
        config: BrokerConfig | None = None,
        *,
        clock: Callable[[], float] = time.time,
        store_io: FileIO | None = None,
    ) -> None:
        """``store_io`` replaces the store's file calls (tests inject disk faults with it)."""
        self.config = cfg = config if config is not None else BrokerConfig()
        self._clock = clock
        self._store_io = store_io
        self.delay_levels = cfg.delay_levels()
        self.stats = BrokerStats(clock())
        self.consumers: ConsumerRegistry[RemotingConnection] = ConsumerRegistry(
            ConsumerRegistryConfig(
                channel_expired_timeout=cfg.channel_expired_timeout,
                scan_interval=cfg.client_scan_interval,
                notify_consumer_ids_changed_enable=cfg.notify_consumer_ids_changed_enable,
                notify_on_expiry=cfg.notify_on_expiry,
            )
        )
        self.producers: ProducerRegistry[RemotingConnection] = ProducerRegistry(cfg.channel_expired_timeout)
        self.locks = QueueLockTable(
            QueueLockConfig(rebalance_lock_max_live_time=cfg.rebalance_lock_max_live_time)
        )
        self.remoting = RemotingServer(
            cfg.host, cfg.port, config=cfg.remoting_config(), listener=_Listener(self)
        )
        self._store: MessageStore | None = None
        self._topics: TopicConfigManager | None = None
        self._topic_table: TopicConfigTable | None = None
        self._topic_persist_pending = False
        self._groups: SubscriptionGroupManager | None = None
        self._schedule: ScheduleService | None = None
        self._transactions: TransactionalMessageService | None = None
        self._registrar: NamesrvRegistrar | None = None
        self._pull: PullProcessor | None = None
        self._send: SendProcessor | None = None
        self._store_host: HostPort | None = None
        self._ha_master: HAMaster | None = None
        self._ha_client: HAClient | None = None
        self._slave_sync: SlaveSynchronize | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        # the fsync round sends are waiting on now (sync flush): its store future and its waiters
        self._round_cf: concurrent.futures.Future[None] | None = None
        self._round: list[_Waiter] | None = None
        self._started = False
        self._closed = False
        self._coalescer = (
            NotifyCoalescer(cfg.notify_coalesce_window) if cfg.notify_coalesce_window > 0 else None
        )
        #: the ACL (``config.acl_file``), loaded at start; None when ACL is off
        self.acl: AclManager | None = None

    @property
    def coalescer(self) -> NotifyCoalescer | None:
        """The notification windows (``notify_coalesce_window`` > 0), else None."""
        return self._coalescer

    def __repr__(self) -> str:
        where = self.address if self._started else "not started"
        return f"<Broker {self.config.broker_name} {where}>"

    # ------------------------------------------------------------------ parts (after start)

    store = _AfterStart[MessageStore]()
    topics = _AfterStart[TopicConfigManager]()
    groups = _AfterStart[SubscriptionGroupManager]()
    schedule = _AfterStart[ScheduleService]()
    transactions = _AfterStart[TransactionalMessageService]()

    @property
    def registrar(self) -> NamesrvRegistrar | None:
        return self._registrar

    @property
    def ha_master(self) -> HAMaster | None:
        """A master's HA listener (``None`` on a slave or before start)."""
        return self._ha_master

    @property
    def ha_client(self) -> HAClient | None:
        """A slave's link to its master (``None`` on a master)."""
        return self._ha_client

    @property
    def slave_sync(self) -> SlaveSynchronize | None:
        return self._slave_sync

    @property
    def is_slave(self) -> bool:
        return self.config.role == "slave"

    @property
    def replicates_sync(self) -> bool:
        """A sync master: a waiting send is answered once a slave has it."""
        return self.config.role == "sync-master"

    def ha_lag_bytes(self) -> int | None:
        """Bytes the slave is behind: the master's view (its closest slave) or the slave's own;
        ``None`` when no link was ever up."""
        if self._ha_master is not None:
            return self._ha_master.lag_bytes()
        if self._ha_client is not None:
            return self._ha_client.lag_bytes()
        return None

    #: This broker as a message's store host (``brokerIP1`` and the bound port).
    store_host = _AfterStart[HostPort]()

    @property
    def port(self) -> int:
        return self.remoting.port

    @property
    def address(self) -> str:
        """``ip:port`` as registered with name servers."""
        return f"{self.config.advertised_ip}:{self.remoting.port}"

    @property
    def held_pulls(self) -> int:
        return len(self._pull.holds) if self._pull is not None else 0

    @property
    def schedule_delivered(self) -> int:
        return self._schedule.delivered if self._schedule is not None else 0

    def wall(self) -> float:
        return self._clock()

    def wall_ms(self) -> int:
        return ms(self._clock())

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Open the store, bind, start the services and register with the name servers.

        Raises :class:`~rocketq.errors.StoreError` for an unusable data directory (or one another
        process holds) and :class:`~rocketq.errors.RemotingError` when the port is taken.
        """
        if self._started or self._closed:
            raise ClientStateError(f"{self!r} cannot be started again")
        cfg = self.config
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._loop_thread = threading.get_ident()
        store = await asyncio.to_thread(
            MessageStore,
            cfg.store_dir,
            cfg.store_config(),
            clock=self._clock,
            io=self._store_io,
            tags_code_function=schedule_tags_code_function(self.delay_levels),
        )
        self._store = store
        if cfg.role == "slave":
            store.become_replica()
        try:
            generation = await asyncio.to_thread(next_boot_generation, store.config_dir, self.wall())
            self.consumers.set_epoch_base(generation << 32)
            topic_table = TopicConfigTable(store.config_dir / "topics.json")
            group_table = SubscriptionGroupTable(store.config_dir / "subscriptionGroup.json")
            for table in (topic_table, group_table):
                await asyncio.to_thread(store.add_config_table, table)
            self._topic_table = topic_table
            now = self.wall()
            self._topics = TopicConfigManager(
                from_fields(TopicManagerConfig, cfg),
                now=now,
                table=topic_table,
                on_change=self._topics_changed,
            )
            self._groups = SubscriptionGroupManager(
                now=now,
                auto_create_subscription_group=cfg.auto_create_subscription_group,
                table=group_table,
            )
            self._pull = PullProcessor(self)
            self._send = SendProcessor(self)
            handlers = self._request_handlers(self._send, self._pull)
            if cfg.acl_file is not None:
                # loaded only when used: PyYAML and the ACL stay out of a broker without it
                from rocketq.broker.acl import AclManager, request_guard  # noqa: PLC0415
                from rocketq.broker.handlers.acl import AclProcessor  # noqa: PLC0415

                self.acl = await asyncio.to_thread(
                    AclManager, cfg.acl_file, check_interval=cfg.acl_check_interval, wall_ms=self.wall_ms
                )
                handlers.update(AclProcessor(self.acl, self._acl_identity).handlers())
                self.remoting.set_request_guard(
                    request_guard(self.acl, self.remoting.peer_log, self._loop_thread)
                )
            for code, handler in handlers.items():
                self.remoting.register_handler(code, handler)  # type: ignore[arg-type]
            await self.remoting.start()
            self._store_host = HostPort(cfg.advertised_ip, self.remoting.port)
            store.add_arrival_listener(self._on_arrival)
            self._schedule = ScheduleService(
                store, self.delay_levels, persist_interval=cfg.flush_delay_offset_interval, clock=self._clock
            )
            if cfg.role != "slave":  # a slave's schedule progress is its master's, synced
                self._schedule.start()
            send = self._send
            self._transactions = TransactionalMessageService(
                store,
                store_host=self._store_host,
                put=send.put_record,
                send_check=self._send_check,
                properties_string=java_properties_string,
                ensure_topic=self._ensure_system_topic,
                timeout=cfg.transaction_timeout,
                check_max=cfg.transaction_check_max,
                clock=self._clock,
            )
            await asyncio.to_thread(self._transactions.load)
            self._started = True
            port = self.remoting.port
            ha_port = await self._start_ha(port)
            if cfg.namesrv_addrs:
                self._registrar = NamesrvRegistrar(
                    cfg.namesrv_addrs,
                    broker_name=cfg.broker_name,
                    broker_addr=self.address,
                    cluster_name=cfg.broker_cluster_name,
                    ha_server_addr=f"{cfg.advertised_ip}:{ha_port}",
                    broker_id=cfg.broker_id,
                    wrapper=self.topics.wrapper,
                    period=cfg.register_period,
                    initial_delay=cfg.register_initial_delay,
                    timeout=cfg.register_timeout,
                    compressed=cfg.compressed_register,
                    on_answer=self._registered,
                    tls=cfg.tls_client,
                )
                await self._registrar.start()
            self._spawn(self._housekeeping(), "broker-client-scan")
            self._spawn(self._pull_check(), "broker-pull-check")
            if cfg.role != "slave":
                self._spawn(self._transaction_checks(), "broker-transaction-check")
        except BaseException:
            await self._shutdown(unregister=False)
            raise
        log.info(
            "broker %s (cluster %s, %s, id %s) listening on %s, data in %s, %s flush",
            cfg.broker_name,
            cfg.broker_cluster_name,
            cfg.role,
            cfg.broker_id,
            self.address,
            store.root,
            cfg.flush,
        )

    async def _start_ha(self, port: int) -> int:
        """Start the master's HA listener, or the slave's link and table sync; the HA port to
        register (a slave registers the one it would listen on, as RocketMQ's does)."""
        cfg = self.config
        want = cfg.ha_listen_port
        if want is None:
            want = 0 if cfg.port == 0 else min(port + 1, 65535)
        store = self.store
        if cfg.role != "slave":
            self._ha_master = HAMaster(store, cfg.host, want, cfg.ha, tls=cfg.remoting.tls)
            # the derived port (listen port + 1) may be taken; an explicit one must be had
            await self._ha_master.start(fallback=cfg.ha_listen_port is None)
            return self._ha_master.port
        self._ha_client = HAClient(store, cfg.ha_master_address, cfg.ha, tls=cfg.tls_client)
        self._ha_client.start()
        topics, groups = self.topics, self.groups
        self._slave_sync = SlaveSynchronize(
            apply_topics=topics.load,
            apply_groups=groups.load,
            apply_offsets=store.consumer_offsets.put_all,
            delay_offset_path=store.config_dir / "delayOffset.json",
            period=cfg.slave_sync_period,
            initial_delay=min(3.0, cfg.slave_sync_period),
            tls=cfg.tls_client,
        )
        await self._slave_sync.start()
        return want or port + 1

    def _registered(self, answer: RegisterBrokerResponseHeader) -> None:
        """A name server's answer: a slave learns its master's addresses from it."""
        if self._ha_client is not None and self.config.ha_master_address is None:
            self._ha_client.update_master_address(answer.ha_server_addr)
        if self._slave_sync is not None and answer.master_addr:
            self._slave_sync.master_addr = answer.master_addr

    async def close(self) -> None:
        """Unregister, stop accepting, let running handlers finish (1 s), stop the services, then
        flush the store, write its checkpoint and config files. Idempotent."""
        if self._closed:
            return
        await self._shutdown(unregister=True)

    async def _shutdown(self, *, unregister: bool) -> None:
        self._closed = True
        if self._registrar is not None:
            await self._registrar.close(unregister=unregister)
        await self.remoting.close(grace=1.0)
        if self._pull is not None:
            self._pull.close()
        for part in (self._ha_master, self._ha_client, self._slave_sync):
            if part is not None:
                await part.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._schedule is not None:
            await self._schedule.close()
        store, self._store = self._store, None
        self._topic_table = None
        if store is not None:
            store.remove_arrival_listener(self._on_arrival)
            await asyncio.to_thread(store.close)
        if self._started:
            log.info("broker %s closed", self.config.broker_name)

    def register_handler(self, code: int, handler: Handler) -> None:
        """Add or replace a request handler (extensions, tests)."""
        self.remoting.register_handler(code, handler)

    def _acl_identity(self) -> tuple[str, str, str]:
        cfg = self.config
        return cfg.broker_name, self.address, cfg.broker_cluster_name

    def _request_handlers(self, send: SendProcessor, pull: PullProcessor) -> dict[int, object]:
        """Every request code the broker answers and the processor method that answers it, in one
        table (as RocketMQ's ``BrokerController.registerProcessor`` lists them); the ACL's codes
        join it when an ACL file is configured."""
        client = ClientProcessor(self)
        offsets = OffsetProcessor(self)
        admin = AdminProcessor(self)
        transaction = TransactionProcessor(self)
        reply = ReplyProcessor(self, send)
        return {
            RequestCode.SEND_MESSAGE: send.send,
            RequestCode.SEND_MESSAGE_V2: send.send,
            RequestCode.SEND_BATCH_MESSAGE: send.send,
            RequestCode.CONSUMER_SEND_MSG_BACK: send.send_back,
            RequestCode.PULL_MESSAGE: pull.pull,
            RequestCode.HEART_BEAT: client.heartbeat,
            RequestCode.UNREGISTER_CLIENT: client.unregister,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: client.consumer_list,
            RequestCode.CHECK_CLIENT_CONFIG: client.check_client_config,
            RequestCode.LOCK_BATCH_MQ: client.lock_batch,
            RequestCode.UNLOCK_BATCH_MQ: client.unlock_batch,
            RequestCode.QUERY_CONSUMER_OFFSET: offsets.query_consumer_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: offsets.update_consumer_offset,
            RequestCode.GET_MAX_OFFSET: offsets.max_offset,
            RequestCode.GET_MIN_OFFSET: offsets.min_offset,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: offsets.search_offset,
            RequestCode.GET_EARLIEST_MSG_STORETIME: offsets.earliest_store_time,
            RequestCode.VIEW_MESSAGE_BY_ID: offsets.view_message,
            RequestCode.QUERY_MESSAGE: offsets.query_message,
            RequestCode.UPDATE_AND_CREATE_TOPIC: admin.create_topic,
            RequestCode.DELETE_TOPIC_IN_BROKER: admin.delete_topic,
            RequestCode.GET_ALL_TOPIC_CONFIG: admin.all_topic_config,
            RequestCode.GET_TOPIC_STATS_INFO: admin.topic_stats,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: admin.update_group,
            RequestCode.DELETE_SUBSCRIPTIONGROUP: admin.delete_group,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: admin.all_groups,
            RequestCode.GET_CONSUME_STATS: admin.consume_stats,
            RequestCode.GET_ALL_CONSUMER_OFFSET: admin.all_consumer_offsets,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: admin.consumed_by_who,
            RequestCode.GET_CONSUMER_CONNECTION_LIST: admin.consumer_connections,
            RequestCode.GET_PRODUCER_CONNECTION_LIST: admin.producer_connections,
            RequestCode.GET_CONSUMER_RUNNING_INFO: admin.consumer_running_info,
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: admin.reset_offset,
            RequestCode.GET_BROKER_RUNTIME_INFO: admin.runtime_info,
            RequestCode.GET_BROKER_CONFIG: admin.broker_config,
            RequestCode.GET_ALL_DELAY_OFFSET: admin.all_delay_offsets,
            RocketQRequestCode.QUERY_DUPLICATE_CLIENT_IDS: admin.duplicate_client_ids,
            RequestCode.END_TRANSACTION: transaction.end_transaction,
            RequestCode.SEND_REPLY_MESSAGE: reply.reply,
            RequestCode.SEND_REPLY_MESSAGE_V2: reply.reply,
        }

    # ------------------------------------------------------------------ services for the handlers

    def answer_when_durable(
        self,
        cf: concurrent.futures.Future[None],
        conn: RemotingConnection,
        request: RemotingCommand,
        response: RemotingCommand,
    ) -> None:
        """Write ``response`` to ``request`` once the group-commit future ``cf`` completes, or as
        FLUSH_DISK_TIMEOUT when the fsync fails or takes longer than the store's
        ``sync_flush_timeout`` (the message stays stored, as in RocketMQ).

        Sends of one fsync round share ``cf``; they join one list with one timer and one
        completion callback, so a round of N sends costs one loop callback, not N."""
        waiters = self._round
        if cf is self._round_cf and waiters is not None:
            waiters.append((conn, request, response))
            return
        loop = self._loop
        assert loop is not None
        waiters = [(conn, request, response)]
        self._round_cf, self._round = cf, waiters
        timer = loop.call_later(self.config.store_config().sync_flush_timeout, self._round_timed_out, waiters)

        def completed(done: concurrent.futures.Future[None]) -> None:
            timer.cancel()
            if self._round is waiters:
                self._round_cf = self._round = None
            if done.cancelled():
                _answer_round(waiters, StoreError("the flush was cancelled (the store is closing)"))
            else:
                _answer_round(waiters, done.exception())

        cf.add_done_callback(lambda done: loop.call_soon_threadsafe(completed, done))

    def answer_when_replicated(
        self, put: PutResult, conn: RemotingConnection, request: RemotingCommand, response: RemotingCommand
    ) -> None:
        """Sync master: write ``response`` once a slave acknowledged the message's bytes (and,
        under sync flush, the fsync covers it), as RocketMQ 4.9's ``submitReplicaRequest``: no
        slave, or one over ``ha_slave_fallbehind_max`` behind, answers SLAVE_NOT_AVAILABLE; no
        ack within ``slave_timeout`` FLUSH_SLAVE_TIMEOUT (the message stays stored on the
        master either way). A failed flush answers FLUSH_DISK_TIMEOUT unless the slave's
        status is also bad, which wins (as Java combines them)."""
        ha = self._ha_master
        end = put.commit_log_offset + put.wrote_bytes
        replica = ha.wait_for(end) if ha is not None and ha.slave_ok(end) else None
        if put.durable is not None:  # both waits: one task
            self._spawn(self._answer_replicated(put, replica, conn, request, response), "broker-replica-wait")
        elif replica is None:
            _answer_replica(conn, request, response, None)
        else:  # the common case: one callback, no task
            replica.add_done_callback(lambda done: _answer_replica(conn, request, response, done.result()))

    async def _answer_replicated(
        self,
        put: PutResult,
        replica: asyncio.Future[bool] | None,
        conn: RemotingConnection,
        request: RemotingCommand,
        response: RemotingCommand,
    ) -> None:
        if put.durable is not None:
            try:
                await asyncio.wait_for(
                    asyncio.wrap_future(put.durable), self.config.store_config().sync_flush_timeout
                )
            except Exception:  # a failed or slow fsync: the store logs it
                response.code = ResponseCode.FLUSH_DISK_TIMEOUT
                response.remark = "the message is stored but its flush to disk failed or timed out"
        _answer_replica(conn, request, response, None if replica is None else await replica)

    def _round_timed_out(self, waiters: list[_Waiter]) -> None:
        if self._round is waiters:  # later sends of this round get a timer of their own
            self._round_cf = self._round = None
        _answer_round(waiters, TimeoutError())

    def schedule_kick(self) -> None:
        if self._schedule is not None:
            self._schedule.kick()

    async def notify_groups(self, changes: Changes[RemotingConnection]) -> None:
        """Send NOTIFY_CONSUMER_IDS_CHANGED (oneway) for every CHANGE event, to its connections;
        with ``notify_coalesce_window`` > 0, open (or join) the group's window instead. Queue
        locks of clients that left a group are released first (:meth:`QueueLockTable.release_departed`)."""
        if self.config.release_departed_locks:
            for event in changes.events:
                if event.kind is not ConsumerGroupEvent.REGISTER:
                    self.locks.release_departed(event.group, self.consumers.client_ids(event.group))
        coalescer = self._coalescer
        if coalescer is None:
            await self._notify(changes.notifications())
            return
        loop = asyncio.get_running_loop()
        for group, _conns in changes.notifications():
            deadline = coalescer.change(group, loop.time())
            if deadline is not None:
                loop.call_at(deadline, self._flush_notifications)

    def _flush_notifications(self) -> None:
        """A window ended: notify every member each ended group has now (latest wins)."""
        coalescer = self._coalescer
        if coalescer is None or self._closed:
            return
        loop = asyncio.get_running_loop()
        rounds: list[tuple[str, list[RemotingConnection]]] = []
        due = coalescer.due(loop.time())
        pending = coalescer.pending()
        if pending:  # asyncio may run a timer up to its clock resolution early: come back then
            loop.call_at(min(pending.values()), self._flush_notifications)
        for group in due:
            conns = [ch.conn for ch in self.consumers.connections(group) if not ch.conn.is_closed]
            if conns:  # changes were notifiable when they opened the window (the switches)
                rounds.append((group, conns))
        if rounds:
            self._spawn(self._notify(rounds), "broker-notify")

    async def _notify(self, rounds: list[tuple[str, list[RemotingConnection]]]) -> None:
        sends: list[Coroutine[Any, Any, None]] = []
        for group, conns in rounds:
            fields = NotifyConsumerIdsChangedRequestHeader(consumer_group=group).to_ext_fields()
            for conn in conns:
                if not conn.is_closed:
                    request = RemotingCommand.request(
                        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, dict(fields), oneway=True
                    )
                    sends.append(self._notify_one(conn, group, request))
        if sends:
            await asyncio.gather(*sends)

    async def _notify_one(self, conn: RemotingConnection, group: str, request: RemotingCommand) -> None:
        try:
            await asyncio.wait_for(conn.invoke_oneway(request), _NOTIFY_TIMEOUT)
        except (RemotingError, TimeoutError) as exc:
            log.warning(
                "notify consumer ids changed of group %s to %s failed: %s", group, conn.remote_address, exc
            )

    def log_client_failure(self, client_id: str, exc: Exception) -> None:
        log.warning("call to client %s failed: %s", client_id, exc)

    # ------------------------------------------------------------------ events

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _topics_changed(self, change: TopicChange) -> None:
        # RocketMQ persists the topic table on every change: a topic a send just created (and
        # the messages stored in it) must still have its config after a crash. A topic created
        # on use (a retry topic per group of a heartbeat, a DLQ, a system topic) is written by
        # one coalesced write off the loop instead: a heartbeat of thousands of new groups would
        # otherwise write the whole, growing table once per group on the event loop.
        table = self._topic_table
        if table is not None:
            if change.kind == "create":
                self._persist_topics_soon(table)
            else:
                self._persist_topics(table)
        if change.kind in ("update", "delete"):
            # what the groups consuming it allocate with may have changed: a new epoch fences
            # pulls made on the old queues (a count that changes and changes back included)
            self.consumers.bump(self.consumers.groups_consuming(change.topic))
        if self._registrar is not None:
            self._registrar.request_soon()

    @staticmethod
    def _persist_topics(table: TopicConfigTable) -> bool:
        """Write the table if it changed; ``False`` when the write failed (logged; the periodic
        flush tries again)."""
        try:
            table.persist_if_dirty()
        except OSError as exc:
            log.error("cannot persist the topic table: %s (retried with the periodic flush)", exc)
            return False
        return True

    def _persist_topics_soon(self, table: TopicConfigTable) -> None:
        """One write of the topic table on the worker thread, after the changes of this turn of
        the loop; changes made while it writes are written by one more write after it."""
        if self._topic_persist_pending:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # not on the loop (a test driving the tables directly)
            self._persist_topics(table)
            return
        self._topic_persist_pending = True

        async def write() -> None:
            try:
                while table.dirty and await asyncio.to_thread(self._persist_topics, table):
                    pass
            finally:
                self._topic_persist_pending = False

        self._spawn(write(), "broker-persist-topics")

    def _on_arrival(
        self,
        topic: str,
        queue_id: int,
        max_offset: int,
        tag_code: int | None,
        properties: Mapping[str, str] | None,
    ) -> None:
        """The store's arrival listener: held pulls of the queue whose filters (tags, SQL92)
        accept the message are answered (RocketMQ's ``NotifyMessageArrivingListener``)."""
        if threading.get_ident() != self._loop_thread:
            loop = self._loop
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self._on_arrival, topic, queue_id, max_offset, tag_code, properties)
            return
        pull = self._pull
        if pull is not None:
            pull.on_arrival(topic, queue_id, max_offset, tag_code, properties)
        if self._ha_master is not None:
            self._ha_master.notify_append()
        elif self._ha_client is not None:
            self._slave_saw_queue(topic, queue_id)
        if topic == RMQ_SYS_SCHEDULE_TOPIC:
            self.schedule_kick()

    def _slave_saw_queue(self, topic: str, queue_id: int) -> None:
        """A slave stored a message of a topic (or queue) its copied table lacks - one its master
        created since the last table sync. Ours: it takes a provisional config covering the queue
        so it can serve the message if the master dies before the next sync (a RocketMQ 4.9 slave
        answers TOPIC_NOT_EXIST until then); the master's config replaces it at the next sync."""
        topics = self._topics
        if topics is None:
            return
        config = topics.select(topic)
        if config is not None and queue_id < config.read_queue_nums:
            return
        nums = max(queue_id + 1, config.read_queue_nums if config is not None else 0)
        base = config if config is not None else TopicConfig(topic, nums, nums, PERM_RW)
        topics.update(replace(base, read_queue_nums=nums, write_queue_nums=nums), self.wall())

    def _connection_closed(self, conn: RemotingConnection) -> None:
        changes = self.consumers.connection_closed(conn)
        self.producers.connection_closed(conn)
        if self._pull is not None:
            self._pull.connection_closed(conn)
        if self._send is not None:
            self._send.forget(conn)
        if changes.notifications() and not self._closed:
            self._spawn(self.notify_groups(changes), "broker-notify")

    async def _housekeeping(self) -> None:
        interval = self.config.client_scan_interval
        while True:
            await asyncio.sleep(interval)
            try:
                self.scan_clients()
            except Exception:
                log.exception("client housekeeping failed")

    def scan_clients(self) -> None:
        """One expiry scan now (``ClientHousekeepingService``): silent consumers and producers are
        dropped, their connections closed, the groups they left notified."""
        now = self.wall()
        changes = self.consumers.scan_expired(now, self.groups.notify_enabled)
        for conn in changes.close:
            conn.close(f"no heartbeat for {self.config.channel_expired_timeout:g}s")
        for conn in self.producers.scan_expired(now):
            conn.close(f"no heartbeat for {self.config.channel_expired_timeout:g}s")
        self.locks.purge_expired(now)
        if changes.notifications():
            self._spawn(self.notify_groups(changes), "broker-notify")

    def _ensure_system_topic(self, topic: str) -> None:
        """A topic of the broker's own (transactions): 1 queue, read-write, as RocketMQ creates them."""
        self.topics.ensure_topic(topic, 1, PERM_RW, 0, self.wall())

    def check_transactions(self, now: float | None = None) -> CheckResult:
        """One transaction check round now (``TransactionalMessageCheckService``): the service
        runs one every ``transaction_check_interval``; tests and tools may trigger one, with
        ``now`` standing for the broker clock."""
        return self.transactions.check(now)

    def _send_check(self, group: str, header: CheckTransactionStateRequestHeader, body: bytes) -> bool:
        """CHECK_TRANSACTION_STATE (oneway) to a connected producer of ``group``, as RocketMQ's
        ``Broker2Client.checkProducerTransactionState``; False when the group has none."""
        conn = self.producers.available_channel(group, lambda c: not c.is_closed)
        if conn is None:
            return False
        request = RemotingCommand.request(
            RequestCode.CHECK_TRANSACTION_STATE, header.to_ext_fields(), body, oneway=True
        )
        self._spawn(self._check_one(conn, group, request), "broker-check-transaction")
        return True

    async def _check_one(self, conn: RemotingConnection, group: str, request: RemotingCommand) -> None:
        try:
            await asyncio.wait_for(conn.invoke_oneway(request), _NOTIFY_TIMEOUT)
        except (RemotingError, TimeoutError) as exc:
            log.warning(
                "check transaction state of group %s at %s failed: %s", group, conn.remote_address, exc
            )

    async def _transaction_checks(self) -> None:
        """A check round every ``transaction_check_interval``, in steps (requests are served in
        between: a round over a long backlog does not hold the loop)."""
        interval = self.config.transaction_check_interval
        while True:
            await asyncio.sleep(interval)
            steps = self.transactions.check_steps()
            try:
                while True:
                    next(steps)
                    await asyncio.sleep(0)
            except StopIteration:
                pass
            except Exception:
                log.exception("transaction check failed")

    async def _pull_check(self) -> None:
        interval = 5.0 if self.config.long_polling_enable else self.config.short_polling_time
        while True:
            await asyncio.sleep(interval)
            if self._pull is not None:
                with contextlib.suppress(Exception):
                    self._pull.check()
