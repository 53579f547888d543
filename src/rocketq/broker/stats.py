"""The broker's counters: what GET_BROKER_RUNTIME_INFO and GET_CONSUME_STATS report."""

from __future__ import annotations

import time

from rocketq.clock import ms

__all__ = ["BrokerStats"]


class BrokerStats:
    """Counters for GET_BROKER_RUNTIME_INFO and GET_CONSUME_STATS, cheap enough for the hot paths.

    Rates are measured over a window of 10 to 20 s: the counters since the last snapshot, which is
    renewed once it is 10 s old (RocketMQ's stats keep per-second samples over a minute).
    """

    __slots__ = (
        "_group_gets",
        "_snapshot",
        "boot_ms",
        "get_bytes",
        "get_total",
        "last_put_ms",
        "put_bytes",
        "put_total",
    )

    _WINDOW = 10.0

    def __init__(self, now: float) -> None:
        self.boot_ms = ms(now)
        self.put_total = 0
        self.put_bytes = 0
        self.get_total = 0
        self.get_bytes = 0
        self.last_put_ms = 0
        self._group_gets: dict[str, int] = {}
        self._snapshot: tuple[float, int, int, dict[str, int]] = (now, 0, 0, {})

    def on_put(self, topic: str, count: int, size: int, store_ms: int = 0) -> None:
        self.put_total += count
        self.put_bytes += size
        self.last_put_ms = store_ms

    def on_get(self, group: str, count: int, size: int) -> None:
        self.get_total += count
        self.get_bytes += size
        gets = self._group_gets
        gets[group] = gets.get(group, 0) + count

    def _window(self, now: float) -> tuple[float, int, int, dict[str, int]]:
        then, puts, gets, groups = self._snapshot
        if now - then >= self._WINDOW * 2:  # idle for long: restart the window from now
            self._snapshot = (now, self.put_total, self.get_total, dict(self._group_gets))
            return then, puts, gets, groups
        if now - then >= self._WINDOW:
            self._snapshot = (now, self.put_total, self.get_total, dict(self._group_gets))
        return then, puts, gets, groups

    def put_tps(self, now: float | None = None) -> float:
        now = time.time() if now is None else now
        then, puts, _, _ = self._window(now)
        return (self.put_total - puts) / (now - then) if now > then else 0.0

    def get_tps(self, now: float | None = None) -> float:
        now = time.time() if now is None else now
        then, _, gets, _ = self._window(now)
        return (self.get_total - gets) / (now - then) if now > then else 0.0

    def group_tps(self, group: str, now: float | None = None) -> float:
        """Messages per second the group pulled recently (GET_CONSUME_STATS' ``consumeTps``)."""
        now = time.time() if now is None else now
        then, _, _, groups = self._window(now)
        if now <= then:
            return 0.0
        return (self._group_gets.get(group, 0) - groups.get(group, 0)) / (now - then)
