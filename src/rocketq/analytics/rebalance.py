"""What a rebalance cost, from plain records: the one definition of each figure.

Inputs are three kinds of plain records, whoever collected them:

* :class:`Delivery` - one message handed to a listener: the consumer's client id, the message id,
  its queue, when the call began (``start_ms``), whether it succeeded, the message's store time;
* :class:`RebalanceEvent` - one rebalance record of one consumer for one topic (rocketq's
  rebalance log: :meth:`RebalanceEvent.from_dict` reads its JSON);
* :class:`Stored` - one message the topic holds, with its queue and store time.

``rocketq demo`` and ``rocketq lab rebalance-cost`` feed :func:`analyze` the records their
consumer processes printed; ``rocketq report`` feeds it the same facts read back with Spark from
the trace topic, the rebalance topic and the consumed topic. Every figure below is computed here
and only here; :data:`DEFINITIONS` holds the sentence that defines each, printed wherever the
figure is shown.

* **change** - the group's member list, as its consumers' rebalance records report it, changed
  (``1 -> 2``: a second consumer joined); records without a member list (a consumer shutting
  down, a clean handoff's late lease) change nothing;
* **queue move** - a consumer's rebalance record added a queue that another consumer had owned
  before; it belongs to the latest change at or before the add;
* **pause** of a move - the time the moved queue had messages waiting and nobody consumed them:
  from the start of the queue's last delivery by another consumer before the new owner's first
  delivery of it (else the old owner's removal of the queue, else the add) - or, when no message
  of the queue was waiting then, from the store time that made one wait - to the start of that
  first delivery; 0 when the new owner began before the old one let go. A queue with nothing to
  consume is idle, not paused: the seconds before a producer starts are no pause;
* **duplicate** - a delivery of a message (by message id) that an earlier delivery to the group
  had handled without failing (succeeded, or its outcome is unknown); a redelivery after a
  failure is a retry, not a duplicate. Each is attributed to the latest rebalance record that
  added or removed its queue at or before it began;
* **backlog** (lag) - messages stored and not yet delivered at a moment (a message counts from
  its store time until its first delivery began); the **peak backlog** of a span is its highest
  value then.

>>> q = MessageQueue("T", "b", 0)
>>> events = [
...     RebalanceEvent("c1", 1, "start", "T", ("c1",), added=(q,), removed=(), end_ms=0),
...     RebalanceEvent("c2", 1, "start", "T", ("c1", "c2"), added=(q,), removed=(), end_ms=1000),
...     RebalanceEvent("c1", 2, "notify", "T", ("c1", "c2"), added=(), removed=(q,), end_ms=1010),
... ]
>>> deliveries = [Delivery("c1", "m1", q, 900), Delivery("c2", "m2", q, 1200)]
>>> a = analyze(deliveries, events, [Stored("m1", q, 890), Stored("m2", q, 950)])
>>> [(c.label, c.moves, c.longest_pause_ms) for c in a.costs]   # m2 waited from 950 to 1200
[('start 1', 0, None), ('1 -> 2', 1, 250)]
>>> a.figures.peak_backlog, a.figures.duplicates
(1, 0)
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from rocketq.models import MessageQueue

__all__ = [
    "DEFINITIONS",
    "TRIGGERS",
    "Analysis",
    "Change",
    "ChangeCost",
    "Delivery",
    "DeliveryVerdict",
    "Duplicate",
    "Figures",
    "Move",
    "QueueBacklog",
    "RebalanceEvent",
    "Stored",
    "Stretch",
    "analyze",
    "backlog_buckets",
    "footnote",
]

DEFINITIONS: Final[Mapping[str, str]] = {
    "change": "change: the group's member list, as its consumers' rebalance records report it, changed",
    "move": "queue move: a consumer's rebalance added a queue another consumer had owned before",
    "pause": (
        "pause: how long a moved queue had messages waiting and nobody consuming them - from the start "
        "of its last delivery by another consumer (else the old owner's removal, else the add; or "
        "from when a message first waited, if later) to the start of the new owner's first delivery "
        "of it"
    ),
    "duplicate": (
        "duplicate: a delivery of a message (by message id) an earlier delivery had already handled "
        "without failing; a redelivery after a failure is a retry"
    ),
    "backlog": (
        "backlog (lag): messages stored and not yet delivered at a moment; peak backlog: its highest "
        "value over the span"
    ),
    "not consumed": "not consumed: messages stored and never delivered (lost, or still waiting)",
    "rebalance": "rebalance: a consumer's rebalance record that added or removed one of its queues",
}
"""The sentence defining each figure, printed wherever the figure is shown."""


TRIGGERS: Final[Mapping[str, str]] = {
    "start": "the consumer started",
    "notify": "a broker told it the group's members changed",
    "periodic": "its 20 s timer",
    "subscription": "a subscription was added or removed",
    "route": "the route of a subscribed topic changed",
    "correction": "a queue was dropped to restart it elsewhere (offset corrected or reset)",
    "view": (
        "a broker refused a pull made with an outdated member list or queue count (rocketq's view "
        "fence), so the consumer rebalanced on a fresh one"
    ),
    "manual": "asked for by code",
    "shutdown": "the consumer shut down and released its queues",
}
"""What each trigger word of a rebalance record means (``RebalanceTrigger``'s values)."""


def footnote(*names: str) -> list[str]:
    """The definitions of ``names`` (all when none), one line each."""
    return [DEFINITIONS[n] for n in (names or tuple(DEFINITIONS))]


# ------------------------------------------------------------------------------------ inputs


@dataclass(frozen=True, slots=True)
class Delivery:
    """One message handed to a listener (a SubBefore trace line; a worker's ``recv`` line).

    ``success``: ``None`` when the outcome is unknown (no SubAfter). ``order`` breaks ties
    between deliveries of one message that began in the same millisecond (a request id)."""

    client_id: str
    msg_id: str
    queue: MessageQueue | None
    start_ms: int
    success: bool | None = True
    store_ms: int | None = None
    order: str = ""


@dataclass(frozen=True, slots=True)
class Stored:
    """One message the topic holds."""

    msg_id: str
    queue: MessageQueue
    store_ms: int


@dataclass(frozen=True, slots=True)
class RebalanceEvent:
    """One rebalance record of one consumer for one topic (the fields the figures need)."""

    client_id: str
    seq: int
    trigger: str
    topic: str
    client_ids: tuple[str, ...]
    added: tuple[MessageQueue, ...]
    removed: tuple[MessageQueue, ...]
    end_ms: int
    changed: bool = True

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RebalanceEvent:
        """From a rebalance record's JSON (``RebalanceRecord.to_dict``, the rebalance topic's body)."""

        def queues(key: str) -> tuple[MessageQueue, ...]:
            return tuple(
                MessageQueue(str(q["topic"]), str(q["broker"]), int(q["queue_id"])) for q in d.get(key) or ()
            )

        added, removed = queues("added"), queues("removed")
        changed = d.get("changed")
        return cls(
            client_id=str(d["client_id"]),
            seq=int(d["seq"]),
            trigger=str(d.get("trigger") or ""),
            topic=str(d.get("topic") or ""),
            client_ids=tuple(str(c) for c in d.get("client_ids") or ()),
            added=added,
            removed=removed,
            end_ms=int(d["end_ms"]),
            changed=bool(added or removed) if changed is None else bool(changed),
        )


# ------------------------------------------------------------------------------------ outputs


@dataclass(frozen=True, slots=True)
class Stretch:
    """A queue owned by one consumer: from the record that added it to the first later record of
    that consumer that removed it (``to_ms`` ``None``: still owned, or it stopped unannounced)."""

    queue: MessageQueue
    client_id: str
    from_ms: int
    to_ms: int | None
    added_by: str
    added_seq: int
    removed_by: str | None


@dataclass(frozen=True, slots=True)
class Change:
    """The group's member list changed (see the module docstring); ``index`` 0 is the first list."""

    index: int
    at_ms: int
    before: tuple[str, ...]
    after: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"start {len(self.after)}" if self.index == 0 else f"{len(self.before)} -> {len(self.after)}"

    @property
    def joined(self) -> tuple[str, ...]:
        return tuple(c for c in self.after if c not in self.before)

    @property
    def left(self) -> tuple[str, ...]:
        return tuple(c for c in self.before if c not in self.after)


@dataclass(frozen=True, slots=True)
class Move:
    """One queue move and the pause it caused (see the module docstring)."""

    queue: MessageQueue
    from_client: str
    to_client: str
    removed_ms: int | None
    added_ms: int
    trigger: str
    last_consumed_ms: int | None
    last_consumed_by: str | None
    first_consumed_ms: int | None
    first_message_store_ms: int | None
    pause_start_ms: int
    pause_ms: int | None
    pause_start_kind: str
    change: int


@dataclass(frozen=True, slots=True)
class DeliveryVerdict:
    """How one delivery counts: its rank among the message's deliveries, and whether it is a duplicate."""

    delivery: Delivery
    rank: int
    duplicate: bool
    first_client_id: str
    first_start_ms: int


@dataclass(frozen=True, slots=True)
class Duplicate:
    """A duplicate delivery, with the rebalance record it is attributed to (``None``: none)."""

    delivery: Delivery
    rank: int
    first_client_id: str
    first_start_ms: int
    rebalance: RebalanceEvent | None
    rebalance_kind: str | None
    change: int | None


@dataclass(frozen=True, slots=True)
class ChangeCost:
    """What one change cost: its moves, their pauses, the duplicates and the peak backlog until
    the next change (``end_ms``)."""

    change: Change
    end_ms: int
    moves: int
    longest_pause_ms: int | None
    median_pause_ms: int | None
    duplicates: int
    peak_backlog: int

    @property
    def label(self) -> str:
        return self.change.label

    def to_dict(self) -> dict[str, Any]:
        return {
            "change": self.label,
            "at_ms": self.change.at_ms,
            "end_ms": self.end_ms,
            "joined": list(self.change.joined),
            "left": list(self.change.left),
            "moved_queues": self.moves,
            "longest_pause_ms": self.longest_pause_ms,
            "median_pause_ms": self.median_pause_ms,
            "duplicates": self.duplicates,
            "peak_backlog": self.peak_backlog,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Figures:
    """The key figures (see the module docstring for each definition).

    ``delivered``: distinct messages with a successful delivery; ``deliveries``: listener
    deliveries in all; ``attributed``: duplicates with a rebalance record to blame;
    ``not_consumed``: stored messages never delivered (lost, or still waiting); ``rebalances``:
    records that changed a consumer's queues; ``consumers``: distinct consumers that got a delivery.
    """

    delivered: int
    deliveries: int
    duplicates: int
    attributed: int
    not_consumed: int
    longest_pause_ms: int | None
    moves: int
    rebalances: int
    consumers: int
    peak_backlog: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "delivered": self.delivered,
            "deliveries": self.deliveries,
            "duplicates": self.duplicates,
            "attributed": self.attributed,
            "not_consumed": self.not_consumed,
            "longest_pause_ms": self.longest_pause_ms,
            "moves": self.moves,
            "rebalances": self.rebalances,
            "consumers": self.consumers,
            "peak_backlog": self.peak_backlog,
        }


@dataclass(frozen=True, slots=True)
class QueueBacklog:
    """The backlog of one queue (or of all: ``queue`` ``None``) as steps: ``(time, value)`` from then on."""

    queue: MessageQueue | None
    steps: tuple[tuple[int, int], ...]
    #: ``(time, +1)`` per message stored, ``(time, -1)`` per first delivery, in time order
    events: tuple[tuple[int, int], ...] = ()

    def at(self, t: int) -> int:
        """The backlog at ``t`` (after every event of that millisecond)."""
        i = bisect.bisect_right(self.steps, (t, _BIG)) - 1
        return self.steps[i][1] if i >= 0 else 0

    def waited_ms(self, start: int, end: int) -> int:
        """Message-milliseconds of waiting in ``[start, end)``: the backlog integrated over time
        (divided by ``end - start``, the mean backlog then).

        >>> QueueBacklog(None, ((0, 1), (10, 3), (20, 0))).waited_ms(5, 30)
        35
        """
        total, value, t = 0, self.at(start), start
        i = bisect.bisect_right(self.steps, (start, _BIG))
        for when, v in self.steps[i:]:
            if when >= end:
                break
            total += value * (when - t)
            value, t = v, when
        return total + value * max(end - t, 0)

    def peak(self, start: int | None = None, end: int | None = None) -> int:
        """The highest backlog in ``[start, end)`` (the whole series by default)."""
        lo = 0 if start is None else bisect.bisect_right(self.steps, (start, _BIG))
        hi = len(self.steps) if end is None else bisect.bisect_left(self.steps, (end, -_BIG))
        entering = self.at(start) if start is not None else 0
        return max([entering, *(v for _, v in self.steps[lo:hi])])


_BIG = 1 << 62


@dataclass
class Analysis:
    """Everything :func:`analyze` found; ``since_ms`` filtered what is listed, not how it was judged."""

    figures: Figures
    changes: list[Change]
    costs: list[ChangeCost]
    stretches: list[Stretch]
    moves: list[Move]
    verdicts: list[DeliveryVerdict]
    duplicates: list[Duplicate]
    backlog: QueueBacklog
    queue_backlogs: dict[MessageQueue, QueueBacklog] = field(default_factory=dict)
    since_ms: int | None = None


# ------------------------------------------------------------------------------------ the work


def analyze(
    deliveries: Iterable[Delivery],
    events: Iterable[RebalanceEvent],
    stored: Iterable[Stored],
    *,
    since_ms: int | None = None,
) -> Analysis:
    """Judge every delivery, rebuild ownership, find the changes and moves, and sum up the costs.

    The records must be of one group (and the topics of interest). With ``since_ms``, what is
    listed and counted is what happened from then on (deliveries and duplicates that began,
    moves and rebalances that ended, changes, messages stored), judged against the whole
    history: a delivery after it that repeats one before it is still a duplicate.
    """
    dels = sorted(deliveries, key=lambda d: (d.start_ms, d.order, d.client_id))
    evs = sorted(events, key=lambda e: (e.end_ms, e.client_id, e.seq))
    msgs = list(stored)

    verdicts = _verdicts(dels)
    stretches = _stretches(evs)
    changes = _changes(evs)
    total, per_queue = _backlogs(verdicts, msgs)
    moves = _moves(stretches, dels, changes, per_queue)
    duplicates = _duplicates(verdicts, evs, changes)

    def after(t: int | None) -> bool:
        return since_ms is None or (t is not None and t >= since_ms)

    shown_verdicts = [v for v in verdicts if after(v.delivery.start_ms)]
    shown_moves = [m for m in moves if after(m.added_ms)]
    shown_dups = [d for d in duplicates if after(d.delivery.start_ms)]
    shown_changes = [c for c in changes if after(c.at_ms)]
    shown_stretches = [s for s in stretches if s.to_ms is None or after(s.to_ms)]
    delivered_any = {d.msg_id for d in dels}
    pauses = [m.pause_ms for m in shown_moves if m.pause_ms is not None]
    figures = Figures(
        delivered=len({v.delivery.msg_id for v in shown_verdicts if v.delivery.success}),
        deliveries=len(shown_verdicts),
        duplicates=len(shown_dups),
        attributed=sum(1 for d in shown_dups if d.rebalance is not None),
        not_consumed=sum(1 for m in msgs if after(m.store_ms) and m.msg_id not in delivered_any),
        longest_pause_ms=max(pauses) if pauses else None,
        moves=len(shown_moves),
        rebalances=sum(1 for e in evs if e.changed and after(e.end_ms)),
        consumers=len({v.delivery.client_id for v in shown_verdicts}),
        peak_backlog=total.peak(since_ms),
    )
    end_of_data = max(
        [e.end_ms for e in evs] + [d.start_ms for d in dels] + [m.store_ms for m in msgs], default=0
    )
    costs = []
    for i, c in enumerate(changes):
        if not after(c.at_ms):
            continue
        end = changes[i + 1].at_ms if i + 1 < len(changes) else end_of_data + 1
        own = [m for m in moves if m.change == c.index]
        ps = sorted(m.pause_ms for m in own if m.pause_ms is not None)
        costs.append(
            ChangeCost(
                change=c,
                end_ms=end,
                moves=len(own),
                longest_pause_ms=ps[-1] if ps else None,
                median_pause_ms=ps[len(ps) // 2] if ps else None,
                duplicates=sum(1 for d in duplicates if d.change == c.index),
                peak_backlog=total.peak(c.at_ms, end),
            )
        )
    return Analysis(
        figures=figures,
        changes=shown_changes,
        costs=costs,
        stretches=shown_stretches,
        moves=shown_moves,
        verdicts=shown_verdicts,
        duplicates=shown_dups,
        backlog=total,
        queue_backlogs=per_queue,
        since_ms=since_ms,
    )


def _verdicts(dels: Sequence[Delivery]) -> list[DeliveryVerdict]:
    """Rank each delivery within its message; a duplicate when an earlier one did not fail."""
    seen: dict[str, tuple[Delivery, int, bool]] = {}  # msg id -> (first delivery, count, handled)
    out = []
    for d in dels:
        first, count, handled = seen.get(d.msg_id, (d, 0, False))
        out.append(DeliveryVerdict(d, count + 1, handled, first.client_id, first.start_ms))
        seen[d.msg_id] = (first, count + 1, handled or d.success is not False)
    return out


def _stretches(evs: Sequence[RebalanceEvent]) -> list[Stretch]:
    open_: dict[tuple[MessageQueue, str], tuple[int, str, int]] = {}
    out: list[Stretch] = []
    for e in evs:
        for q in e.removed:
            began = open_.pop((q, e.client_id), None)
            if began is not None:
                out.append(Stretch(q, e.client_id, began[0], e.end_ms, began[1], began[2], e.trigger))
        for q in e.added:
            if (q, e.client_id) not in open_:
                open_[(q, e.client_id)] = (e.end_ms, e.trigger, e.seq)
    for (q, cid), (t, trigger, seq) in open_.items():
        out.append(Stretch(q, cid, t, None, trigger, seq, None))
    out.sort(key=lambda s: (s.from_ms, s.queue, s.client_id))
    return out


def _changes(evs: Sequence[RebalanceEvent]) -> list[Change]:
    out: list[Change] = []
    current: tuple[str, ...] | None = None
    for e in evs:
        if not e.client_ids:
            continue
        members = tuple(sorted(set(e.client_ids)))
        if members != current:
            out.append(Change(len(out), e.end_ms, current or (), members))
            current = members
    return out


def _change_at(changes: Sequence[Change], t: int) -> int | None:
    i = bisect.bisect_right([c.at_ms for c in changes], t) - 1
    return changes[i].index if i >= 0 else None


def _waiting_from(series: QueueBacklog | None, start: int, end: int) -> int | None:
    """The first moment in ``[start, end)`` the queue had a message waiting (``start`` itself when
    one was); ``None`` when none waited then. Without a series (no stored records of the queue),
    ``start``: nothing says the queue was idle."""
    if series is None or not series.steps:
        return start
    if series.at(start) > 0:
        return start
    i = bisect.bisect_right(series.steps, (start, _BIG))
    for t, value in series.steps[i:]:
        if t >= end:
            break
        if value > 0:
            return t
    return None


def _pause_start(
    last: Delivery | None, old: Stretch, new: Stretch, first: Delivery | None, series: QueueBacklog | None
) -> tuple[int, str]:
    """When a move's pause began, and with what (see the module docstring)."""
    if last is not None:
        start, kind = last.start_ms, "last consumption"
    elif old.to_ms is not None:
        start, kind = old.to_ms, "removal"
    else:
        start, kind = new.from_ms, "add"
    if first is not None and first.start_ms > start:
        waited = _waiting_from(series, start, first.start_ms)
        if waited is None:  # nothing waited: the queue was idle, not paused
            return first.start_ms, "nothing waiting"
        if waited > start:
            return waited, "message stored"
    return start, kind


def _moves(
    stretches: Sequence[Stretch],
    dels: Sequence[Delivery],
    changes: Sequence[Change],
    backlogs: Mapping[MessageQueue, QueueBacklog],
) -> list[Move]:
    by_queue: dict[MessageQueue, list[Delivery]] = {}
    for d in dels:
        if d.queue is not None:
            by_queue.setdefault(d.queue, []).append(d)
    starts = {q: [d.start_ms for d in ds] for q, ds in by_queue.items()}
    of_queue: dict[MessageQueue, list[Stretch]] = {}
    for s in stretches:
        of_queue.setdefault(s.queue, []).append(s)
    change_times = [c.at_ms for c in changes]
    out: list[Move] = []
    for q, owned in of_queue.items():
        ds, ts = by_queue.get(q, []), starts.get(q, [])
        for new in owned:
            olds = [o for o in owned if o.client_id != new.client_id and o.from_ms < new.from_ms]
            if not olds:
                continue
            old = max(olds, key=lambda o: (o.from_ms, o.added_seq))
            i = bisect.bisect_left(ts, new.from_ms)
            first: Delivery | None = None
            for d in ds[i:]:
                if new.to_ms is not None and d.start_ms > new.to_ms:
                    break
                if d.client_id == new.client_id:
                    first = d
                    break
            bound = first.start_ms if first is not None else new.from_ms
            last: Delivery | None = None
            for d in reversed(ds[: bisect.bisect_left(ts, bound)]):
                if d.client_id != new.client_id:
                    last = d
                    break
            start, kind = _pause_start(last, old, new, first, backlogs.get(q))
            k = bisect.bisect_right(change_times, new.from_ms) - 1
            out.append(
                Move(
                    queue=q,
                    from_client=old.client_id,
                    to_client=new.client_id,
                    removed_ms=old.to_ms,
                    added_ms=new.from_ms,
                    trigger=new.added_by,
                    last_consumed_ms=last.start_ms if last is not None else None,
                    last_consumed_by=last.client_id if last is not None else None,
                    first_consumed_ms=first.start_ms if first is not None else None,
                    first_message_store_ms=first.store_ms if first is not None else None,
                    pause_start_ms=start,
                    pause_ms=max(first.start_ms - start, 0) if first is not None else None,
                    pause_start_kind=kind,
                    change=changes[k].index if k >= 0 else 0,
                )
            )
    out.sort(key=lambda m: (m.added_ms, m.queue, m.to_client))
    return out


def _duplicates(
    verdicts: Sequence[DeliveryVerdict], evs: Sequence[RebalanceEvent], changes: Sequence[Change]
) -> list[Duplicate]:
    touched: dict[MessageQueue, list[tuple[int, int, str, RebalanceEvent]]] = {}
    for n, e in enumerate(evs):
        for kind, qs in (("added", e.added), ("removed", e.removed)):
            for q in qs:
                # "added" sorts before "removed" at one time (n keeps the records' order)
                touched.setdefault(q, []).append((e.end_ms, n, kind, e))
    for entries in touched.values():
        entries.sort(key=lambda x: (x[0], x[2] == "added", x[1]))
    out = []
    for v in verdicts:
        if not v.duplicate:
            continue
        d = v.delivery
        cause: tuple[int, int, str, RebalanceEvent] | None = None
        lst = touched.get(d.queue) if d.queue is not None else None
        if lst:
            i = bisect.bisect_right([x[0] for x in lst], d.start_ms) - 1
            cause = lst[i] if i >= 0 else None
        out.append(
            Duplicate(
                delivery=d,
                rank=v.rank,
                first_client_id=v.first_client_id,
                first_start_ms=v.first_start_ms,
                rebalance=cause[3] if cause else None,
                rebalance_kind=cause[2] if cause else None,
                change=_change_at(changes, d.start_ms),
            )
        )
    return out


def _backlogs(
    verdicts: Sequence[DeliveryVerdict], msgs: Sequence[Stored]
) -> tuple[QueueBacklog, dict[MessageQueue, QueueBacklog]]:
    first_start: dict[str, int] = {}
    for v in verdicts:
        if v.rank == 1:
            first_start[v.delivery.msg_id] = v.delivery.start_ms
    per_queue: dict[MessageQueue | None, list[tuple[int, int]]] = {}
    for m in msgs:
        evs = per_queue.setdefault(m.queue, [])
        evs.append((m.store_ms, 1))
        t = first_start.get(m.msg_id)
        if t is not None:
            evs.append((max(t, m.store_ms), -1))
    everything = [x for evs in per_queue.values() for x in evs]
    queues = {q: _steps(q, evs) for q, evs in per_queue.items() if q is not None}
    return _steps(None, everything), queues


def _steps(queue: MessageQueue | None, evs: list[tuple[int, int]]) -> QueueBacklog:
    evs.sort()
    steps: list[tuple[int, int]] = []
    value = 0
    for t, delta in evs:
        value += delta
        if steps and steps[-1][0] == t:
            steps[-1] = (t, value)
        else:
            steps.append((t, value))
    return QueueBacklog(queue, tuple(steps), tuple(evs))


def backlog_buckets(analysis: Analysis, bucket_ms: int) -> list[tuple[MessageQueue, int, int, int, int, int]]:
    """Per queue and time bucket: ``(queue, bucket start, stored, first delivered, backlog at the
    bucket's end, peak backlog in the bucket)`` - the report's ``lag`` table."""
    out = []
    for q, series in sorted(analysis.queue_backlogs.items()):
        if not series.steps:
            continue
        stored_in: dict[int, int] = {}
        first_in: dict[int, int] = {}
        for t, delta in series.events:
            b = t - t % bucket_ms
            counts = stored_in if delta > 0 else first_in
            counts[b] = counts.get(b, 0) + 1
        lo = series.steps[0][0] - series.steps[0][0] % bucket_ms
        hi = series.steps[-1][0] - series.steps[-1][0] % bucket_ms
        since = analysis.since_ms
        for b in range(lo, hi + bucket_ms, bucket_ms):
            if since is not None and b + bucket_ms <= since:
                continue
            peak = series.peak(b, b + bucket_ms)
            out.append((q, b, stored_in.get(b, 0), first_in.get(b, 0), series.at(b + bucket_ms - 1), peak))
    return out
