"""Per-thread blocking sockets for :meth:`Producer.send`'s attempts (the blocking hot path).

A blocking send made from a plain thread can go through the client's event loop (the thread
hands the encoded frame to the loop, which writes it and wakes the thread when the answer
comes: two cross-thread wake-ups per send) or through a socket of the thread's own, written and
read in the thread (no wake-up at all). Measured on one thread sending 1 KiB messages to a local
broker, the second costs less client CPU per send; with many threads sending at once the first
wins (the loop writes many threads' requests per wake-up, where 32 threads on 32 sockets each
pay their own system calls and GIL hand-overs: about half the sends per second). So the thread
driver of a send (``ProducerCore._drive_in_thread``, behind
:meth:`~rocketq.client.producer.core.ProducerCore.send_blocking`) takes a thread's socket for an
attempt only while no other thread's blocking send is out (``bench/bench_vs_redis.py --threads``).

:class:`ThreadConnections` keeps one :class:`~rocketq.remoting.BlockingRemotingClient` per
(thread, broker address), made on first use. It is tied to the loop's connection to that broker:
when that connection is replaced (the broker restarted, the link broke), the thread's socket is
replaced as well, and a socket idle longer than ``max_idle`` seconds (well below the broker's
120 s idle close) is remade before it is used, so a send never goes out on a socket the peer has
dropped. A timeout or a broken stream drops the thread's socket (the next send makes a new one).
The client's RPC hooks run around each request as they do on the loop's connections.

These sockets carry only sends (the client's heartbeats, and so the broker's requests to the
producer such as transaction checks, stay on the loop's connection). They are closed by
:meth:`ThreadConnections.close` (the producer's shutdown), and those of threads that have ended
are closed whenever another thread opens one.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from rocketq.errors import RemotingClosedError, RemotingTimeoutError
from rocketq.protocol.command import RemotingCommand
from rocketq.remoting import BlockingRemotingClient, RemotingConnection, RPCHook
from rocketq.remoting.tls import TlsClientConfig

__all__ = ["ThreadConnections"]


class _Entry:
    __slots__ = ("client", "conn", "last_used", "thread")

    def __init__(
        self, client: BlockingRemotingClient, conn: RemotingConnection, thread: threading.Thread
    ) -> None:
        self.client = client
        self.conn = conn
        self.thread = thread
        self.last_used = time.monotonic()


class ThreadConnections:
    """One blocking socket per (calling thread, broker address); see the module doc."""

    def __init__(
        self,
        *,
        connect_timeout: float,
        max_frame_size: int,
        max_idle: float = 60.0,
        tls: TlsClientConfig | None = None,
    ) -> None:
        self.tls = tls
        self.connect_timeout = connect_timeout
        self.max_frame_size = max_frame_size
        self.max_idle = max_idle
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: set[_Entry] = set()
        self._closed = False

    def _entries(self) -> dict[str, _Entry]:
        try:
            entries: dict[str, _Entry] = self._local.entries
        except AttributeError:
            entries = self._local.entries = {}
        return entries

    def _client_for(self, conn: RemotingConnection) -> BlockingRemotingClient:
        addr = conn.remote_address
        entries = self._entries()
        entry = entries.get(addr)
        now = time.monotonic()
        if entry is not None and (entry.conn is not conn or now - entry.last_used > self.max_idle):
            self._forget(entries, addr)
            entry = None
        if entry is None:
            client = BlockingRemotingClient(
                addr, connect_timeout=self.connect_timeout, max_frame_size=self.max_frame_size, tls=self.tls
            )
            entry = _Entry(client, conn, threading.current_thread())
            with self._lock:
                if self._closed:
                    client.close()
                    raise RemotingClosedError(f"cannot send to {addr}: the producer is shut down")
                ended = [e for e in self._all if not e.thread.is_alive()]
                self._all.difference_update(ended)
                self._all.add(entry)
            for e in ended:
                e.client.close()
            entries[addr] = entry
        entry.last_used = now
        return entry.client

    def _forget(self, entries: dict[str, _Entry], addr: str) -> None:
        entry = entries.pop(addr, None)
        if entry is None:
            return
        with self._lock:
            self._all.discard(entry)
        entry.client.close()

    def invoke(
        self, conn: RemotingConnection, request: RemotingCommand, timeout: float, hooks: Sequence[RPCHook]
    ) -> RemotingCommand:
        """Send ``request`` to ``conn``'s peer on this thread's socket and wait up to ``timeout``
        seconds for the answer; raises the remoting errors of
        :class:`~rocketq.remoting.BlockingRemotingClient`."""
        addr = conn.remote_address
        client = self._client_for(conn)
        for hook in hooks:
            hook.before_request(addr, request)
        try:
            response = client.invoke(request, timeout)
        except (RemotingTimeoutError, RemotingClosedError):
            self._forget(self._entries(), addr)  # a late answer or a broken stream: start afresh
            raise
        for hook in hooks:
            hook.after_response(addr, request, response)
        return response

    def open_count(self) -> int:
        """How many threads' sockets are kept (made and not yet closed)."""
        with self._lock:
            return len(self._all)

    def close(self) -> None:
        """Close every thread's sockets; later sends through it raise RemotingClosedError."""
        with self._lock:
            self._closed = True
            entries = list(self._all)
            self._all.clear()
        for entry in entries:
            entry.client.close()
