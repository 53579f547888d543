"""Master-slave replication on RocketMQ 4.9's HA link (``store/ha`` of RocketMQ 4.9.4).

The records on the wire are :mod:`rocketq.protocol.ha`'s; this module drives them over asyncio
streams, on the broker's loop:

* :class:`HAMaster` (``HAService`` + ``HAConnection``) listens on ``ha_listen_port``. For each
  slave it reads reports (the first says where to start: 0 from an empty slave means the start
  of the master's last commit-log segment) and streams the commit log from there in transfers of
  at most ``ha_transfer_batch_size`` bytes, woken by every append, with an empty transfer as a
  heartbeat when idle for ``ha_send_heartbeat_interval``. A slave silent longer than
  ``ha_housekeeping_interval`` is dropped, and so is one reporting more than the master has.
  Every report acknowledges bytes: :meth:`HAMaster.wait_for` is a sync master's group commit over
  the link (``GroupTransferService``) - a send waits until some slave acknowledged its end, or
  ``slave_timeout`` passes (FLUSH_SLAVE_TIMEOUT); :meth:`HAMaster.slave_ok` answers whether a
  slave is there and not more than ``ha_slave_fallbehind_max`` behind (else SLAVE_NOT_AVAILABLE).
* :class:`HAClient` (``HAService.HAClient``) connects a slave to its master's HA address (given,
  or learnt from the name server's registration answer), reports its max offset on connecting,
  after every append and every heartbeat interval, and appends what it receives with the store's
  :meth:`~rocketq.store.MessageStore.append_replica`, which builds the consume queues and index.
  A transfer that does not start where the slave's log ends (a master that lost its data) closes
  the link, as RocketMQ's slave does; it reconnects every ``reconnect_interval`` (5 s).
* :class:`SlaveSynchronize` (``BrokerController``'s ``SlaveSynchronize``): every 10 s (first
  after 3 s) the slave takes its master's topic configs, consumer offsets, delay offsets and
  subscription groups through the admin requests RocketMQ uses (GET_ALL_TOPIC_CONFIG,
  GET_ALL_CONSUMER_OFFSET, GET_ALL_DELAY_OFFSET, GET_ALL_SUBSCRIPTIONGROUP_CONFIG).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rocketq.errors import RemoteProtocolError, RocketQError, StoreError
from rocketq.protocol import calls
from rocketq.protocol.bodies import SubscriptionGroupWrapper, TopicConfigSerializeWrapper
from rocketq.protocol.ha import (
    HA_TRANSFER_BATCH_SIZE,
    ReportDecoder,
    TransferDecoder,
    encode_report,
    encode_transfer_header,
)
from rocketq.remoting import RemotingClient, RemotingClientConfig
from rocketq.remoting.acceptor import TlsAcceptor, close_listening, listen_socket
from rocketq.remoting.tls import TlsClientConfig, TlsServerConfig, client_context, server_context
from rocketq.store import MessageStore, write_atomically
from rocketq.tasks import cancel_and_wait

__all__ = ["HAClient", "HAConfig", "HAMaster", "SlaveSynchronize", "SlaveView"]

log = logging.getLogger(__name__)

_READ_SIZE = 64 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class HAConfig:
    """The HA link's settings; RocketMQ 4.9.4's ``MessageStoreConfig`` defaults."""

    heartbeat_interval: float = 5.0
    """``haSendHeartbeatInterval`` (5 000 ms): the master's empty transfer, the slave's report."""
    housekeeping_interval: float = 20.0
    """``haHousekeepingInterval`` (20 000 ms): a link silent this long is closed."""
    transfer_batch_size: int = HA_TRANSFER_BATCH_SIZE
    """``haTransferBatchSize`` (32 KiB): the most commit-log bytes in one transfer."""
    slave_fallbehind_max: int = 256 * 1024 * 1024
    """``haSlaveFallbehindMax`` (256 MiB): a slave further behind is "not available"."""
    slave_timeout: float = 3.0
    """``slaveTimeout`` (3 000 ms): how long a sync master's send waits for the slave's ack."""
    reconnect_interval: float = 5.0
    """How long the slave waits before connecting again (``HAClient``: 5 s)."""


@dataclass(slots=True)
class SlaveView:
    """What the master knows of one connected slave."""

    address: str
    request_offset: int = -1
    ack_offset: int = -1
    last_read: float = 0.0
    next_offset: int = -1
    more: asyncio.Event = field(default_factory=asyncio.Event)
    """Set on every append (and by the slave's first report): this link's writer looks again."""


@dataclass(order=True, slots=True)
class _Waiter:
    end: int
    seq: int
    future: asyncio.Future[bool] = field(compare=False)


class HAMaster:
    """The master's side of the HA link (see the module docstring)."""

    def __init__(
        self,
        store: MessageStore,
        host: str,
        port: int,
        config: HAConfig | None = None,
        *,
        tls: TlsServerConfig | None = None,
    ) -> None:
        self._store = store
        #: the broker's TLS mode and certificates, on this port too (4.9's HA link has no TLS)
        self._tls = tls if tls is not None else TlsServerConfig()
        self._ssl = server_context(self._tls)
        self._acceptor: TlsAcceptor | None = None
        self._host = host
        self._want_port = port
        self.config = config or HAConfig()
        self._server: asyncio.Server | None = None
        self._links: dict[asyncio.Task[None], SlaveView] = {}
        self._waiters: list[_Waiter] = []
        self._seq = itertools.count()
        #: The furthest offset any slave acknowledged (``push2SlaveMaxOffset``).
        self.acked_offset = 0
        self.port = 0

    async def start(self, *, fallback: bool = False) -> None:
        """Listen; with ``fallback``, a taken port gives way to a free one (logged): the port
        registered with the name servers is the one bound, and slaves learn it from there."""
        try:
            self.port = await self._listen(self._want_port)
        except OSError as exc:
            if not fallback or not self._want_port:
                raise
            log.warning("HA port %s is not free (%s): listening on a free port instead", self._want_port, exc)
            self.port = await self._listen(0)
        log.info("HA listener on %s:%s (TLS %s)", self._host, self.port, self._tls.mode)

    async def _listen(self, port: int) -> int:
        if self._ssl is None:
            self._server = await asyncio.start_server(self._serve, self._host, port)
            return int(self._server.sockets[0].getsockname()[1])
        sock = listen_socket(self._host, port, 128)

        def link() -> asyncio.Protocol:
            return asyncio.StreamReaderProtocol(asyncio.StreamReader(), self._serve)

        def refused(peer: str, kind: str, reason: str) -> None:
            log.warning("HA listener: %s", reason)

        self._acceptor = TlsAcceptor(
            sock,
            link,
            self._ssl,
            self._tls.mode,
            handshake_timeout=self._tls.handshake_timeout,
            on_refused=refused,
            admit=lambda pending: pending < 128,
        )
        self._acceptor.start()
        return int(sock.getsockname()[1])

    async def close(self) -> None:
        server, self._server = self._server, None
        acceptor, self._acceptor = self._acceptor, None
        await close_listening(server, acceptor)
        for task in list(self._links):
            task.cancel()
        if self._links:
            await asyncio.gather(*self._links, return_exceptions=True)
        if server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 1.0)
        for w in self._waiters:
            if not w.future.done():
                w.future.set_result(False)
        self._waiters.clear()

    @property
    def slaves(self) -> list[SlaveView]:
        return list(self._links.values())

    def lag_bytes(self) -> int | None:
        """How far the closest slave is behind the commit log (``None``: no slave)."""
        acks = [s.ack_offset for s in self._links.values() if s.ack_offset >= 0]
        if not acks:
            return None
        return max(0, self._store.commit_log_max_offset - max(acks))

    def notify_append(self) -> None:
        """The commit log grew: wake the links (call on the loop)."""
        for view in self._links.values():
            view.more.set()

    def slave_ok(self, master_put_where: int) -> bool:
        """A slave is connected and not too far behind (``HAService.isSlaveOK``)."""
        return bool(self._links) and master_put_where - self.acked_offset < self.config.slave_fallbehind_max

    def wait_for(self, end: int) -> asyncio.Future[bool]:
        """A future that turns True once a slave acknowledged ``end``, or False after
        ``slave_timeout`` (group commit over the link: one ack answers every send below it)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[bool] = loop.create_future()
        if self.acked_offset >= end:
            fut.set_result(True)
            return fut
        heapq.heappush(self._waiters, _Waiter(end, next(self._seq), fut))
        handle = loop.call_later(self.config.slave_timeout, _expire, fut)
        fut.add_done_callback(lambda _f: handle.cancel())
        return fut

    def _acked(self, offset: int) -> None:
        self.acked_offset = max(self.acked_offset, offset)
        waiters = self._waiters
        while waiters and waiters[0].end <= self.acked_offset:
            w = heapq.heappop(waiters)
            if not w.future.done():
                w.future.set_result(True)
        # timed-out waiters at the front cost nothing more than this pop later
        while waiters and waiters[0].future.done():
            heapq.heappop(waiters)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        peer = writer.get_extra_info("peername")
        view = SlaveView(f"{peer[0]}:{peer[1]}" if peer else "?", last_read=asyncio.get_running_loop().time())
        self._links[task] = view
        log.info("slave %s connected to the HA listener", view.address)
        write_task = asyncio.create_task(self._write_loop(writer, view))
        try:
            await self._read_loop(reader, view, write_task)
        except (OSError, RemoteProtocolError, StoreError) as exc:
            log.warning("HA link to slave %s closed: %s", view.address, exc)
        finally:
            write_task.cancel()
            with contextlib.suppress(BaseException):
                await write_task
            del self._links[task]
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            log.info("slave %s left the HA listener", view.address)

    async def _read_loop(
        self, reader: asyncio.StreamReader, view: SlaveView, write_task: asyncio.Task[None]
    ) -> None:
        loop = asyncio.get_running_loop()
        decoder = ReportDecoder()
        housekeeping = self.config.housekeeping_interval
        while not write_task.done():
            try:
                data = await asyncio.wait_for(reader.read(_READ_SIZE), housekeeping)
            except TimeoutError:
                raise RemoteProtocolError(f"nothing from the slave for {housekeeping:g}s") from None
            if not data:
                return
            view.last_read = loop.time()
            decoder.receive_data(data)
            offset = decoder.latest()
            if offset is None:
                continue
            if view.request_offset < 0:
                view.request_offset = offset
                log.info("slave %s asks for the commit log from %s", view.address, offset)
                view.more.set()
            elif offset > (end := self._store.commit_log_max_offset):
                raise RemoteProtocolError(f"the slave reports {offset}, past this commit log's end {end}")
            view.ack_offset = offset
            self._acked(offset)

    async def _write_loop(self, writer: asyncio.StreamWriter, view: SlaveView) -> None:
        store = self._store
        cfg = self.config
        while view.request_offset < 0:
            await _wait_more(view.more, cfg.heartbeat_interval)
        if view.request_offset == 0:
            end = store.commit_log_max_offset
            start = end - end % store.commit_log.segment_size
            view.next_offset = max(start, store.commit_log_min_offset)
        else:
            view.next_offset = view.request_offset
        log.info("streaming the commit log to slave %s from %s", view.address, view.next_offset)
        while True:
            data = store.read_commit_log(view.next_offset, cfg.transfer_batch_size)
            if data is None:
                raise StoreError(f"the commit log no longer holds offset {view.next_offset}")
            if data:
                writer.write(encode_transfer_header(view.next_offset, len(data)))
                writer.write(data)
                view.next_offset += len(data)
                await writer.drain()
                continue
            if not await _wait_more(view.more, cfg.heartbeat_interval):
                writer.write(encode_transfer_header(view.next_offset, 0))
                await writer.drain()


async def _wait_more(more: asyncio.Event, timeout: float) -> bool:
    """Wait for an append (True) or ``timeout`` (False)."""
    if more.is_set():
        more.clear()
        return True
    try:
        await asyncio.wait_for(more.wait(), timeout)
    except TimeoutError:
        return False
    more.clear()
    return True


def _expire(fut: asyncio.Future[bool]) -> None:
    if not fut.done():
        fut.set_result(False)


class HAClient:
    """The slave's side of the HA link (see the module docstring)."""

    def __init__(
        self,
        store: MessageStore,
        master_address: str | None,
        config: HAConfig | None = None,
        *,
        tls: TlsClientConfig | None = None,
    ) -> None:
        self._store = store
        self._ssl = None if tls is None else client_context(tls)
        self.config = config or HAConfig()
        self._master = master_address
        self._master_changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.connected = False
        #: The master's offset from its last transfer header (its position in the stream).
        self.master_offset = -1
        self.last_transfer = 0.0
        self.connects = 0

    @property
    def master_address(self) -> str | None:
        return self._master

    def update_master_address(self, addr: str | None) -> None:
        """The master's HA address (``updateHaMasterAddress``): used at the next connection."""
        if addr and addr != self._master:
            log.info("HA master address %s -> %s", self._master, addr)
            self._master = addr
            self._master_changed.set()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="ha-client")

    async def close(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _run(self) -> None:
        while True:
            addr = self._master
            if addr is None:
                self._master_changed.clear()
                await self._master_changed.wait()
                continue
            try:
                await self._session(addr)
            except (OSError, RemoteProtocolError, StoreError) as exc:
                log.warning("HA link to master %s: %s", addr, exc)
            finally:
                self.connected = False
            self._master_changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._master_changed.wait(), self.config.reconnect_interval)

    async def _session(self, addr: str) -> None:
        host, _, port = addr.rpartition(":")
        ssl = self._ssl
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, int(port), ssl=ssl, server_hostname=host if ssl else None), 5.0
        )
        loop = asyncio.get_running_loop()
        store = self._store
        cfg = self.config
        try:
            self.connected = True
            self.connects += 1
            reported = store.commit_log_max_offset
            writer.write(encode_report(reported))
            await writer.drain()
            log.info("connected to HA master %s, reporting %s", addr, reported)
            decoder = TransferDecoder(max_body=max(cfg.transfer_batch_size, 4 * 1024 * 1024))
            last_read = last_report = loop.time()
            while True:
                try:
                    data = await asyncio.wait_for(reader.read(_READ_SIZE), cfg.heartbeat_interval)
                except TimeoutError:
                    data = None
                now = loop.time()
                if data == b"":
                    raise RemoteProtocolError("the master closed the link")
                if data:
                    last_read = now
                    decoder.receive_data(data)
                    while (t := decoder.next_transfer()) is not None:
                        self.master_offset = t.end
                        self.last_transfer = now
                        if not t.body:
                            continue
                        mine = store.commit_log_max_offset
                        if mine and t.offset != mine:
                            raise RemoteProtocolError(
                                f"the master sent bytes at {t.offset}, this log ends at {mine}"
                            )
                        store.append_replica(t.offset, t.body)
                elif now - last_read > cfg.housekeeping_interval:
                    raise RemoteProtocolError(f"nothing from the master for {cfg.housekeeping_interval:g}s")
                current = store.commit_log_max_offset
                if current != reported or now - last_report >= cfg.heartbeat_interval:
                    writer.write(encode_report(current))
                    await writer.drain()
                    reported, last_report = current, now
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def lag_bytes(self) -> int | None:
        """How far behind the master's stream position this slave is (``None``: never linked)."""
        if self.master_offset < 0:
            return None
        return max(0, self.master_offset - self._store.commit_log_max_offset)


class SlaveSynchronize:
    """A slave's periodic copy of its master's tables (see the module docstring)."""

    def __init__(
        self,
        *,
        apply_topics: Callable[[TopicConfigSerializeWrapper], None],
        apply_groups: Callable[[SubscriptionGroupWrapper], None],
        apply_offsets: Callable[[dict[str, dict[int, int]]], None],
        delay_offset_path: Path,
        initial_delay: float = 3.0,
        period: float = 10.0,
        timeout: float = 3.0,
        tls: TlsClientConfig | None = None,
    ) -> None:
        self._apply_topics = apply_topics
        self._apply_groups = apply_groups
        self._apply_offsets = apply_offsets
        self._delay_path = delay_offset_path
        self._initial_delay = initial_delay
        self._period = period
        self._timeout = timeout
        self.master_addr: str | None = None
        self.syncs = 0
        self._client = RemotingClient(
            config=RemotingClientConfig(
                request_timeout=timeout, idle_timeout=None, tls=tls or TlsClientConfig()
            )
        )
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        await self._client.start()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="slave-synchronize")

    async def close(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        await self._client.close()

    async def _run(self) -> None:
        await asyncio.sleep(self._initial_delay)
        while True:
            await self.sync_all()
            await asyncio.sleep(self._period)

    async def sync_all(self) -> bool:
        """One round (``syncAll``); False when the master is unknown or a request failed."""
        addr = self.master_addr
        if addr is None:
            return False
        client, t = self._client, self._timeout
        try:
            topics = await client.call(addr, calls.get_all_topic_config(), t)
            offsets = await client.call(addr, calls.get_all_consumer_offset(), t)
            delay = await client.call(addr, calls.get_all_delay_offset(), t)
            groups = await client.call(addr, calls.get_all_subscription_group_config(), t)
        except RocketQError as exc:
            log.warning("slave sync from master %s failed: %s", addr, exc)
            return False
        try:
            self._apply_topics(topics)
            self._apply_offsets({k: dict(v) for k, v in offsets.offset_table.items()})
            if delay:
                await asyncio.to_thread(write_atomically, self._delay_path, delay)
            self._apply_groups(groups)
        except (RocketQError, OSError) as exc:
            log.warning("applying the master's tables failed: %s", exc)
            return False
        self.syncs += 1
        return True
