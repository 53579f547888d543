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

:class:`ClientInstance` is made of one part per responsibility, each in its own module (they
log under this module's name, ``rocketq.client.instance``):

* ``instance_base.py`` - the shared state and the member registry (one producer or consumer
  per group), with the two protocols above;
* ``instance_heartbeats.py`` - heartbeat rounds, urgent heartbeats to a broker that forgot us;
* ``instance_routes.py`` - routes from the name server, the broker address table, finding the
  broker for a publish, pull or offset;
* ``instance_brokers.py`` - the consumers' calls to brokers (member lists and views, the
  subscription check, queue locks and leases, unregistering);
* ``instance_rebalance.py`` - the rebalance hook-up (``rebalance_immediately`` from any thread,
  ``do_rebalance`` on the loop) and offset persistence;
* ``instance_handlers.py`` - the handlers of the brokers' requests;
* this module - the per-process registry of instances (:meth:`ClientInstance.acquire` /
  :meth:`~ClientInstance.release`) and the lifecycle (start, periodic tasks, close).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable

from rocketq.client.api import ClientAPI
from rocketq.client.config import ClientConfig, ProducerConfig
from rocketq.client.instance_base import CLIENT_INNER_PRODUCER_GROUP, ConsumerInner, ProducerInner
from rocketq.client.instance_brokers import BrokerCalls
from rocketq.client.instance_handlers import BrokerRequests
from rocketq.client.loop_thread import cancel_and_wait
from rocketq.client.producer.core import ProducerCore
from rocketq.errors import ClientStateError, ConfigError
from rocketq.remoting.client import RemotingClient
from rocketq.remoting.config import RemotingClientConfig
from rocketq.remoting.connection import RemotingConnection
from rocketq.remoting.handlers import ConnectionListener

__all__ = ["CLIENT_INNER_PRODUCER_GROUP", "ClientInstance", "ConsumerInner", "ProducerInner"]

logger = logging.getLogger(__name__)

_registry: dict[str, ClientInstance] = {}
_registry_lock = threading.Lock()


class ClientInstance(BrokerCalls, BrokerRequests):
    """Shared state and periodic services of one client id. Get one with :meth:`acquire`.

    Made of one part per responsibility (see the module docstring): the state and member
    registry (:class:`~rocketq.client.instance_base.InstanceBase`), heartbeats
    (:class:`~rocketq.client.instance_heartbeats.Heartbeats`), routes and broker addresses
    (:class:`~rocketq.client.instance_routes.Routes`), consumer-side broker calls
    (:class:`~rocketq.client.instance_brokers.BrokerCalls`), the rebalance hook-up
    (:class:`~rocketq.client.instance_rebalance.Rebalancing`) and the handlers of the brokers'
    requests (:class:`~rocketq.client.instance_handlers.BrokerRequests`); this class keeps the
    registry of instances and their lifecycle.
    """

    def __repr__(self) -> str:
        return f"<ClientInstance {self.client_id} producers={list(self.producers)} consumers={list(self.consumers)}>"  # noqa: E501

    @classmethod
    def acquire(cls, config: ClientConfig) -> ClientInstance:
        """The running instance for ``config``'s client id, made and started if needed."""
        client_id = config.client_id()
        with _registry_lock:
            inst = _registry.get(client_id)
            if inst is not None and not inst._closed and inst.config.credentials != config.credentials:
                raise ConfigError(
                    f"client id {client_id} is in use with another ACL account in this process: "
                    "give this client its own instance_name"
                )
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

    async def _start(self) -> None:
        if self._started:
            return
        self._started = True
        self.remoting = RemotingClient(
            config=RemotingClientConfig(
                request_timeout=self.config.mq_client_api_timeout,
                credentials=self.config.credentials,
                tls=self.config.tls,
            )
        )
        self.api = ClientAPI(self.remoting, self.namesrv_addrs, timeout=self.config.mq_client_api_timeout)
        self._heartbeat_lock = asyncio.Lock()
        self._route_lock = asyncio.Lock()
        self.remoting.add_listener(_Reconnects(self))
        self._register_handlers(self.remoting)
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


class _Reconnects(ConnectionListener):
    """Tells the instance of every new connection (a reconnect to a broker gets a heartbeat at once)."""

    def __init__(self, instance: ClientInstance) -> None:
        self.instance = instance

    def on_connect(self, conn: RemotingConnection) -> None:
        self.instance._connected(conn.remote_address)
