"""The one wall-clock helper: epoch milliseconds, as RocketMQ's ``System.currentTimeMillis()``.

State machines take ``now`` as a parameter; this is for the edges that stamp a value with the
time (a send's born timestamp, a trace record, a rebalance record, a report's window).
"""

from __future__ import annotations

import time

__all__ = ["now_ms"]


def now_ms() -> int:
    """Milliseconds since the epoch (Java's ``System.currentTimeMillis()``)."""
    return time.time_ns() // 1_000_000
