"""A frame-aware TCP relay: listeners that forward RocketMQ remoting connections to an upstream
address, decoding every frame in both directions and asking a policy what to do with it.

This is the transport half of a fault-injecting proxy (the chaos harness's, :mod:`rocketq.chaos`):
the relay only moves bytes and keeps the connections; every decision - accept a connection, forward
a frame, drop it, delay it, send a different one - is the :class:`RelayPolicy`'s, a plain object
with no I/O that gets the time as ``now``::

    relay = RelayThread(policy)                       # its own event loop, in a daemon thread
    addr = relay.listen(("c1", "broker-a"), "127.0.0.1:10911")   # clients connect to addr
    relay.close_links(lambda link: link.tag == ("c1", "broker-a"))  # cut what is open now
    relay.close()

Each accepted connection becomes a :class:`Link` to a fresh upstream connection; frames are
decoded with :class:`~rocketq.protocol.frame.FrameDecoder` and re-encoded with
:func:`~rocketq.protocol.frame.encode_frame` (byte for byte what the peer sent, for any frame a
RocketMQ peer writes). A frame that does not decode closes the link. Back-pressure is passed
through: when one side's writes pile up, the other side's reading pauses. Loopback by default.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import itertools
import logging
import socket
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from rocketq.errors import RemoteProtocolError
from rocketq.lifecycle import Closing
from rocketq.protocol.command import RemotingCommand
from rocketq.protocol.frame import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, encode_frame
from rocketq.remoting.client import parse_address
from rocketq.remoting.loop import new_event_loop

__all__ = ["Direction", "FrameRelay", "Link", "PassThrough", "RelayPolicy", "RelayThread"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Direction(enum.StrEnum):
    """Which way a frame travels through the relay."""

    #: from the client that connected to the relay towards the upstream server
    TO_SERVER = "to-server"
    #: from the upstream server back to the client (responses, and the server's own requests)
    TO_CLIENT = "to-client"


@dataclass(frozen=True, slots=True)
class Link:
    """One relayed connection: its number, the tag of the listener it came through, the upstream."""

    id: int
    tag: Hashable
    upstream: str


Outgoing = Sequence[tuple[float, RemotingCommand]]
"""What to send on for a frame: ``(delay in seconds, command)`` pairs, in the frame's direction
(an empty sequence drops the frame)."""


class RelayPolicy(Protocol):
    """Decides what happens to each connection and frame (called on the relay's loop)."""

    def accept(self, link: Link, now: float) -> bool:
        """Whether to relay a new connection (False: it is closed at once)."""
        ...

    def on_frame(self, link: Link, direction: Direction, cmd: RemotingCommand, now: float) -> Outgoing:
        """What to send on for ``cmd`` (``[(0.0, cmd)]`` forwards it unchanged)."""
        ...

    def on_close(self, link: Link, now: float) -> None:
        """The link closed (either side, or :meth:`FrameRelay.close_links`); called once."""
        ...


class PassThrough:
    """A policy that relays everything unchanged."""

    def accept(self, link: Link, now: float) -> bool:
        return True

    def on_frame(self, link: Link, direction: Direction, cmd: RemotingCommand, now: float) -> Outgoing:
        return ((0.0, cmd),)

    def on_close(self, link: Link, now: float) -> None:
        return None


class _Side(asyncio.Protocol):
    """One end of a link: the accepted client connection or the upstream connection."""

    def __init__(self, conn: _Connection, direction: Direction) -> None:
        self.conn = conn
        #: the direction of the frames this side *receives*
        self.direction = direction
        self.transport: asyncio.Transport | None = None
        self.decoder = FrameDecoder(conn.relay.max_frame_size)
        self.pending: list[bytes] = []  # bytes for this side written before it connected
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it
        transport = cast(asyncio.Transport, transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.pending:
            transport.write(b"".join(self.pending))
            self.pending.clear()
        self.conn.side_made(self)

    def data_received(self, data: bytes) -> None:
        self.conn.received(self, data)

    def eof_received(self) -> bool | None:
        return False  # close this side; connection_lost closes the link

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.conn.close()

    def pause_writing(self) -> None:
        self.conn.peer(self).pause_reading()

    def resume_writing(self) -> None:
        self.conn.peer(self).resume_reading()

    def pause_reading(self) -> None:
        if self.transport is not None and not self.closed:
            with contextlib.suppress(RuntimeError):
                self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self.transport is not None and not self.closed:
            with contextlib.suppress(RuntimeError):
                self.transport.resume_reading()

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        if self.transport is None:
            self.pending.append(data)
        else:
            self.transport.write(data)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self.closed = True


class _Connection:
    """A client connection and its upstream connection, relayed through the policy."""

    def __init__(self, relay: FrameRelay, link: Link) -> None:
        self.relay = relay
        self.link = link
        self.client = _Side(self, Direction.TO_SERVER)
        self.server = _Side(self, Direction.TO_CLIENT)
        self.closed = False

    def peer(self, side: _Side) -> _Side:
        return self.server if side is self.client else self.client

    def side_made(self, side: _Side) -> None:
        if side is self.client:
            self.relay.opened(self)

    def received(self, side: _Side, data: bytes) -> None:
        if self.closed:
            return
        decoder = side.decoder
        relay = self.relay
        try:
            decoder.receive_data(data)
            while (cmd := decoder.next_command()) is not None:
                for delay, out in relay.policy.on_frame(self.link, side.direction, cmd, relay.clock()):
                    relay.send(self.peer(side), out, delay)
        except RemoteProtocolError as exc:
            logger.warning(
                "relay link %s (%s): undecodable frame, closing: %s", self.link.id, self.link.tag, exc
            )
            self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.client.close()
        self.server.close()
        self.relay.closed(self)


class FrameRelay:
    """Listeners relaying frames to upstream addresses under a :class:`RelayPolicy` (one event loop).

    ``clock`` gives the ``now`` passed to the policy (default :func:`time.monotonic`).
    """

    def __init__(
        self,
        policy: RelayPolicy,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        connect_timeout: float = 3.0,
    ) -> None:
        self.policy = policy
        self.clock = clock
        self.max_frame_size = max_frame_size
        self.connect_timeout = connect_timeout
        self._servers: list[asyncio.Server] = []
        self._connections: dict[int, _Connection] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self._closing = False

    @property
    def links(self) -> list[Link]:
        """The links open now."""
        return [c.link for c in self._connections.values()]

    async def listen(self, tag: Hashable, upstream: str, host: str = "127.0.0.1", port: int = 0) -> str:
        """Listen on ``host:port`` (0: a free port) and relay each connection to ``upstream``;
        returns the listening ``host:port``."""
        parse_address(upstream)  # refuse a malformed address now, not at the first connection
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: self._accepted(tag, upstream), host, port)
        self._servers.append(server)
        sock_host, sock_port = server.sockets[0].getsockname()[:2]
        return f"{sock_host}:{sock_port}"

    def _accepted(self, tag: Hashable, upstream: str) -> _Side:
        conn = _Connection(self, Link(next(self._ids), tag, upstream))
        return conn.client

    def opened(self, conn: _Connection) -> None:
        """The client side connected: ask the policy, then connect upstream."""
        if self._closing or not self.policy.accept(conn.link, self.clock()):
            conn.closed = True  # refused: nothing to report to the policy
            conn.client.close()
            return
        self._connections[conn.link.id] = conn
        task = asyncio.get_running_loop().create_task(self._connect(conn))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _connect(self, conn: _Connection) -> None:
        host, port = parse_address(conn.link.upstream)
        loop = asyncio.get_running_loop()
        try:
            await asyncio.wait_for(
                loop.create_connection(lambda: conn.server, host, port), self.connect_timeout
            )
        except (OSError, TimeoutError) as exc:
            logger.info("relay link %s: cannot reach %s: %s", conn.link.id, conn.link.upstream, exc)
            conn.close()

    def send(self, side: _Side, cmd: RemotingCommand, delay: float) -> None:
        """Write ``cmd`` to ``side`` now or after ``delay`` seconds (dropped if it closed meanwhile)."""
        data = encode_frame(cmd)
        if delay <= 0:
            side.write(data)
        else:
            asyncio.get_running_loop().call_later(delay, side.write, data)

    def closed(self, conn: _Connection) -> None:
        if self._connections.pop(conn.link.id, None) is not None:
            self.policy.on_close(conn.link, self.clock())

    def close_links(self, predicate: Callable[[Link], bool]) -> int:
        """Close every open link ``predicate`` picks (both sides); how many."""
        doomed = [c for c in self._connections.values() if predicate(c.link)]
        for conn in doomed:
            conn.close()
        return len(doomed)

    async def close(self) -> None:
        """Stop listening and close every link."""
        self._closing = True
        for server in self._servers:
            server.close()
        self.close_links(lambda link: True)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 1.0)
        self._servers.clear()


class RelayThread(Closing):
    """A :class:`FrameRelay` on an event loop of its own, in a daemon thread, for blocking callers.

    The policy's methods run on that thread; a policy whose state other threads read must guard it.
    """

    def __init__(self, policy: RelayPolicy, **options: Any) -> None:
        self.loop = new_event_loop()
        self.relay = FrameRelay(policy, **options)
        self._thread = threading.Thread(target=self._run, name="rocketq-relay", daemon=True)
        self._started = threading.Event()
        self._thread.start()
        self._started.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    def _call(self, fn: Callable[[], T], timeout: float = 10.0) -> T:
        future: Future[T] = Future()

        def run() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

        self.loop.call_soon_threadsafe(run)
        return future.result(timeout)

    def listen(self, tag: Hashable, upstream: str, host: str = "127.0.0.1", port: int = 0) -> str:
        """:meth:`FrameRelay.listen`, from any thread."""
        return asyncio.run_coroutine_threadsafe(
            self.relay.listen(tag, upstream, host, port), self.loop
        ).result(10.0)

    def close_links(self, predicate: Callable[[Link], bool]) -> int:
        """:meth:`FrameRelay.close_links`, from any thread."""
        return self._call(lambda: self.relay.close_links(predicate))

    def close(self) -> None:
        """Close the relay and stop its thread (idempotent)."""
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self.relay.close(), self.loop).result(10.0)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10.0)
