"""The connection core: one remoting connection's whole state, sans I/O.

As h11's ``Connection`` holds an HTTP/1.1 connection's state and leaves the socket to its caller,
:class:`ConnectionCore` holds what a RocketMQ remoting connection decides, and nothing that waits:

* **bytes become events.** :meth:`ConnectionCore.receive_data` takes what the socket produced
  (with ``now``, the driver's clock); :meth:`ConnectionCore.next_event` takes whole frames out of
  the :class:`~rocketq.protocol.frame.FrameDecoder` and says what each is:

  - :class:`ResponseArrived` — a response, matched by opaque to the request that waits for it:
    the request's :class:`~rocketq.protocol.correlation.InFlight` entry (the driver's waiter)
    with its ``response``;
    :class:`LateResponse` when its caller stopped waiting, :class:`StrayResponse` when it
    answers nothing sent here;
  - :class:`RequestArrived` — a request to run, with the handler its code's lookup gave;
  - :class:`NotSupported` — a request whose code has no handler (answered
    ``REQUEST_CODE_NOT_SUPPORTED`` with RocketMQ's remark ``" request type N not supported"``);
  - :class:`Busy` — a request that waited in this connection's buffer longer than its code may
    (answered ``SYSTEM_BUSY`` unserved, as RocketMQ's ``BrokerFastFailure``);
  - :class:`Refused` — a request whose body is over its code's limit (answered ``SYSTEM_ERROR``
    before anything decodes it); :class:`CheckBody` — a body so large that its limit is counted
    off the driver's loop, after which the driver passes it to :meth:`ConnectionCore.dispatch`
    again with ``checked=True``;
  - :class:`ProtocolError` — bytes that are not a frame (the stream cannot resynchronise: close).

* **requests leave as bytes.** :meth:`ConnectionCore.send_request` numbers a request, records
  its waiter and deadline, and gives the frame's two parts to write;
  :meth:`~ConnectionCore.send_oneway` and :meth:`~ConnectionCore.send_response` likewise.
  Drivers that encode on another thread split the first in two
  (:meth:`~ConnectionCore.prepare_request` there, :meth:`~ConnectionCore.track` on the
  connection's own thread).

* **time is passed in.** :meth:`~ConnectionCore.next_deadline` says when the earliest waiting
  request times out; :meth:`~ConnectionCore.expire` with ``now`` gives those whose time is up.

* **flow control is counted here.** Handlers running (bounded by ``max_in_flight``), large
  requests holding the connection, a turn yielded to other connections, output over its
  high-water mark, a graceful stop: each change returns :data:`PAUSE_READING`,
  :data:`RESUME_READING` or ``None``, which the driver applies to its transport. The bytes held
  undecoded are charged to the server's shared input budget (:meth:`~ConnectionCore.account`).

A driver (``rocketq.remoting``: the asyncio protocol, the thread hand-over, the blocking socket)
only moves bytes, runs handlers and wakes waiters. This module imports no event loop, socket,
thread or clock.

>>> from rocketq.protocol.frame import encode_frame
>>> core: ConnectionCore[str, str] = ConnectionCore({34: "heartbeat"}.get)
>>> route = RemotingCommand.request(105)
>>> head, body = core.send_request(route, "route", now=0.0, timeout=3.0)
>>> core.next_deadline()
3.0
>>> core.receive_data(encode_frame(RemotingCommand(code=0, opaque=route.opaque, flag=1)), now=0.1)
>>> event = core.next_event(now=0.1)
>>> type(event).__name__, event.inflight.waiter
('ResponseArrived', 'route')
>>> core.receive_data(encode_frame(RemotingCommand.request(34)), now=0.2)
>>> event = core.next_event(now=0.2)
>>> type(event).__name__, event.handler
('RequestArrived', 'heartbeat')
>>> core.receive_data(encode_frame(RemotingCommand.request(999)), now=0.3)
>>> core.next_event(now=0.3).remark
' request type 999 not supported'
>>> core.next_event(now=0.3) is None
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Generic, Protocol, TypeVar

from rocketq.errors import RemoteProtocolError
from rocketq.protocol.codes import ResponseCode
from rocketq.protocol.command import FLAG_ONEWAY, FLAG_RESPONSE, RemotingCommand
from rocketq.protocol.correlation import Correlator, InFlight
from rocketq.protocol.frame import (
    DEFAULT_MAX_EXT_FIELDS,
    DEFAULT_MAX_FRAME_SIZE,
    DEFAULT_MAX_HEADER_SIZE,
    FrameDecoder,
    encode_frame_parts,
)

__all__ = [
    "PAUSE_READING",
    "RESUME_READING",
    "Admission",
    "Budget",
    "Busy",
    "CheckBody",
    "ConnectionCore",
    "Event",
    "LateResponse",
    "NotSupported",
    "PauseReading",
    "ProtocolError",
    "ReadingChange",
    "Refused",
    "RequestArrived",
    "ResponseArrived",
    "ResumeReading",
    "StrayResponse",
]

W = TypeVar("W")
H = TypeVar("H")

_RESPONSE = FLAG_RESPONSE
_ONEWAY = FLAG_ONEWAY
_NOT_A_REQUEST = ~(FLAG_RESPONSE | FLAG_ONEWAY)

#: the remark of the fallback answer when a response cannot be encoded
ENCODE_FAILED_REMARK = "the server could not encode its response (its log has the details)"


# ---------------------------------------------------------------------------------------- events


class ResponseArrived(InFlight[W]):
    """A response to a request sent here: the request's in-flight entry (its ``waiter``,
    ``code``, ``opaque``...) with the ``response`` that answers it.

    The core records every request it tracks as one of these, and fills ``response`` in when the
    answer comes: the event of an answer is the entry itself, so the per-response path makes no
    object of its own.
    """

    __slots__ = ("response",)

    def __init__(
        self, opaque: int, code: int, waiter: W, deadline: float | None, timeout: float | None = None
    ) -> None:
        super().__init__(opaque, code, waiter, deadline, timeout)
        #: the answer, once it came (``None`` until then)
        self.response: RemotingCommand = None  # type: ignore[assignment]

    @property
    def inflight(self) -> ResponseArrived[W]:
        """The request's in-flight entry (this event itself)."""
        return self


class LateResponse:
    """A response to a request whose caller stopped waiting (timed out, cancelled): dropped."""

    __slots__ = ("response",)

    def __init__(self, response: RemotingCommand) -> None:
        self.response = response


class StrayResponse:
    """A response that answers no request sent on this connection: the peer's mistake, dropped."""

    __slots__ = ("response",)

    def __init__(self, response: RemotingCommand) -> None:
        self.response = response


class RequestArrived(Generic[H]):
    """A request admitted to its handler: the driver runs ``handler`` on ``request``."""

    __slots__ = ("handler", "request")

    def __init__(self, request: RemotingCommand, handler: H) -> None:
        self.request = request
        self.handler = handler


class NotSupported:
    """A request whose code has no handler; ``response`` is its answer (``None`` when oneway)."""

    __slots__ = ("remark", "request", "response")

    def __init__(self, request: RemotingCommand) -> None:
        self.request = request
        self.remark = remark = f" request type {request.code} not supported"
        self.response = (
            None
            if request.flag & _ONEWAY
            else request.response(code=ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark=remark)
        )


class Busy:
    """A request that waited ``waited`` seconds in this connection's buffer, over its code's
    ``limit``, with ``queued`` whole frames behind it: answered ``SYSTEM_BUSY`` unserved."""

    __slots__ = ("limit", "queued", "request", "waited")

    def __init__(self, request: RemotingCommand, waited: float, limit: float, queued: int) -> None:
        self.request = request
        self.waited = waited
        self.limit = limit
        self.queued = queued


class Refused:
    """A request whose body is over its code's limit: answered ``SYSTEM_ERROR`` with ``remark``."""

    __slots__ = ("remark", "request")

    def __init__(self, request: RemotingCommand, remark: str) -> None:
        self.request = request
        self.remark = remark


class CheckBody:
    """A request whose body is large enough to be checked against ``limit`` off the driver's loop
    (``limit.refusal(code, body)``); then :meth:`ConnectionCore.dispatch` with ``checked=True``."""

    __slots__ = ("limit", "request")

    def __init__(self, request: RemotingCommand, limit: BodyLimit) -> None:
        self.request = request
        self.limit = limit


class ProtocolError:
    """The peer sent bytes that are not a frame (``exc``): close the connection."""

    __slots__ = ("exc",)

    def __init__(self, exc: Exception) -> None:
        self.exc = exc


class PauseReading:
    """Stop reading from the transport."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "PAUSE_READING"


class ResumeReading:
    """Read from the transport again (frames may already wait in the decoder)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "RESUME_READING"


PAUSE_READING = PauseReading()
RESUME_READING = ResumeReading()

ReadingChange = PauseReading | ResumeReading
Event = (
    ResponseArrived[W]
    | LateResponse
    | StrayResponse
    | RequestArrived[H]
    | NotSupported
    | Busy
    | Refused
    | CheckBody
    | ProtocolError
)


# ---------------------------------------------------------------------------------------- admission


class BodyLimit(Protocol):
    """What bounds one request code's body (``rocketq.remoting.guard.RequestLimit`` is one)."""

    def refusal(self, code: int, body: bytes) -> str | None:
        """Why ``body`` is refused, or ``None`` when it is within the limit."""
        ...


class Budget(Protocol):
    """Bytes held undecoded by all connections of a server (``rocketq.remoting.guard.InputBudget``)."""

    used: int
    limit: int


class Admission:
    """What a server refuses before a handler runs (clients admit everything: ``None``).

    * ``wait_limits``: seconds a request of each code may wait in its connection's buffer before
      it is answered busy (:class:`Busy`);
    * ``body_limits``: the body limit of each code (:class:`Refused`), checked for bodies of at
      least ``check_from`` bytes (one comparison for the usual small body);
    * ``offload_threshold``: bodies over it are checked off the loop (:class:`CheckBody`);
    * ``budget``: the server's shared input budget, charged with this connection's undecoded bytes.
    """

    __slots__ = ("body_limits", "budget", "check_from", "offload_threshold", "wait_limits")

    def __init__(
        self,
        *,
        wait_limits: Mapping[int, float] | None = None,
        body_limits: Mapping[int, BodyLimit] | None = None,
        check_from: int = 0,
        offload_threshold: int | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.wait_limits: dict[int, float] = dict(wait_limits or {})
        self.body_limits: dict[int, BodyLimit] = dict(body_limits or {})
        self.check_from = check_from if self.body_limits else 1 << 62
        self.offload_threshold = offload_threshold
        self.budget = budget


# ---------------------------------------------------------------------------------------- the core


class ConnectionCore(Generic[W, H]):
    """One connection's state and decisions (see the module docstring).

    ``lookup(code)`` gives the handler of a request code (``None``: not supported); ``W`` is the
    driver's waiter type, ``H`` its handler type: the core stores both and calls neither.
    ``opaques`` numbers requests (connections of one client may share a sequence); the decoder's
    bounds are RocketMQ's defaults unless given. ``max_in_flight`` bounds the handlers running at
    once; ``pause_reads_on_write_pressure`` makes output over the high-water mark pause reading
    (a server's connection: a peer that does not read cannot make it buffer answers without
    bound). ``admission`` is a server's (see :class:`Admission`).
    """

    __slots__ = (
        "_admission",
        "_arrived",
        "_complete",
        "_decoder",
        "_inflight",
        "_lookup",
        "_next_command",
        "_pause_on_write",
        "_queued",
        "charged",
        "closed",
        "frame_started",
        "handlers_running",
        "holds",
        "max_in_flight",
        "reading_paused",
        "stopped",
        "timed",
        "writes_paused",
        "yielded",
    )

    def __init__(
        self,
        lookup: Callable[[int], H | None],
        *,
        opaques: Iterator[int] | None = None,
        decoder: FrameDecoder | None = None,
        max_in_flight: int = 1 << 30,
        pause_reads_on_write_pressure: bool = False,
        admission: Admission | None = None,
    ) -> None:
        self._lookup = lookup
        self._decoder = FrameDecoder(DEFAULT_MAX_FRAME_SIZE) if decoder is None else decoder
        self._inflight: Correlator[W] = Correlator(opaques, entry=ResponseArrived)
        self._next_command = self._decoder.next_command
        self._complete = self._inflight.complete
        self._admission = admission
        #: whether :meth:`next_event` looks at ``now`` (requests may be answered busy); when not,
        #: a driver may pass any number and save reading its clock per frame
        self.timed = admission is not None and bool(admission.wait_limits)
        self._pause_on_write = pause_reads_on_write_pressure
        self.max_in_flight = max_in_flight
        # when the oldest read whose whole frames are not all handled arrived (None: none wait)
        self._arrived: float | None = None
        self._queued: int | None = None  # whole frames behind the request being read (busy remarks)
        #: undecoded bytes of this connection charged to the admission's budget
        self.charged = 0
        #: when the frame now arriving (incomplete in the decoder) began, else ``None``
        self.frame_started: float | None = None
        #: True once closed (never reopened): nothing more is read, sent or tracked
        self.closed = False
        #: reading is paused now (for any of the reasons below)
        self.reading_paused = False
        #: handlers running (the driver reports their start and end)
        self.handlers_running = 0
        #: large requests holding this connection's reading
        self.holds = 0
        #: reading paused to let other connections run (a time slice ended)
        self.yielded = False
        #: output is over its high-water mark
        self.writes_paused = False
        #: reading stopped for good (a graceful shutdown)
        self.stopped = False

    @classmethod
    def with_limits(
        cls,
        lookup: Callable[[int], H | None],
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_header_size: int = DEFAULT_MAX_HEADER_SIZE,
        max_ext_fields: int = DEFAULT_MAX_EXT_FIELDS,
        opaques: Iterator[int] | None = None,
    ) -> ConnectionCore[W, H]:
        """A client's core: a decoder with these bounds, every request admitted."""
        decoder = FrameDecoder(max_frame_size, max_header_size=max_header_size, max_ext_fields=max_ext_fields)
        return cls(lookup, opaques=opaques, decoder=decoder)

    # ------------------------------------------------------------------ reading

    @property
    def buffered(self) -> int:
        """Bytes received and not yet decoded into commands."""
        return self._decoder.buffered

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> ProtocolError | None:
        """Take bytes the peer sent, read at ``now``; a bad length word at the front is a
        :class:`ProtocolError` at once (the decoder checks it before waiting for the frame)."""
        if self._arrived is None:
            self._arrived = now
        self._queued = None
        try:
            self._decoder.receive_data(data)
        except Exception as exc:
            return ProtocolError(exc)
        return None

    def next_event(self, now: float) -> Event[W, H] | None:
        """The next whole frame as an event, ``None`` when more bytes are needed."""
        # the per-frame path: bound methods kept in slots, the usual request decided inline
        try:
            cmd = self._next_command()
        except Exception as exc:
            return ProtocolError(exc)
        if cmd is None:
            self._arrived = None  # every whole frame handled: the next read starts the clock
            return None
        self.frame_started = None
        if cmd.flag & _RESPONSE:
            entry = self._complete(cmd.opaque)
            if entry is not None:
                entry.response = cmd  # type: ignore[attr-defined]  # the core's entries are events
                return entry  # type: ignore[return-value]
            return LateResponse(cmd) if self._inflight.was_abandoned(cmd.opaque) else StrayResponse(cmd)
        handler = self._lookup(cmd.code)
        refusal: Event[W, H] | None = None if handler is not None else NotSupported(cmd)
        admission = self._admission
        if admission is not None and refusal is None:  # a server's: busy, or a body over its limit
            wait_limit = admission.wait_limits.get(cmd.code)
            if wait_limit is not None:
                arrived = self._arrived
                waited = 0.0 if arrived is None else now - arrived
                if waited >= wait_limit:
                    refusal = self._busy(cmd, waited, wait_limit)
            if refusal is None and len(cmd.body) >= admission.check_from:  # one comparison, usually
                refusal = self._check_body(cmd, admission)
        # no refusal means a handler was found
        return RequestArrived(cmd, handler) if refusal is None else refusal  # type: ignore[arg-type]

    def dispatch(self, request: RemotingCommand, now: float, *, checked: bool = False) -> Event[W, H]:
        """What to do with ``request``: run its handler, or answer it (not supported, busy,
        refused), or check its large body first. ``checked``: its body was checked (and the
        request guard passed) off the loop; only the handler lookup remains."""
        handler = self._lookup(request.code)
        if handler is None:
            return NotSupported(request)
        admission = self._admission
        if admission is not None and not checked:
            refusal = self._admit(request, admission, now)
            if refusal is not None:
                return refusal
        return RequestArrived(request, handler)

    def _admit(self, request: RemotingCommand, admission: Admission, now: float) -> Event[W, H] | None:
        """A busy answer, a refusal, or a body to check off the loop; ``None`` admits it."""
        wait_limit = admission.wait_limits.get(request.code)
        if wait_limit is not None:
            arrived = self._arrived
            waited = 0.0 if arrived is None else now - arrived
            if waited >= wait_limit:
                return self._busy(request, waited, wait_limit)
        if len(request.body) < admission.check_from:
            return None
        return self._check_body(request, admission)

    def _busy(self, request: RemotingCommand, waited: float, wait_limit: float) -> Busy:
        """``request`` waited over its code's limit: busy, with the whole frames behind it."""
        queued = self._queued
        queued = self._decoder.complete_frames() if queued is None else max(queued - 1, 0)
        self._queued = queued
        return Busy(request, waited, wait_limit, queued)

    @staticmethod
    def _check_body(request: RemotingCommand, admission: Admission) -> Refused | CheckBody | None:
        """A body at least ``check_from`` bytes long, against its code's limit (if any)."""
        code = request.code
        limit = admission.body_limits.get(code)
        if limit is None:
            return None
        threshold = admission.offload_threshold
        if threshold is not None and len(request.body) > threshold:
            return CheckBody(request, limit)
        remark = limit.refusal(code, request.body)
        return None if remark is None else Refused(request, remark)

    def settle(self, now: float) -> bool:
        """After the driver took what it could: charge the undecoded bytes to the budget and note
        when an incomplete frame began. True when the budget is over its bound and this
        connection holds bytes (it is the one to close)."""
        held = self._decoder.buffered
        over = False
        if held or self.charged:  # the usual read leaves nothing behind: nothing to do
            over = self.account()
            if held and self.frame_started is None:
                self.frame_started = now
        return over

    def account(self) -> bool:
        """Bring this connection's undecoded bytes up to date in the budget; True when the total
        is over the bound and this connection holds some (close it)."""
        admission = self._admission
        budget = None if admission is None else admission.budget
        if budget is None:
            return False
        held = self._decoder.buffered
        budget.used += held - self.charged
        self.charged = held
        return budget.used > budget.limit and held > 0 and not self.closed

    @property
    def budget(self) -> Budget | None:
        """The input budget this connection's bytes are charged to, if any."""
        return None if self._admission is None else self._admission.budget

    # ------------------------------------------------------------------ sending

    def prepare_request(self, request: RemotingCommand) -> tuple[int, bytes, bytes]:
        """Number ``request`` and encode it: ``(opaque, head, body)``. Safe from another thread
        (the opaque is never one still waiting); :meth:`track` it on the connection's own."""
        opaque = self._inflight.next_opaque()
        request.opaque = opaque
        request.flag &= _NOT_A_REQUEST
        head, body = encode_frame_parts(request)
        return opaque, head, body

    def track(
        self, opaque: int, code: int, waiter: W, deadline: float | None = None, timeout: float | None = None
    ) -> None:
        """Record a prepared request as sent, ``waiter`` waiting for its answer until ``deadline``."""
        self._inflight.add(opaque, code, waiter, deadline, timeout)

    def send_request(
        self, request: RemotingCommand, waiter: W, *, now: float, timeout: float, stated: float | None = None
    ) -> tuple[bytes, bytes]:
        """Number, encode and track ``request`` (answer due by ``now + timeout``): the frame's
        ``(head, body)`` to write. ``stated`` is the timeout to name in errors (default
        ``timeout``). Raises :class:`~rocketq.errors.RemoteProtocolError`, with nothing tracked,
        when it cannot be encoded."""
        opaque, head, body = self.prepare_request(request)
        self._inflight.add(opaque, request.code, waiter, now + timeout, timeout if stated is None else stated)
        return head, body

    def send_oneway(self, request: RemotingCommand) -> tuple[bytes, bytes]:
        """Number ``request``, mark it oneway and encode it (nothing waits for an answer)."""
        request.opaque = self._inflight.next_opaque()
        request.flag = (request.flag & ~_RESPONSE) | _ONEWAY
        return encode_frame_parts(request)

    @staticmethod
    def send_response(
        request: RemotingCommand, response: RemotingCommand
    ) -> tuple[bytes, bytes, RemoteProtocolError | None]:
        """``response`` as the answer to ``request``: ``(head, body, error)``.

        As RocketMQ does, it takes the request's opaque and serialization type and the response
        flag. When it cannot be encoded, ``error`` says why and the parts are a bare
        ``SYSTEM_ERROR`` answer's instead (empty, when the response already was one)."""
        response.opaque = request.opaque
        response.flag |= _RESPONSE
        response.serialize_type = request.serialize_type
        try:
            head, body = encode_frame_parts(response)
        except RemoteProtocolError as exc:
            if response.code == ResponseCode.SYSTEM_ERROR and not response.ext_fields and not response.body:
                return b"", b"", exc  # even the bare error response failed; nothing more to try
            fallback = request.response(code=ResponseCode.SYSTEM_ERROR, remark=ENCODE_FAILED_REMARK)
            head, body = encode_frame_parts(fallback)
            return head, body, exc
        return head, body, None

    # ------------------------------------------------------------------ waiting requests

    @property
    def pending(self) -> int:
        """Requests sent here that wait for their answer."""
        return len(self._inflight)

    def is_waiting(self, opaque: int) -> bool:
        return opaque in self._inflight

    def discard(self, opaque: int) -> InFlight[W] | None:
        """The caller of ``opaque`` stopped waiting: forget it (a late answer is a :class:`LateResponse`)."""
        return self._inflight.discard(opaque)

    def next_deadline(self) -> float | None:
        """The earliest deadline of a waiting request (``None``: none has one)."""
        return self._inflight.next_deadline()

    def expire(self, now: float) -> list[InFlight[W]]:
        """Forget and return the waiting requests whose deadline is at or before ``now``."""
        return self._inflight.expire(now)

    def close(self) -> list[InFlight[W]]:
        """Enter the closed state: every waiting request is returned (to fail) and forgotten."""
        self.closed = True
        return self._inflight.drain()

    def release_budget(self) -> None:
        """Give this connection's share of the input budget back (it is gone)."""
        budget = self.budget
        if budget is not None:
            budget.used -= self.charged
        self.charged = 0

    # ------------------------------------------------------------------ flow control

    def _reading_change(self) -> ReadingChange | None:
        if self.closed:
            return None
        wanted = not (
            self.stopped
            or self.yielded
            or self.holds
            or self.handlers_running >= self.max_in_flight
            or (self.writes_paused and self._pause_on_write)
        )
        if wanted != self.reading_paused:
            return None
        self.reading_paused = not wanted
        if wanted:
            self._queued = None  # a new pass over the buffer counts the queue behind it again
            return RESUME_READING
        return PAUSE_READING

    def handler_started(self) -> ReadingChange | None:
        """A handler began running (one more in flight)."""
        self.handlers_running += 1
        return self._reading_change() if self.handlers_running >= self.max_in_flight else None

    def handler_finished(self) -> ReadingChange | None:
        """A handler ended."""
        self.handlers_running -= 1
        return self._reading_change() if self.reading_paused else None

    def hold(self) -> ReadingChange | None:
        """A large request holds this connection's reading until :meth:`release`."""
        self.holds += 1
        return self._reading_change()

    def release(self, now: float) -> ReadingChange | None:
        """A large request ended. The requests behind it waited for their own peer's request, not
        for the server's other work: their queue time (busy answers) starts again at ``now``."""
        self.holds -= 1
        if self.holds:
            return None
        if self._arrived is not None:
            self._arrived = now
        return self._reading_change()

    def yield_turn(self) -> ReadingChange | None:
        """This connection's time slice is over: pause until the others had a turn."""
        self.yielded = True
        return self._reading_change()

    def end_turn(self) -> ReadingChange | None:
        self.yielded = False
        return self._reading_change()

    def pause_writing(self) -> ReadingChange | None:
        """Output went over its high-water mark."""
        self.writes_paused = True
        return self._reading_change()

    def resume_writing(self) -> ReadingChange | None:
        """Output drained below its low-water mark."""
        self.writes_paused = False
        return self._reading_change()

    def stop_reading(self) -> ReadingChange | None:
        """Take no more requests, for good (a graceful shutdown)."""
        self.stopped = True
        return self._reading_change()
