"""Repeated warnings as one line per window: ``12,345 sends to broker-a timed out in the last 10 s``.

A warning that can fire once per message (a send that timed out, a pull that failed, a
connection whose output does not drain) must not write one line per message: under overload
that is hundreds of thousands of lines that hide the one thing a person needs to read. Every
such site logs through a :class:`LogSummary`: the first occurrence of a kind (``key``) in a
window goes out as is, at WARNING; the ones after it within the window are counted (and logged
at DEBUG only); the first one after the window closes (or :meth:`LogSummary.flush`) writes one
line that says how many there were, what they were, and the last one's text. The window is
RocketMQ-free (ours): 10 s by default.

Thread-safe (a producer warns from its loop thread and from the threads that send); ``clock``
is injected so tests drive time without sleeping.

>>> import logging
>>> t = [0.0]
>>> log = LogSummary(logging.getLogger("doc"), window=10.0, clock=lambda: t[0])
>>> log.warning("timeout:broker-a", "sends to broker-a timed out", "send %d timed out", 1)
True
>>> [log.warning("timeout:broker-a", "sends to broker-a timed out", "send %d timed out", n) for n in (2, 3)]
[False, False]
>>> t[0] = 11.0
>>> log.pending()
{'timeout:broker-a': 2}
>>> log.summary_line("timeout:broker-a")
'2 more sends to broker-a timed out in the last 11 s (the last: send 3 timed out)'
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["LogSummary"]


@dataclass(slots=True)
class _Kind:
    what: str
    began: float  # when the window began (the first occurrence, logged as is)
    count: int = 0  # occurrences since, not logged at WARNING
    last_msg: str = ""  # the last of them, formatted only when summarised (cheap when counting)
    last_args: tuple[object, ...] = ()

    @property
    def last(self) -> str:
        return self.last_msg % self.last_args if self.last_args else self.last_msg


class LogSummary:
    """Warnings of one kind at most once per ``window`` seconds, then one summary line of the rest
    (see the module docstring). At most ``max_kinds`` kinds are remembered (the oldest first go)."""

    __slots__ = ("_clock", "_kinds", "_lock", "logger", "max_kinds", "window")

    def __init__(
        self,
        logger: logging.Logger,
        *,
        window: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        max_kinds: int = 1024,
    ) -> None:
        self.logger = logger
        self.window = window
        self.max_kinds = max_kinds
        self._clock = clock
        self._kinds: dict[str, _Kind] = {}
        self._lock = threading.Lock()

    def warning(self, key: str, what: str, msg: str, *args: object) -> bool:
        """Log ``msg % args`` at WARNING unless a warning of kind ``key`` went out less than
        ``window`` seconds ago (then count it); ``what`` names the kind in the plural for the
        summary ("sends to broker-a timed out"). ``True`` if this one went out at WARNING."""
        return self.log(logging.WARNING, key, what, msg, *args)

    def log(self, level: int, key: str, what: str, msg: str, *args: object) -> bool:
        """:meth:`warning` at ``level``."""
        now = self._clock()
        summary: str | None = None
        with self._lock:
            kind = self._kinds.get(key)
            if kind is not None and now - kind.began < self.window:
                kind.count += 1
                kind.last_msg, kind.last_args = msg, args
                self.logger.debug(msg, *args)
                return False
            if kind is not None:
                if kind.count:
                    summary = self._line(kind, now)
                del self._kinds[key]
            elif len(self._kinds) >= self.max_kinds:
                old_key = next(iter(self._kinds))
                old = self._kinds.pop(old_key)
                if old.count:
                    self.logger.log(level, "%s", self._line(old, now))
            self._kinds[key] = _Kind(what, now)
        if summary is not None:
            self.logger.log(level, "%s", summary)
        self.logger.log(level, msg, *args)
        return True

    def pending(self) -> dict[str, int]:
        """Kinds with occurrences not yet summarised, and how many."""
        with self._lock:
            return {k: v.count for k, v in self._kinds.items() if v.count}

    def summary_line(self, key: str) -> str | None:
        """The summary line :meth:`flush` would write for ``key`` now (``None``: nothing to say)."""
        with self._lock:
            kind = self._kinds.get(key)
            return self._line(kind, self._clock()) if kind is not None and kind.count else None

    def flush(self, level: int = logging.WARNING) -> int:
        """Write the summary of every kind with uncounted occurrences (a service closing, or a
        periodic timer); returns how many lines went out."""
        now = self._clock()
        with self._lock:
            lines = [self._line(k, now) for k in self._kinds.values() if k.count]
            self._kinds.clear()
        for line in lines:
            self.logger.log(level, "%s", line)
        return len(lines)

    @staticmethod
    def _line(kind: _Kind, now: float) -> str:
        return (
            f"{kind.count:,} more {kind.what} in the last {max(now - kind.began, 0.0):.0f} s "
            f"(the last: {kind.last})"
        )
