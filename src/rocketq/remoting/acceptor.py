"""Accepting connections on a port that speaks TLS: the first byte decides, as in RocketMQ 4.9.

4.9's ``NettyRemotingServer`` puts a ``HandshakeHandler`` first on every connection: it looks at
the first byte (0x16 opens a TLS record carrying a ClientHello) and either adds TLS to the
connection or, in ``permissive`` mode, serves it in plaintext (``enforcing`` closes it).
:class:`TlsAcceptor` does the same with asyncio: it accepts, waits for the first byte and peeks at
it (``MSG_PEEK``: the byte stays in the socket), then hands the socket to the loop's
``connect_accepted_socket`` with or without the SSL context. The connection's protocol object
sees only what comes after: plaintext frames, or the TLS session's.

A peer that sends nothing within ``handshake_timeout``, or whose handshake fails, is closed and
reported (:attr:`TlsAcceptor.on_refused`); nothing it sent reaches a handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Callable

from rocketq.remoting.tls import TLS_HANDSHAKE_BYTE, TlsMode

__all__ = ["TlsAcceptor", "close_listening", "listen_socket"]

logger = logging.getLogger(__name__)

#: ``on_refused(peer, kind, reason)``: a connection closed before it was served.
Refused = Callable[[str, str, str], None]


def _peer(addr: object) -> str:
    if isinstance(addr, tuple) and len(addr) >= 2:
        host = str(addr[0])
        return f"[{host}]:{addr[1]}" if ":" in host else f"{host}:{addr[1]}"
    return str(addr)


def listen_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (0: any free port) and listening (``SO_REUSEADDR`` as
    asyncio's servers set it); an ``OSError`` when it cannot be."""
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    return socket.create_server((host, port), family=family, backlog=backlog)


class TlsAcceptor:
    """Accept on ``sock`` (bound and listening); serve each connection by ``factory()``'s protocol,
    over TLS with ``context`` when its first byte opens a TLS handshake, in plaintext otherwise
    (``permissive``) or not at all (``enforcing``). ``admit()`` says whether one more connection
    may be taken now (the server's ``max_connections``, counting those still being sniffed)."""

    def __init__(
        self,
        sock: socket.socket,
        factory: Callable[[], asyncio.Protocol],
        context: ssl.SSLContext,
        mode: TlsMode,
        *,
        handshake_timeout: float,
        on_refused: Refused,
        admit: Callable[[int], bool],
    ) -> None:
        self.sock = sock
        self._factory = factory
        self._context = context
        self._mode = mode
        self._timeout = handshake_timeout
        self.on_refused = on_refused
        self._admit = admit
        self._task: asyncio.Task[None] | None = None
        #: connections accepted and not yet handed to the loop (waiting for a byte, handshaking)
        self._pending: set[asyncio.Task[None]] = set()

    @property
    def pending(self) -> int:
        return len(self._pending)

    def is_serving(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        self.sock.setblocking(False)
        self._task = asyncio.get_running_loop().create_task(self._accept_loop())

    async def close(self) -> None:
        """Stop accepting, close the listening socket and every connection not yet served."""
        tasks = [t for t in (self._task, *self._pending) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._task = None
        self.sock.close()

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, addr = await loop.sock_accept(self.sock)
            except OSError as exc:  # out of file descriptors, a peer gone before accept ...
                logger.warning("accepting a connection on %s failed: %s", _peer(self.sock.getsockname()), exc)
                await asyncio.sleep(0.1)  # as asyncio's own accept loop backs off
                continue
            peer = _peer(addr)
            if not self._admit(len(self._pending)):
                self.on_refused(peer, "max-connections", f"refused {peer}: max_connections are open")
                conn.close()
                continue
            task = loop.create_task(self._serve(conn, peer))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

    async def _serve(self, conn: socket.socket, peer: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            first = await asyncio.wait_for(self._first_byte(conn), self._timeout)
        except TimeoutError:
            self.on_refused(peer, "tls-handshake", f"closed {peer}: nothing sent in {self._timeout:g}s")
            conn.close()
            return
        except OSError:  # reset before it said a word
            conn.close()
            return
        except asyncio.CancelledError:
            conn.close()
            raise
        if first is None:  # closed before sending anything
            conn.close()
            return
        tls = first == TLS_HANDSHAKE_BYTE
        if not tls and self._mode is TlsMode.ENFORCING:
            self.on_refused(
                peer, "plaintext", f"closed a plaintext connection from {peer}: this server enforces TLS"
            )
            conn.close()
            return
        try:
            await loop.connect_accepted_socket(
                self._factory,
                conn,
                ssl=self._context if tls else None,
                ssl_handshake_timeout=self._timeout if tls else None,
            )
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            self.on_refused(peer, "tls-handshake", f"TLS handshake with {peer} failed: {exc or repr(exc)}")
            conn.close()
        except asyncio.CancelledError:
            conn.close()
            raise

    @staticmethod
    async def _first_byte(conn: socket.socket) -> int | None:
        """The first byte the peer sent, left in the socket (``None``: it closed first)."""
        loop = asyncio.get_running_loop()
        fd = conn.fileno()
        while True:
            try:
                data = conn.recv(1, socket.MSG_PEEK)
            except (BlockingIOError, InterruptedError):
                pass
            else:
                return data[0] if data else None
            readable: asyncio.Future[None] = loop.create_future()

            def wake(fut: asyncio.Future[None] = readable) -> None:
                if not fut.done():
                    fut.set_result(None)

            loop.add_reader(fd, wake)
            try:
                await readable
            finally:
                with contextlib.suppress(Exception):
                    loop.remove_reader(fd)


async def close_listening(server: asyncio.Server | None, acceptor: TlsAcceptor | None) -> None:
    """Stop accepting on a port: its plain asyncio server, its TLS acceptor (either ``None``)."""
    if server is not None:
        server.close()
    if acceptor is not None:
        await acceptor.close()
