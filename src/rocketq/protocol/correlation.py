"""The one correlation state machine: which response answers which request.

A RocketMQ peer numbers its requests with an ``opaque`` and the other side repeats it in the
response; responses may come back in any order (a long-polled pull is answered after the sends
behind it). :class:`Correlator` keeps, for one connection, the requests still waiting - opaque,
request code, a waiter of the driver's choosing and a deadline - and answers the three questions
every driver asks:

* a response arrived: whose is it? (:meth:`Correlator.complete`, ``None`` for a late or stray one;
  :meth:`Correlator.was_abandoned` tells the two apart: a late answer to a request whose caller
  stopped waiting is expected, a stray one is the peer's mistake);
* time has passed: whose wait is over? (:meth:`Correlator.expire` with ``now`` passed in, and
  :meth:`Correlator.next_deadline` to know when to look again);
* the connection is gone: who still waits? (:meth:`Correlator.drain`).

It is sans-I/O, as the codec is: no socket, no event loop and no clock. The asyncio connection
(:class:`rocketq.remoting.RemotingConnection`) and the blocking one
(:class:`rocketq.remoting.BlockingRemotingClient`, whose pipelined sends the Spark reader uses)
are thin drivers around it; nothing else matches opaques. As kafka-python's ``KafkaProtocol``
keeps its in-flight requests apart from its sockets.

Deadlines live in a heap. An answered request leaves its heap entry behind; entries are checked
against the table when they reach the top, so each costs one push and one pop however the request
ends, and :meth:`~Correlator.next_deadline` skips answered ones: a driver arms one timer for the
earliest live deadline instead of one timer per request.

>>> c: Correlator[str] = Correlator()
>>> a, b = c.next_opaque(), c.next_opaque()
>>> c.add(a, 11, "pull", deadline=30.0); c.add(b, 310, "send", deadline=3.0)
>>> c.next_deadline()
3.0
>>> c.complete(b).waiter, len(c), c.next_deadline()
('send', 1, 30.0)
>>> c.complete(b) is None              # a second answer matches nothing (nor was it abandoned)
True
>>> c.was_abandoned(b)
False
>>> [(e.code, e.waiter) for e in c.expire(now=31.0)], len(c)
([(11, 'pull')], 0)
>>> c.complete(a) is None, c.was_abandoned(a)   # the pull's answer, after its caller gave up
(True, True)
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Generic, TypeVar

from mypy_extensions import mypyc_attr

from rocketq.protocol.command import OpaqueSequence

__all__ = ["Correlator", "InFlight"]

W = TypeVar("W")

ABANDONED_KEPT = 1024
"""Opaques of given-up requests remembered per table, so that their late answers are recognised."""


# the connection core's entries subclass it (compiled with mypyc, it must allow that)
@mypyc_attr(allow_interpreted_subclasses=True)
class InFlight(Generic[W]):
    """One request waiting for its response."""

    __slots__ = ("code", "deadline", "opaque", "timeout", "waiter")

    def __init__(
        self, opaque: int, code: int, waiter: W, deadline: float | None, timeout: float | None = None
    ) -> None:
        self.opaque = opaque
        #: The request's code (for errors that name what went unanswered).
        self.code = code
        #: What the driver wakes when the answer comes (a future, a lock, a slot).
        self.waiter = waiter
        #: When to give up, on the driver's clock; ``None`` waits for ever.
        self.deadline = deadline
        #: The wait the caller asked for, in seconds (what a timeout error names).
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"InFlight(opaque={self.opaque}, code={self.code}, deadline={self.deadline})"


class Correlator(Generic[W]):
    """The requests of one connection that wait for their responses (see the module docstring).

    ``opaques`` numbers the requests (an :class:`~rocketq.protocol.command.OpaqueSequence` by
    default); connections of one client may share one sequence, as RocketMQ's per-process counter
    does. ``entry`` is the class of the entries (:class:`InFlight` or a subclass).
    :meth:`next_opaque` may be called from any thread; every other method belongs to the driver's
    own thread.
    """

    __slots__ = ("_abandoned", "_deadlines", "_entry", "_opaques", "_pending")

    def __init__(self, opaques: Iterator[int] | None = None, *, entry: type[InFlight[W]] = InFlight) -> None:
        self._opaques = OpaqueSequence() if opaques is None else opaques
        # the class of the entries (a subclass may carry more: the connection core's carries
        # the response, so that an answer costs no object of its own)
        self._entry = entry
        self._pending: dict[int, InFlight[W]] = {}
        # (deadline, opaque); entries of answered requests stay until they reach the top
        self._deadlines: list[tuple[float, int]] = []
        # opaques of requests given up (discarded or expired), newest last, at most ABANDONED_KEPT
        self._abandoned: dict[int, None] = {}

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, opaque: object) -> bool:
        return opaque in self._pending

    def next_opaque(self) -> int:
        """A fresh opaque, never one still waiting (that takes 2**32 requests and one left)."""
        opaques = self._opaques
        pending = self._pending
        opaque = next(opaques)
        while opaque in pending:
            opaque = next(opaques)
        return opaque

    def add(
        self, opaque: int, code: int, waiter: W, deadline: float | None = None, timeout: float | None = None
    ) -> None:
        """Record a request as sent and waiting (``deadline`` on the driver's clock; ``timeout``
        the wait the caller asked for, kept for error messages)."""
        self._pending[opaque] = self._entry(opaque, code, waiter, deadline, timeout)
        if deadline is not None:
            heapq.heappush(self._deadlines, (deadline, opaque))

    def complete(self, opaque: int) -> InFlight[W] | None:
        """The request a response with ``opaque`` answers, forgotten now; ``None`` when nothing
        waits for it (it timed out, was abandoned, or was never sent)."""
        return self._pending.pop(opaque, None)

    def discard(self, opaque: int) -> InFlight[W] | None:
        """Stop waiting for ``opaque`` (the caller gave up); its late answer will match nothing
        and :meth:`was_abandoned` will say so."""
        entry = self._pending.pop(opaque, None)
        if entry is not None:
            self._abandon(opaque)
        return entry

    def was_abandoned(self, opaque: int) -> bool:
        """Whether an answer that :meth:`complete` matched to nothing is the late answer of a
        request given up here (asked once per answer: the opaque is forgotten)."""
        return self._abandoned.pop(opaque, 0) is None

    def _abandon(self, opaque: int) -> None:
        abandoned = self._abandoned
        abandoned[opaque] = None
        if len(abandoned) > ABANDONED_KEPT:
            del abandoned[next(iter(abandoned))]

    def get(self, opaque: int) -> InFlight[W] | None:
        """The waiting request ``opaque``, left in place."""
        return self._pending.get(opaque)

    def expire(self, now: float) -> list[InFlight[W]]:
        """Forget and return the requests whose deadline is at or before ``now``, earliest first."""
        heap = self._deadlines
        pending = self._pending
        expired: list[InFlight[W]] = []
        while heap and heap[0][0] <= now:
            deadline, opaque = heapq.heappop(heap)
            entry = pending.get(opaque)
            # the opaque may have been answered, or reused by a later request with its own entry
            if entry is not None and entry.deadline == deadline:
                del pending[opaque]
                self._abandon(opaque)
                expired.append(entry)
        return expired

    def next_deadline(self) -> float | None:
        """The earliest deadline of a request still waiting, ``None`` when none has one."""
        heap = self._deadlines
        pending = self._pending
        while heap:
            deadline, opaque = heap[0]
            entry = pending.get(opaque)
            if entry is not None and entry.deadline == deadline:
                return deadline
            heapq.heappop(heap)
        return None

    def drain(self) -> list[InFlight[W]]:
        """Forget and return every waiting request (the connection is gone)."""
        pending = list(self._pending.values())
        self._pending.clear()
        self._deadlines.clear()
        return pending
