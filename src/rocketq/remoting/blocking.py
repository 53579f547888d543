"""A blocking remoting client over a plain socket, for code without an event loop.

The Spark reader's executors, short CLI calls and the producer's per-thread sockets want requests
with no event loop; the sans-I/O connection core
(:class:`~rocketq.protocol.connection.ConnectionCore`: the codec, the one correlation state
machine, the dispatch decisions) makes that a thin loop of socket code that only moves bytes,
waits, and runs the handler the core names::

    with BlockingRemotingClient("127.0.0.1:9876") as client:
        route = client.call(calls.get_route_info("TopicTest"))          # a typed call
        response = client.invoke(RemotingCommand.request(105, {"topic": "T"}))  # a raw request

Pipelining, for readers that keep several requests in flight on one connection (the Spark
source's pulls): :meth:`BlockingRemotingClient.send_request` sends and returns a
:class:`Ticket` at once, :meth:`BlockingRemotingClient.receive` waits for that ticket's
response; answers to other tickets that arrive first are kept on their tickets.

One connection, made on first use and remade after it fails (tickets still out then fail). Calls
from several threads are serialised by a lock. Requests the server sends on this connection (a
broker's ``NOTIFY_CONSUMER_IDS_CHANGED``) are handled only while a call is reading: with a
registered handler, else answered ``REQUEST_CODE_NOT_SUPPORTED`` (oneway ones are ignored).
"""

from __future__ import annotations

import logging
import socket
import ssl
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from rocketq.errors import (
    BrokerError,
    RemotingClosedError,
    RemotingConnectError,
    RemotingTimeoutError,
)
from rocketq.lifecycle import Closing
from rocketq.protocol.acl import Credentials, sign
from rocketq.protocol.calls import Call
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.command import OpaqueSequence, RemotingCommand
from rocketq.protocol.connection import (
    ConnectionCore,
    Event,
    NotSupported,
    ProtocolError,
    RequestArrived,
    ResponseArrived,
)
from rocketq.protocol.frame import DEFAULT_MAX_FRAME_SIZE, FrameDecoder
from rocketq.remoting.client import add_call_note, parse_address, tls_failure
from rocketq.remoting.handlers import describe_exception
from rocketq.remoting.tls import TlsClientConfig, client_context, silent_close_hint

__all__ = ["BlockingHandler", "BlockingRemotingClient", "Ticket"]

T = TypeVar("T")

logger = logging.getLogger(__name__)

#: ``handler(client, request)`` for a server-initiated request: the response, or ``None``.
BlockingHandler = Callable[["BlockingRemotingClient", RemotingCommand], RemotingCommand | None]

_RECV_SIZE = 256 * 1024

#: ``struct timeval`` (``SO_RCVTIMEO`` / ``SO_SNDTIMEO``; Windows takes milliseconds instead)
_TIMEVAL = struct.Struct("@ll")
_WINDOWS = sys.platform == "win32"
#: how far past its deadline a read may wait before the socket's timeout is set again (seconds)
_TIMEOUT_SLACK = 0.005


class Ticket:
    """A request sent and not yet received (see :meth:`BlockingRemotingClient.send_request`)."""

    __slots__ = ("code", "deadline", "opaque", "response", "timeout")

    def __init__(self, opaque: int, code: int, deadline: float, timeout: float) -> None:
        self.opaque = opaque
        self.code = code
        #: ``time.monotonic()`` by which the response must come.
        self.deadline = deadline
        self.timeout = timeout
        #: The response, once it arrived.
        self.response: RemotingCommand | None = None

    def __repr__(self) -> str:
        return f"Ticket(opaque={self.opaque}, code={self.code}, answered={self.response is not None})"


class BlockingRemotingClient(Closing):
    """Send requests to one RocketMQ peer over a blocking socket.

    Errors are those of :class:`~rocketq.remoting.RemotingClient`: ``RemotingConnectError``,
    ``RemotingTimeoutError`` (the connection stays usable; a late response is skipped) and
    ``RemotingClosedError`` (the peer closed or the stream broke; the next call reconnects).

    With ``tls.enable`` the socket speaks TLS (:class:`~rocketq.remoting.tls.TlsClientConfig`).
    With ``credentials`` every request sent is signed for RocketMQ 4.9's ACL, as
    :class:`~rocketq.remoting.acl.AclSigningHook` signs a :class:`~rocketq.remoting.RemotingClient`'s.
    """

    def __init__(
        self,
        addr: str,
        *,
        connect_timeout: float = 3.0,
        request_timeout: float = 3.0,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        credentials: Credentials | None = None,
        tls: TlsClientConfig | None = None,
    ) -> None:
        self.addr = addr
        self.credentials = credentials
        self._ssl = None if tls is None else client_context(tls)
        self._host, self._port = parse_address(addr)
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self._max_frame_size = max_frame_size
        self._handlers: dict[int, BlockingHandler] = {}
        self._opaques = OpaqueSequence()
        self._core = self._new_core()
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._closed = False
        #: whether the socket brought a byte yet (a "closed before a word" hint)
        self._heard = False
        #: the socket's ``SO_RCVTIMEO``/``SO_SNDTIMEO`` in seconds (0: none set yet)
        self._armed = 0.0
        #: reads land here (a fresh 256 KiB ``bytes`` a read cost an mmap, mremap and munmap)
        self._recv_view = memoryview(bytearray(_RECV_SIZE))

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("connected" if self._sock is not None else "idle")
        return f"<BlockingRemotingClient {self.addr} {state}>"

    def _new_core(self) -> ConnectionCore[Ticket, BlockingHandler]:
        """The state of one connection (made again with each socket: a broken stream's bytes
        and tickets are gone with it)."""
        decoder = FrameDecoder(self._max_frame_size)
        return ConnectionCore(self._handlers.get, opaques=self._opaques, decoder=decoder)

    def register_handler(self, code: int, handler: BlockingHandler) -> None:
        """Answer server-initiated requests with ``code`` by ``handler(client, request)``."""
        self._handlers[int(code)] = handler

    @property
    def ssl_enabled(self) -> bool:
        """Whether this client speaks TLS (``tls.enable``)."""
        return self._ssl is not None

    @property
    def is_connected(self) -> bool:
        return self._sock is not None

    # ------------------------------------------------------------------ connection

    def connect(self) -> None:
        """Connect now (calls connect on demand anyway)."""
        with self._lock:
            self._ensure_connected()

    def _ensure_connected(self) -> socket.socket:
        if self._closed:
            raise RemotingClosedError(f"cannot send to {self.addr}: the client is closed")
        sock = self._sock
        if sock is not None:
            return sock
        try:
            sock = socket.create_connection((self._host, self._port), timeout=self.connect_timeout)
        except TimeoutError:
            raise RemotingConnectError(
                f"cannot connect to {self.addr}: no answer within {self.connect_timeout:g}s"
            ) from None
        except OSError as exc:
            raise RemotingConnectError(f"cannot connect to {self.addr}: {exc.strerror or exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._ssl is not None:
            return self._connected(self._handshake(sock, self._ssl))
        # Blocking mode with the kernel's own timeouts: a Python timeout costs a poll() before
        # every send and read, and switching it an ioctl; these are set only when a deadline
        # needs it (:meth:`_arm`).
        sock.settimeout(None)
        return self._connected(sock)

    def _connected(self, sock: socket.socket) -> socket.socket:
        self._armed = 0.0
        self._sock = sock
        self._core = self._new_core()
        self._heard = False
        return sock

    def _handshake(self, sock: socket.socket, ctx: ssl.SSLContext) -> ssl.SSLSocket:
        """``sock`` wrapped in TLS, its handshake done within the connect timeout. A TLS socket
        keeps Python's own timeouts (:meth:`_arm`): OpenSSL retries a read the kernel's
        ``SO_RCVTIMEO`` interrupts, so only a poll before each read ends it in time."""
        try:
            tls = ctx.wrap_socket(sock, server_hostname=self._host)
        except (ssl.SSLError, ssl.CertificateError, ConnectionError) as exc:
            sock.close()
            raise RemotingConnectError(tls_failure(self.addr, exc)) from exc
        except TimeoutError:
            sock.close()
            raise RemotingConnectError(
                f"cannot connect to {self.addr}: TLS handshake not done within {self.connect_timeout:g}s"
            ) from None
        except OSError as exc:
            sock.close()
            raise RemotingConnectError(f"cannot connect to {self.addr}: {exc.strerror or exc}") from exc
        return tls

    def _arm(self, sock: socket.socket, remaining: float) -> None:
        """Make a blocking send or read on ``sock`` give up (``EAGAIN``) within ``remaining``
        seconds, and not more than :data:`_TIMEOUT_SLACK` after them. A timeout already set that
        fits is kept: one request after another with the same timeout set it once."""
        if self._ssl is not None:
            sock.settimeout(max(remaining, 1e-6))
            return
        armed = self._armed
        if remaining + _TIMEOUT_SLACK >= armed >= remaining * 0.5 and armed:
            return
        seconds = int(remaining)
        micros = int((remaining - seconds) * 1_000_000)
        if not seconds and not micros:
            micros = 1  # a zero timeval means "no timeout"
        if _WINDOWS:  # a DWORD of milliseconds there
            millis = max(1, seconds * 1000 + micros // 1000)
            value = struct.pack("=I", millis)
            seconds, micros = divmod(millis * 1000, 1_000_000)
        else:
            value = _TIMEVAL.pack(seconds, micros)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)
        self._armed = seconds + micros / 1_000_000

    def _drop(self) -> None:
        self._core.close()  # the answers of a broken stream never come: tickets fail
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.close()
            except OSError:  # pragma: no cover - close on a broken socket
                pass

    def close(self) -> None:
        """Close the connection; later calls raise RemotingClosedError."""
        with self._lock:
            self._closed = True
            self._drop()

    # ------------------------------------------------------------------ requests

    def call(self, call: Call[T], timeout: float | None = None) -> T:
        """Send ``call``'s request and return its parsed answer (``None`` for a oneway call); a
        refusal raises the code's BrokerError, noted with the call and this peer."""
        if call.oneway:
            self.invoke_oneway(call.request, timeout)
            return None  # type: ignore[return-value]  # oneway calls are Call[None]
        response = self.invoke(call.request, timeout)
        try:
            return call.parse(response)
        except BrokerError as exc:
            add_call_note(exc, call, self.addr)
            raise

    def invoke(self, request: RemotingCommand, timeout: float | None = None) -> RemotingCommand:
        """Send ``request`` and return its response (waiting at most ``timeout`` seconds)."""
        return self.receive(self.send_request(request, timeout))

    def send_request(self, request: RemotingCommand, timeout: float | None = None) -> Ticket:
        """Send ``request`` and return at once: :meth:`receive` the ticket for its response
        (within ``timeout`` seconds of now)."""
        if timeout is None:
            timeout = self.request_timeout
        deadline = time.monotonic() + timeout
        if self.credentials is not None:
            sign(request, self.credentials)
        with self._lock:
            sock = self._ensure_connected()
            core = self._core
            opaque, head, body = core.prepare_request(request)
            ticket = Ticket(opaque, request.code, deadline, timeout)
            core.track(opaque, request.code, ticket, deadline, timeout)
            try:
                self._sendall(sock, head + body if body else head, deadline, request.code)
            except BaseException:
                core.discard(opaque)
                raise
            return ticket

    def receive(self, ticket: Ticket) -> RemotingCommand:
        """Wait for ``ticket``'s response (reading, and keeping, the answers of others that come
        first). A timeout forgets the ticket; its late answer is skipped."""
        with self._lock:
            while ticket.response is None:
                if not self._core.is_waiting(ticket.opaque):  # the connection broke, or it expired
                    raise RemotingClosedError(
                        f"no response to request code {ticket.code} (opaque {ticket.opaque}) from "
                        f"{self.addr}: the connection was lost"
                    )
                sock = self._ensure_connected()
                event = self._next_event(sock, ticket)
                if isinstance(event, ResponseArrived):
                    event.waiter.response = event.response
                elif isinstance(event, RequestArrived):
                    self._serve(sock, event.request, event.handler, ticket.deadline)
                elif isinstance(event, NotSupported):
                    logger.warning("%r:%s", self, event.remark)
                    if event.response is not None:
                        self._answer(sock, event.request, event.response, ticket.deadline)
                else:  # a late answer (its ticket timed out) or a stray one; nothing else comes here
                    logger.debug("%r: skipped a response that no ticket waits for: %r", self, event)
            return ticket.response

    def invoke_oneway(self, request: RemotingCommand, timeout: float | None = None) -> None:
        """Send ``request`` marked oneway; returns once it is written."""
        deadline = time.monotonic() + (self.request_timeout if timeout is None else timeout)
        if self.credentials is not None:
            sign(request, self.credentials)
        with self._lock:
            sock = self._ensure_connected()
            head, body = self._core.send_oneway(request)
            self._sendall(sock, head + body if body else head, deadline, request.code)

    def _sendall(self, sock: socket.socket, data: bytes, deadline: float, code: int) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RemotingTimeoutError(f"request code {code} to {self.addr}: no time left to send it")
        self._arm(sock, remaining)
        try:
            sock.sendall(data)
        except (TimeoutError, BlockingIOError):
            # part of the frame may be out: the stream cannot be trusted any more
            self._drop()
            raise RemotingTimeoutError(f"request code {code} to {self.addr}: not sent in time") from None
        except OSError as exc:
            self._drop()
            raise RemotingClosedError(f"cannot send request code {code} to {self.addr}: {exc}") from exc

    def _next_event(self, sock: socket.socket, ticket: Ticket) -> Event[Ticket, BlockingHandler]:
        """The core's next event, reading from ``sock`` until one comes or ``ticket``'s time is up."""
        core = self._core
        deadline, code, opaque, timeout = ticket.deadline, ticket.code, ticket.opaque, ticket.timeout
        while True:
            now = time.monotonic()
            event = core.next_event(now)
            if isinstance(event, ProtocolError):
                self._drop()
                raise RemotingClosedError(
                    f"{self.addr} sent bytes that are not a frame: {event.exc}"
                ) from event.exc
            if event is not None:
                return event
            remaining = deadline - now
            if remaining <= 0:
                core.expire(now)  # forget this ticket and any other past its time
                core.discard(opaque)
                raise RemotingTimeoutError(
                    f"no response from {self.addr} to request code {code} (opaque {opaque}) "
                    f"within {timeout:.3f}s"
                )
            self._read(sock, core, ticket, remaining)

    def _read(
        self,
        sock: socket.socket,
        core: ConnectionCore[Ticket, BlockingHandler],
        ticket: Ticket,
        remaining: float,
    ) -> None:
        """One read from ``sock`` into the core, waiting at most ``remaining`` seconds."""
        self._arm(sock, remaining)
        view = self._recv_view
        try:
            n = sock.recv_into(view)
        except (TimeoutError, BlockingIOError):
            return  # the deadline check of the caller raises
        except OSError as exc:
            self._drop()
            raise RemotingClosedError(
                f"no response to request code {ticket.code} (opaque {ticket.opaque}) from {self.addr}: "
                f"{exc}{self._silent_hint()}"
            ) from exc
        if not n:
            self._drop()
            raise RemotingClosedError(
                f"no response to request code {ticket.code} (opaque {ticket.opaque}) from {self.addr}: "
                f"the peer closed the connection{self._silent_hint()}"
            )
        self._heard = True
        error = core.receive_data(view[:n], time.monotonic())  # copied by the decoder
        if error is not None:
            self._drop()
            raise RemotingClosedError(
                f"{self.addr} sent bytes that are not a frame: {error.exc}"
            ) from error.exc

    def _silent_hint(self) -> str:
        """For a server that closed before sending a byte: the likely reason."""
        return "" if self._heard else silent_close_hint(self._ssl is not None)

    def _serve(
        self, sock: socket.socket, request: RemotingCommand, handler: BlockingHandler, deadline: float
    ) -> None:
        """Answer a request the server sent while we waited for our response."""
        response: RemotingCommand | None
        try:
            response = handler(self, request)
        except BrokerError as exc:
            response = request.response(code=exc.code, remark=exc.remark)
        except Exception as exc:
            logger.error("%r: handler for request code %d failed", self, request.code, exc_info=exc)
            response = request.response(code=ResponseCode.SYSTEM_ERROR, remark=describe_exception(exc))
        if response is not None and not request.is_oneway:
            self._answer(sock, request, response, deadline)

    def _answer(
        self, sock: socket.socket, request: RemotingCommand, response: RemotingCommand, deadline: float
    ) -> None:
        head, body, error = self._core.send_response(request, response)
        if error is not None:
            logger.error("%r: response to request code %d cannot be encoded: %s", self, request.code, error)
            if not head:
                return
        self._sendall(
            sock, head + body if body else head, max(deadline, time.monotonic() + 1.0), request.code
        )
