"""A consumer group's ownership over time, from what was observed: pure state, time passed in.

The dashboard polls a group (its members and the queues each owns, its lag per queue) and feeds
each observation to :class:`GroupTimeline`; consumers created with ``trace=True`` also publish
their rebalance records (``RQ_SYS_REBALANCE_TOPIC``), which :meth:`GroupTimeline.record` takes.
From these it keeps, for the recent past (``history_ms``):

* **stretches**: which consumer owned each queue from when to when (the ownership timeline);
* **changes**: each observation where the members or the owners differ from the one before -
  who joined and left, and the **queue moves** (a queue now owned by a consumer other than the
  one that owned it last, the definition ``rocketq.analytics`` uses for rebalance records);
* **lag**: the group's committed lag per queue at each observation, and per change its *cost* as
  far as polling can see it: queues moved, the lag just before it and the highest lag in the
  window after it (``cost_window_ms``), and - with tracing on - how long the consumers' rebalance
  took (their records' ``duration_ms``) and what triggered it.

Polling sees the state every ``poll`` seconds, so two rebalances between two polls count as one,
and a move there and back is not seen; rebalance records see every one. Counters
(:attr:`GroupTimeline.rebalances`, :attr:`GroupTimeline.queues_moved`) never go down, for
Prometheus.

>>> from rocketq.models import MessageQueue
>>> q0, q1 = MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)
>>> t = GroupTimeline("g")
>>> t.observe(1000, {"c1": (q0, q1)}, {q0: 5, q1: 0}) is None   # the first look is no change
True
>>> change = t.observe(2000, {"c1": (q0,), "c2": (q1,)}, {q0: 3, q1: 9})
>>> change.joined, change.left, [(m.queue.queue_id, m.before, m.after) for m in change.moves]
(('c2',), (), [(1, 'c1', 'c2')])
>>> t.rebalances, t.queues_moved
(1, 1)
>>> [(s.owner, s.from_ms, s.to_ms) for s in t.stretches(3000)[q1]]
[('c1', 1000, 2000), ('c2', 2000, None)]
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rocketq.models import MessageQueue

__all__ = ["Change", "GroupTimeline", "LagPoint", "Move", "RebalanceNote", "Stretch"]


@dataclass(frozen=True, slots=True)
class Move:
    """A queue that changed owner (``before`` is the consumer that owned it last)."""

    queue: MessageQueue
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class RebalanceNote:
    """What a consumer's rebalance record says (tracing on): who, why, how long, what changed."""

    client_id: str
    topic: str
    trigger: str
    end_ms: int
    duration_ms: int
    added: tuple[MessageQueue, ...]
    removed: tuple[MessageQueue, ...]
    changed: bool = True

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RebalanceNote:
        """From a rebalance record's JSON (the body of a ``RQ_SYS_REBALANCE_TOPIC`` message)."""

        def queues(key: str) -> tuple[MessageQueue, ...]:
            return tuple(
                MessageQueue(str(q["topic"]), str(q["broker"]), int(q["queue_id"])) for q in d.get(key) or ()
            )

        added, removed = queues("added"), queues("removed")
        return cls(
            client_id=str(d["client_id"]),
            topic=str(d.get("topic") or ""),
            trigger=str(d.get("trigger") or "?"),
            end_ms=int(d["end_ms"]),
            duration_ms=int(d.get("duration_ms") or 0),
            added=added,
            removed=removed,
            changed=bool(d.get("changed", bool(added or removed))),
        )


@dataclass(slots=True)
class Change:
    """One observed change of the group: members joined/left, queues moved, and its cost so far."""

    at_ms: int
    since_ms: int
    members_before: tuple[str, ...]
    members_after: tuple[str, ...]
    moves: tuple[Move, ...]
    lag_before: int
    peak_lag_after: int
    notes: list[RebalanceNote] = field(default_factory=list)

    @property
    def joined(self) -> tuple[str, ...]:
        return tuple(m for m in self.members_after if m not in self.members_before)

    @property
    def left(self) -> tuple[str, ...]:
        return tuple(m for m in self.members_before if m not in self.members_after)

    @property
    def label(self) -> str:
        """``1 -> 2`` for a change of member count, ``members changed`` for the same count,
        ``owners changed`` when queues moved, else ``queues assigned`` (new queues, or released)."""
        b, a = len(self.members_before), len(self.members_after)
        if b != a:
            return f"{b} -> {a}"
        if self.members_before != self.members_after:
            return "members changed"
        return "owners changed" if self.moves else "queues assigned"

    def explains(self, note: RebalanceNote) -> bool:
        """Whether ``note`` ended between the poll before this change and the poll that saw it."""
        return self.since_ms < note.end_ms <= self.at_ms

    @property
    def rebalance_ms(self) -> int | None:
        """The longest rebalance of the consumers' records near this change (tracing on)."""
        return max((n.duration_ms for n in self.notes), default=None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "at_ms": self.at_ms,
            "label": self.label,
            "joined": list(self.joined),
            "left": list(self.left),
            "members": list(self.members_after),
            "moves": [{"queue": _queue_key(m.queue), "from": m.before, "to": m.after} for m in self.moves],
            "lag_before": self.lag_before,
            "peak_lag_after": self.peak_lag_after,
            "rebalance_ms": self.rebalance_ms,
            "triggers": sorted({n.trigger for n in self.notes}),
        }


@dataclass(frozen=True, slots=True)
class Stretch:
    """A queue owned by ``owner`` from ``from_ms`` to ``to_ms`` (``None``: still owned)."""

    owner: str
    from_ms: int
    to_ms: int | None


@dataclass(frozen=True, slots=True)
class LagPoint:
    """The group's committed lag at one observation: per queue, and the total."""

    at_ms: int
    per_queue: Mapping[MessageQueue, int]

    @property
    def total(self) -> int:
        return sum(self.per_queue.values())


def _queue_key(mq: MessageQueue) -> str:
    return f"{mq.topic}@{mq.broker_name}:{mq.queue_id}"


class GroupTimeline:
    """Observations of one group (see the module docstring); ``now`` is always passed in."""

    def __init__(self, group: str, *, history_ms: int = 600_000, cost_window_ms: int = 30_000) -> None:
        self.group = group
        self.history_ms = history_ms
        self.cost_window_ms = cost_window_ms
        self.members: tuple[str, ...] = ()
        self.owners: dict[MessageQueue, tuple[str, ...]] = {}
        self.rebalances = 0
        self.queues_moved = 0
        self.moves_by_topic: collections.Counter[str] = collections.Counter()
        self.changes: collections.deque[Change] = collections.deque()
        self.lag: collections.deque[LagPoint] = collections.deque()
        self.notes: collections.deque[RebalanceNote] = collections.deque()
        self.last_change_ms: int | None = None
        self._seen = False
        self._last_ms = 0
        self._last_owner: dict[MessageQueue, str] = {}
        self._stretches: dict[MessageQueue, list[Stretch]] = {}
        self._open: dict[tuple[MessageQueue, str], int] = {}  # (queue, owner) -> since

    # ------------------------------------------------------------------ input

    def observe(
        self,
        now_ms: int,
        ownership: Mapping[str, Sequence[MessageQueue]],
        lag: Mapping[MessageQueue, int],
        *,
        members: Iterable[str] | None = None,
    ) -> Change | None:
        """One poll: each member's queues (``members`` adds members that own nothing) and the
        lag per queue. Returns the change it saw, if any."""
        member_ids = tuple(sorted({*ownership, *(members or ())}))
        owners: dict[MessageQueue, list[str]] = {}
        for cid, queues in ownership.items():
            for mq in queues:
                owners.setdefault(mq, []).append(cid)
        new_owners = {mq: tuple(sorted(cs)) for mq, cs in sorted(owners.items())}
        point = LagPoint(now_ms, dict(lag))
        for recent in self.changes:  # a later poll can raise the peak of recent changes
            if now_ms - recent.at_ms <= self.cost_window_ms:
                recent.peak_lag_after = max(recent.peak_lag_after, point.total)
        change: Change | None = None
        if not self._seen:
            self._seen = True
            for mq, cs in new_owners.items():
                for cid in cs:
                    self._open[(mq, cid)] = now_ms
                self._last_owner[mq] = cs[0]
        elif member_ids != self.members or new_owners != self.owners:
            moved: list[Move] = []
            for mq, cs in new_owners.items():
                last = self._last_owner.get(mq)
                if last is not None and last not in cs:
                    moved.append(Move(mq, last, cs[0]))
            self._close_and_open(now_ms, new_owners)
            lag_before = self.lag[-1].total if self.lag else 0
            change = Change(
                now_ms, self._last_ms, self.members, member_ids, tuple(moved), lag_before, point.total
            )
            change.notes.extend(n for n in self.notes if change.explains(n))
            self.changes.append(change)
            self.rebalances += 1
            self.queues_moved += len(moved)
            self.moves_by_topic.update(m.queue.topic for m in moved)
            self.last_change_ms = now_ms
        for mq, cs in new_owners.items():
            if self._last_owner.get(mq) not in cs:
                self._last_owner[mq] = cs[0]
        self.members = member_ids
        self.owners = new_owners
        self._last_ms = now_ms
        self.lag.append(point)
        self._expire(now_ms)
        return change

    def record(self, note: RebalanceNote) -> None:
        """A consumer's rebalance record (tracing on) that changed its queues: attached to the
        change it explains (the first poll after it ended), now or when that poll comes."""
        if not note.changed:
            return
        self.notes.append(note)
        for change in reversed(self.changes):
            if change.explains(note):
                change.notes.append(note)
                break

    def _close_and_open(self, now_ms: int, new_owners: Mapping[MessageQueue, tuple[str, ...]]) -> None:
        for (mq, cid), since in list(self._open.items()):
            if cid not in new_owners.get(mq, ()):
                self._stretches.setdefault(mq, []).append(Stretch(cid, since, now_ms))
                del self._open[(mq, cid)]
        for mq, cs in new_owners.items():
            for cid in cs:
                self._open.setdefault((mq, cid), now_ms)

    def _expire(self, now_ms: int) -> None:
        horizon = now_ms - self.history_ms
        while self.lag and self.lag[0].at_ms < horizon:
            self.lag.popleft()
        while self.changes and self.changes[0].at_ms < horizon:
            self.changes.popleft()
        while self.notes and self.notes[0].end_ms < horizon:
            self.notes.popleft()
        for mq, stretches in list(self._stretches.items()):
            kept = [s for s in stretches if s.to_ms is None or s.to_ms >= horizon]
            if kept:
                self._stretches[mq] = kept
            else:
                del self._stretches[mq]

    # ------------------------------------------------------------------ output

    def stretches(self, now_ms: int) -> dict[MessageQueue, list[Stretch]]:
        """Every queue's ownership stretches in the history window, oldest first (open ones last)."""
        horizon = now_ms - self.history_ms
        out: dict[MessageQueue, list[Stretch]] = {
            mq: [Stretch(s.owner, max(s.from_ms, horizon), s.to_ms) for s in ss]
            for mq, ss in self._stretches.items()
        }
        for (mq, cid), since in self._open.items():
            out.setdefault(mq, []).append(Stretch(cid, max(since, horizon), None))
        return {mq: sorted(ss, key=lambda s: s.from_ms) for mq, ss in sorted(out.items())}
