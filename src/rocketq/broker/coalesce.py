"""Notification coalescing: one NOTIFY_CONSUMER_IDS_CHANGED per group per window, latest wins.

RocketMQ's broker notifies every member of a group at once on every change of its members
(``ConsumerManager`` → ``DefaultConsumerIdsChangeListener``), so a rolling deploy of N consumers
sends on the order of N² notifications and each one makes every member rebalance
(apache/rocketmq#9115). With a window, the first change of a group opens it; later changes of
the group within it only mark it; when it ends, one notification goes to every member the group
has *then* - a member that left meanwhile is not told, one that joined is.

:class:`NotifyCoalescer` is the pure state (no clock of its own: every call takes ``now``); the
broker schedules a flush at the deadline :meth:`NotifyCoalescer.change` returns and asks
:meth:`NotifyCoalescer.due` which groups to notify then. A window of 0 is RocketMQ's behaviour
and does not use this class at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CoalesceStats", "NotifyCoalescer"]


@dataclass(slots=True)
class CoalesceStats:
    """Counts since the broker started: changes seen, windows flushed (notification rounds)."""

    changes: int = 0
    rounds: int = 0


@dataclass(slots=True)
class NotifyCoalescer:
    """Per-group windows of ``window`` seconds (> 0)."""

    window: float
    _deadlines: dict[str, float] = field(default_factory=dict)
    stats: CoalesceStats = field(default_factory=CoalesceStats)

    def __post_init__(self) -> None:
        if not self.window > 0:
            raise ValueError(f"a coalescing window must be positive, got {self.window!r}")

    def change(self, group: str, now: float) -> float | None:
        """A change of ``group``'s members at ``now``: the deadline of a window it opened, or
        None when a window of the group is already open (the change joins it)."""
        self.stats.changes += 1
        if group in self._deadlines:
            return None
        deadline = now + self.window
        self._deadlines[group] = deadline
        return deadline

    def due(self, now: float) -> list[str]:
        """The groups whose window has ended by ``now`` (their windows closed), oldest first."""
        done = [g for g, d in sorted(self._deadlines.items(), key=lambda kv: kv[1]) if d <= now]
        for group in done:
            del self._deadlines[group]
        self.stats.rounds += len(done)
        return done

    def pending(self) -> dict[str, float]:
        """Open windows: group → deadline."""
        return dict(self._deadlines)
