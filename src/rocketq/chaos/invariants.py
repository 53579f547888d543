"""The invariants a chaos run is judged by, computed from its :class:`~rocketq.chaos.timeline.Timeline`.

Pure functions of the timeline (no clock, no I/O), so they are tested with timelines written by
hand. The definitions, in the words ``docs/chaos.md`` uses:

* **holding** - a consumer *holds* a queue while one of its pulls of the queue is in flight at
  the proxy (sent, not yet answered; a pull still held at the broker after the consumer's line
  gave the queue up no longer counts), and while a message it fetched from the queue is in its
  hands (from the answer that brought it until its ``RECV`` line); two of its actions on the
  queue less than ``gap`` seconds apart (1 s) count as holding it in between.
* **lost** - messages the producer had acknowledged that no consumer printed by the end of the
  run (after every fault healed). Must be 0.
* **duplicates** - ``RECV`` lines of a message (broker, queue, offset) already printed before.
  A repeat is *within the bound* when it is a handoff's re-read: the consumer that fetched it
  second had started its run of pulls on the queue (from a committed offset) after the other
  had fetched it (whichever printed it first). The *bound* is how many such re-reads the
  handoffs did (messages fetched by one consumer before another started on their queue from an
  offset below them). A repeat
  fetched by two consumers pulling the queue at the same time is *beyond the bound*. RocketMQ's
  handoff, and any scenario with non-graceful changes: none beyond; the clean handoff with
  graceful changes: no duplicates at all.
* **overlap** - queue-seconds during which two or more consumers *pulled* the same queue (held it
  by pulls), after all first members were up. Clean handoff with graceful changes: 0. Otherwise:
  no single episode longer than the scenario's transition bound (a handoff's own moment, not two
  owners that both believe it). The figure with messages in hand too (an old owner finishing,
  after the move, what it fetched before it) is reported beside it and not judged: no client can
  call a listener back.
* **orphan** - queue-seconds during which nobody held a queue, after all first members were up;
  time a queue's broker was down, and time its holder was paused (SIGSTOP), are reported apart.
  No single episode longer than the scenario's bound.
* **convergence** - seconds from the last fault's heal until the group settled for good: the
  living consumers' last ``REBALANCE`` lines share the topic's queues exactly (each queue owned
  once) *and* every queue is held by exactly one consumer at the proxy. Within the bound.
* **orderly** (with ``--orderly``) - no queue's messages printed by two consumers interleaved
  (within ``gap``), and each consumer's run of a queue in increasing offset order.
* **notifications**, **member-list queries**, **split view** and **resume** are figures: how
  many NOTIFY_CONSUMER_IDS_CHANGED the brokers sent, how many GET_CONSUMER_LIST_BY_GROUP the
  consumers asked (one per topic per rebalance), how long two brokers answered different member
  lists, and how long after a broker came back every one of its queues was served again.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from rocketq.chaos.timeline import Pull, QueueRef, Recv, Timeline, format_queue

__all__ = [
    "Expectations",
    "Holdings",
    "Interval",
    "InvariantResult",
    "Segment",
    "convergence",
    "duplicates",
    "evaluate",
    "holdings",
    "lost",
    "merge",
    "orphan",
    "overlap",
    "segments",
    "startup_time",
]

Interval = tuple[float, float]
_SEQ = re.compile(r"seq=(\d+)")
Holdings = dict[QueueRef, dict[str, list[Interval]]]
_EPS = 1e-9


@dataclass(frozen=True, slots=True, kw_only=True)
class Expectations:
    """What a scenario promises, per mode (stated with every run's figures)."""

    #: ``clean`` or ``rocketmq`` (the consumers' handoff mode)
    handoff: Literal["clean", "rocketmq"] = "clean"
    #: the scenario's changes are graceful (joins, SIGTERM stops): clean handoff owes 0 duplicates, 0 overlap
    graceful: bool = True
    #: the consumers consume orderly (adds the orderly invariants)
    orderly: bool = False
    #: seconds between a consumer's actions on a queue still counted as holding it
    gap: float = 1.0
    #: the longest overlap episode allowed outside the clean handoff's graceful changes (a
    #: handoff's own moment)
    overlap_episode: float = 2.0
    #: the longest orphan episode allowed
    orphan_episode: float = 2.0
    #: the longest convergence after the last fault healed
    convergence: float = 22.0
    #: broker restarts: the longest time until every queue of the broker is served again
    resume: float | None = None
    #: overlap episodes shorter than this are not counted: a line's time is when the harness read
    #: it from the consumer's stdout, a frame's when the proxy relayed it, and the two channels can
    #: disagree by a few milliseconds (repeats are counted whatever their timing)
    resolution: float = 0.02

    def to_dict(self) -> dict[str, Any]:
        return {
            "handoff": self.handoff,
            "graceful": self.graceful,
            "orderly": self.orderly,
            "gap_s": self.gap,
            "overlap_episode_s": self.overlap_episode,
            "orphan_episode_s": self.orphan_episode,
            "convergence_s": self.convergence,
            "resume_s": self.resume,
            "resolution_s": self.resolution,
        }


@dataclass(frozen=True, slots=True)
class InvariantResult:
    """One named line: ``ok`` True (PASS), False (FAIL) or None (a figure without a verdict)."""

    name: str
    ok: bool | None
    figure: float
    unit: str
    detail: str
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def mark(self) -> str:
        return "INFO" if self.ok is None else "PASS" if self.ok else "FAIL"

    def line(self) -> str:
        value = f"{self.figure:g}" if self.unit in ("", "msgs") else f"{self.figure:.2f}"
        unit = f" {self.unit}" if self.unit else ""
        return f"{self.mark:<4}  {self.name:<14} {value}{unit}  {self.detail}"

    def to_dict(self) -> dict[str, Any]:
        figure: float | None = None if math.isinf(self.figure) else self.figure
        return {
            "name": self.name,
            "verdict": self.mark,
            "figure": figure,
            "unit": self.unit,
            "detail": self.detail,
            **self.data,
        }


# ---------------------------------------------------------------------------------------- intervals


def merge(intervals: Iterable[Interval], gap: float = 0.0) -> list[Interval]:
    """Sorted, merged intervals; two closer than ``gap`` become one.

    >>> merge([(5, 6), (0, 1), (1.5, 2), (2.5, 3)], gap=0.6)
    [(0, 3), (5, 6)]
    """
    out: list[Interval] = []
    for a, b in sorted(intervals):
        if out and a - out[-1][1] <= gap + _EPS:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _subtract(pieces: list[Interval], cut: Interval) -> tuple[list[Interval], float]:
    """``pieces`` without ``cut``, and how much was taken away."""
    out: list[Interval] = []
    taken = 0.0
    ca, cb = cut
    for a, b in pieces:
        if cb <= a or ca >= b:
            out.append((a, b))
            continue
        taken += min(b, cb) - max(a, ca)
        if a < ca:
            out.append((a, ca))
        if cb < b:
            out.append((cb, b))
    return out, taken


def _length(intervals: Iterable[Interval]) -> float:
    return sum(b - a for a, b in intervals)


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of time in which the same consumers held a queue."""

    start: float
    end: float
    holders: frozenset[str]


def removals(tl: Timeline) -> dict[tuple[str, QueueRef], list[float]]:
    """When each consumer gave each queue up (sorted times): its ``REBALANCE`` lines, and the
    ``UNLOCK_BATCH_MQ`` frames the proxy relayed for it (a clean handoff's old owner releases a
    queue, then prints the rebalance that dropped it: the release is the earlier witness, and the
    one the new owner waits for)."""
    out: dict[tuple[str, QueueRef], list[float]] = {}
    owned: dict[str, set[QueueRef]] = {}
    for rb in sorted(tl.rebalances, key=lambda r: r.t):
        if rb.topic != tl.topic:
            continue
        now = set(rb.owned)
        for q in owned.get(rb.consumer, set()) - now:
            out.setdefault((rb.consumer, q), []).append(rb.t)
        owned[rb.consumer] = now
    for rel in tl.releases:
        out.setdefault((rel.consumer, rel.queue), []).append(rel.t)
    for times in out.values():
        times.sort()
    return out


def holdings(tl: Timeline, gap: float = 1.0, *, in_hand: bool = True) -> Holdings:
    """Per queue and consumer, the intervals it held the queue (see the module docstring).

    A pull counts from when it was sent until it was answered - or until the consumer's line
    gave the queue up, if that came first: a pull RocketMQ's protocol cannot call back, left held
    at the broker by a consumer that no longer owns the queue, is not holding it (the consumer
    drops what it brings). A message the consumer printed counts from when the pull that fetched
    it was answered until it was printed (it was in the consumer's hands all that time: cached,
    or in its listener), whatever its lines said meanwhile. Only
    messages printed from the topic's own queues count (not those redelivered through the
    group's retry topic, whose queues bear the same names). ``in_hand=False``: pulls only (what
    the ``overlap`` invariant judges: two consumers *pulling* one queue)."""
    gave_up = removals(tl)
    stored = {s.seq: (s.queue, s.offset) for s in tl.sent}
    acts: dict[QueueRef, dict[str, list[Interval]]] = {}
    for p in tl.pulls:
        end = max(p.answered, p.sent)
        times = gave_up.get((p.consumer, p.queue), [])
        i = bisect.bisect_left(times, p.sent)
        if i < len(times):
            end = min(end, times[i])
        acts.setdefault(p.queue, {}).setdefault(p.consumer, []).append((p.sent, end))
    pulls = _pulls_by(tl)
    for r in tl.recvs if in_hand else ():
        seq = seq_of(r.body)
        if seq is not None and stored.get(seq, (r.queue, r.offset)) != (r.queue, r.offset):
            continue
        mine = pulls.get((r.consumer, r.queue), [])
        j = _fetch(mine, r.offset, r.t)
        began = mine[j].answered if j is not None else r.t
        acts.setdefault(r.queue, {}).setdefault(r.consumer, []).append((min(began, r.t), r.t))
    return {q: {c: merge(iv, gap) for c, iv in by.items()} for q, by in acts.items()}


def segments(hold: Holdings, queue: QueueRef, start: float, end: float) -> list[Segment]:
    """``[start, end]`` cut where ``queue``'s holders change, each piece with its holders."""
    if end <= start:
        return []
    by = hold.get(queue, {})
    points = {start, end}
    for ivs in by.values():
        for a, b in ivs:
            if start < a < end:
                points.add(a)
            if start < b < end:
                points.add(b)
    cuts = sorted(points)
    starts = {c: [a for a, _ in ivs] for c, ivs in by.items()}
    out: list[Segment] = []
    for x, y in itertools.pairwise(cuts):
        mid = (x + y) / 2
        holders = []
        for c, ivs in by.items():
            i = bisect.bisect_right(starts[c], mid) - 1
            if i >= 0 and ivs[i][0] <= mid <= ivs[i][1]:
                holders.append(c)
        seg = Segment(x, y, frozenset(holders))
        if out and out[-1].holders == seg.holders and abs(out[-1].end - x) < _EPS:
            out[-1] = Segment(out[-1].start, y, seg.holders)
        else:
            out.append(seg)
    return out


def _observed_until(tl: Timeline, exp: Expectations) -> float:
    """The end of the run, less half a ``gap``: a client that does not long-poll may be between
    two pulls of a queue when the observation ends, so its last stretch proves nothing."""
    return tl.t_end - exp.gap / 2


def _appeared(tl: Timeline, q: QueueRef) -> float:
    """When ``q`` joined the topic (the run's start for the first queues)."""
    for since, qs in tl.queue_sets:
        if q in qs:
            return since
    return math.inf


def startup_time(tl: Timeline, hold: Holdings) -> float:
    """When all first members were up: the first consumers' lines shared the queues exactly, and
    then each queue came to be held by its owner by those lines alone at the proxy (the pulls the
    first rebalances left in flight answered). ``inf`` if that never happened."""
    first = [life.consumer for life in tl.lives if life.started <= tl.t0]
    lines_ready = math.inf
    owned: dict[str, tuple[QueueRef, ...]] = {}
    for rb in sorted(tl.rebalances, key=lambda r: r.t):
        if rb.topic != tl.topic or rb.consumer not in first:
            continue
        owned[rb.consumer] = rb.owned
        if len(owned) == len(first) and _exact(owned.values(), tl.queues_at(rb.t)):
            lines_ready = rb.t
            break
    if lines_ready == math.inf:
        return math.inf
    owner = {q: c for c, qs in owned.items() for q in qs}
    up = lines_ready
    for q in tl.queues_at(lines_ready):
        alone = frozenset({owner[q]})
        single = next(
            (seg.start for seg in segments(hold, q, lines_ready, tl.t_end) if seg.holders == alone), None
        )
        if single is None:
            return math.inf
        up = max(up, single)
    return up


def _exact(shares: Iterable[Sequence[QueueRef]], queues: Sequence[QueueRef]) -> bool:
    seen: list[QueueRef] = [q for share in shares for q in share]
    return len(seen) == len(set(seen)) and set(seen) == set(queues)


# ---------------------------------------------------------------------------------------- the invariants


def seq_of(body: str) -> int | None:
    """The producer's sequence number in a printed body (``seq=<n>``), if it is one of ours.

    >>> seq_of("seq=42"), seq_of("hello")
    (42, None)
    """
    match = _SEQ.fullmatch(body.strip())
    return int(match.group(1)) if match else None


def lost(tl: Timeline) -> InvariantResult:
    """Acknowledged messages nobody printed (by sequence number: a message handed back to the
    broker comes back through the group's retry topic, under another queue and offset)."""
    printed: dict[int, list[Recv]] = {}
    for r in tl.recvs:
        seq = seq_of(r.body)
        if seq is not None:
            printed.setdefault(seq, []).append(r)
    missing = sorted((s for s in tl.sent if s.seq not in printed), key=lambda s: s.seq)
    retried = sum(
        1
        for s in tl.sent
        if s.seq in printed and all((r.queue, r.offset) != (s.queue, s.offset) for r in printed[s.seq])
    )
    sample = ", ".join(f"seq {s.seq} ({format_queue(s.queue)}@{s.offset})" for s in missing[:5])
    detail = f"of {len(tl.sent)} acknowledged sends, {len(tl.sent) - len(missing)} consumed"
    if retried:
        detail += f" ({retried} only through the retry topic, handed back by a consumer)"
    if missing:
        detail += f"; missing {sample}" + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    return InvariantResult(
        "lost",
        not missing,
        len(missing),
        "msgs",
        detail,
        {"sent": len(tl.sent), "missing": [s.seq for s in missing], "retried": retried},
    )


def _pulls_by(tl: Timeline) -> dict[tuple[str, QueueRef], list[Pull]]:
    out: dict[tuple[str, QueueRef], list[Pull]] = {}
    for p in sorted(tl.pulls, key=lambda p: p.sent):
        out.setdefault((p.consumer, p.queue), []).append(p)
    return out


def _fetch(pulls: Sequence[Pull], offset: int, before: float) -> int | None:
    """Index of the latest pull in ``pulls`` that fetched ``offset`` and was answered by ``before``."""
    for i in range(len(pulls) - 1, -1, -1):
        p = pulls[i]
        if p.found and p.offset <= offset < (p.next_offset or 0) and p.answered <= before + _EPS:
            return i
    return None


def _continues(prev: Pull, cur: Pull) -> bool:
    """Whether ``cur`` carries on where ``prev`` left off: at its next offset, or at the same
    offset again after a failed pull."""
    if prev.ok:
        return prev.next_offset == cur.offset
    return prev.offset == cur.offset


def _session_starts(pulls: Sequence[Pull], gave_up: Sequence[float] = ()) -> list[float]:
    """For each pull of one consumer on one queue (in sending order), when its run of pulls began:
    a pull that does not continue the one before, or that follows a ``REBALANCE`` line of the
    consumer giving the queue up (``gave_up``: those lines' times), begins a new run."""
    starts: list[float] = []
    for i, p in enumerate(pulls):
        if i and _continues(pulls[i - 1], p):
            j = bisect.bisect_right(gave_up, pulls[i - 1].sent)
            if j == len(gave_up) or gave_up[j] > p.sent:
                starts.append(starts[-1])
                continue
        starts.append(p.sent)
    return starts


def duplicates(tl: Timeline, exp: Expectations) -> InvariantResult:
    """Repeats, the handoff bound, and repeats beyond it (see the module docstring)."""
    pulls = _pulls_by(tl)
    gave_up = removals(tl)
    starts = {key: _session_starts(ps, gave_up.get(key, ())) for key, ps in pulls.items()}
    stored = {s.seq: (s.queue, s.offset) for s in tl.sent}
    first_seq: dict[int, Recv] = {}
    repeats = within = beyond = 0
    examples: list[str] = []
    for r in sorted(tl.recvs, key=lambda r: r.t):
        seq = seq_of(r.body)
        if seq is None:
            continue
        key = (r.queue, r.offset)
        original = stored.get(seq) == key
        earlier = first_seq.get(seq)
        if earlier is None:
            first_seq[seq] = r
            continue
        repeats += 1
        handoff = False
        if original and stored.get(seq) == (earlier.queue, earlier.offset):
            mine = pulls.get((r.consumer, r.queue), [])
            theirs = pulls.get((earlier.consumer, r.queue), [])
            i = _fetch(mine, r.offset, r.t)
            j = _fetch(theirs, r.offset, earlier.t)
            if i is not None and j is not None:
                # by fetch, not by print: the consumer that fetched it second must have begun its
                # run on the queue after the first had fetched it (an old owner may print what
                # it fetched before the move after the new owner re-read it: still a re-read)
                if theirs[j].answered <= mine[i].answered:
                    handoff = theirs[j].answered <= starts[(r.consumer, r.queue)][i] + _EPS
                else:
                    handoff = mine[i].answered <= starts[(earlier.consumer, r.queue)][j] + _EPS
        if handoff:
            within += 1
        else:
            beyond += 1
            if len(examples) < 3:
                examples.append(
                    f"seq {seq} ({format_queue(r.queue)}@{r.offset}) by {earlier.consumer} and {r.consumer}"
                )
    bound = _handoff_bound(pulls, starts, tl.recvs, stored)
    if exp.handoff == "clean" and exp.graceful:
        ok = repeats == 0
        rule = "clean handoff, graceful changes: none allowed"
    else:
        ok = beyond == 0
        rule = "none allowed beyond the bound"
    detail = f"{within} within the handoff bound of {bound}, {beyond} beyond it ({rule})"
    if examples:
        detail += "; e.g. " + "; ".join(examples)
    return InvariantResult(
        "duplicates",
        ok,
        repeats,
        "msgs",
        detail,
        {"within_bound": within, "beyond_bound": beyond, "bound": bound},
    )


def _handoff_bound(
    pulls: dict[tuple[str, QueueRef], list[Pull]],
    starts: dict[tuple[str, QueueRef], list[float]],
    recvs: Sequence[Recv],
    stored: Mapping[int, tuple[QueueRef, int]],
) -> int:
    """Messages a consumer re-read because it started on a queue below what another had fetched
    (and printed) before that start (the first fetch of each printed message counts)."""
    fetched_at: dict[tuple[QueueRef, int], float] = {}
    for r in recvs:
        seq = seq_of(r.body)
        key = (r.queue, r.offset)
        if seq is None or stored.get(seq) != key:
            continue
        mine = pulls.get((r.consumer, r.queue), [])
        j = _fetch(mine, r.offset, r.t)
        if j is not None and mine[j].answered < fetched_at.get(key, math.inf):
            fetched_at[key] = mine[j].answered
    bound = 0
    for pk, ps in pulls.items():
        q = pk[1]
        for p, start in zip(ps, starts[pk], strict=True):
            if not p.found:
                continue
            for o in range(p.offset, p.next_offset or p.offset):
                t = fetched_at.get((q, o))
                if t is not None and t <= start + _EPS:
                    bound += 1
    return bound


def _episodes(pieces: Iterable[tuple[QueueRef, Interval]]) -> list[tuple[QueueRef, Interval]]:
    by: dict[QueueRef, list[Interval]] = {}
    for q, iv in pieces:
        by.setdefault(q, []).append(iv)
    return [(q, iv) for q, ivs in by.items() for iv in merge(ivs)]


def _overlap_episodes(
    tl: Timeline, hold: Holdings, start: float
) -> list[tuple[QueueRef, Interval, set[str]]]:
    eps: list[tuple[QueueRef, Interval, set[str]]] = []
    for q in tl.queues:
        for seg in segments(hold, q, max(start, _appeared(tl, q)), tl.t_end):
            if len(seg.holders) < 2:
                continue
            if eps and eps[-1][0] == q and seg.start - eps[-1][1][1] <= _EPS:
                eps[-1] = (q, (eps[-1][1][0], seg.end), eps[-1][2] | seg.holders)
            else:
                eps.append((q, (seg.start, seg.end), set(seg.holders)))
    return eps


def overlap(
    tl: Timeline, hold: Holdings, start: float, exp: Expectations, pulling: Holdings | None = None
) -> InvariantResult:
    """Queue-seconds two or more consumers *pulled* the same queue at once, after ``start``
    (``pulling``: :func:`holdings` without messages in hand; None: judge ``hold`` itself). The
    longer figure with messages in hand - an old owner finishing what it fetched before the
    move - is reported beside it: no client can call a listener back, so it is not judged."""
    eps = _overlap_episodes(tl, hold if pulling is None else pulling, start)
    handled = _length(iv for _, iv, _ in _overlap_episodes(tl, hold, start)) if pulling is not None else None
    shorter = [e for e in eps if e[1][1] - e[1][0] < exp.resolution]
    eps = [e for e in eps if e[1][1] - e[1][0] >= exp.resolution]
    total = _length(iv for _, iv, _ in eps)
    longest = max((b - a for _, (a, b), _ in eps), default=0.0)
    if exp.handoff == "clean" and exp.graceful:
        ok = total <= _EPS
        rule = "clean handoff: none allowed"
    else:
        ok = longest <= exp.overlap_episode + _EPS
        rule = f"no episode over {exp.overlap_episode:g} s"
    worst = sorted(eps, key=lambda e: e[1][0] - e[1][1])[:3]
    sample = "; ".join(
        f"{format_queue(q)} {a - tl.t0:+.1f}..{b - tl.t0:+.1f} s by {','.join(sorted(who))}"
        for q, (a, b), who in worst
    )
    detail = f"{len(eps)} episodes of two pulling, longest {longest:.2f} s ({rule})"
    if shorter:
        detail += f"; {len(shorter)} under the {exp.resolution * 1000:g} ms resolution not counted"
    if sample:
        detail += f"; {sample}"
    data: dict[str, Any] = {
        "episodes": len(eps),
        "longest_s": round(longest, 3),
        "below_resolution": len(shorter),
    }
    if handled is not None:
        detail += f"; with messages in hand {handled:.2f} s (not judged)"
        data["with_in_hand_s"] = round(handled, 3)
    return InvariantResult("overlap", ok, total, "s", detail, data)


def orphan(tl: Timeline, hold: Holdings, start: float, exp: Expectations) -> InvariantResult:
    """Queue-seconds nobody held a queue, after ``start``; broker downtime and paused holders apart.

    With orderly consumers, time the queue's last holder was cut off from its broker is apart
    too: an orderly lock outlives a holder that is cut off (it may still be processing what it
    holds, :meth:`~rocketq.broker.locks.QueueLockTable.release_departed`), so nobody else may
    take the queue until the holder is back or its lock expires - exclusivity before
    availability, as in RocketMQ."""
    pieces: list[tuple[QueueRef, Interval]] = []
    paused_total = down_total = 0.0
    pauses = {life.consumer: life.pauses for life in tl.lives}
    cuts = [w for w in tl.windows if w.what == "cut"] if exp.orderly else []
    downs = [w for w in tl.windows if w.what == "broker-down"]
    for q in tl.queues:
        segs = segments(hold, q, max(start, _appeared(tl, q)), _observed_until(tl, exp))
        by = hold.get(q, {})
        for seg in segs:
            if seg.holders:
                continue
            left = [(seg.start, seg.end)]
            for w in downs:
                if w.target == q[0]:
                    left, taken = _subtract(left, (w.start, w.end))
                    down_total += taken
            last = _last_holder(by, seg.start)
            away = list(pauses.get(last or "", ()))
            away += [(w.start, w.end) for w in cuts if w.target in (last, "*") and w.detail in (q[0], "*")]
            for ps, pe in away:
                if ps - exp.gap <= seg.start <= pe:
                    left, taken = _subtract(left, (seg.start, pe))
                    paused_total += taken
            pieces.extend((q, iv) for iv in left if iv[1] - iv[0] > _EPS)
    eps = _episodes(pieces)
    total = _length(iv for _, iv in eps)
    longest = max((b - a for _, (a, b) in eps), default=0.0)
    ok = longest <= exp.orphan_episode + _EPS
    worst = sorted(eps, key=lambda e: e[1][0] - e[1][1])[:3]
    sample = "; ".join(f"{format_queue(q)} {a - tl.t0:+.1f}..{b - tl.t0:+.1f} s" for q, (a, b) in worst)
    detail = f"{len(eps)} episodes, longest {longest:.2f} s (no episode over {exp.orphan_episode:g} s)"
    if paused_total or down_total:
        holder = "a paused or (orderly) cut-off holder" if cuts else "a paused holder"
        detail += f"; apart: {paused_total:.2f} s under {holder}, {down_total:.2f} s broker down"
    if sample:
        detail += f"; {sample}"
    return InvariantResult(
        "orphan",
        ok,
        total,
        "s",
        detail,
        {
            "episodes": len(eps),
            "longest_s": round(longest, 3),
            "paused_s": round(paused_total, 3),
            "broker_down_s": round(down_total, 3),
        },
    )


def _last_holder(by: dict[str, list[Interval]], t: float) -> str | None:
    best, when = None, -math.inf
    for c, ivs in by.items():
        for a, b in ivs:
            if b <= t + _EPS and b > when and a <= t:
                best, when = c, b
    return best


def convergence(tl: Timeline, hold: Holdings, exp: Expectations) -> InvariantResult:
    """Seconds after the last heal until the lines and the wire agree on one owner per queue."""
    heal = tl.last_heal
    times = sorted(
        {heal}
        | {r.t for r in tl.rebalances if heal < r.t <= tl.t_end}
        | {t for life in tl.lives for t in (life.started, life.ended or -1.0) if heal < t <= tl.t_end}
        | {since for since, _ in tl.queue_sets if heal < since <= tl.t_end}
    )
    lines_at: float | None = None
    for t in times:
        if _lines_exact(tl, t):
            if lines_at is None:
                lines_at = t
        else:
            lines_at = None
    wire_at: float | None = heal
    end = _observed_until(tl, exp)
    for q in tl.queues:
        for seg in segments(hold, q, max(heal, _appeared(tl, q)), end):
            if len(seg.holders) != 1 and wire_at is not None:
                wire_at = max(wire_at, seg.end) if seg.end < end - _EPS else None
    if lines_at is None or wire_at is None:
        why = (
            "the lines never shared the queues exactly"
            if lines_at is None
            else "a queue had no single holder"
        )
        return InvariantResult(
            "convergence", False, math.inf, "s", f"not converged by the end of the run: {why}", {}
        )
    settled = max(lines_at, wire_at)
    secs = settled - heal
    ok = secs <= exp.convergence + _EPS
    detail = (
        f"after the last fault healed at {heal - tl.t0:+.1f} s: lines exact {lines_at - heal:.2f} s, "
        f"one holder per queue {wire_at - heal:.2f} s (bound {exp.convergence:g} s)"
    )
    return InvariantResult(
        "convergence",
        ok,
        secs,
        "s",
        detail,
        {"lines_s": round(lines_at - heal, 3), "wire_s": round(wire_at - heal, 3)},
    )


def _lines_exact(tl: Timeline, t: float) -> bool:
    owned: dict[str, tuple[QueueRef, ...]] = {}
    for r in tl.rebalances:
        if r.topic == tl.topic and r.t <= t + _EPS:
            owned[r.consumer] = r.owned
    alive = [life.consumer for life in tl.lives if life.alive(t)]
    if any(c not in owned for c in alive):
        return False
    return _exact([owned[c] for c in alive], tl.queues_at(t))


def orderly(tl: Timeline, exp: Expectations) -> list[InvariantResult]:
    """No two consumers printing one queue interleaved; each run of a queue in offset order.

    Interleaved: a consumer printed a queue, another printed it, and the first printed it again
    within ``gap`` in the same run (it never gave the queue up in between). A queue handed over
    and back within the gap - each side releasing before the other locked - is not interleaving.

    A consumer's run of a queue begins when its REBALANCE line adds the queue, or when it pulls
    the queue again from below where its pulls had got to: a consumer that lost a queue (or its
    lock, when a broker restarted) and got it back resumes from the group's committed offset,
    replaying in order what it printed but could not commit (duplicates, judged by their own
    invariant), and that replay is a new run, not disorder."""
    by_queue: dict[QueueRef, list[Recv]] = {}
    for r in sorted(tl.recvs, key=lambda r: r.t):
        by_queue.setdefault(r.queue, []).append(r)
    acquired: dict[tuple[str, QueueRef], list[float]] = {}
    for rb in tl.rebalances:
        for q in rb.added:
            acquired.setdefault((rb.consumer, q), []).append(rb.t)
    reached: dict[tuple[str, QueueRef], int] = {}
    for p in sorted(tl.pulls, key=lambda p: p.sent):
        key = (p.consumer, p.queue)
        if p.offset < reached.get(key, p.offset):
            acquired.setdefault(key, []).append(p.sent)
        if p.found and p.next_offset is not None:
            reached[key] = max(reached.get(key, 0), p.next_offset)
    interleaved = 0
    disorder = 0
    examples: list[str] = []
    for q, recvs in by_queue.items():
        last_by: dict[str, Recv] = {}
        for i, r in enumerate(recvs):
            prev = last_by.get(r.consumer)
            if prev is not None:
                between = {x.consumer for x in recvs[recvs.index(prev) + 1 : i]} - {r.consumer}
                new_run = any(prev.t < t <= r.t for t in acquired.get((r.consumer, q), ()))
                if between and not new_run and r.t - prev.t <= exp.gap:
                    interleaved += 1
                    if len(examples) < 3:
                        examples.append(f"{format_queue(q)}: {r.consumer} and {','.join(sorted(between))}")
                if not between and not new_run and r.offset <= prev.offset:
                    disorder += 1
            last_by[r.consumer] = r
    return [
        InvariantResult(
            "exclusive",
            interleaved == 0,
            interleaved,
            "msgs",
            "messages of a queue printed by one consumer while another was printing it"
            + (f"; e.g. {'; '.join(examples)}" if examples else ""),
        ),
        InvariantResult(
            "order",
            disorder == 0,
            disorder,
            "msgs",
            "messages printed below an offset the same consumer had printed",
        ),
    ]


def notifications(tl: Timeline) -> list[InvariantResult]:
    """Figures: notifications sent, member-list queries (rebalances run), REBALANCE lines, split view."""
    sent = len(tl.notifies)
    dropped = sum(n.dropped for n in tl.notifies)
    delayed = sum(n.delay > 0 for n in tl.notifies)
    per: dict[str, int] = {}
    for n in tl.notifies:
        per[n.consumer] = per.get(n.consumer, 0) + 1
    lines = sum(1 for r in tl.rebalances if r.topic == tl.topic)
    queries = len(tl.queries)
    split = split_view_seconds(tl)
    return [
        InvariantResult(
            "notifications",
            None,
            sent,
            "",
            f"NOTIFY_CONSUMER_IDS_CHANGED sent by the brokers ({dropped} dropped, {delayed} delayed); "
            + ", ".join(f"{c} {n}" for c, n in sorted(per.items())),
            {"dropped": dropped, "delayed": delayed, "per_consumer": per},
        ),
        InvariantResult(
            "rebalances",
            None,
            queries,
            "",
            f"GET_CONSUMER_LIST_BY_GROUP asked (one per topic per rebalance); {lines} REBALANCE lines",
            {"rebalance_lines": lines},
        ),
        InvariantResult(
            "split-view",
            None,
            split,
            "s",
            "time the brokers' latest member lists, as the consumers were answered them, differed",
        ),
    ]


def split_view_seconds(tl: Timeline) -> float:
    """How long the latest answered member lists of two brokers differed."""
    latest: dict[str, tuple[str, ...]] = {}
    total = 0.0
    since: float | None = None
    for qr in sorted(tl.queries, key=lambda q: q.answered):
        if qr.members is None:
            continue
        latest[qr.broker] = tuple(sorted(qr.members))
        differ = len(set(latest.values())) > 1
        if differ and since is None:
            since = qr.answered
        elif not differ and since is not None:
            total += qr.answered - since
            since = None
    if since is not None:
        total += tl.t_end - since
    return total


def resume(tl: Timeline, exp: Expectations) -> InvariantResult | None:
    """After each broker restart: seconds until every queue of the broker was served again."""
    downs = [w for w in tl.windows if w.what == "broker-down"]
    if not downs:
        return None
    worst = 0.0
    parts = []
    for w in downs:
        slowest = 0.0
        for q in tl.queues_at(w.end):
            if q[0] != w.target:
                continue
            served = [p.answered for p in tl.pulls if p.queue == q and p.ok and p.answered >= w.end]
            slowest = max(slowest, (min(served) - w.end) if served else math.inf)
        worst = max(worst, slowest)
        parts.append(
            f"{w.target} back at {w.end - tl.t0:+.1f} s: all its queues served after {slowest:.2f} s"
        )
    bound = exp.resume if exp.resume is not None else math.inf
    return InvariantResult(
        "resume",
        worst <= bound + _EPS,
        worst,
        "s",
        "; ".join(parts) + (f" (bound {bound:g} s)" if exp.resume is not None else ""),
    )


def evaluate(tl: Timeline, exp: Expectations) -> tuple[list[InvariantResult], float]:
    """Every invariant of the run, and when all first members were up."""
    hold = holdings(tl, exp.gap)
    up = startup_time(tl, hold)
    start = up if up < math.inf else tl.t_end
    pulling = holdings(tl, exp.gap, in_hand=False)
    results = [
        lost(tl),
        duplicates(tl, exp),
        overlap(tl, hold, start, exp, pulling),
        orphan(tl, hold, start, exp),
    ]
    results.append(convergence(tl, hold, exp))
    if exp.orderly:
        results.extend(orderly(tl, exp))
    restarted = resume(tl, exp)
    if restarted is not None:
        results.append(restarted)
    results.extend(notifications(tl))
    return results, up
