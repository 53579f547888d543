"""The name server as a running component: route table + handlers + a remoting server + housekeeping.

RocketMQ's ``NamesrvController`` in asyncio form. :class:`NameServer` owns

* a :class:`~rocketq.namesrv.routes.RouteTable` and a :class:`~rocketq.namesrv.kvconfig.KVConfig`;
* a :class:`~rocketq.remoting.RemotingServer` with the :class:`~rocketq.namesrv.handlers.NamesrvProcessor`
  handlers registered;
* a connection listener that drops a broker's routes the moment its connection closes or goes idle
  (RocketMQ's ``BrokerHousekeepingService``);
* a task that scans for brokers not heard from for ``broker_expiry`` seconds, every
  ``scan_interval`` seconds, and closes their connections (``scanNotActiveBroker``).

::

    async with NameServer(NamesrvConfig(port=0)) as ns:
        print(ns.address)            # 127.0.0.1:<port>
        ...

:func:`serve_namesrv` runs one until an :class:`asyncio.Event` is set; the ``rocketq namesrv``
command and the embedded ``rocketq server`` both use it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rocketq.errors import ClientStateError, ConfigError
from rocketq.lifecycle import AsyncStartClose
from rocketq.namesrv.handlers import NamesrvProcessor
from rocketq.namesrv.kvconfig import KVConfig
from rocketq.namesrv.routes import BROKER_CHANNEL_EXPIRED_TIME, RouteTable
from rocketq.protocol.bodies import MAX_INFLATED_REGISTER_BODY
from rocketq.remoting import ConnectionListener, RemotingConnection, RemotingServer, ServerConfig
from rocketq.tasks import cancel_and_wait

__all__ = ["DEFAULT_PORT", "NameServer", "NamesrvConfig", "serve_namesrv"]

log = logging.getLogger(__name__)

DEFAULT_PORT = 9876
"""RocketMQ's name server port (``NettyServerConfig.listenPort`` as set by ``NamesrvStartup``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NamesrvConfig:
    """How a :class:`NameServer` listens and keeps house. Durations are float seconds."""

    #: Address to bind (ours: loopback unless told otherwise).
    host: str = "127.0.0.1"
    #: Port to bind; 0 picks a free one (RocketMQ: 9876).
    port: int = DEFAULT_PORT
    #: A broker not registered for this long is dropped (RocketMQ: 120 s, ``BROKER_CHANNEL_EXPIRED_TIME``).
    broker_expiry: float = BROKER_CHANNEL_EXPIRED_TIME
    #: How often to look for expired brokers (RocketMQ: every 10 s ...).
    scan_interval: float = 10.0
    #: ... starting this long after start (RocketMQ: 5 s).
    scan_initial_delay: float = 5.0
    #: Put ``ORDER_TOPIC_CONFIG`` values into routes as ``orderTopicConf``
    #: (RocketMQ ``orderMessageEnable``: off).
    order_message_enable: bool = False
    #: Where the KV config is persisted (RocketMQ: ``~/namesrv/kvConfig.json``; ours: nowhere, in memory).
    kv_config_path: Path | None = None
    #: Transport settings (idle time, frame size, back-pressure, request limits); RocketMQ's
    #: defaults where it has them (docs/limits.md).
    remoting: ServerConfig = field(default_factory=ServerConfig)
    #: Most topics one REGISTER_BROKER may carry (RocketMQ: no bound but the frame, about 110,000
    #: topics in JSON): ``None``, none. A large registration is decoded off the event loop and
    #: its topics enter the route table in slices, so other peers are not stalled by it.
    max_register_topics: int | None = None
    #: Largest size a compressed REGISTER_BROKER body may inflate to (ours; RocketMQ has no
    #: bound): 16 MiB, some 300,000 topics in its binary layout; a deflate bomb stops there.
    max_register_inflated: int = MAX_INFLATED_REGISTER_BODY

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port must be 0..65535, got {self.port}")
        if (
            self.max_register_topics is not None and self.max_register_topics < 1
        ) or self.max_register_inflated < 1:
            raise ConfigError("max_register_topics and max_register_inflated must be positive")
        for name in ("broker_expiry", "scan_interval"):
            value = getattr(self, name)
            if not value > 0:
                raise ConfigError(f"{name} must be positive, got {value!r}")
        if self.scan_initial_delay < 0:
            raise ConfigError(f"scan_initial_delay must not be negative, got {self.scan_initial_delay!r}")


class _Housekeeping(ConnectionListener):
    """Drops a broker's routes when its connection closes or idles (``BrokerHousekeepingService``)."""

    def __init__(self, routes: RouteTable) -> None:
        self._routes = routes

    def on_close(self, conn: RemotingConnection) -> None:
        self._routes.on_connection_closed(conn)

    def on_idle(self, conn: RemotingConnection) -> None:
        self._routes.on_connection_closed(conn)


class NameServer(AsyncStartClose):
    """A RocketMQ name server on ``config.host:config.port``; see the module docstring.

    ``clock`` is the monotonic clock (float seconds) the route table's ``now`` comes from.
    """

    def __init__(
        self, config: NamesrvConfig | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.config = config if config is not None else NamesrvConfig()
        self._clock = clock
        self.routes = RouteTable(broker_expiry=self.config.broker_expiry)
        self.kv_config = KVConfig(self.config.kv_config_path)
        self.processor = NamesrvProcessor(
            self.routes,
            self.kv_config,
            clock=clock,
            order_message_enable=self.config.order_message_enable,
            max_nonstandard_json=self.config.remoting.max_nonstandard_json,
            max_register_topics=self.config.max_register_topics,
            max_register_inflated=self.config.max_register_inflated,
        )
        self.remoting = RemotingServer(
            self.config.host,
            self.config.port,
            config=self.config.remoting,
            listener=_Housekeeping(self.routes),
        )
        for code, handler in self.processor.handlers.items():
            self.remoting.register_handler(code, handler)
        self._scanner: asyncio.Task[None] | None = None
        self._started = False
        self._closed = False

    def __repr__(self) -> str:
        where = self.address if self._started else "not started"
        return f"<NameServer {where} brokers={len(self.routes.live_brokers())}>"

    @property
    def port(self) -> int:
        """The bound port (known after :meth:`start`)."""
        return self.remoting.port

    @property
    def address(self) -> str:
        """``"host:port"`` as bound: what brokers and clients put in their name server list."""
        return self.remoting.address

    async def start(self) -> None:
        """Bind and start serving; raises :class:`~rocketq.errors.RemotingError` if the port is taken."""
        if self._started:
            raise ClientStateError(f"{self!r} is already started")
        if self._closed:
            raise ClientStateError("this NameServer is closed; make a new one")
        await self.remoting.start()
        self._started = True
        self._scanner = asyncio.get_running_loop().create_task(self._scan_loop(), name="namesrv-scan")
        log.info("name server listening on %s", self.address)

    async def close(self) -> None:
        """Stop the scanner and the remoting server (closing every connection). Idempotent."""
        if self._closed:
            return
        self._closed = True
        scanner, self._scanner = self._scanner, None
        await cancel_and_wait(scanner)
        await self.remoting.close()
        if self._started:
            log.info("name server on %s closed", self.address)

    def scan_now(self) -> int:
        """Run one expiry scan at once; returns how many brokers it dropped (their connections close)."""
        expired = self.routes.scan_not_active(self._clock())
        for broker in expired:
            if isinstance(broker.conn, RemotingConnection):
                broker.conn.close(
                    f"broker {broker.broker_addr} expired: no registration for {self.config.broker_expiry:g}s"
                )
        return len(expired)

    async def _scan_loop(self) -> None:
        await asyncio.sleep(self.config.scan_initial_delay)
        while True:
            try:
                self.scan_now()
            except Exception:  # the scan must outlive a bug in one round
                log.exception("name server: broker expiry scan failed")
            await asyncio.sleep(self.config.scan_interval)


async def serve_namesrv(
    config: NamesrvConfig,
    stop: asyncio.Event,
    *,
    on_ready: Callable[[NameServer], None] | None = None,
) -> None:
    """Run a name server until ``stop`` is set, then close it.

    ``on_ready`` is called once it listens (to print the address, or to start a broker next to
    it). Binding errors propagate as :class:`~rocketq.errors.RemotingError`.
    """
    async with NameServer(config) as server:
        if on_ready is not None:
            on_ready(server)
        await stop.wait()
