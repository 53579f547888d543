"""The asyncio remoting client: one connection per ``"host:port"``, requests matched by opaque.

::

    async with RemotingClient() as client:
        route = await client.call("127.0.0.1:9876", calls.get_route_info("TopicTest"))  # a typed call
        request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicTest"})
        response = await client.invoke("127.0.0.1:9876", request, timeout=3.0)          # a raw request

Connections are made on first use and remade on the next call after they drop; callers asking for
the same address at the same time share one connection attempt. The server may send requests
over the client's connection (a broker's ``NOTIFY_CONSUMER_IDS_CHANGED`` and
``GET_CONSUMER_RUNNING_INFO``): register handlers for them as on a server.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import TypeVar

from rocketq.errors import (
    BrokerError,
    ConfigError,
    RemotingClosedError,
    RemotingConnectError,
    RemotingTimeoutError,
)
from rocketq.lifecycle import AsyncStartClose
from rocketq.protocol.calls import Call
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting.acl import AclSigningHook
from rocketq.remoting.config import RemotingClientConfig
from rocketq.remoting.connection import RemotingConnection
from rocketq.remoting.endpoint import Endpoint
from rocketq.remoting.guard import PeerLog
from rocketq.remoting.handlers import ConnectionListener, RPCHook
from rocketq.remoting.settings import ConnectionSettings
from rocketq.remoting.tls import client_context

__all__ = ["RemotingClient", "add_call_note", "parse_address", "tls_failure"]

T = TypeVar("T")

logger = logging.getLogger(__name__)


def parse_address(addr: str) -> tuple[str, int]:
    """Split RocketMQ's ``"host:port"`` (IPv6 as ``"[::1]:9876"`` or by the last colon).

    >>> parse_address("127.0.0.1:10911")
    ('127.0.0.1', 10911)
    >>> parse_address("[::1]:9876")
    ('::1', 9876)
    """
    host, sep, port_text = addr.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise ConfigError(f"address must look like host:port, got {addr!r}")
    port = int(port_text)
    if not 0 < port < 65536:
        raise ConfigError(f"port out of range in address {addr!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


class RemotingClient(Endpoint, AsyncStartClose):
    """Send requests to RocketMQ name servers and brokers and handle what they send back.

        ``invoke`` raises :class:`~rocketq.errors.RemotingConnectError` when it cannot connect,
        :class:`~rocketq.errors.RemotingTimeoutError` when no response comes in time, and
        :class:`~rocketq.errors.RemotingClosedError` when the connection or the client closes while
        it waits (a dropped connection fails its waiting requests at once, not at their timeouts).
        A response with an error code is returned as it is; mapping codes to exceptions is the
        caller's business (:meth:`rocketq.errors.BrokerError.for_code`).

        Listeners (:class:`ConnectionListener`) hear about every connection the client opens and
        loses; ``conn.remote_address`` is then the address as dialled.

    With ``config.tls.enable`` every connection speaks TLS (RocketMQ's ``useTLS``); a failed
        handshake is a RemotingConnectError naming the server and what failed.
        With ``config.credentials`` every request sent is signed for RocketMQ 4.9's ACL
        (:class:`~rocketq.remoting.acl.AclSigningHook`), after any other hook has run.
    """

    def __init__(
        self, *, config: RemotingClientConfig | None = None, listener: ConnectionListener | None = None
    ) -> None:
        self.config = config if config is not None else RemotingClientConfig()
        super().__init__(listener)
        #: warnings about the servers' behaviour (responses matching nothing ...), once per peer
        self.peer_log = PeerLog(logging.getLogger("rocketq.remoting.connection"))
        self._connections: dict[str, RemotingConnection] = {}
        self._connecting: dict[str, asyncio.Task[RemotingConnection]] = {}
        self._closed = False
        #: the SSL context of ``config.tls`` (None: plaintext); its files are read now
        self.ssl_context = client_context(self.config.tls)
        self._signer: AclSigningHook | None = None
        if self.config.credentials is not None:
            self._signer = AclSigningHook(self.config.credentials)
            self.handlers.hooks.append(self._signer)

    def add_hook(self, hook: RPCHook) -> None:
        """Run ``hook`` around every request (see :class:`RPCHook`); before the signing hook, so
        what it adds to a request is signed."""
        hooks = self.handlers.hooks
        if self._signer is not None and self._signer in hooks:
            hooks.insert(hooks.index(self._signer), hook)
        else:
            hooks.append(hook)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<RemotingClient {state} connections={sorted(self._connections)}>"

    # ------------------------------------------------------------------ lifecycle

    @property
    def is_closed(self) -> bool:
        return self._closed

    @property
    def connections(self) -> dict[str, RemotingConnection]:
        """Open connections by the address they were dialled with (a copy)."""
        return {addr: conn for addr, conn in self._connections.items() if not conn.is_closed}

    async def start(self) -> None:
        """Nothing to start: connections are made on demand. Present for symmetry and ``async with``."""
        if self._closed:
            raise RemotingClosedError("this RemotingClient is closed; make a new one")

    async def close(self) -> None:
        """Close every connection; every waiting request fails with RemotingClosedError at once."""
        if self._closed:
            return
        self._closed = True
        connecting = list(self._connecting.values())
        for task in connecting:
            task.cancel()
        if connecting:
            await asyncio.gather(*connecting, return_exceptions=True)
        connections = list(self._connections.items())
        handlers: list[asyncio.Task[None]] = []
        for addr, conn in connections:
            handlers.extend(conn.cancel_handlers())
            conn.close(f"client closed (connection to {addr})")  # fails its waiting requests now
        if handlers:
            await asyncio.gather(*handlers, return_exceptions=True)
        await asyncio.gather(*(conn.shutdown("client closed") for _, conn in connections))

    # ------------------------------------------------------------------ connections

    async def get_connection(self, addr: str) -> RemotingConnection:
        """The open connection to ``addr``, connecting (within ``config.connect_timeout``) if needed."""
        conn = self._connections.get(addr)
        if conn is not None and not conn.is_closed:
            return conn
        if self._closed:
            raise RemotingClosedError(f"cannot connect to {addr}: the client is closed")
        task = self._connecting.get(addr)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._connect(addr))
            self._connecting[addr] = task
            task.add_done_callback(lambda t: self._connect_done(addr, t))
        # shield: one caller giving up must not cancel the attempt the others share
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if self._cancelled_by_close(task):
                raise RemotingClosedError(f"cannot connect to {addr}: the client was closed") from None
            raise

    def _cancelled_by_close(self, task: asyncio.Task[RemotingConnection]) -> bool:
        """Whether a connect attempt was cancelled by :meth:`close` (not the waiting caller)."""
        current = asyncio.current_task()
        return task.cancelled() and self._closed and (current is None or not current.cancelling())

    def _connect_done(self, addr: str, task: asyncio.Task[RemotingConnection]) -> None:
        if self._connecting.get(addr) is task:
            del self._connecting[addr]
        if not task.cancelled():
            task.exception()  # retrieved here so that an attempt nobody awaits any more is not reported

    async def _connect(self, addr: str) -> RemotingConnection:
        host, port = parse_address(addr)
        cfg = self.config
        loop = asyncio.get_running_loop()

        def factory() -> RemotingConnection:
            settings = ConnectionSettings.of(cfg, close_idle=True, close_on_timeout=cfg.close_on_timeout)
            return self._connection(settings, remote_address=addr)

        ctx = self.ssl_context
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(
                    factory,
                    host,
                    port,
                    ssl=ctx,
                    server_hostname=host if ctx is not None else None,
                    ssl_handshake_timeout=cfg.connect_timeout if ctx is not None else None,
                ),
                cfg.connect_timeout,
            )
        except TimeoutError:
            raise RemotingConnectError(
                f"cannot connect to {addr}: no answer within {cfg.connect_timeout:g}s"
            ) from None
        except (ssl.SSLError, ssl.CertificateError, ConnectionError) as exc:
            if ctx is None:
                raise RemotingConnectError(f"cannot connect to {addr}: {exc.strerror or exc}") from exc
            raise RemotingConnectError(tls_failure(addr, exc)) from exc
        except OSError as exc:
            raise RemotingConnectError(f"cannot connect to {addr}: {exc.strerror or exc}") from exc
        if self._closed:
            conn.close("client closed while connecting")
            raise RemotingClosedError(f"cannot connect to {addr}: the client was closed meanwhile")
        self._connections[addr] = conn
        return conn

    def close_connection(self, addr: str) -> None:
        """Close the connection to ``addr`` (if any); its waiting requests fail, the next call reconnects."""
        conn = self._connections.pop(addr, None)
        if conn is not None:
            conn.close(f"connection to {addr} closed by the client")

    def _connection_opened(self, conn: RemotingConnection) -> None:
        logger.info("connected to %s (local %s)", conn.remote_address, conn.local_address)
        for listener in tuple(self._listeners):
            conn._call_event(listener.on_connect, "on_connect")

    def _connection_closed(self, conn: RemotingConnection) -> None:
        if self._connections.get(conn.remote_address) is conn:
            del self._connections[conn.remote_address]
        logger.info("%s", conn.close_reason)
        for listener in tuple(self._listeners):
            conn._call_event(listener.on_close, "on_close")

    # ------------------------------------------------------------------ requests

    async def invoke(
        self, addr: str, request: RemotingCommand, timeout: float | None = None
    ) -> RemotingCommand:
        """Send ``request`` to ``addr`` and return the response.

        ``timeout`` (default ``config.request_timeout``) covers connecting too, as in RocketMQ.
        """
        if timeout is None:
            timeout = self.config.request_timeout
        conn = self._connections.get(addr)
        if conn is not None and not conn.is_closed:
            return await conn.invoke(request, timeout)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            conn = await asyncio.wait_for(self.get_connection(addr), timeout)
        except TimeoutError:
            raise RemotingTimeoutError(
                f"request code {request.code} to {addr}: not connected within {timeout:.3f}s"
            ) from None
        return await conn.invoke(request, max(deadline - loop.time(), 0.0), stated_timeout=timeout)

    def open_connection(self, addr: str) -> RemotingConnection | None:
        """The open connection to ``addr``, or ``None`` (never connects). Safe from any thread:
        blocking callers use it with :meth:`RemotingConnection.invoke_threadsafe` and fall back
        to :meth:`invoke` on the loop when it gives ``None``."""
        conn = self._connections.get(addr)
        return None if conn is None or conn.is_closed else conn

    async def invoke_oneway(self, addr: str, request: RemotingCommand) -> None:
        """Send ``request`` to ``addr`` marked oneway (no response is sent)."""
        conn = self._connections.get(addr)
        if conn is None or conn.is_closed:
            conn = await self.get_connection(addr)
        await conn.invoke_oneway(request)

    async def call(self, addr: str, call: Call[T], timeout: float | None = None) -> T:
        """Send ``call``'s request to ``addr`` and return its parsed answer (``None`` for a
        oneway call); a refusal raises the code's BrokerError, noted with the call and the peer."""
        if call.oneway:
            await self.invoke_oneway(addr, call.request)
            return None  # type: ignore[return-value]  # oneway calls are Call[None]
        response = await self.invoke(addr, call.request, timeout)
        try:
            return call.parse(response)
        except BrokerError as exc:
            add_call_note(exc, call, addr)
            raise


def tls_failure(addr: str, exc: BaseException) -> str:
    """One line for a TLS connection to ``addr`` that failed with ``exc``."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        why = (
            f"its certificate is not trusted ({exc.verify_message or exc.reason}): name the CA "
            "that signed it (--tls-ca, tls.client.trustCertPath)"
        )
    elif isinstance(exc, ssl.SSLError) and not isinstance(exc, ssl.SSLEOFError | ssl.SSLZeroReturnError):
        why = f"{exc.reason or exc}"
    else:
        why = "the server closed the connection (is TLS on there? its tls.server.mode may be disabled)"
    return f"cannot connect to {addr}: TLS handshake failed: {why}"


def add_call_note(exc: BaseException, call: Call[object], addr: str) -> None:
    """Note on ``exc`` which call failed at which peer (``"max offset of broker-a:3 at 10.0.0.1:10911"``)."""
    exc.add_note(f"{call.what} at {addr}")
