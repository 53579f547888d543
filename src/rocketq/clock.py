"""The one wall-clock helper: epoch milliseconds, as RocketMQ's ``System.currentTimeMillis()``.

State machines take ``now`` as a parameter; this is for the edges that stamp a value with the
time (a send's born timestamp, a trace record, a rebalance record, a report's window). The
servers' state machines are handed ``now`` in float seconds and stamp RocketMQ's millisecond
values with :func:`ms`.
"""

from __future__ import annotations

import time

__all__ = ["ms", "now_ms"]


def now_ms() -> int:
    """Milliseconds since the epoch (Java's ``System.currentTimeMillis()``)."""
    return time.time_ns() // 1_000_000


def ms(seconds: float) -> int:
    """``seconds`` (a ``now`` passed in, float seconds) as whole milliseconds, as RocketMQ stamps
    time: a data version's time stamp, a message's store time.

    >>> ms(1.5), ms(1700000000.0123)
    (1500, 1700000000012)
    """
    return int(seconds * 1000)
