"""A connection's output: frames batched per turn of the loop, and writers waiting for a drain.

Frames written during one turn of the event loop (the responses to one read, the requests of
many concurrent callers) reach the transport together, which saves system calls, but in groups of
at most ``write_batch_frames``: the first answers of a read of 32 requests leave while the rest
are made, so the peer (on another core) works on them at once instead of both ends taking turns
with whole batches. Output over ``write_buffer_high`` is handed over at once (the transport then
pauses the writers); output the peer leaves unread past ``max_write_buffer`` closes the connection.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from rocketq.errors import RemotingClosedError

if TYPE_CHECKING:
    from rocketq.remoting.connection import RemotingConnection

__all__ = ["Outbox"]

#: the connection's log (one name for all its parts, as before they were split: what operators filter on)
logger = logging.getLogger("rocketq.remoting.connection")


class Outbox:
    """The frames ``conn`` wrote this turn, and the writers waiting for its output to drain."""

    __slots__ = (
        "_batch_frames",
        "_bytes",
        "_conn",
        "_drain_waiters",
        "_frames",
        "_high",
        "_loop",
        "_max_buffer",
        "_parts",
        "_scheduled",
    )

    def __init__(self, conn: RemotingConnection, *, high: int, batch_frames: int, max_buffer: int) -> None:
        self._conn = conn
        self._loop = conn.loop
        self._high = high
        self._batch_frames = batch_frames
        self._max_buffer = max_buffer
        self._parts: list[bytes] = []
        self._bytes = 0
        self._frames = 0
        self._scheduled = False
        self._drain_waiters: list[asyncio.Future[None]] = []

    def __bool__(self) -> bool:
        return bool(self._parts)

    def send(self, head: bytes, body: bytes) -> None:
        """Queue one frame; frames queued in one loop iteration go to the transport together."""
        parts = self._parts
        parts.append(head)
        if body:
            parts.append(body)
        self._bytes += len(head) + len(body)
        self._frames += 1
        if self._bytes >= self._high:
            self.flush()  # may pause reading, which stops the read loop taking more requests
        elif self._frames >= self._batch_frames:
            # pipelining: these frames leave now, so the peer works on them while we make the rest
            self.flush()
        elif not self._scheduled and not self._conn.processing:
            self._scheduled = True
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        """Hand what is queued to the transport (closing a connection whose peer stopped reading)."""
        self._scheduled = False
        parts = self._parts
        if not parts:
            return
        self._parts = []
        self._bytes = 0
        self._frames = 0
        conn = self._conn
        transport = conn.transport
        if transport is None or conn.is_closed:
            return
        if len(parts) == 1:
            transport.write(parts[0])
        else:  # uvloop sends the list with one writev; asyncio joins it
            transport.writelines(parts)
        conn.touch()
        if conn.writes_paused and transport.get_write_buffer_size() > self._max_buffer:
            unsent = transport.get_write_buffer_size()
            logger.warning(
                "%r: closing the connection: %d bytes of output unsent (bound %d), the peer does not read",
                conn,
                unsent,
                self._max_buffer,
            )
            conn.abort(f"{conn.remote_address} stopped reading (output above {self._max_buffer} bytes)")

    async def drained(self) -> None:
        """Wait until unsent output is below the low-water mark (or fail if the connection closes)."""
        conn = self._conn
        if conn.is_closed:
            raise conn.closed_error("a write")
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._drain_waiters.append(waiter)
        await waiter

    def wake_writers(self) -> None:
        """Output drained: the writers waiting go on."""
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def fail_writers(self, reason: str) -> None:
        """The connection closed: the writers waiting fail."""
        waiters, self._drain_waiters = self._drain_waiters, []
        peer = self._conn.remote_address
        for waiter in waiters:
            if not waiter.done():
                waiter.set_exception(RemotingClosedError(f"cannot write to {peer}: {reason}"))
