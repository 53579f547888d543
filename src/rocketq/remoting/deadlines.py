"""The one timer of a connection's requests: armed at the connection core's earliest deadline.

Each request :meth:`~rocketq.remoting.RemotingConnection.invoke` sends has a deadline in the core
(:meth:`~rocketq.protocol.connection.ConnectionCore.send_request`); one loop timer per connection,
not one per request, fires at the earliest, fails the requests whose time is up
(:class:`~rocketq.errors.RemotingTimeoutError`, naming the peer, the code, the opaque and the
timeout the caller asked for), and is armed again at the next. A client's ``close_on_timeout``
closes the connection when one times out.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from rocketq.remoting.handover import timeout_error

if TYPE_CHECKING:
    from rocketq.remoting.connection import RemotingConnection

__all__ = ["DeadlineTimer"]


class DeadlineTimer:
    """The deadline timer of ``conn``'s requests."""

    __slots__ = ("_at", "_close_on_timeout", "_conn", "_handle", "_loop")

    def __init__(self, conn: RemotingConnection, *, close_on_timeout: bool) -> None:
        self._conn = conn
        self._loop = conn.loop
        self._close_on_timeout = close_on_timeout
        self._handle: asyncio.TimerHandle | None = None
        self._at = 0.0

    def arm(self, deadline: float) -> None:
        """Make sure the timer fires by ``deadline``."""
        handle = self._handle
        if handle is not None:
            if self._at <= deadline:
                return
            handle.cancel()
        self._at = deadline
        self._handle = self._loop.call_at(deadline, self._expire_due)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _expire_due(self) -> None:
        """Fail the requests whose time is up, then wait for the next one."""
        self._handle = None
        conn = self._conn
        core = conn.core
        expired = core.expire(max(self._loop.time(), self._at))
        for entry in expired:
            waiter = entry.waiter
            if not waiter.done():
                timeout = entry.timeout if entry.timeout is not None else 0.0
                waiter.set_exception(timeout_error(conn.remote_address, entry.code, entry.opaque, timeout))
        nxt = core.next_deadline()
        if nxt is not None:
            self.arm(nxt)
        if expired and self._close_on_timeout:
            conn.close_timed_out(expired[0].code)
