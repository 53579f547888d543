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
buffer, whole, while the connection yields its turn (``read_time_slice``) to the others or has
reading paused: the queue a busy broker builds. The wait counted is (2): from the read that
completed the request's frame to its handling - the time RocketMQ's ``RequestTask`` spends in
its pool's queue. (Adding the loop's lag for (1) was tried: on a shared machine whose scheduler
stalls the process for 200 ms now and then, it answered busy requests that had just arrived,
and the producers' goodput halved.) :class:`FastFail` holds the limits by request code and makes
RocketMQ's answer; the connection consults it before calling a handler. The time a connection's
reading is held for one of its own large requests (decoded on the worker thread) does not count
for the requests behind it: they waited for their own peer's request, not for the broker's other
work. The count in the remark
is the whole frames waiting behind the request on its connection.

>>> fast = FastFail({310: 0.2})
>>> fast.limit(310), fast.limit(11)
(0.2, None)
>>> fast.remark(0.2504, 17)
'[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 250ms, size of queue: 17'
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["BUSY_REMARK", "FastFail"]

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
