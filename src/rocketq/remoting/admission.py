"""A fast, explicit "busy" for a request that waited too long to be served (``BrokerFastFailure``).

RocketMQ's broker hands each decoded request to a thread pool's queue; every 10 ms its
``BrokerFastFailure`` answers the requests that waited in the send queue longer than
``waitTimeMillsInSendQueue`` (200 ms; pull 5 s, heartbeat 31 s, end-transaction 3 s) with
``SYSTEM_BUSY`` (2) and the remark ``[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a
while, period in queue: <ms>ms, size of queue: <n>`` instead of serving them late: the client
learns at once that the broker is saturated, rather than after its own timeout, and the broker
spends nothing more on work whose answer would come too late.

A rocketq server is one asyncio process: there is no pool queue. A request waits (1) in the
kernel's socket buffer while the loop is busy elsewhere, and (2) in its connection's decoder
buffer while the connection yields its turn (``read_time_slice``) or has reading paused. What the
server can see of that is the **loop lag** (:class:`LoopLag`: how late a timer that should run
every 10 ms runs; the time bytes that arrived meanwhile have waited at least) plus the time since
the request's bytes reached its connection's buffer. :class:`FastFail` holds the limits by
request code and makes RocketMQ's answer; the connection consults it before calling a handler.
The count in the remark is the whole frames waiting behind the request on its connection.

>>> fast = FastFail({310: 0.2})
>>> fast.limit(310), fast.limit(11)
(0.2, None)
>>> fast.remark(0.2504, 17)
'[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 250ms, size of queue: 17'
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

__all__ = ["BUSY_REMARK", "FastFail", "LoopLag"]

#: ``BrokerFastFailure``'s remark for a request answered ``SYSTEM_BUSY`` after waiting too long
#: (4.9.4, word for word, so Java clients and their operators see what they know).
BUSY_REMARK = (
    "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, "
    "period in queue: %sms, size of queue: %d"
)


class FastFail:
    """Seconds a request of each code may wait before it is answered ``SYSTEM_BUSY`` unserved,
    and counts of such answers (``busy``, by code)."""

    __slots__ = ("_limits", "busy")

    def __init__(self, limits: Mapping[int, float]) -> None:
        self._limits = dict(limits)
        self.busy: dict[int, int] = {}

    def limit(self, code: int) -> float | None:
        return self._limits.get(code)

    @property
    def limits(self) -> Mapping[int, float]:
        return dict(self._limits)

    @staticmethod
    def remark(waited: float, queued: int) -> str:
        return BUSY_REMARK % (int(waited * 1000), queued)

    def count(self, code: int) -> None:
        self.busy[code] = self.busy.get(code, 0) + 1


class LoopLag:
    """How late the event loop runs a timer due every ``interval`` seconds (``lag``, seconds),
    as ``BrokerFastFailure`` looks at its queues every 10 ms. ``lag`` is the last probe's, which
    is what bytes that arrived since have waited at least before the loop could read them."""

    __slots__ = ("_due", "_handle", "_loop", "interval", "lag", "worst")

    def __init__(self, interval: float = 0.01) -> None:
        self.interval = interval
        self.lag = 0.0
        self.worst = 0.0  # the largest lag seen (for stats and tests)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._schedule()

    def _schedule(self) -> None:
        loop = self._loop
        assert loop is not None
        self._due = loop.time() + self.interval
        self._handle = loop.call_at(self._due, self._probe)

    def _probe(self) -> None:
        loop = self._loop
        assert loop is not None
        lag = max(0.0, loop.time() - self._due)
        self.lag = lag
        self.worst = max(self.worst, lag)
        self._schedule()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
