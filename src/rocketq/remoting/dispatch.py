"""Running what the connection core decided about a received request, on the event loop.

The core (:class:`~rocketq.protocol.connection.ConnectionCore`) says what a request is: one to
run (:class:`~rocketq.protocol.connection.RequestArrived`, with its handler) or one to answer
unserved (not supported, busy, refused), or one whose large body is checked first. A
:class:`Dispatcher` carries it out for one :class:`~rocketq.remoting.RemotingConnection`:

* a handler is called as ``handler(connection, request)`` after the server's request guard and
  the RPC hooks, and returns a response, ``None``, or an awaitable of either. A plain function
  runs right in the read loop, with no task made for it; an awaitable becomes a task of its own,
  so a long-polling handler never holds up the requests behind it, and responses go out in
  whatever order the handlers finish; the tasks running count against ``max_in_flight``;
* a handler that raises a :class:`~rocketq.errors.BrokerError` answers with that error's code and
  remark, a :class:`~rocketq.errors.RemoteProtocolError` (the request does not decode) answers
  ``SYSTEM_ERROR`` with its text, and any other exception ``SYSTEM_ERROR`` saying no more than
  "internal error" (:func:`~rocketq.remoting.handlers.describe_exception`); oneway requests are
  never answered;
* a large body's limit is counted, and its guard run, on the server's worker thread, with the
  connection's reading held; the request then goes back to the core to be dispatched as usual.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Coroutine
from typing import TYPE_CHECKING, Any

from rocketq.errors import BrokerError, RemoteProtocolError
from rocketq.logsummary import LogSummary
from rocketq.protocol.codes import ResponseCode, code_name
from rocketq.protocol.command import FLAG_ONEWAY, RemotingCommand
from rocketq.protocol.connection import (
    Busy,
    CheckBody,
    ConnectionCore,
    NotSupported,
    Refused,
    RequestArrived,
)
from rocketq.remoting.admission import FastFail
from rocketq.remoting.guard import PeerLog, RequestLimit
from rocketq.remoting.handlers import Handler, HandlerResult, HandlerTable, describe_exception
from rocketq.remoting.offload import Offloader
from rocketq.remoting.outbox import Outbox

if TYPE_CHECKING:
    from rocketq.remoting.connection import RemotingConnection

__all__ = ["Dispatcher"]

#: the connection's log (one name for all its parts, as before they were split: what operators filter on)
logger = logging.getLogger("rocketq.remoting.connection")

_ONEWAY = FLAG_ONEWAY

#: Requests answered busy (``fast_fail``): one line per 10 s, never one per request.
_BUSY_LOG = LogSummary(logger)


class Dispatcher:
    """Runs handlers and sends answers for one connection (see the module docstring)."""

    __slots__ = (
        "_conn",
        "_core",
        "_fast_fail",
        "_handlers",
        "_loop",
        "_offloader",
        "_outbox",
        "_peer_log",
        "tasks",
    )

    def __init__(
        self,
        conn: RemotingConnection,
        core: ConnectionCore[object, Handler],
        outbox: Outbox,
        handlers: HandlerTable,
        peer_log: PeerLog,
        *,
        fast_fail: FastFail | None,
        offloader: Offloader | None,
    ) -> None:
        self._conn = conn
        self._core = core
        self._outbox = outbox
        self._loop = conn.loop
        self._handlers = handlers
        self._peer_log = peer_log
        self._fast_fail = fast_fail
        self._offloader = offloader
        #: the coroutine handlers (and large-body checks) still running
        self.tasks: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ running handlers

    def run(self, request: RemotingCommand, handler: Handler, *, checked: bool = False) -> None:
        """Guard, hook and call ``handler`` for ``request``; answer what it returns."""
        conn = self._conn
        handlers = self._handlers
        try:
            guard = handlers.guard
            if guard is not None and not checked:
                guard(conn, request)
            if handlers.hooks:
                for hook in handlers.hooks:
                    hook.before_request(conn.remote_address, request)
            result: object = handler(conn, request)
        except Exception as exc:
            self.failed(request, exc)
            return
        if result is None or isinstance(result, RemotingCommand):
            self.reply(request, result)
        elif inspect.isawaitable(result):
            self._start(self._finish_handler(request, result))
        else:
            error = TypeError(
                f"handler for request code {request.code} returned {type(result).__name__}, "
                "not a RemotingCommand, None or an awaitable"
            )
            self.failed(request, error)

    def _start(self, work: Coroutine[Any, Any, None]) -> None:
        task = self._loop.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        self._conn.apply(self._core.handler_started())

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        self._conn.apply(self._core.handler_finished())

    async def _finish_handler(self, request: RemotingCommand, result: Awaitable[HandlerResult]) -> None:
        try:
            response: object = await result
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.failed(request, exc)
            return
        if isinstance(response, RemotingCommand) or response is None:
            self.reply(request, response)
        else:
            self.failed(
                request,
                TypeError(
                    f"handler for request code {request.code} produced {type(response).__name__}, "
                    "not a RemotingCommand or None"
                ),
            )

    def answer(self, event: NotSupported | Busy | Refused | CheckBody) -> None:
        """Carry out the core's decision not to run a request's handler (yet)."""
        if isinstance(event, NotSupported):
            self._not_supported(event)
        elif isinstance(event, Busy):
            self._busy(event)
        elif isinstance(event, Refused):
            self._refuse(event.request, event.remark)
        else:
            self._check_off_loop(event.request, event.limit)

    def _check_off_loop(self, request: RemotingCommand, limit: object) -> None:
        """A large body's limit is checked on the worker thread (counting 16 MiB takes ~15 ms),
        with this connection's reading held, then the request is handled as usual."""
        offloader = self._offloader
        assert offloader is not None
        assert isinstance(limit, RequestLimit)
        conn = self._conn

        async def check() -> None:
            try:
                refusal = await offloader.run(limit.refusal, request.code, request.body)
                if refusal is not None:
                    self._refuse(request, refusal)
                    return
                guard = self._handlers.guard
                if guard is not None:  # a large body's check (a signature, a heartbeat read) too
                    await offloader.run(guard, conn, request)
                if not conn.is_closed:  # its own hold is taken before ours ends
                    self.dispatch_checked(request)
            except Exception as exc:  # the worker is closed (the server is shutting down)
                self.failed(request, exc)
            finally:
                conn.release_reading()

        conn.hold_reading()
        self._start(check())

    def dispatch_checked(self, request: RemotingCommand) -> None:
        """A request whose body was checked off the loop: the core's decision, then its handler."""
        event = self._core.dispatch(request, self._loop.time(), checked=True)
        if isinstance(event, RequestArrived):
            self.run(request, event.handler, checked=True)
        else:
            self.answer(event)  # type: ignore[arg-type]  # only NotSupported, once checked

    # ------------------------------------------------------------------ answers

    def reply(self, request: RemotingCommand, response: RemotingCommand | None) -> None:
        """Answer ``request`` with ``response`` after the RPC hooks (none for oneway or ``None``)."""
        conn = self._conn
        if response is not None and self._handlers.hooks:
            for hook in self._handlers.hooks:
                try:
                    hook.after_response(conn.remote_address, request, response)
                except Exception:
                    logger.exception("%r: RPC hook %r failed after request code %d", conn, hook, request.code)
        if request.flag & _ONEWAY:
            if response is not None:
                logger.debug("%r: response to oneway request code %d dropped", conn, request.code)
            return
        if response is None:
            logger.debug("%r: handler for request code %d gave no response", conn, request.code)
            return
        if self._core.closed:
            logger.debug(
                "%r: response to request code %d (opaque %d) dropped: %s",
                conn,
                request.code,
                request.opaque,
                conn.close_reason,
            )
            return
        head, body, error = self._core.send_response(request, response)
        if error is not None:
            logger.error("%r: response to request code %d cannot be encoded: %s", conn, request.code, error)
            if not head:
                return
        self._outbox.send(head, body)

    def _not_supported(self, event: NotSupported) -> None:
        conn = self._conn
        self._peer_log.report(
            conn.remote_address, "not-supported", self._loop.time(), "%r:%s", conn, event.remark
        )
        if event.response is not None:
            self.reply(event.request, event.response)

    def _busy(self, event: Busy) -> None:
        """Answer a request that waited over its code's limit SYSTEM_BUSY unserved, with
        RocketMQ's ``[TIMEOUT_CLEAN_QUEUE]`` remark (oneway: dropped)."""
        fast = self._fast_fail
        request = event.request
        remark = FastFail.remark(event.waited, event.queued)
        if fast is not None:
            fast.count(request.code)
        _BUSY_LOG.warning(
            f"busy:{request.code}",
            f"requests of code {request.code} answered SYSTEM_BUSY unserved (waited over {event.limit:g}s)",
            "%r: request code %d answered SYSTEM_BUSY: %s",
            self._conn,
            request.code,
            remark,
        )
        if not request.flag & _ONEWAY:
            self.reply(request, request.response(code=ResponseCode.SYSTEM_BUSY, remark=remark))

    def _refuse(self, request: RemotingCommand, remark: str) -> None:
        """Answer a request over its code's limit SYSTEM_ERROR, before decoding any of it."""
        conn = self._conn
        self._peer_log.report(
            conn.remote_address, "over-limit", self._loop.time(), "%r: refused: %s", conn, remark
        )
        self.reply(request, request.response(code=ResponseCode.SYSTEM_ERROR, remark=remark))

    def failed(self, request: RemotingCommand, exc: Exception) -> None:
        """Answer a request whose handler (or guard, or hook) raised ``exc``."""
        conn = self._conn
        if isinstance(exc, BrokerError):
            logger.debug("%r: request code %d answered %d: %s", conn, request.code, exc.code, exc.remark)
            code, remark = exc.code, exc.remark
        elif isinstance(exc, RemoteProtocolError):
            # the request's header or body does not decode: the peer's fault, answered as RocketMQ
            # answers its decoding exceptions (SYSTEM_ERROR with the reason); no traceback
            self._peer_log.report(
                conn.remote_address,
                "undecodable",
                self._loop.time(),
                "%r: %s request could not be decoded: %s",
                conn,
                code_name(request.code, response=False),
                exc,
            )
            code, remark = ResponseCode.SYSTEM_ERROR, describe_exception(exc)
        else:
            logger.error(
                "%r: handler for request code %d (opaque %d) failed",
                conn,
                request.code,
                request.opaque,
                exc_info=exc,
            )
            code, remark = ResponseCode.SYSTEM_ERROR, describe_exception(exc)
        self.reply(request, request.response(code=code, remark=remark))
