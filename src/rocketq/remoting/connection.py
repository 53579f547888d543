"""One remoting connection: the asyncio adapter over the sans-I/O connection core.

RocketMQ's remoting protocol is symmetric: either end of a TCP connection may send requests, and
each end answers the other's (a broker pushes ``NOTIFY_CONSUMER_IDS_CHANGED`` over the connection
its client opened). So one class, :class:`RemotingConnection`, serves both
:class:`~rocketq.remoting.RemotingClient` and :class:`~rocketq.remoting.RemotingServer`.

Every decision is the :class:`~rocketq.protocol.connection.ConnectionCore`'s: which response
answers which request, what a received request is (to run, not supported, busy, refused), when a
request times out, when reading pauses and resumes, what the undecoded bytes cost the server's
budget. This class only moves bytes and waits, on the event loop:

* ``data_received`` feeds the core and, unless reading is paused, takes its events in the read
  loop: a response wakes its waiter, a request goes to the :class:`~rocketq.remoting.dispatch.Dispatcher`
  (handlers, answers, large-body checks), bytes that are not a frame close this connection only
  (warnings about a peer go through a :class:`~rocketq.remoting.guard.PeerLog`, once per peer and
  kind per minute);
* a server connection holds its share of the server's :class:`~rocketq.remoting.guard.InputBudget`
  and, after ``read_time_slice`` seconds of handling one read's requests, yields the loop to the
  other connections before taking the next;
* :meth:`invoke` sends through the core and arms one timer at the core's next deadline
  (:mod:`rocketq.remoting.deadlines`);
  callers outside the loop - plain threads (:meth:`invoke_threadsafe`) and other event loops
  (:meth:`invoke_from_loop`) - hand their encoded requests over (:mod:`rocketq.remoting.handover`);
* output is batched per turn of the loop (:mod:`rocketq.remoting.outbox`); idleness is watched by
  :mod:`rocketq.remoting.idle`;
* a handler decodes a large body (:meth:`offloads`) off the event loop: it returns
  :meth:`large_request`, decodes with :meth:`off_loop` and applies in :meth:`time_slice` parts,
  with this connection's reading held meanwhile (:mod:`rocketq.remoting.offload`);
* when the connection is lost, every request waiting on it fails at once with
  :class:`~rocketq.errors.RemotingClosedError` naming the peer and the request code.

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
import itertools
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar, cast

from rocketq.errors import BrokerError, RemoteProtocolError, RemotingClosedError, RemotingTimeoutError
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.command import OpaqueSequence, RemotingCommand
from rocketq.protocol.connection import (
    PAUSE_READING,
    Admission,
    ConnectionCore,
    Event,
    LateResponse,
    ProtocolError,
    ReadingChange,
    RequestArrived,
    ResponseArrived,
    StrayResponse,
)
from rocketq.protocol.frame import FrameDecoder
from rocketq.remoting.deadlines import DeadlineTimer
from rocketq.remoting.dispatch import Dispatcher
from rocketq.remoting.guard import PeerLog, limits_check_from
from rocketq.remoting.handlers import (
    Handler,
    HandlerTable,
    format_address,
)
from rocketq.remoting.handover import HandoverQueue, Waiter
from rocketq.remoting.idle import IdleWatch
from rocketq.remoting.offload import TimeSlice
from rocketq.remoting.outbox import Outbox
from rocketq.remoting.settings import ConnectionEvents, ConnectionSettings, ServerParts
from rocketq.remoting.tls import silent_close_hint

__all__ = ["RemotingConnection"]  # what plugs into it: rocketq.remoting.handlers

logger = logging.getLogger(__name__)

_connection_ids = itertools.count(1)

P = ParamSpec("P")
T = TypeVar("T")

#: Seconds of loop time a large request's parts take before yielding, when the owner sets none.
_DEFAULT_SLICE = 0.005

#: Warnings about peers from connections whose owner gives no log of its own (clients).
_PEER_LOG = PeerLog(logger)

_NO_EVENTS = ConnectionEvents()


def _admission(server: ServerParts | None) -> Admission | None:
    if server is None:
        return None
    fast = server.fast_fail
    offloader = server.offloader
    return Admission(
        wait_limits=fast.limits if fast is not None else None,
        body_limits=server.request_limits,
        check_from=limits_check_from(server.request_limits),
        offload_threshold=offloader.threshold if offloader is not None else None,
        budget=server.input_budget,
    )


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
        settings: ConnectionSettings,
        server: ServerParts | None = None,
        events: ConnectionEvents | None = None,
        remote_address: str | None = None,
        peer_log: PeerLog | None = None,
    ) -> None:
        self.id = next(_connection_ids)
        self.remote_address = remote_address or "?"
        self.local_address = "?"
        #: Why the connection closed (``None`` while open): a sentence for logs and errors.
        self.close_reason: str | None = None
        self.loop = asyncio.get_running_loop()
        self._settings = settings
        self._server = server
        self._events = events or _NO_EVENTS
        self._handlers = handlers
        self._peer_log = peer_log if peer_log is not None else _PEER_LOG
        decoder = FrameDecoder(
            settings.max_frame_size,
            max_header_size=settings.max_header_size,
            max_ext_fields=settings.max_ext_fields,
        )
        self._core: ConnectionCore[Waiter, Handler] = ConnectionCore(
            handlers.get,
            opaques=opaques,
            decoder=decoder,
            max_in_flight=settings.max_in_flight,
            pause_reads_on_write_pressure=settings.pause_reads_on_write_pressure,
            admission=_admission(server),
        )
        self._outbox = Outbox(
            self,
            high=settings.write_buffer_high,
            batch_frames=settings.write_batch_frames,
            max_buffer=settings.max_write_buffer,
        )
        self._dispatch = Dispatcher(
            self,
            self._core,  # type: ignore[arg-type]  # the dispatcher never looks at waiters
            self._outbox,
            handlers,
            self._peer_log,
            fast_fail=None if server is None else server.fast_fail,
            offloader=None if server is None else server.offloader,
        )
        self._handovers = HandoverQueue(self)
        self._idle = IdleWatch(
            self, settings.idle_timeout, close_idle=settings.close_idle, on_idle=self._events.on_idle
        )
        self.transport: asyncio.Transport | None = None
        self._closed_future: asyncio.Future[None] = self.loop.create_future()
        # one timer, armed at the core's earliest deadline, times out the requests invoked here
        self._deadlines = DeadlineTimer(self, close_on_timeout=settings.close_on_timeout)
        #: True while the read loop runs (writes then wait for its end to be flushed together)
        self.processing = False
        #: whether any byte came from the peer yet (a client's "closed before a word" hint)
        self._heard = False

    def __repr__(self) -> str:
        state = "closed" if self._core.closed else "open"
        return f"<RemotingConnection #{self.id} {self.remote_address} {state}>"

    # ------------------------------------------------------------------ properties

    @property
    def core(self) -> ConnectionCore[Waiter, Handler]:
        """The connection's sans-I/O state: every decision is its (see :mod:`rocketq.protocol.connection`)."""
        return self._core

    @property
    def is_closed(self) -> bool:
        """True once the connection is closed or lost (it is never reopened)."""
        return self._core.closed

    @property
    def pending_count(self) -> int:
        """Requests sent on this connection that still wait for their response."""
        return self._core.pending

    @property
    def in_flight(self) -> int:
        """Coroutine handlers of this connection's requests still running."""
        return len(self._dispatch.tasks)

    @property
    def running_handlers(self) -> list[asyncio.Task[None]]:
        """The coroutine handlers still running (to wait for, on a graceful shutdown)."""
        return list(self._dispatch.tasks)

    @property
    def write_buffer_size(self) -> int:
        """Bytes written but not yet handed to the kernel."""
        transport = self.transport
        return 0 if transport is None or transport.is_closing() else transport.get_write_buffer_size()

    @property
    def buffered_input(self) -> int:
        """Bytes received and not yet decoded into commands (at most one frame and one read)."""
        return self._core.buffered

    @property
    def reading_paused(self) -> bool:
        """True while reading is paused for back-pressure or the in-flight bound."""
        return self._core.reading_paused

    @property
    def writes_paused(self) -> bool:
        """True while unsent output is over the high-water mark."""
        return self._core.writes_paused

    @property
    def frame_started(self) -> float | None:
        """Loop time the frame now arriving (incomplete in the decoder) began, else ``None``
        (a server's sweep sets it again while reading is paused: the wait is ours, not the peer's)."""
        return self._core.frame_started

    @frame_started.setter
    def frame_started(self, when: float | None) -> None:
        self._core.frame_started = when

    # ------------------------------------------------------------------ large requests

    def offloads(self, size: int) -> bool:
        """Whether a request body of ``size`` bytes is large for this connection's server: its
        handler should decode it with :meth:`large_request` (never on a client's connection)."""
        offloader = None if self._server is None else self._server.offloader
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
        offloader = None if self._server is None else self._server.offloader
        if offloader is None:
            return work()
        return offloader.admit(self, request.code, len(request.body), work, in_turn=in_turn)

    async def off_loop(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` on the server's worker thread (inline on a client's
        connection); raises ``SYSTEM_ERROR`` instead of returning if the connection closed
        meanwhile, so nothing is applied for a peer that is gone."""
        offloader = None if self._server is None else self._server.offloader
        result = fn(*args, **kwargs) if offloader is None else await offloader.run(fn, *args, **kwargs)
        if self._core.closed:
            raise BrokerError(ResponseCode.SYSTEM_ERROR, "the connection closed")
        return result

    def time_slice(self) -> TimeSlice:
        """A :class:`~rocketq.remoting.offload.TimeSlice` of this server's ``read_time_slice``."""
        return TimeSlice(self._settings.read_time_slice or _DEFAULT_SLICE)

    def hold_reading(self) -> None:
        """Stop taking requests from this connection until as many :meth:`release_reading`."""
        self.apply(self._core.hold())

    def release_reading(self) -> None:
        self.apply(self._core.release(self.loop.time()))

    async def wait_closed(self) -> None:
        """Return once the connection is closed."""
        await asyncio.shield(self._closed_future)

    # ------------------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports implement asyncio.Transport without subclassing it
        transport = cast(asyncio.Transport, transport)
        self.transport = transport
        settings = self._settings
        transport.set_write_buffer_limits(high=settings.write_buffer_high, low=settings.write_buffer_low)
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:  # pragma: no cover - platform without TCP_NODELAY
                pass
        if self.remote_address == "?":
            self.remote_address = format_address(transport.get_extra_info("peername"))
        self.local_address = format_address(transport.get_extra_info("sockname"))
        self._idle.start(self.loop.time())
        logger.debug("%r: connected (local %s)", self, self.local_address)
        if self._events.on_open is not None:
            self._call_event(self._events.on_open, "open")

    def data_received(self, data: bytes) -> None:
        core = self._core
        self._idle.last_activity = now = self.loop.time()
        if core.closed:
            return
        heard, self._heard = self._heard, True
        error = core.receive_data(data, now)
        if error is not None:  # the decoder checks a frame's length word as soon as it arrives
            if not heard and data[:1] == b"\x16" and self._server is not None:
                self._tls_refused()
                return
            self._protocol_error(error.exc)
            return
        if not core.reading_paused and not self.processing:
            self._process()
        elif core.account():
            self._over_budget()

    def eof_received(self) -> bool | None:
        self._set_reason(f"{self.remote_address} closed the connection{self._silent_hint()}")
        return None  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            self._set_reason(f"connection to {self.remote_address} lost: {exc}{self._silent_hint()}")
        else:
            self._set_reason(f"connection to {self.remote_address} closed{self._silent_hint()}")
        self._mark_closed()
        self._core.release_budget()
        self._idle.stop()
        logger.debug("%r: %s", self, self.close_reason)
        if not self._closed_future.done():
            self._closed_future.set_result(None)
        if self._events.on_close is not None:
            self._call_event(self._events.on_close, "close")

    def pause_writing(self) -> None:
        self.apply(self._core.pause_writing())

    def resume_writing(self) -> None:
        change = self._core.resume_writing()
        self._outbox.wake_writers()
        self.apply(change)

    # ------------------------------------------------------------------ the read loop

    def _process(self) -> None:
        """Take the core's events until it needs more bytes, reading has to pause, or this
        connection has had its ``read_time_slice`` of the loop (then it yields to the others)."""
        core = self._core
        dispatch = self._dispatch
        loop_time = self.loop.time
        self.processing = True
        time_slice = self._settings.read_time_slice
        deadline = None  # the slice starts after the first request: no clock read for a lone one
        timed = core.timed
        try:
            while not core.reading_paused and not core.closed:
                event = core.next_event(loop_time() if timed else 0.0)
                if event is None:
                    return
                kind = type(event)  # one call, then identity tests (the events are final classes)
                if kind is ResponseArrived:
                    waiter = event.waiter  # type: ignore[union-attr]
                    if not waiter.done():
                        waiter.set_result(event.response)  # type: ignore[union-attr,arg-type]
                elif kind is RequestArrived:
                    dispatch.run(event.request, event.handler)  # type: ignore[union-attr]
                elif self._rare(event):
                    return
                if time_slice is not None and core.buffered:
                    now = time.monotonic()
                    if deadline is None:
                        deadline = now + time_slice
                    elif now > deadline:
                        self._yield_turn()
        finally:
            self.processing = False
            if self._outbox:
                self._outbox.flush()
            if (core.buffered or core.charged) and core.settle(loop_time()):
                self._over_budget()

    def _rare(self, event: Event[Waiter, Handler]) -> bool:
        """The events off the hot path; True when the read loop must stop (the stream broke)."""
        if isinstance(event, ProtocolError):
            self._protocol_error(event.exc)
            return True
        if isinstance(event, (LateResponse, StrayResponse)):
            self._unmatched(event)
        elif not isinstance(event, (ResponseArrived, RequestArrived)):
            self._dispatch.answer(event)
        return False

    def _unmatched(self, event: LateResponse | StrayResponse) -> None:
        cmd = event.response
        if isinstance(event, LateResponse):
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
            self.loop.time(),
            "%r: response (code %d) to opaque %d matches no request sent on this connection - dropped",
            self,
            cmd.code,
            cmd.opaque,
        )

    def _yield_turn(self) -> None:
        """Pause reading until the loop has run the other ready connections once."""
        self.apply(self._core.yield_turn())
        self.loop.call_soon(self._end_turn)

    def _end_turn(self) -> None:
        self.apply(self._core.end_turn())

    def _over_budget(self) -> None:
        """This connection's undecoded bytes took the server's input budget past its bound."""
        budget = self._core.budget
        assert budget is not None
        held = self._core.buffered
        self._peer_log.report(
            self.remote_address,
            "input-budget",
            self.loop.time(),
            "%r: closing the connection: the server holds %d bytes of undecoded input, over its "
            "bound of %d (this connection %d)",
            self,
            budget.used,
            budget.limit,
            held,
        )
        self.abort(f"the server's input buffers are full ({budget.used} of {budget.limit} bytes)")

    def _silent_hint(self) -> str:
        """For a client whose server closed before sending a byte: the likely reason."""
        if self._heard or self._server is not None:
            return ""
        transport = self.transport
        return silent_close_hint(transport is not None and transport.get_extra_info("ssl_object") is not None)

    def _tls_refused(self) -> None:
        """A TLS ClientHello reached a plaintext port: close, saying so (4.9's warning)."""
        self._peer_log.report(
            self.remote_address,
            "not-a-frame",
            self.loop.time(),
            "%r: closing the connection: its peer wants TLS, and TLS is disabled on this port",
            self,
        )
        self.close(f"{self.remote_address} wants TLS, and TLS is disabled on this port")

    def _protocol_error(self, exc: Exception) -> None:
        """The peer's bytes cannot be decoded: close this connection (the stream cannot resynchronise)."""
        if self._core.closed:
            return
        if isinstance(exc, RemoteProtocolError):
            self._peer_log.report(
                self.remote_address,
                "not-a-frame",
                self.loop.time(),
                "%r: closing the connection, its peer sent bytes that are not a frame: %s",
                self,
                exc,
            )
        else:  # a decoder bug: keep its traceback
            logger.error("%r: closing the connection, the frame decoder failed", self, exc_info=exc)
        self.close(f"protocol error from {self.remote_address}: {exc}")

    # ------------------------------------------------------------------ flow control

    def apply(self, change: ReadingChange | None) -> None:
        """Apply the core's decision to pause or resume reading to the transport."""
        if change is None:
            return
        transport = self.transport
        assert transport is not None
        if change is PAUSE_READING:
            transport.pause_reading()
            return
        transport.resume_reading()
        if not self.processing:
            # frames that arrived before the pause may wait in the decoder
            self.loop.call_soon(self._process_if_reading)

    def stop_reading(self) -> None:
        """Take no more requests from this connection (for a graceful shutdown); never undone."""
        self.apply(self._core.stop_reading())

    def _process_if_reading(self) -> None:
        core = self._core
        if not core.reading_paused and not self.processing and not core.closed:
            self._process()

    # ------------------------------------------------------------------ writing

    def touch(self) -> None:
        """Output left: the connection is not idle."""
        self._idle.last_activity = self.loop.time()

    def send_response(self, request: RemotingCommand, response: RemotingCommand) -> None:
        """Write ``response`` as the answer to ``request`` (for handlers that answer later).

        As RocketMQ does, the response gets the request's opaque and serialization type and the
        response flag, whatever the handler set.
        """
        head, body, error = self._core.send_response(request, response)
        if error is not None:
            logger.error("%r: response to request code %d cannot be encoded: %s", self, request.code, error)
            if not head:
                return
        self._outbox.send(head, body)

    # ------------------------------------------------------------------ requests

    def close_timed_out(self, code: int) -> None:
        """A request timed out and the owner asked to close the connection then (``close_on_timeout``)."""
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
        core = self._core
        if core.closed:
            raise self.closed_error(f"request code {request.code}")
        loop = self.loop
        if core.writes_paused:
            timeout = await self._drained_within(request, timeout, stated)
        self._run_hooks(request)
        future: asyncio.Future[RemotingCommand] = loop.create_future()
        now = loop.time()
        head, body = core.send_request(request, future, now=now, timeout=timeout, stated=stated)
        opaque = request.opaque
        self._outbox.send(head, body)
        self._deadlines.arm(now + timeout)
        try:
            response = await future
        except BaseException:
            core.discard(opaque)  # cancelled, timed out or failed: forget it
            raise
        self.after_response(request, response)
        return response

    async def _drained_within(self, request: RemotingCommand, timeout: float, stated: float) -> float:
        """Wait for the output to drain; what is left of ``timeout`` after it."""
        loop = self.loop
        deadline = loop.time() + timeout
        try:
            await asyncio.wait_for(self._outbox.drained(), timeout)
        except TimeoutError:
            raise RemotingTimeoutError(
                f"request code {request.code} to {self.remote_address} not sent within {stated:.3f}s: "
                "the connection's output did not drain"
            ) from None
        return max(deadline - loop.time(), 0.0)

    def _run_hooks(self, request: RemotingCommand) -> None:
        hooks = self._handlers.hooks
        if hooks:
            for hook in hooks:
                hook.before_request(self.remote_address, request)

    def prepare_request(self, request: RemotingCommand) -> tuple[int, bytes, bytes]:
        """Run the RPC hooks, give ``request`` a fresh opaque and encode it (raising
        RemoteProtocolError, with nothing sent, when it cannot be): ``(opaque, head, body)``.
        Safe from any thread (the hand-over's callers encode their own requests)."""
        self._run_hooks(request)
        return self._core.prepare_request(request)

    def track(self, opaque: int, code: int, waiter: Waiter, head: bytes, body: bytes) -> None:
        """Loop thread: record a prepared request's waiter (timed out by its caller) and write it."""
        self._core.track(opaque, code, waiter)
        self._outbox.send(head, body)

    def after_response(self, request: RemotingCommand, response: RemotingCommand) -> None:
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
        if self._core.closed:
            raise self.closed_error(f"request code {request.code}")
        return self._handovers.call_threadsafe(request, timeout)

    async def invoke_from_loop(self, request: RemotingCommand, timeout: float) -> RemotingCommand:
        """:meth:`invoke` awaited on another event loop than the connection's (an application's
        own loop, while the connection runs on a client's loop thread).

        As :meth:`invoke_threadsafe`, the caller encodes; the connection's loop writes and, when
        the response comes, completes the caller's future through the caller loop's
        :class:`~rocketq.remoting.handover.LoopMailbox` (one wake-up of that loop per batch of
        responses). A timeout raises :class:`~rocketq.errors.RemotingTimeoutError`; a timeout or a
        cancellation forgets the request (not sent, if the connection's loop had not taken it).
        """
        if self._core.closed:
            raise self.closed_error(f"request code {request.code}")
        loop = asyncio.get_running_loop()
        if loop is self.loop:
            return await self.invoke(request, timeout)
        return await self._handovers.call_from_loop(loop, request, timeout)

    def abandon(self, opaque: int, code: int, timed_out: bool) -> None:
        """Loop thread: a caller on another thread stopped waiting for ``opaque``."""
        if self._core.discard(opaque) is not None and timed_out and self._settings.close_on_timeout:
            self.close_timed_out(code)

    async def invoke_oneway(self, request: RemotingCommand) -> None:
        """Send ``request`` marked oneway: the peer sends no response.

        Returns once the frame is handed to the transport (after waiting for the output to drain
        below the high-water mark, if it was above).
        """
        if self._core.closed:
            raise self.closed_error(f"oneway request code {request.code}")
        if self._core.writes_paused:
            await self._outbox.drained()
        self._run_hooks(request)
        head, body = self._core.send_oneway(request)
        self._outbox.send(head, body)

    # ------------------------------------------------------------------ closing

    def _set_reason(self, reason: str) -> None:
        if self.close_reason is None:
            self.close_reason = reason

    def closed_error(self, what: str) -> RemotingClosedError:
        """The error of a send (``what``) on this closed connection."""
        return RemotingClosedError(f"cannot send {what} to {self.remote_address}: {self.close_reason}")

    def _mark_closed(self) -> None:
        """Enter the closed state: fail waiting requests and writers (once)."""
        core = self._core
        if core.closed:
            return
        reason = self.close_reason or f"connection to {self.remote_address} closed"
        pending = core.close()
        self._handovers.take()  # requests handed over but not sent fail with the pending ones
        self._deadlines.cancel()
        for entry in pending:
            future = entry.waiter
            if not future.done():
                future.set_exception(
                    RemotingClosedError(
                        f"no response to request code {entry.code} (opaque {entry.opaque}) "
                        f"from {self.remote_address}: {reason}"
                    )
                )
        self._outbox.fail_writers(reason)

    def close(self, reason: str | None = None) -> None:
        """Close the connection after writing what is buffered; pending requests fail at once."""
        if reason is not None:
            self._set_reason(reason)
        self._set_reason(f"connection to {self.remote_address} closed locally")
        if not self._core.closed:
            self._outbox.flush()
        self._mark_closed()
        if self.transport is not None:
            self.transport.close()

    def abort(self, reason: str | None = None) -> None:
        """Close the connection at once, discarding unsent output."""
        if reason is not None:
            self._set_reason(reason)
        self._set_reason(f"connection to {self.remote_address} aborted locally")
        self._mark_closed()
        if self.transport is not None:
            self.transport.abort()

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
        tasks = list(self._dispatch.tasks)
        for task in tasks:
            task.cancel()
        return tasks

    def _call_event(self, callback: Callable[[RemotingConnection], None], event: str) -> None:
        try:
            callback(self)
        except Exception:
            logger.exception("%r: %s listener failed", self, event)
