"""One remoting connection: an :class:`asyncio.Protocol` around the sans-I/O frame codec.

RocketMQ's remoting protocol is symmetric: either end of a TCP connection may send requests, and
each end answers the other's. A broker pushes ``NOTIFY_CONSUMER_IDS_CHANGED`` and asks
``GET_CONSUMER_RUNNING_INFO`` over the connection its client opened. So one class,
:class:`RemotingConnection`, serves both :class:`~rocketq.remoting.RemotingClient` and
:class:`~rocketq.remoting.RemotingServer`:

* bytes from the socket go into a :class:`~rocketq.protocol.frame.FrameDecoder`; every complete
  command that comes out is either a **response** (flag bit 0), matched to its waiting
  :meth:`invoke` by opaque, or a **request**, dispatched by code to a handler;
* a handler is called as ``handler(connection, request)`` and returns a response, ``None``, or an
  awaitable of either. A plain function runs right in the read loop, with no task made for it; an
  awaitable becomes a task of its own, so a long-polling handler never holds up the requests
  behind it, and responses go out in whatever order the handlers finish;
* frames written during one turn of the event loop (the responses to one read, the requests of
  many concurrent callers) reach the transport together, which saves system calls, but in groups
  of at most ``write_batch_frames``: the first answers of a read of 32 requests leave while the
  rest are made, so the peer (on another core) works on them at once instead of both ends taking
  turns with whole batches;
* :class:`RPCHook` objects run around every request sent and handled (RocketMQ's ACL hook point);
  a server's one request guard (:meth:`Endpoint.set_request_guard`) checks every received request
  before its handler, and its exception is the answer (the broker's ACL); for a request whose
  large body is checked on the worker thread, the guard runs there too, so it must be thread-safe;
* an unknown code is answered ``REQUEST_CODE_NOT_SUPPORTED`` with RocketMQ's remark
  ``" request type N not supported"``; a handler that raises a :class:`~rocketq.errors.BrokerError`
  answers with that error's code and remark, a :class:`~rocketq.errors.RemoteProtocolError` (the
  request does not decode) answers ``SYSTEM_ERROR`` with its text, which names the field, and any
  other exception ``SYSTEM_ERROR`` with a remark that says no more than "internal error" (the log
  has the traceback; no Python exception text reaches a peer) — the connection lives on; oneway
  requests are never answered;
* a request whose body is over its code's :class:`~rocketq.remoting.guard.RequestLimit` is
  answered ``SYSTEM_ERROR`` before anything decodes it (a large body is counted on the server's
  worker thread);
* a handler decodes a large body (:meth:`RemotingConnection.offloads`) off the event loop:
  it returns :meth:`RemotingConnection.large_request`, decodes with
  :meth:`RemotingConnection.off_loop` and applies in :meth:`RemotingConnection.time_slice`
  parts, with this connection's reading held meanwhile (:mod:`rocketq.remoting.offload`);
* bytes that are not a frame close this connection only; warnings about a peer's behaviour go
  through a :class:`~rocketq.remoting.guard.PeerLog`, once per peer and kind per minute;
* a server connection holds its share of the server's :class:`~rocketq.remoting.guard.InputBudget`
  and, after ``read_time_slice`` seconds of handling one read's requests, yields the loop to the
  other connections before taking the next;
* when the connection is lost, every request waiting on it fails at once with
  :class:`~rocketq.errors.RemotingClosedError` naming the peer and the request code;
* callers outside the connection's loop - plain threads (:meth:`RemotingConnection.invoke_threadsafe`)
  and other event loops (:meth:`RemotingConnection.invoke_from_loop`) - encode their own requests
  and hand them over; the loop writes them and completes their waiters
  (:mod:`rocketq.remoting.handover`), with no task or future of its own per call.

Flow control: when unsent output passes the high-water mark, writers (:meth:`invoke`,
:meth:`invoke_oneway`) wait for it to drain; a server-side connection (``pause_reads_on_write_pressure``)
also stops reading requests, so a peer that does not read cannot make us buffer its responses
without bound. Output beyond ``max_write_buffer`` closes the connection. Handlers running at once
are bounded by ``max_in_flight``: at the bound, reading pauses until one finishes. Responses to
requests this side sent share the byte stream, so they wait too while reading is paused: a
handler that awaits a request of its own on the same connection must use a timeout.

Handlers still running when their connection drops run to completion and their responses are
dropped; a long-polling handler may watch :attr:`RemotingConnection.is_closed` or await
:meth:`RemotingConnection.wait_closed` to give up early. Closing the owning client or server
cancels them.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import socket
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, ParamSpec, TypeAlias, TypeVar, cast

from rocketq.errors import BrokerError, RemoteProtocolError, RemotingClosedError, RemotingTimeoutError
from rocketq.logsummary import LogSummary
from rocketq.protocol.codes import ResponseCode, code_name
from rocketq.protocol.command import FLAG_ONEWAY, FLAG_RESPONSE, OpaqueSequence, RemotingCommand
from rocketq.protocol.correlation import Correlator
from rocketq.protocol.frame import (
    DEFAULT_MAX_EXT_FIELDS,
    DEFAULT_MAX_HEADER_SIZE,
    FrameDecoder,
    encode_frame_parts,
)
from rocketq.remoting.admission import FastFail
from rocketq.remoting.guard import InputBudget, PeerLog, RequestLimit, limits_check_from
from rocketq.remoting.handover import Handover, LoopWaiter, ThreadWaiter, Waiter
from rocketq.remoting.offload import Offloader, TimeSlice

if TYPE_CHECKING:
    from rocketq.remoting.config import RemotingClientConfig, ServerConfig

__all__ = [
    "ConnectionListener",
    "Endpoint",
    "Handler",
    "HandlerResult",
    "HandlerTable",
    "RPCHook",
    "RemotingConnection",
    "RequestGuard",
    "describe_exception",
    "format_address",
]

logger = logging.getLogger(__name__)

_RESPONSE: int = FLAG_RESPONSE
_ONEWAY: int = FLAG_ONEWAY

HandlerResult: TypeAlias = RemotingCommand | None
#: ``handler(connection, request)``: returns the response (or ``None`` to send none), either
#: directly or as an awaitable.
Handler: TypeAlias = Callable[
    ["RemotingConnection", RemotingCommand], HandlerResult | Awaitable[HandlerResult]
]

_connection_ids = itertools.count(1)

P = ParamSpec("P")
T = TypeVar("T")

#: Seconds of loop time a large request's parts take before yielding, when the owner sets none.
_DEFAULT_SLICE = 0.005

#: Warnings about peers from connections whose owner gives no log of its own (clients).
_PEER_LOG = PeerLog(logger)
#: Requests answered busy (``fast_fail``): one line per 10 s, never one per request.
_BUSY_LOG = LogSummary(logger)


def _timeout_error(peer: str, code: int, opaque: int, timeout: float) -> RemotingTimeoutError:
    return RemotingTimeoutError(
        f"no response from {peer} to request code {code} (opaque {opaque}) within {timeout:.3f}s"
    )


def _time_out(
    future: asyncio.Future[RemotingCommand], peer: str, code: int, opaque: int, timeout: float
) -> None:
    if not future.done():
        future.set_exception(_timeout_error(peer, code, opaque, timeout))


class RPCHook:
    """Code run around every request, as RocketMQ's ``RPCHook`` (ACL signs and checks requests so).

    ``before_request`` runs before a request is sent (on the sending side: it may add ext fields,
    and an exception it raises fails the call) and before a received request reaches its handler
    (on the receiving side: an exception answers the request as a handler's exception would, so
    raising a :class:`~rocketq.errors.BrokerError` such as ``NoPermissionError`` rejects it with
    that code). ``after_response`` sees each response received for a sent request, and each
    response made for a received one, error responses included (exceptions there are logged).
    ``addr`` is the connection's ``remote_address``. Subclass and override what you need.
    """

    def before_request(self, addr: str, request: RemotingCommand) -> None:
        """Called before ``request`` is sent, or before it is handled."""

    def after_response(self, addr: str, request: RemotingCommand, response: RemotingCommand) -> None:
        """Called with the response to ``request``, received or made."""


#: ``guard(connection, request)``: raises to refuse a received request before its handler runs.
RequestGuard: TypeAlias = Callable[["RemotingConnection", RemotingCommand], None]


class HandlerTable:
    """Request handlers by request code, a fallback for codes not registered, the RPC hooks, and
    the request guard (one check every received request passes before its handler)."""

    __slots__ = ("_by_code", "default", "guard", "hooks")

    def __init__(self) -> None:
        self._by_code: dict[int, Handler] = {}
        self.default: Handler | None = None
        self.hooks: list[RPCHook] = []
        self.guard: RequestGuard | None = None

    def register(self, code: int, handler: Handler) -> None:
        """Handle requests with ``code`` by ``handler`` (replacing any handler it had)."""
        self._by_code[int(code)] = handler

    def unregister(self, code: int) -> None:
        self._by_code.pop(int(code), None)

    def get(self, code: int) -> Handler | None:
        """The handler for ``code``: its own, else the default, else ``None``."""
        return self._by_code.get(code, self.default)

    def __contains__(self, code: object) -> bool:
        return code in self._by_code

    def codes(self) -> list[int]:
        """The request codes with a handler of their own, in ascending order."""
        return sorted(self._by_code)


class ConnectionListener:
    """Connection events for the layers above, as RocketMQ's ``ChannelEventListener``.

    Subclass and override what you need; every method is called on the event loop, must not
    block, and any exception it raises is logged and ignored. ``on_close`` is called once for
    every connection, whatever closed it (the peer, an error, idleness, ``close()``).
    """

    def on_connect(self, conn: RemotingConnection) -> None:
        """A connection was established."""

    def on_close(self, conn: RemotingConnection) -> None:
        """A connection is gone; :attr:`RemotingConnection.close_reason` says why."""

    def on_idle(self, conn: RemotingConnection) -> None:
        """Nothing was read or written on ``conn`` for the configured idle time."""


def describe_exception(exc: BaseException) -> str:
    """The remark of the ``SYSTEM_ERROR`` answer to a request whose handler raised ``exc``.

    A :class:`~rocketq.errors.RemoteProtocolError` (the request's header or body does not decode)
    gives its own text, which names the offending field. Anything else is a fault of ours, and the
    peer learns only that: RocketMQ sends the exception's text and innermost frame
    (``RemotingHelper.exceptionSimpleDesc``), but no Python exception text, class or function name
    leaves rocketq; the server's log has them, with the traceback.
    """
    if isinstance(exc, RemoteProtocolError):
        return str(exc)
    return "the server failed to process this request (an internal error; its log has the details)"


def format_address(sockaddr: object) -> str:
    """``"host:port"`` for a socket address tuple (IPv6 hosts in brackets)."""
    if isinstance(sockaddr, tuple) and len(sockaddr) >= 2:
        host, port = sockaddr[0], sockaddr[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return str(sockaddr)


class Endpoint:
    """What a remoting client and server share: the handlers of the requests their peers send,
    the RPC hooks, the listeners of their connections' events, the opaque numbering, and how a
    connection is made from the settings both configs have."""

    #: warnings about the peers' behaviour, once per peer (each endpoint makes its own)
    peer_log: PeerLog

    def __init__(self, listener: ConnectionListener | None) -> None:
        self.handlers = HandlerTable()
        self._listeners: list[ConnectionListener] = [] if listener is None else [listener]
        self._opaques = OpaqueSequence()

    def _connection(self, cfg: RemotingClientConfig | ServerConfig, **options: Any) -> RemotingConnection:
        """A connection of this endpoint: its handlers, opaques, peer log and event callbacks, the
        limits and write buffers of ``cfg``, and ``options``, what only the client or the server sets."""
        return RemotingConnection(
            handlers=self.handlers,
            opaques=self._opaques,
            peer_log=self.peer_log,
            max_frame_size=cfg.max_frame_size,
            max_header_size=cfg.max_header_size,
            max_ext_fields=cfg.max_ext_fields,
            max_in_flight=cfg.max_in_flight,
            write_buffer_high=cfg.write_buffer_high,
            write_batch_frames=cfg.write_batch_frames,
            write_buffer_low=cfg.write_buffer_low,
            max_write_buffer=cfg.max_write_buffer,
            idle_timeout=cfg.idle_timeout,
            on_open=self._connection_opened,
            on_close=self._connection_closed,
            on_idle=self._connection_idle,
            **options,
        )

    def _connection_opened(self, conn: RemotingConnection) -> None:
        raise NotImplementedError

    def _connection_closed(self, conn: RemotingConnection) -> None:
        raise NotImplementedError

    def register_handler(self, code: int, handler: Handler) -> None:
        """Handle the requests with ``code`` that peers send by ``handler(conn, request)`` (sync or async)."""
        self.handlers.register(code, handler)

    def set_default_handler(self, handler: Handler | None) -> None:
        """Handle requests whose code has no handler of its own (``None``: answer NOT_SUPPORTED)."""
        self.handlers.default = handler

    def set_request_guard(self, guard: RequestGuard | None) -> None:
        """Check every request peers send with ``guard(conn, request)`` before its handler (and the
        RPC hooks) run; an exception it raises answers the request as a handler's would (a
        :class:`~rocketq.errors.BrokerError` with its code and remark). Unlike an :class:`RPCHook`
        it never sees the requests this endpoint sends. A request whose large body is counted on
        the worker thread (``offload_threshold``) is guarded there too, off the event loop: the
        guard must be safe to call from that thread. The broker's ACL is one."""
        self.handlers.guard = guard

    def add_hook(self, hook: RPCHook) -> None:
        """Run ``hook`` around every request this endpoint sends and handles (see :class:`RPCHook`)."""
        self.handlers.hooks.append(hook)

    def add_listener(self, listener: ConnectionListener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: ConnectionListener) -> None:
        self._listeners.remove(listener)

    def _connection_idle(self, conn: RemotingConnection) -> None:
        for listener in tuple(self._listeners):
            conn._call_event(listener.on_idle, "on_idle")


class RemotingConnection(asyncio.Protocol):
    """One TCP connection speaking RocketMQ remoting, on either side.

    Use it as a dict key to keep per-connection state (it hashes by identity). ``remote_address``
    is the address that was dialled (client side) or the peer's ``"ip:port"`` (server side);
    ``id`` is a process-wide serial number for logs.
    """

    def __init__(
        self,
        *,
        handlers: HandlerTable,
        opaques: OpaqueSequence,
        max_frame_size: int,
        max_in_flight: int,
        write_buffer_high: int,
        write_buffer_low: int,
        max_write_buffer: int,
        write_batch_frames: int = 8,
        idle_timeout: float | None,
        close_idle: bool,
        close_on_timeout: bool = False,
        pause_reads_on_write_pressure: bool,
        remote_address: str | None = None,
        on_open: Callable[[RemotingConnection], None] | None = None,
        on_close: Callable[[RemotingConnection], None] | None = None,
        on_idle: Callable[[RemotingConnection], None] | None = None,
        max_header_size: int = DEFAULT_MAX_HEADER_SIZE,
        max_ext_fields: int = DEFAULT_MAX_EXT_FIELDS,
        request_limits: Mapping[int, RequestLimit] | None = None,
        input_budget: InputBudget | None = None,
        read_time_slice: float | None = None,
        peer_log: PeerLog | None = None,
        offloader: Offloader | None = None,
        fast_fail: FastFail | None = None,
    ) -> None:
        self.id = next(_connection_ids)
        self.remote_address = remote_address or "?"
        self.local_address = "?"
        #: Why the connection closed (``None`` while open): a sentence for logs and errors.
        self.close_reason: str | None = None
        self._loop = asyncio.get_running_loop()
        self._handlers = handlers
        self._decoder = FrameDecoder(
            max_frame_size, max_header_size=max_header_size, max_ext_fields=max_ext_fields
        )
        self._request_limits = request_limits or {}
        self._limits_from = limits_check_from(self._request_limits)
        self._input_budget = input_budget
        self._counted = 0  # bytes of this connection's undecoded input counted in the budget
        self._read_time_slice = read_time_slice
        self._yielded = False  # reading paused to let other connections run (read_time_slice)
        self._offloader = offloader
        self._holds = 0  # large requests holding this connection's reading (hold_reading)
        # requests that waited too long are answered busy (see rocketq.remoting.admission)
        self._fast_fail = fast_fail
        self._fast_limits: dict[int, float] | None = dict(fast_fail.limits) if fast_fail else None
        # loop time of the oldest read whose whole frames are not all handled yet (None: none wait)
        self._arrived: float | None = None
        self._queued: int | None = None  # whole frames behind the request being read (busy remarks)
        self._peer_log = peer_log if peer_log is not None else _PEER_LOG
        #: loop time the frame now arriving (incomplete in the decoder) began, else None
        self.frame_started: float | None = None
        self._max_in_flight = max_in_flight
        self._write_buffer_high = write_buffer_high
        self._write_buffer_low = write_buffer_low
        self._max_write_buffer = max_write_buffer
        self._idle_timeout = idle_timeout
        self._close_idle = close_idle
        self._close_on_timeout = close_on_timeout
        self._pause_reads_on_write_pressure = pause_reads_on_write_pressure
        self._on_open = on_open
        self._on_close = on_close
        self._on_idle = on_idle

        self._transport: asyncio.Transport | None = None
        self._closed = False
        self._closed_future: asyncio.Future[None] = self._loop.create_future()
        # requests waiting for their answer (the one correlation state machine); one timer, armed
        # at the earliest deadline, times them out
        self._inflight: Correlator[Waiter] = Correlator(opaques)
        self._deadline_handle: asyncio.TimerHandle | None = None
        self._deadline_at = 0.0
        # requests from other threads (invoke_threadsafe), waiting for the loop to send them
        self._handovers: deque[Handover] = deque()
        self._handover_lock = threading.Lock()
        self._tasks: set[asyncio.Task[None]] = set()
        # frames written during one loop iteration are collected here and handed to the transport
        # with one call: at the end of processing a read, or by a flush scheduled with call_soon
        self._outbox: list[bytes] = []
        self._outbox_bytes = 0
        self._outbox_frames = 0
        self._write_batch_frames = write_batch_frames
        self._flush_scheduled = False
        self._writes_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._reading_paused = False
        self._reading_stopped = False  # for good: the owner is shutting down
        self._processing = False
        self._last_activity = 0.0
        self._idle_handle: asyncio.TimerHandle | None = None

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<RemotingConnection #{self.id} {self.remote_address} {state}>"

    # ------------------------------------------------------------------ properties

    @property
    def is_closed(self) -> bool:
        """True once the connection is closed or lost (it is never reopened)."""
        return self._closed

    @property
    def pending_count(self) -> int:
        """Requests sent on this connection that still wait for their response."""
        return len(self._inflight)

    @property
    def in_flight(self) -> int:
        """Coroutine handlers of this connection's requests still running."""
        return len(self._tasks)

    @property
    def write_buffer_size(self) -> int:
        """Bytes written but not yet handed to the kernel."""
        transport = self._transport
        return 0 if transport is None or transport.is_closing() else transport.get_write_buffer_size()

    @property
    def buffered_input(self) -> int:
        """Bytes received and not yet decoded into commands (at most one frame and one read)."""
        return self._decoder.buffered

    @property
    def reading_paused(self) -> bool:
        """True while reading is paused for back-pressure or the in-flight bound."""
        return self._reading_paused

    # ------------------------------------------------------------------ large requests

    def offloads(self, size: int) -> bool:
        """Whether a request body of ``size`` bytes is large for this connection's server: its
        handler should decode it with :meth:`large_request` (never on a client's connection)."""
        offloader = self._offloader
        return offloader is not None and size > offloader.threshold

    def large_request(
        self, request: RemotingCommand, work: Callable[[], Awaitable[T]], *, in_turn: bool = True
    ) -> Awaitable[T]:
        """What a handler returns for a large request (:meth:`offloads`): ``work()`` awaited in
        the request code's turn, with this connection's reading held until it ends (see
        :class:`~rocketq.remoting.offload.Offloader`); ``work`` decodes with :meth:`off_loop`
        and applies in :meth:`time_slice` parts; ``in_turn=False`` skips the code's turn (see
        :meth:`~rocketq.remoting.offload.Offloader.admit`). Raises ``SYSTEM_BUSY`` at once if the
        server's input budget has no room for the body."""
        offloader = self._offloader
        if offloader is None:
            return work()
        return offloader.admit(self, request.code, len(request.body), work, in_turn=in_turn)

    async def off_loop(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` on the server's worker thread (inline on a client's
        connection); raises ``SYSTEM_ERROR`` instead of returning if the connection closed
        meanwhile, so nothing is applied for a peer that is gone."""
        offloader = self._offloader
        result = fn(*args, **kwargs) if offloader is None else await offloader.run(fn, *args, **kwargs)
        if self._closed:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, "the connection closed")
        return result

    def time_slice(self) -> TimeSlice:
        """A :class:`~rocketq.remoting.offload.TimeSlice` of this server's ``read_time_slice``."""
        return TimeSlice(self._read_time_slice or _DEFAULT_SLICE)

    def hold_reading(self) -> None:
        """Stop taking requests from this connection until as many :meth:`release_reading`."""
        self._holds += 1
        self._pause_reading()

    def release_reading(self) -> None:
        self._holds -= 1
        if not self._holds:
            if self._arrived is not None:
                # the requests behind a large one of the same connection waited for their own
                # peer's request, not for the others: their queue time (fast_fail) starts now
                self._arrived = self._loop.time()
            self._maybe_resume_reading()

    async def wait_closed(self) -> None:
        """Return once the connection is closed."""
        await asyncio.shield(self._closed_future)

    # ------------------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it
        transport = cast(asyncio.Transport, transport)
        self._transport = transport
        transport.set_write_buffer_limits(high=self._write_buffer_high, low=self._write_buffer_low)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:  # pragma: no cover - platform without TCP_NODELAY
                pass
        if self.remote_address == "?":
            self.remote_address = format_address(transport.get_extra_info("peername"))
        self.local_address = format_address(transport.get_extra_info("sockname"))
        self._last_activity = self._loop.time()
        if self._idle_timeout is not None:
            self._idle_handle = self._loop.call_at(self._last_activity + self._idle_timeout, self._check_idle)
        logger.debug("%r: connected (local %s)", self, self.local_address)
        if self._on_open is not None:
            self._call_event(self._on_open, "open")

    def data_received(self, data: bytes) -> None:
        self._last_activity = now = self._loop.time()
        if self._closed:
            return
        if self._arrived is None:
            self._arrived = now
        try:
            self._decoder.receive_data(data)
        except Exception as exc:  # the decoder checks a frame's length word as soon as it arrives
            self._protocol_error(exc)
            return
        if not self._reading_paused and not self._processing:
            self._process()
        elif self._input_budget is not None:
            self._account()

    def eof_received(self) -> bool | None:
        self._set_reason(f"{self.remote_address} closed the connection")
        return None  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            self._set_reason(f"connection to {self.remote_address} lost: {exc}")
        else:
            self._set_reason(f"connection to {self.remote_address} closed")
        self._mark_closed()
        if self._input_budget is not None:
            self._input_budget.used -= self._counted
            self._counted = 0
        if self._idle_handle is not None:
            self._idle_handle.cancel()
            self._idle_handle = None
        logger.debug("%r: %s", self, self.close_reason)
        if not self._closed_future.done():
            self._closed_future.set_result(None)
        if self._on_close is not None:
            self._call_event(self._on_close, "close")

    def pause_writing(self) -> None:
        self._writes_paused = True
        if self._pause_reads_on_write_pressure:
            self._pause_reading()

    def resume_writing(self) -> None:
        self._writes_paused = False
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._maybe_resume_reading()

    # ------------------------------------------------------------------ reading and dispatch

    def _process(self) -> None:
        """Take every complete command out of the decoder (until reading has to pause, or this
        connection has had its ``read_time_slice`` of the loop: then it yields to the others)."""
        decoder = self._decoder
        self._processing = True
        self._queued = None
        time_slice = self._read_time_slice
        deadline = None  # the slice starts after the first request: no clock read for a lone one
        try:
            while not self._reading_paused and not self._closed:
                try:
                    cmd = decoder.next_command()
                except Exception as exc:
                    self._protocol_error(exc)
                    return
                if cmd is None:
                    self._arrived = None  # every whole frame handled: the next read starts the clock
                    return
                self.frame_started = None
                if cmd.flag & _RESPONSE:
                    self._on_response(cmd)
                else:
                    self._on_request(cmd)
                if time_slice is not None and decoder.buffered:
                    now = time.monotonic()
                    if deadline is None:
                        deadline = now + time_slice
                    elif now > deadline:
                        self._yield_turn()
        finally:
            self._processing = False
            if self._outbox:
                self._flush()
            held = decoder.buffered
            if held or self._counted:  # the usual read leaves nothing behind: nothing to do
                if self._input_budget is not None:
                    self._account()
                if held and self.frame_started is None:
                    self.frame_started = self._loop.time()

    def _yield_turn(self) -> None:
        """Pause reading until the loop has run the other ready connections once."""
        self._yielded = True
        self._pause_reading()
        self._loop.call_soon(self._end_turn)

    def _end_turn(self) -> None:
        self._yielded = False
        self._maybe_resume_reading()

    def _account(self) -> None:
        """Bring this connection's undecoded bytes up to date in the server's budget; the
        connection that takes the total past it is closed."""
        budget = self._input_budget
        assert budget is not None
        held = self._decoder.buffered
        budget.used += held - self._counted
        self._counted = held
        if budget.used > budget.limit and held and not self._closed:
            self._peer_log.report(
                self.remote_address,
                "input-budget",
                self._loop.time(),
                "%r: closing the connection: the server holds %d bytes of undecoded input, over its "
                "bound of %d (this connection %d)",
                self,
                budget.used,
                budget.limit,
                held,
            )
            self._set_reason(f"the server's input buffers are full ({budget.used} of {budget.limit} bytes)")
            self.abort()

    def _on_response(self, cmd: RemotingCommand) -> None:
        entry = self._inflight.complete(cmd.opaque)
        if entry is None:
            if self._inflight.was_abandoned(cmd.opaque):
                logger.debug(
                    "%r: late response (code %d) to opaque %d, whose caller stopped waiting - dropped",
                    self,
                    cmd.code,
                    cmd.opaque,
                )
                return
            self._peer_log.report(
                self.remote_address,
                "unmatched-response",
                self._loop.time(),
                "%r: response (code %d) to opaque %d matches no request sent on this connection - dropped",
                self,
                cmd.code,
                cmd.opaque,
            )
            return
        future = entry.waiter
        if not future.done():
            future.set_result(cmd)

    def _on_request(self, request: RemotingCommand, checked: bool = False) -> None:
        handlers = self._handlers
        handler = handlers.get(request.code)
        if handler is None:
            self._not_supported(request)
            return
        limits = self._fast_limits
        if limits is not None and not checked:
            wait_limit = limits.get(request.code)
            if wait_limit is not None:
                arrived = self._arrived
                waited = 0.0 if arrived is None else self._loop.time() - arrived
                if waited >= wait_limit:
                    self._busy(request, waited, wait_limit)
                    return
        size = len(request.body)
        if size >= self._limits_from and not checked:  # one comparison for the usual small body
            limit = self._request_limits.get(request.code)
            if limit is not None:
                offloader = self._offloader
                if offloader is not None and size > offloader.threshold:
                    self._check_off_loop(request, limit, offloader)
                    return
                refusal = limit.refusal(request.code, request.body)
                if refusal is not None:
                    self._refuse(request, refusal)
                    return
        try:
            guard = handlers.guard
            if guard is not None and not checked:
                guard(self, request)
            if handlers.hooks:
                for hook in handlers.hooks:
                    hook.before_request(self.remote_address, request)
            result: object = handler(self, request)
        except Exception as exc:
            self._handler_failed(request, exc)
            return
        if result is None or isinstance(result, RemotingCommand):
            self._reply(request, result)
        elif inspect.isawaitable(result):
            task = self._loop.create_task(self._finish_handler(request, result))
            self._tasks.add(task)
            task.add_done_callback(self._task_done)
            if len(self._tasks) >= self._max_in_flight:
                self._pause_reading()
        else:
            error = TypeError(
                f"handler for request code {request.code} returned {type(result).__name__}, "
                "not a RemotingCommand, None or an awaitable"
            )
            self._handler_failed(request, error)

    def _check_off_loop(self, request: RemotingCommand, limit: RequestLimit, offloader: Offloader) -> None:
        """A large body's limit is checked on the worker thread (counting 16 MiB takes ~15 ms),
        with this connection's reading held, then the request is handled as usual."""

        async def check() -> None:
            try:
                refusal = await offloader.run(limit.refusal, request.code, request.body)
                if refusal is not None:
                    self._refuse(request, refusal)
                    return
                guard = self._handlers.guard
                if guard is not None:  # a large body's check (a signature, a heartbeat read) too
                    await offloader.run(guard, self, request)
                if not self._closed:
                    self._on_request(request, checked=True)  # its own hold is taken before ours ends
            except Exception as exc:  # the worker is closed (the server is shutting down)
                self._handler_failed(request, exc)
            finally:
                self.release_reading()

        self.hold_reading()
        task = self._loop.create_task(check())
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    async def _finish_handler(self, request: RemotingCommand, result: Awaitable[HandlerResult]) -> None:
        try:
            response: object = await result
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._handler_failed(request, exc)
            return
        if isinstance(response, RemotingCommand) or response is None:
            self._reply(request, response)
        else:
            self._handler_failed(
                request,
                TypeError(
                    f"handler for request code {request.code} produced {type(response).__name__}, "
                    "not a RemotingCommand or None"
                ),
            )

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if self._reading_paused and len(self._tasks) < self._max_in_flight:
            self._maybe_resume_reading()

    def _reply(self, request: RemotingCommand, response: RemotingCommand | None) -> None:
        if response is not None and self._handlers.hooks:
            for hook in self._handlers.hooks:
                try:
                    hook.after_response(self.remote_address, request, response)
                except Exception:
                    logger.exception("%r: RPC hook %r failed after request code %d", self, hook, request.code)
        if request.flag & _ONEWAY:
            if response is not None:
                logger.debug("%r: response to oneway request code %d dropped", self, request.code)
            return
        if response is None:
            logger.debug("%r: handler for request code %d gave no response", self, request.code)
            return
        if self._closed:
            logger.debug(
                "%r: response to request code %d (opaque %d) dropped: %s",
                self,
                request.code,
                request.opaque,
                self.close_reason,
            )
            return
        self.send_response(request, response)

    def send_response(self, request: RemotingCommand, response: RemotingCommand) -> None:
        """Write ``response`` as the answer to ``request`` (for handlers that answer later).

        As RocketMQ does, the response gets the request's opaque and serialization type and the
        response flag, whatever the handler set.
        """
        response.opaque = request.opaque
        response.flag |= _RESPONSE
        response.serialize_type = request.serialize_type
        try:
            head, body = encode_frame_parts(response)
        except RemoteProtocolError as exc:
            logger.error("%r: response to request code %d cannot be encoded: %s", self, request.code, exc)
            if response.code == ResponseCode.SYSTEM_ERROR and not response.ext_fields and not response.body:
                return  # even the bare error response failed; nothing more to try
            remark = "the server could not encode its response (its log has the details)"
            fallback = request.response(code=ResponseCode.SYSTEM_ERROR, remark=remark)
            head, body = encode_frame_parts(fallback)
        self._send(head, body)

    def _not_supported(self, request: RemotingCommand) -> None:
        remark = f" request type {request.code} not supported"
        self._peer_log.report(self.remote_address, "not-supported", self._loop.time(), "%r:%s", self, remark)
        if not request.flag & _ONEWAY:
            response = request.response(code=ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark=remark)
            self._reply(request, response)

    def _busy(self, request: RemotingCommand, waited: float, limit: float) -> None:
        """Answer a request that waited ``waited`` seconds, over its code's ``limit``, SYSTEM_BUSY
        unserved, with RocketMQ's ``[TIMEOUT_CLEAN_QUEUE]`` remark (oneway: dropped)."""
        fast = self._fast_fail
        assert fast is not None
        fast.count(request.code)
        queued = self._queued
        queued = self._decoder.complete_frames() if queued is None else max(queued - 1, 0)
        self._queued = queued
        remark = fast.remark(waited, queued)
        _BUSY_LOG.warning(
            f"busy:{request.code}",
            f"requests of code {request.code} answered SYSTEM_BUSY unserved (waited over {limit:g}s)",
            "%r: request code %d answered SYSTEM_BUSY: %s",
            self,
            request.code,
            remark,
        )
        if not request.flag & _ONEWAY:
            self._reply(request, request.response(code=ResponseCode.SYSTEM_BUSY, remark=remark))

    def _refuse(self, request: RemotingCommand, remark: str) -> None:
        """Answer a request over its code's limit SYSTEM_ERROR, before decoding any of it."""
        self._peer_log.report(
            self.remote_address, "over-limit", self._loop.time(), "%r: refused: %s", self, remark
        )
        self._reply(request, request.response(code=ResponseCode.SYSTEM_ERROR, remark=remark))

    def _handler_failed(self, request: RemotingCommand, exc: Exception) -> None:
        if isinstance(exc, BrokerError):
            logger.debug("%r: request code %d answered %d: %s", self, request.code, exc.code, exc.remark)
            code, remark = exc.code, exc.remark
        elif isinstance(exc, RemoteProtocolError):
            # the request's header or body does not decode: the peer's fault, answered as RocketMQ
            # answers its decoding exceptions (SYSTEM_ERROR with the reason); no traceback
            self._peer_log.report(
                self.remote_address,
                "undecodable",
                self._loop.time(),
                "%r: %s request could not be decoded: %s",
                self,
                code_name(request.code, response=False),
                exc,
            )
            code, remark = ResponseCode.SYSTEM_ERROR, describe_exception(exc)
        else:
            logger.error(
                "%r: handler for request code %d (opaque %d) failed",
                self,
                request.code,
                request.opaque,
                exc_info=exc,
            )
            code, remark = ResponseCode.SYSTEM_ERROR, describe_exception(exc)
        self._reply(request, request.response(code=code, remark=remark))

    def _protocol_error(self, exc: Exception) -> None:
        """The peer's bytes cannot be decoded: close this connection (the stream cannot resynchronise)."""
        if self._closed:
            return
        if isinstance(exc, RemoteProtocolError):
            self._peer_log.report(
                self.remote_address,
                "not-a-frame",
                self._loop.time(),
                "%r: closing the connection, its peer sent bytes that are not a frame: %s",
                self,
                exc,
            )
        else:  # a decoder bug: keep its traceback
            logger.error("%r: closing the connection, the frame decoder failed", self, exc_info=exc)
        self._set_reason(f"protocol error from {self.remote_address}: {exc}")
        self.close()

    # ------------------------------------------------------------------ flow control

    def _pause_reading(self) -> None:
        if not self._reading_paused and not self._closed:
            self._reading_paused = True
            assert self._transport is not None
            self._transport.pause_reading()

    def stop_reading(self) -> None:
        """Take no more requests from this connection (for a graceful shutdown); never undone."""
        self._reading_stopped = True
        self._pause_reading()

    def _maybe_resume_reading(self) -> None:
        if not self._reading_paused or self._closed or self._reading_stopped or self._yielded or self._holds:
            return
        if len(self._tasks) >= self._max_in_flight:
            return
        if self._writes_paused and self._pause_reads_on_write_pressure:
            return
        self._reading_paused = False
        assert self._transport is not None
        self._transport.resume_reading()
        if not self._processing:
            # frames that arrived before the pause may wait in the decoder
            self._loop.call_soon(self._process_if_reading)

    def _process_if_reading(self) -> None:
        if not self._reading_paused and not self._processing and not self._closed:
            self._process()

    async def _drain(self) -> None:
        """Wait until unsent output is below the low-water mark (or fail if the connection closes)."""
        if self._closed:
            raise self._closed_error("a write")
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._drain_waiters.append(waiter)
        await waiter

    # ------------------------------------------------------------------ writing

    def _send(self, head: bytes, body: bytes) -> None:
        """Queue one frame; frames queued in one loop iteration go to the transport together."""
        outbox = self._outbox
        outbox.append(head)
        if body:
            outbox.append(body)
        self._outbox_bytes += len(head) + len(body)
        self._outbox_frames += 1
        if self._outbox_bytes >= self._write_buffer_high:
            self._flush()  # may pause reading, which stops _process taking more requests
        elif self._outbox_frames >= self._write_batch_frames:
            # pipelining: these frames leave now, so the peer works on them while we make the rest
            self._flush()
        elif not self._flush_scheduled and not self._processing:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        outbox = self._outbox
        if not outbox:
            return
        self._outbox = []
        self._outbox_bytes = 0
        self._outbox_frames = 0
        transport = self._transport
        if transport is None or self._closed:
            return
        if len(outbox) == 1:
            transport.write(outbox[0])
        else:  # uvloop sends the list with one writev; asyncio joins it
            transport.writelines(outbox)
        self._last_activity = self._loop.time()
        if self._writes_paused and transport.get_write_buffer_size() > self._max_write_buffer:
            logger.warning(
                "%r: closing the connection: %d bytes of output unsent (bound %d), the peer does not read",
                self,
                transport.get_write_buffer_size(),
                self._max_write_buffer,
            )
            bound = self._max_write_buffer
            self._set_reason(f"{self.remote_address} stopped reading (output above {bound} bytes)")
            self.abort()

    def _arm_deadline(self, deadline: float) -> None:
        """Make sure the deadline timer fires by ``deadline``."""
        handle = self._deadline_handle
        if handle is not None:
            if self._deadline_at <= deadline:
                return
            handle.cancel()
        self._deadline_at = deadline
        self._deadline_handle = self._loop.call_at(deadline, self._expire_due)

    def _expire_due(self) -> None:
        """The deadline timer: fail the requests whose time is up, then wait for the next one."""
        self._deadline_handle = None
        inflight = self._inflight
        expired = inflight.expire(max(self._loop.time(), self._deadline_at))
        for entry in expired:
            waiter = entry.waiter
            if not waiter.done():
                timeout = entry.timeout if entry.timeout is not None else 0.0
                waiter.set_exception(_timeout_error(self.remote_address, entry.code, entry.opaque, timeout))
        nxt = inflight.next_deadline()
        if nxt is not None:
            self._arm_deadline(nxt)
        if expired and self._close_on_timeout:
            code = expired[0].code
            self._set_reason(f"request code {code} to {self.remote_address} timed out (close_on_timeout)")
            self.close()

    async def invoke(
        self, request: RemotingCommand, timeout: float, *, stated_timeout: float | None = None
    ) -> RemotingCommand:
        """Send ``request`` and return its response, waiting at most ``timeout`` seconds.

        The request gets a fresh opaque (its ``opaque`` attribute is set). Raises
        :class:`~rocketq.errors.RemotingTimeoutError` when no response comes in time (the request is
        forgotten: a late response is dropped) and :class:`~rocketq.errors.RemotingClosedError` when
        the connection closes first. A response with an error code is returned, not raised.
        ``stated_timeout`` is the timeout to name in the error when ``timeout`` is what remains of
        a longer one (the client's, after connecting).
        """
        stated = timeout if stated_timeout is None else stated_timeout
        if self._closed:
            raise self._closed_error(f"request code {request.code}")
        loop = self._loop
        if self._writes_paused:
            deadline = loop.time() + timeout
            try:
                await asyncio.wait_for(self._drain(), timeout)
            except TimeoutError:
                raise RemotingTimeoutError(
                    f"request code {request.code} to {self.remote_address} not sent within {stated:.3f}s: "
                    "the connection's output did not drain"
                ) from None
            timeout = max(deadline - loop.time(), 0.0)
        opaque, head, body = self._prepare_request(request)
        future: asyncio.Future[RemotingCommand] = loop.create_future()
        deadline = loop.time() + timeout
        self._inflight.add(opaque, request.code, future, deadline, stated)
        self._send(head, body)
        if self._deadline_handle is None or deadline < self._deadline_at:
            self._arm_deadline(deadline)
        try:
            response = await future
        except BaseException:
            self._inflight.discard(opaque)  # cancelled, timed out or failed: forget it
            raise
        self._after_response(request, response)
        return response

    def _prepare_request(self, request: RemotingCommand) -> tuple[int, bytes, bytes]:
        """Run the RPC hooks, give ``request`` a fresh opaque and encode it (raising
        RemoteProtocolError, with nothing sent, when it cannot be): ``(opaque, head, body)``."""
        hooks = self._handlers.hooks
        if hooks:
            for hook in hooks:
                hook.before_request(self.remote_address, request)
        opaque = self._inflight.next_opaque()
        request.opaque = opaque
        request.flag &= ~(_RESPONSE | _ONEWAY)
        head, body = encode_frame_parts(request)
        return opaque, head, body

    def _after_response(self, request: RemotingCommand, response: RemotingCommand) -> None:
        hooks = self._handlers.hooks
        if hooks:
            for hook in hooks:
                hook.after_response(self.remote_address, request, response)

    def invoke_threadsafe(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """:meth:`invoke` for a plain thread (never the loop's own): blocks for the response.

        The blocking clients' hot path. The calling thread does the work it can (RPC hooks,
        numbering, encoding the frame); the loop only records the waiter and writes the bytes,
        many threads' requests per wake-up, and the response wakes the thread through a lock, not
        a task. Unlike :meth:`invoke` it does not wait for the output to drain below the
        high-water mark (each blocked thread has one request out, so the threads bound it).
        Raises as :meth:`invoke` does; after a timeout the request is forgotten (not sent, if the
        loop had not yet taken it).
        """
        if self._closed:
            raise self._closed_error(f"request code {request.code}")
        opaque, head, body = self._prepare_request(request)
        waiter = ThreadWaiter()
        self._hand_over((opaque, request.code, waiter, head, body))
        if not waiter.lock.acquire(timeout=max(timeout, 0.0)):
            waiter.abandoned = True
            self._abandon_threadsafe(opaque, request.code, timed_out=True)
            raise _timeout_error(self.remote_address, request.code, opaque, timeout)
        if waiter.error is not None:
            raise waiter.error
        response = waiter.response
        assert response is not None
        self._after_response(request, response)
        return response

    async def invoke_from_loop(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """:meth:`invoke` awaited on another event loop than the connection's (an application's
        own loop, while the connection runs on a client's loop thread).

        As :meth:`invoke_threadsafe`, the caller encodes; the connection's loop writes and, when
        the response comes, completes the caller's future through the caller loop's
        :class:`~rocketq.remoting.handover.LoopMailbox` (one wake-up of that loop per batch of
        responses). A timeout raises :class:`~rocketq.errors.RemotingTimeoutError`; a timeout or a
        cancellation forgets the request (not sent, if the connection's loop had not taken it).
        """
        if self._closed:
            raise self._closed_error(f"request code {request.code}")
        loop = asyncio.get_running_loop()
        if loop is self._loop:
            return await self.invoke(request, timeout)
        opaque, head, body = self._prepare_request(request)
        waiter = LoopWaiter(loop)
        future = waiter.future
        self._hand_over((opaque, request.code, waiter, head, body), wake_from=loop)
        timer = loop.call_later(
            max(timeout, 0.0), _time_out, future, self.remote_address, request.code, opaque, timeout
        )
        try:
            response = await future
        except BaseException as exc:  # the timeout, or the caller was cancelled
            waiter.abandoned = True
            self._abandon_threadsafe(opaque, request.code, timed_out=isinstance(exc, RemotingTimeoutError))
            raise
        finally:
            timer.cancel()
        self._after_response(request, response)
        return response

    def _hand_over(self, handover: Handover, *, wake_from: asyncio.AbstractEventLoop | None = None) -> None:
        """Queue a request for the connection's loop (from another thread), waking it if idle.

        From another event loop (``wake_from``) the wake-up waits for the end of that loop's
        turn, so the requests of all its tasks that turn cost one cross-thread wake-up."""
        with self._handover_lock:
            wake = not self._handovers  # else a wake-up is already on its way
            self._handovers.append(handover)
        if not wake:
            return
        if wake_from is not None:
            wake_from.call_soon(self._wake_for_handovers)
            return
        try:
            self._loop.call_soon_threadsafe(self._take_handovers)
        except RuntimeError:  # the loop is closed: nobody will send it
            raise self._closed_error(f"request code {handover[1]}") from None

    def _wake_for_handovers(self) -> None:
        try:
            self._loop.call_soon_threadsafe(self._take_handovers)
        except RuntimeError:  # the loop is closed: fail what waits to be sent
            with self._handover_lock:
                handovers = list(self._handovers)
                self._handovers.clear()
            for _opaque, code, waiter, _head, _body in handovers:
                waiter.set_exception(self._closed_error(f"request code {code}"))

    def _abandon_threadsafe(self, opaque: int, code: int, *, timed_out: bool) -> None:
        try:
            self._loop.call_soon_threadsafe(self._abandon, opaque, code, timed_out)
        except RuntimeError:
            pass  # the loop is closed; nothing is pending any more

    def _take_handovers(self) -> None:
        """Loop thread: send what :meth:`invoke_threadsafe` and :meth:`invoke_from_loop` callers
        handed over."""
        with self._handover_lock:
            handovers = list(self._handovers)
            self._handovers.clear()
        inflight = self._inflight
        for opaque, code, waiter, head, body in handovers:
            if waiter.abandoned:
                continue
            if self._closed:
                waiter.set_exception(self._closed_error(f"request code {code}"))
                continue
            inflight.add(opaque, code, waiter)  # the caller's own thread or loop times it out
            self._send(head, body)

    def _abandon(self, opaque: int, code: int, timed_out: bool) -> None:
        """Loop thread: a caller on another thread stopped waiting for ``opaque``."""
        if self._inflight.discard(opaque) is not None and timed_out and self._close_on_timeout:
            self._set_reason(f"request code {code} to {self.remote_address} timed out (close_on_timeout)")
            self.close()

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        """Send ``request`` marked oneway: the peer sends no response.

        Returns once the frame is handed to the transport (after waiting for the output to drain
        below the high-water mark, if it was above).
        """
        if self._closed:
            raise self._closed_error(f"oneway request code {request.code}")
        if self._writes_paused:
            await self._drain()
        for hook in self._handlers.hooks:
            hook.before_request(self.remote_address, request)
        request.opaque = self._inflight.next_opaque()
        request.flag = (request.flag & ~_RESPONSE) | _ONEWAY
        head, body = encode_frame_parts(request)
        self._send(head, body)

    # ------------------------------------------------------------------ closing

    def _set_reason(self, reason: str) -> None:
        if self.close_reason is None:
            self.close_reason = reason

    def _closed_error(self, what: str) -> RemotingClosedError:
        return RemotingClosedError(f"cannot send {what} to {self.remote_address}: {self.close_reason}")

    def _mark_closed(self) -> None:
        """Enter the closed state: fail waiting requests and writers (once)."""
        if self._closed:
            return
        self._closed = True
        reason = self.close_reason or f"connection to {self.remote_address} closed"
        self._take_handovers()  # requests handed over but not sent fail with the pending ones
        if self._deadline_handle is not None:
            self._deadline_handle.cancel()
            self._deadline_handle = None
        for entry in self._inflight.drain():
            future = entry.waiter
            if not future.done():
                future.set_exception(
                    RemotingClosedError(
                        f"no response to request code {entry.code} (opaque {entry.opaque}) "
                        f"from {self.remote_address}: {reason}"
                    )
                )
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_exception(RemotingClosedError(f"cannot write to {self.remote_address}: {reason}"))

    def close(self, reason: str | None = None) -> None:
        """Close the connection after writing what is buffered; pending requests fail at once."""
        if reason is not None:
            self._set_reason(reason)
        self._set_reason(f"connection to {self.remote_address} closed locally")
        if not self._closed:
            self._flush()
        self._mark_closed()
        if self._transport is not None:
            self._transport.close()

    def abort(self, reason: str | None = None) -> None:
        """Close the connection at once, discarding unsent output."""
        if reason is not None:
            self._set_reason(reason)
        self._set_reason(f"connection to {self.remote_address} aborted locally")
        self._mark_closed()
        if self._transport is not None:
            self._transport.abort()

    async def shutdown(self, reason: str, flush_timeout: float = 1.0) -> None:
        """Close, give buffered output ``flush_timeout`` seconds to leave, then abort; wait until closed.

        A plain :meth:`close` waits for the peer to take buffered output, which a peer that does
        not read never does; owners shutting down use this instead.
        """
        self.close(reason)
        try:
            await asyncio.wait_for(self.wait_closed(), flush_timeout)
        except TimeoutError:
            logger.warning("%r: output not taken within %.1fs of closing; aborting", self, flush_timeout)
            self.abort()
            await self.wait_closed()

    def cancel_handlers(self) -> list[asyncio.Task[None]]:
        """Cancel the coroutine handlers still running; returns them (to await)."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        return tasks

    # ------------------------------------------------------------------ idleness and events

    def _check_idle(self) -> None:
        self._idle_handle = None
        if self._closed or self._idle_timeout is None:
            return
        now = self._loop.time()
        if self._inflight or self._tasks:
            # waiting for a response or running a (long-polling) handler is not idleness
            self._last_activity = now
        due = self._last_activity + self._idle_timeout
        if now < due:
            self._idle_handle = self._loop.call_at(due, self._check_idle)
            return
        logger.info("%r: idle for %.1fs", self, now - self._last_activity)
        if self._on_idle is not None:
            self._call_event(self._on_idle, "idle")
        if self._close_idle:
            self.close(f"connection to {self.remote_address} idle for {self._idle_timeout:g}s")
        elif not self._closed:
            self._idle_handle = self._loop.call_at(now + self._idle_timeout, self._check_idle)

    def _call_event(self, callback: Callable[[RemotingConnection], None], event: str) -> None:
        try:
            callback(self)
        except Exception:
            logger.exception("%r: %s listener failed", self, event)
