"""Idle checks: a connection with nothing read or written for ``idle_timeout`` seconds.

Waiting for a response or running a (long-polling) handler is not idleness. An idle connection
tells its owner (``on_idle``, RocketMQ's ``ChannelEventListener.onChannelIdle``) and, when the
owner says so (``close_idle``: a client's connections, and a server's as RocketMQ's server does),
is closed. One timer per connection, re-armed at the next moment it could be idle.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocketq.remoting.connection import RemotingConnection

__all__ = ["IdleWatch"]

#: the connection's log (one name for all its parts, as before they were split: what operators filter on)
logger = logging.getLogger("rocketq.remoting.connection")


class IdleWatch:
    """The idle timer of one connection; ``last_activity`` is the loop time of its last read or write."""

    __slots__ = ("_close_idle", "_conn", "_handle", "_loop", "_on_idle", "_timeout", "last_activity")

    def __init__(
        self,
        conn: RemotingConnection,
        timeout: float | None,
        *,
        close_idle: bool,
        on_idle: Callable[[RemotingConnection], None] | None,
    ) -> None:
        self._conn = conn
        self._loop = conn.loop
        self._timeout = timeout
        self._close_idle = close_idle
        self._on_idle = on_idle
        self._handle: asyncio.TimerHandle | None = None
        self.last_activity = 0.0

    def start(self, now: float) -> None:
        """The connection is made: start counting from ``now``."""
        self.last_activity = now
        if self._timeout is not None:
            self._handle = self._loop.call_at(now + self._timeout, self._check)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _check(self) -> None:
        self._handle = None
        conn = self._conn
        timeout = self._timeout
        if conn.is_closed or timeout is None:
            return
        now = self._loop.time()
        if conn.pending_count or conn.in_flight:
            # waiting for a response or running a (long-polling) handler is not idleness
            self.last_activity = now
        due = self.last_activity + timeout
        if now < due:
            self._handle = self._loop.call_at(due, self._check)
            return
        logger.info("%r: idle for %.1fs", conn, now - self.last_activity)
        if self._on_idle is not None:
            conn._call_event(self._on_idle, "idle")
        if self._close_idle:
            conn.close(f"connection to {conn.remote_address} idle for {timeout:g}s")
        elif not conn.is_closed:
            self._handle = self._loop.call_at(now + timeout, self._check)
