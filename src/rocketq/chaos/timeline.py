"""What a chaos run saw, as plain values: the data the invariants are computed from.

Three witnesses feed a run's :class:`Timeline`, all on one clock (the harness's
:func:`time.monotonic`, in seconds):

* the **proxy** (:mod:`rocketq.chaos.proxy`), which every consumer's traffic crosses: each
  ``PULL_MESSAGE`` as a :class:`Pull` (who pulled which queue from which offset, when it was sent
  and answered, the answer's code and next offset), each queue an ``UNLOCK_BATCH_MQ`` gave up as a
  :class:`Release`, each ``NOTIFY_CONSUMER_IDS_CHANGED`` as a
  :class:`Notify`, each ``GET_CONSUMER_LIST_BY_GROUP`` with its answer as a :class:`MemberQuery`
  (the member list a consumer acted on), and what the faults did (:class:`WireEvent`);
* the **consumers' own lines** (the line contract, :func:`parse_line`): every message consumed as
  a :class:`Recv`, every change of owned queues as a :class:`Rebalance`;
* the **harness**: what the producer sent (:class:`Sent`), each consumer's life (:class:`Life`:
  start, pauses, stop or kill), fault windows and broker downtimes (:class:`Window`), and the
  topic's queues over time.

The line contract (what ``--consumer-cmd`` programs print on stdout, one line each, flushed)::

    RECV <client id> <broker> <queue id> <queue offset> <msg id> <body>
    REBALANCE <client id> <topic> owned=[<broker>:<id>,...] added=[...] removed=[...]

Anything else on stdout is ignored; a REBALANCE line may carry more ``key=value`` words after
``removed=[...]``. Queues are written ``<broker name>:<queue id>``.

>>> r = parse_line("RECV 10.0.0.1@c1 broker-a 3 17 0A0000 seq=42", "c1", 5.0)
>>> (r.queue, r.offset, r.body)
(('broker-a', 3), 17, 'seq=42')
>>> line = "REBALANCE 10.0.0.1@c1 T owned=[broker-a:0,broker-b:1] added=[broker-b:1] removed=[]"
>>> parse_line(line, "c1", 6.0).owned
(('broker-a', 0), ('broker-b', 1))
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = [
    "Life",
    "MemberQuery",
    "Notify",
    "Pull",
    "QueueRef",
    "Rebalance",
    "Recv",
    "Sent",
    "Timeline",
    "Window",
    "WireEvent",
    "format_queue",
    "parse_line",
    "parse_queues",
]

_TIME_FIELDS = frozenset({"t", "sent", "answered", "started", "ended", "start", "end"})

QueueRef = tuple[str, int]
"""A queue of the run's one topic: ``(broker name, queue id)``."""


def format_queue(q: QueueRef) -> str:
    """``broker-a:3``, the line contract's way of writing a queue."""
    return f"{q[0]}:{q[1]}"


def parse_queues(text: str) -> tuple[QueueRef, ...]:
    """``[broker-a:0,broker-b:1]`` (the brackets optional) as queue refs.

    >>> parse_queues("[broker-a:0,broker-b:11]")
    (('broker-a', 0), ('broker-b', 11))
    >>> parse_queues("[]")
    ()
    """
    inner = text.strip().removeprefix("[").removesuffix("]").strip()
    if not inner:
        return ()
    out = []
    for token in inner.split(","):
        broker, sep, qid = token.strip().rpartition(":")
        if not sep or not broker or not qid.isdigit():
            raise ValueError(f"not a queue: {token!r} (expected <broker>:<queue id>)")
        out.append((broker, int(qid)))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Recv:
    """A ``RECV`` line: ``consumer`` consumed the message at ``offset`` of a queue at ``t``."""

    consumer: str
    t: float
    client_id: str
    broker: str
    queue_id: int
    offset: int
    msg_id: str
    body: str

    @property
    def queue(self) -> QueueRef:
        return (self.broker, self.queue_id)


@dataclass(frozen=True, slots=True)
class Rebalance:
    """A ``REBALANCE`` line: the queues ``consumer`` owns of ``topic`` from ``t`` on."""

    consumer: str
    t: float
    client_id: str
    topic: str
    owned: tuple[QueueRef, ...]
    added: tuple[QueueRef, ...]
    removed: tuple[QueueRef, ...]


def parse_line(line: str, consumer: str, t: float) -> Recv | Rebalance | None:
    """One stdout line of consumer process ``consumer`` read at ``t``: a :class:`Recv`, a
    :class:`Rebalance`, or ``None`` for any other line (malformed contract lines included)."""
    text = line.rstrip("\r\n")
    if text.startswith("RECV "):
        parts = text.split(" ", 6)
        if len(parts) < 6:
            return None
        body = parts[6] if len(parts) == 7 else ""
        try:
            return Recv(consumer, t, parts[1], parts[2], int(parts[3]), int(parts[4]), parts[5], body)
        except ValueError:
            return None
    if text.startswith("REBALANCE "):
        parts = text.split(" ")
        if len(parts) < 6:
            return None
        words = dict(p.partition("=")[::2] for p in parts[3:])
        try:
            return Rebalance(
                consumer,
                t,
                parts[1],
                parts[2],
                parse_queues(words.get("owned", "")),
                parse_queues(words.get("added", "")),
                parse_queues(words.get("removed", "")),
            )
        except ValueError:
            return None
    return None


@dataclass(frozen=True, slots=True)
class Pull:
    """A ``PULL_MESSAGE`` the proxy relayed: sent at ``sent``, answered at ``answered`` with
    ``code`` (``None``: the connection closed first, ``answered`` is then when it closed; still
    open at the end of the run: the run's end) and ``next_offset`` (``nextBeginOffset``)."""

    consumer: str
    broker: str
    queue_id: int
    offset: int
    sent: float
    answered: float
    code: int | None = None
    next_offset: int | None = None

    @property
    def queue(self) -> QueueRef:
        return (self.broker, self.queue_id)

    @property
    def found(self) -> bool:
        """Whether the answer carried messages (``SUCCESS``, RocketMQ's FOUND)."""
        return self.code == 0 and self.next_offset is not None and self.next_offset > self.offset

    @property
    def ok(self) -> bool:
        """Whether the broker served the pull (found, not found yet, retry, offset moved)."""
        return self.code in (0, 19, 20, 21)


@dataclass(frozen=True, slots=True)
class Release:
    """An ``UNLOCK_BATCH_MQ`` the proxy relayed: ``consumer`` gave ``broker``'s queue ``queue_id``
    up at ``t`` (a clean handoff's old owner, having dropped the queue and committed its offset,
    or an orderly consumer leaving it)."""

    consumer: str
    broker: str
    queue_id: int
    t: float

    @property
    def queue(self) -> QueueRef:
        return (self.broker, self.queue_id)


@dataclass(frozen=True, slots=True)
class Notify:
    """A ``NOTIFY_CONSUMER_IDS_CHANGED`` from ``broker`` to ``consumer`` (dropped, or delayed by
    ``delay`` seconds, by a fault)."""

    consumer: str
    broker: str
    t: float
    dropped: bool = False
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class MemberQuery:
    """A ``GET_CONSUMER_LIST_BY_GROUP`` of ``consumer`` to ``broker`` and the member list answered
    (``None``: no list came back)."""

    consumer: str
    broker: str
    sent: float
    answered: float
    members: tuple[str, ...] | None


@dataclass(frozen=True, slots=True)
class WireEvent:
    """Something a fault did at the proxy: ``what`` is ``dropped``, ``delayed``, ``refused``,
    ``cut`` or ``stale-route``; ``detail`` names the frame or link."""

    t: float
    what: str
    consumer: str
    target: str
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Sent:
    """A message the producer had acknowledged: its sequence number and where it was stored."""

    seq: int
    t: float
    broker: str
    queue_id: int
    offset: int

    @property
    def queue(self) -> QueueRef:
        return (self.broker, self.queue_id)


@dataclass(frozen=True, slots=True)
class Life:
    """A consumer process: started at ``started``; ``ended`` (``None``: still running at the end)
    ``how`` (``stopped``: SIGTERM, graceful; ``killed``: SIGKILL; ``exited``: on its own);
    ``pauses`` are SIGSTOP..SIGCONT windows."""

    consumer: str
    started: float
    ended: float | None = None
    how: str = "running"
    pauses: tuple[tuple[float, float], ...] = ()

    def alive(self, t: float) -> bool:
        return self.started <= t and (self.ended is None or t < self.ended)


@dataclass(frozen=True, slots=True)
class Window:
    """A fault's or a downtime's window: ``what`` (``fault``, ``broker-down``, ``pause``, ``slow``),
    the consumer or broker it hit, and when it began and healed."""

    what: str
    target: str
    start: float
    end: float
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Timeline:
    """Everything one run saw (see the module docstring); the invariants' only input."""

    topic: str
    #: the topic's queues over time: ``(from t, queues)``, the first entry from the run's start
    queue_sets: tuple[tuple[float, tuple[QueueRef, ...]], ...]
    sent: tuple[Sent, ...] = ()
    recvs: tuple[Recv, ...] = ()
    rebalances: tuple[Rebalance, ...] = ()
    pulls: tuple[Pull, ...] = ()
    releases: tuple[Release, ...] = ()
    notifies: tuple[Notify, ...] = ()
    queries: tuple[MemberQuery, ...] = ()
    wire_events: tuple[WireEvent, ...] = ()
    lives: tuple[Life, ...] = ()
    windows: tuple[Window, ...] = ()
    #: when the producer started (figures are printed relative to it)
    t0: float = 0.0
    #: when the last fault healed (or the last scheduled change happened)
    last_heal: float = 0.0
    #: when the run stopped observing (before the consumers were stopped)
    t_end: float = 0.0
    #: anything else a scenario wants to show with the figures
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def queues(self) -> tuple[QueueRef, ...]:
        """The topic's queues at the end of the run."""
        return self.queue_sets[-1][1]

    def queues_at(self, t: float) -> tuple[QueueRef, ...]:
        current = self.queue_sets[0][1]
        for since, qs in self.queue_sets:
            if since <= t:
                current = qs
        return current

    def to_dict(self) -> dict[str, Any]:
        """Everything, JSON-ready (times as seconds after the producer started)."""
        t0 = self.t0

        def rel(value: Any) -> Any:
            if isinstance(value, float):
                return round(value - t0, 4) if math.isfinite(value) else None
            return value

        def item(obj: Any) -> dict[str, Any]:
            out = {}
            for f in fields(obj):
                v = getattr(obj, f.name)
                if f.name in _TIME_FIELDS:
                    v = rel(v)
                elif f.name == "pauses":
                    v = [[rel(a), rel(b)] for a, b in v]
                out[f.name] = v
            return out

        return {
            "topic": self.topic,
            "queue_sets": [[rel(t), [format_queue(q) for q in qs]] for t, qs in self.queue_sets],
            "last_heal": rel(self.last_heal),
            "end": rel(self.t_end),
            "sent": [item(x) for x in self.sent],
            "recvs": [item(x) for x in self.recvs],
            "rebalances": [item(x) for x in self.rebalances],
            "pulls": [item(x) for x in self.pulls],
            "releases": [item(x) for x in self.releases],
            "notifies": [item(x) for x in self.notifies],
            "queries": [item(x) for x in self.queries],
            "wire_events": [item(x) for x in self.wire_events],
            "lives": [item(x) for x in self.lives],
            "windows": [item(x) for x in self.windows],
            "extra": self.extra,
        }

    def life(self, consumer: str) -> Life | None:
        for life in self.lives:
            if life.consumer == consumer:
                return life
        return None

    def windows_of(self, what: str) -> list[Window]:
        return [w for w in self.windows if w.what == what]


def by_consumer(items: Iterable[Any]) -> dict[str, list[Any]]:
    """Items with a ``consumer`` attribute, grouped by it, in their order."""
    out: dict[str, list[Any]] = {}
    for item in items:
        out.setdefault(item.consumer, []).append(item)
    return out


def sorted_by(items: Sequence[Any], key: str) -> list[Any]:
    return sorted(items, key=lambda x: getattr(x, key))
