"""Per-topic consume and pull statistics of a consumer (``ConsumerStatsManager``).

What GET_CONSUMER_RUNNING_INFO reports per topic (``ConsumeStatus``: pull and consume TPS and
response times over the last minute, failed messages) - kept by the push and lite pull consumers.
"""

from __future__ import annotations

import collections
import time

from rocketq.protocol.bodies import ConsumeStatus

__all__ = ["ConsumeStats"]


class ConsumeStats:
    """Per-topic consume and pull statistics over the last minute (``ConsumerStatsManager``).

    Events are summed into one-second buckets, so memory stays at 60 buckets per topic and kind
    whatever the message rate.
    """

    __slots__ = ("_buckets", "failed_total")

    WINDOW = 60.0

    def __init__(self) -> None:
        # topic -> kind -> buckets [second, count, rt sum ms, events]
        self._buckets: dict[str, dict[str, collections.deque[list[float]]]] = {}
        self.failed_total: dict[str, int] = {}

    def add(
        self, topic: str, kind: str, count: int, rt_ms: float = 0.0, now: float | None = None, events: int = 1
    ) -> None:
        """Count ``count`` messages of ``kind`` (``"ok"``, ``"failed"``, ``"pull"``) taking ``rt_ms``
        in total over ``events`` calls (the average response time is per call)."""
        now = time.monotonic() if now is None else now
        second = float(int(now))
        dq = self._buckets.setdefault(topic, {}).setdefault(kind, collections.deque())
        if dq and dq[-1][0] == second:
            bucket = dq[-1]
            bucket[1] += count
            bucket[2] += rt_ms
            bucket[3] += events
        else:
            dq.append([second, count, rt_ms, events])
            while dq and dq[0][0] < second - self.WINDOW:
                dq.popleft()
        if kind == "failed":
            self.failed_total[topic] = self.failed_total.get(topic, 0) + count

    def _window(self, topic: str, kind: str, now: float) -> tuple[float, float, float]:
        dq = self._buckets.get(topic, {}).get(kind)
        if not dq:
            return 0, 0.0, 0
        recent = [b for b in dq if b[0] >= now - self.WINDOW]
        return sum(b[1] for b in recent), sum(b[2] for b in recent), sum(b[3] for b in recent)

    def status(self, topic: str, now: float | None = None) -> ConsumeStatus:
        now = time.monotonic() if now is None else now
        ok, ok_rt, ok_n = self._window(topic, "ok", now)
        failed, _, _ = self._window(topic, "failed", now)
        pulled, pull_rt, pull_n = self._window(topic, "pull", now)
        return ConsumeStatus(
            pull_rt=pull_rt / pull_n if pull_n else 0.0,
            pull_tps=pulled / self.WINDOW,
            consume_rt=ok_rt / ok_n if ok_n else 0.0,
            consume_ok_tps=ok / self.WINDOW,
            consume_failed_tps=failed / self.WINDOW,
            consume_failed_msgs=self.failed_total.get(topic, 0),
        )
