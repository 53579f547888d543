"""The asyncio remoting server: accepts connections and dispatches their requests by code.

A thin owner of an :class:`asyncio.Server` and its :class:`~rocketq.remoting.connection.RemotingConnection`
objects; the protocol work (decoding, dispatch, responses, flow control) lives in the connection.

::

    async with RemotingServer() as server:          # 127.0.0.1, a free port
        server.register_handler(RequestCode.HEART_BEAT, lambda conn, req: req.response(code=0))
        print(server.address)                       # e.g. 127.0.0.1:40123
"""

from __future__ import annotations

import asyncio
import logging
import socket

from rocketq.errors import ClientStateError, RemotingError
from rocketq.lifecycle import AsyncStartClose
from rocketq.remoting.acceptor import TlsAcceptor, close_listening, listen_socket
from rocketq.remoting.admission import FastFail
from rocketq.remoting.config import ServerConfig
from rocketq.remoting.connection import RemotingConnection
from rocketq.remoting.endpoint import Endpoint
from rocketq.remoting.guard import InputBudget, PeerLog
from rocketq.remoting.handlers import ConnectionListener
from rocketq.remoting.offload import Offloader
from rocketq.remoting.settings import ConnectionSettings, ServerParts
from rocketq.remoting.tls import server_context

__all__ = ["RemotingServer"]

logger = logging.getLogger(__name__)


class RemotingServer(Endpoint, AsyncStartClose):
    """Serve RocketMQ remoting requests on ``host:port`` (port 0: any free port).

    Handlers are registered by request code (:meth:`register_handler`), with an optional fallback
    (:meth:`set_default_handler`); a handler gets the :class:`RemotingConnection` the request came
    on (its ``remote_address``, ``invoke``/``invoke_oneway`` to send requests to that client over
    the same connection, and identity usable as a dict key) and the request. See
    :mod:`rocketq.remoting.connection` for how requests, errors and back-pressure are handled.

    Connection events go to :class:`ConnectionListener` objects (:meth:`add_listener`):
    ``on_connect``, ``on_close`` (once per connection, whatever closed it) and ``on_idle`` (after
    ``config.idle_timeout`` seconds without traffic; the server then closes the connection unless
    ``config.close_idle`` is false, as RocketMQ's server does).

    ``config.tls`` sets RocketMQ's TLS mode (:mod:`rocketq.remoting.tls`): disabled (plaintext, the
    default), permissive (each connection's first byte picks TLS or plaintext) or enforcing (TLS
    only); a certificate file that cannot be read is a ConfigError here, before anything binds.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        config: ServerConfig | None = None,
        listener: ConnectionListener | None = None,
    ) -> None:
        self.host = host
        self._requested_port = port
        self.config = config if config is not None else ServerConfig()
        super().__init__(listener)
        self._server: asyncio.Server | None = None
        #: the SSL context of ``config.tls`` (None: TLS disabled); its files are read now
        self.ssl_context = server_context(self.config.tls)
        self._acceptor: TlsAcceptor | None = None
        self._connections: set[RemotingConnection] = set()
        self._port: int | None = None
        self._closing = False
        self._closed = asyncio.Event()
        self._budget = InputBudget(self.config.max_buffered_total)
        #: warnings about peers' behaviour, once per peer host and kind per ``peer_log_window``
        self.peer_log = PeerLog(
            logging.getLogger("rocketq.remoting.connection"), window=self.config.peer_log_window
        )
        self._sweeper: asyncio.TimerHandle | None = None
        limits = self.config.fast_fail
        #: the answers of requests that waited too long (``config.fast_fail``)
        self.fast_fail = FastFail(limits) if limits else None
        threshold = self.config.offload_threshold
        #: decodes large request bodies off the loop (``config.offload_threshold``), if set
        self.offloader = (
            None
            if threshold is None
            else Offloader(
                threshold=threshold,
                budget=self._budget,
                pause_gc=self.config.pause_gc_for_large_requests,
            )
        )

    def __repr__(self) -> str:
        if self._port is None:
            return f"<RemotingServer {self.host}:{self._requested_port} (not started)>"
        return f"<RemotingServer {self.address} connections={len(self._connections)}>"

    # ------------------------------------------------------------------ state

    @property
    def port(self) -> int:
        """The bound port (known after :meth:`start`)."""
        if self._port is None:
            raise ClientStateError("RemotingServer.port is known only after start()")
        return self._port

    @property
    def address(self) -> str:
        """``"host:port"`` as bound, the form RocketMQ addresses take."""
        return f"{self.host}:{self.port}"

    @property
    def connections(self) -> frozenset[RemotingConnection]:
        """The connections open now."""
        return frozenset(self._connections)

    @property
    def is_serving(self) -> bool:
        if self._acceptor is not None:
            return self._acceptor.is_serving()
        return self._server is not None and self._server.is_serving()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Bind and start accepting connections."""
        if self._server is not None or self._acceptor is not None:
            raise ClientStateError(f"{self!r} is already started")
        if self._closing:
            raise ClientStateError(f"{self!r} is closed; make a new one")
        loop = asyncio.get_running_loop()
        try:
            if self.ssl_context is None:
                self._server = await loop.create_server(
                    self._new_connection,
                    self.host,
                    self._requested_port,
                    backlog=self.config.backlog,
                    reuse_address=True,
                )
                sock = self._server.sockets[0]
            else:
                sock = self._start_tls_acceptor()
        except OSError as exc:
            raise RemotingError(f"cannot listen on {self.host}:{self._requested_port}: {exc}") from exc
        self._port = sock.getsockname()[1]
        logger.info("remoting server listening on %s (TLS %s)", self.address, self.config.tls.mode)
        if self.config.frame_read_timeout is not None:
            self._schedule_sweep()

    def _start_tls_acceptor(self) -> socket.socket:
        """Bind, listen, and accept through a :class:`TlsAcceptor` (the permissive and enforcing
        modes: each connection's first byte is looked at before it is served)."""
        assert self.ssl_context is not None
        sock = listen_socket(self.host, self._requested_port, self.config.backlog)
        self._acceptor = TlsAcceptor(
            sock,
            self._new_connection,
            self.ssl_context,
            self.config.tls.mode,
            handshake_timeout=self.config.tls.handshake_timeout,
            on_refused=self._refused,
            admit=lambda pending: len(self._connections) + pending < self.config.max_connections,
        )
        self._acceptor.start()
        return sock

    def _refused(self, peer: str, kind: str, reason: str) -> None:
        self.peer_log.report(peer, kind, asyncio.get_running_loop().time(), "%s", reason)

    async def serve_forever(self) -> None:
        """Start if not started, then return only once :meth:`close` has finished."""
        if self._server is None and not self._closing:
            await self.start()
        await self._closed.wait()

    async def close(self, grace: float = 0.0) -> None:
        """Stop accepting, close every connection and stop every running handler.

        With ``grace`` > 0, reading stops first and handlers already running get up to ``grace``
        seconds to finish and answer before they are cancelled.
        """
        if self._closing:
            return
        self._closing = True
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        server, self._server = self._server, None
        acceptor, self._acceptor = self._acceptor, None
        await close_listening(server, acceptor)
        connections = list(self._connections)
        if grace > 0:
            running: list[asyncio.Task[None]] = []
            for conn in connections:
                conn.stop_reading()
                running.extend(conn.running_handlers)
            if running:
                await asyncio.wait(running, timeout=grace)
        tasks: list[asyncio.Task[None]] = []
        for conn in connections:
            tasks.extend(conn.cancel_handlers())
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(*(conn.shutdown("server closed") for conn in connections))
        if self.offloader is not None:
            self.offloader.close()
        if server is not None:
            await server.wait_closed()
        self._closed.set()
        logger.info("remoting server on %s closed", self.address if self._port is not None else self.host)

    # ------------------------------------------------------------------ connections

    def _new_connection(self) -> RemotingConnection:
        cfg = self.config
        settings = ConnectionSettings.of(
            cfg,
            close_idle=cfg.close_idle,
            pause_reads_on_write_pressure=True,
            read_time_slice=cfg.read_time_slice,
        )
        parts = ServerParts(
            request_limits=cfg.request_limits,
            input_budget=self._budget,
            offloader=self.offloader,
            fast_fail=self.fast_fail,
        )
        return self._connection(settings, server=parts)

    def _connection_opened(self, conn: RemotingConnection) -> None:
        if self._closing:
            conn.close("server closing")
            return
        limit = self.config.max_connections
        if len(self._connections) >= limit:
            self.peer_log.report(
                conn.remote_address,
                "max-connections",
                asyncio.get_running_loop().time(),
                "refusing a connection from %s: %d connections are open, the most this server takes",
                conn.remote_address,
                limit,
            )
            conn.abort(f"refused: {limit} connections already open")
            return
        self._connections.add(conn)
        logger.debug("%r: accepted", conn)
        for listener in tuple(self._listeners):
            conn._call_event(listener.on_connect, "on_connect")

    def _connection_closed(self, conn: RemotingConnection) -> None:
        if conn not in self._connections:
            return  # refused while closing: its on_connect never ran
        self._connections.discard(conn)
        logger.debug("%r: %s", conn, conn.close_reason)
        for listener in tuple(self._listeners):
            conn._call_event(listener.on_close, "on_close")

    @property
    def buffered_input(self) -> int:
        """Bytes all connections hold undecoded now (bounded by ``config.max_buffered_total``)."""
        return self._budget.used

    def sweep(self, now: float) -> list[RemotingConnection]:
        """Close every connection whose incomplete frame began more than ``config.frame_read_timeout``
        seconds before ``now`` (loop time); returns them. Runs every second on its own; tests
        call it with the time they want."""
        timeout = self.config.frame_read_timeout
        if timeout is None:
            return []
        late: list[RemotingConnection] = []
        for conn in list(self._connections):
            started = conn.frame_started
            if started is None or conn.is_closed:
                continue
            if conn.reading_paused:
                # frames wait for us (back-pressure), not for the peer: its time starts again
                conn.frame_started = now
                continue
            if now - started > timeout:
                self.peer_log.report(
                    conn.remote_address,
                    "slow-frame",
                    now,
                    "%r: closing the connection: a frame begun %.1fs ago is still incomplete (%d bytes held)",
                    conn,
                    now - started,
                    conn.buffered_input,
                )
                conn.abort(f"a frame from {conn.remote_address} took longer than {timeout:g}s to arrive")
                late.append(conn)
        return late

    def _schedule_sweep(self) -> None:
        loop = asyncio.get_running_loop()
        self._sweeper = loop.call_later(1.0, self._run_sweep)

    def _run_sweep(self) -> None:
        self._sweeper = None
        if self._closing:
            return
        self.sweep(asyncio.get_running_loop().time())
        self._schedule_sweep()
