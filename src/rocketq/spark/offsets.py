"""Per-queue offsets of the ``rocketmq`` data source: canonical JSON, starting positions, read limits.

Pure functions (no Spark, no network): the reader passes the broker calls in.

**Offsets JSON** — what ``startingOffsets`` / ``endingOffsets`` accept and what a streaming query
checkpoints: ``{"topic": {"broker-a": {"0": 42, "1": 7}}}``, the offset of the next message to
read per queue. Spark compares offsets as JSON *text*, so :func:`to_json` always builds the same
key order for the same offsets: topics and broker names sorted, queue ids ascending by number. In
an option, ``-2`` means the queue's earliest offset and ``-1`` its latest (as in Spark's Kafka
source).

**Starting positions** — a streaming query's first offset must survive a replay: Spark calls
``initialOffset()`` again when it re-runs the first batch after a crash, so it returns the
*symbolic* position (:func:`StartingPosition.to_offset`, e.g. ``{"$initial": "earliest"}``), and
:func:`resolve_start` turns it into numbers when a batch is planned. ``earliest`` and
``startingTimestamp`` resolve to the same numbers every time (unless retention removed data);
``latest`` (and ``-1`` entries) resolve to the batch's own end, so the first batch reads nothing
from those queues and the next starts where that end was, however late the replay.

>>> from rocketq.models import MessageQueue as Q
>>> offsets = {Q("T", "broker-b", 0): 5, Q("T", "broker-a", 10): 1, Q("T", "broker-a", 2): 3}
>>> to_json(offsets)
{'T': {'broker-a': {'2': 3, '10': 1}, 'broker-b': {'0': 5}}}
>>> from_json(to_json(offsets)) == offsets
True
>>> limited = fair_limit({Q("T", "a", 0): 0, Q("T", "a", 1): 0}, {Q("T", "a", 0): 100, Q("T", "a", 1): 3}, 10)
>>> [limited[Q("T", "a", 0)], limited[Q("T", "a", 1)]]
[7, 3]
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from rocketq.errors import ConfigError, DataLossError
from rocketq.models import MessageQueue

__all__ = [
    "EARLIEST",
    "INITIAL_KEY",
    "LATEST",
    "OffsetMap",
    "StartingPosition",
    "check_data_loss",
    "fair_limit",
    "from_json",
    "is_symbolic",
    "parse_offsets_option",
    "queue_name",
    "resolve_start",
    "split_range",
    "to_json",
]

logger = logging.getLogger(__name__)

EARLIEST: Final = -2
"""In an offsets option: start from the queue's earliest stored message."""
LATEST: Final = -1
"""In an offsets option: the queue's latest offset (start after everything stored so far)."""
INITIAL_KEY: Final = "$initial"
"""The key marking a symbolic (not yet resolved) starting offset."""

OffsetMap = dict[MessageQueue, int]
"""Next offset to read (or end, exclusive) per queue."""


def queue_name(q: MessageQueue) -> str:
    """``topic broker:queue``, as error messages name a queue."""
    return f"{q.topic} {q.broker_name}:{q.queue_id}"


def to_json(offsets: Mapping[MessageQueue, int]) -> dict[str, dict[str, dict[str, int]]]:
    """The canonical nested dict of ``offsets`` (see the module docstring for the order)."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for q in sorted(offsets, key=lambda q: (q.topic, q.broker_name, q.queue_id)):
        out.setdefault(q.topic, {}).setdefault(q.broker_name, {})[str(q.queue_id)] = int(offsets[q])
    return out


def from_json(obj: Any, *, what: str = "offsets", markers: bool = False) -> OffsetMap:
    """Offsets from their nested-dict form, checked; ``markers`` allows ``-2``/``-1`` values.

    Raises :class:`~rocketq.errors.ConfigError` naming ``what`` for anything malformed.
    """
    if not isinstance(obj, dict):
        raise ConfigError(f'{what} must be a JSON object like {{"topic": {{"broker-a": {{"0": 42}}}}}}')
    out: OffsetMap = {}
    low = EARLIEST if markers else 0
    for topic, brokers in obj.items():
        if not isinstance(brokers, dict):
            raise ConfigError(f"{what}: topic {topic!r} must map broker names to objects")
        for broker, queues in brokers.items():
            if not isinstance(queues, dict):
                raise ConfigError(f"{what}: {topic}/{broker} must map queue ids to offsets")
            for qid, offset in queues.items():
                try:
                    queue_id = int(qid)
                except (TypeError, ValueError):
                    raise ConfigError(
                        f"{what}: queue id {qid!r} of {topic}/{broker} is not a number"
                    ) from None
                if type(offset) is not int or offset < low or queue_id < 0:
                    allowed = (
                        "an offset >= 0, or -2 (earliest) / -1 (latest)" if markers else "an offset >= 0"
                    )
                    raise ConfigError(f"{what}: {topic}/{broker}/{qid} is {offset!r}; expected {allowed}")
                out[MessageQueue(topic, broker, queue_id)] = offset
    return out


def parse_offsets_option(
    text: str, option: str, *, allowed: Iterable[str] = ("earliest", "latest")
) -> str | OffsetMap:
    """An offsets option: one of ``allowed`` (lower-cased) or offsets JSON (with -2/-1 markers)."""
    value = text.strip()
    words = tuple(allowed)
    if value.lower() in words:
        return value.lower()
    if not value.startswith("{"):
        shape = '{"topic": {"broker-a": {"0": 42}}}'
        choices = f"{' or '.join(words)} or JSON like {shape}" if words else f"JSON like {shape}"
        raise ConfigError(f"option {option!r} must be {choices}, got {text!r}")
    try:
        obj = json.loads(value)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"option {option!r} is not valid JSON: {exc}") from None
    return from_json(obj, what=f"option {option!r}", markers=True)


@dataclass(frozen=True, slots=True)
class StartingPosition:
    """Where a read starts before it is resolved to numbers.

    ``kind`` is ``earliest``, ``latest``, ``timestamp`` (``timestamp`` ms: the first message
    stored at or after it: ``SEARCH_OFFSET_BY_TIMESTAMP`` and one pull to check),
    ``offsets`` (``offsets`` per queue, -2/-1 markers allowed; queues not listed start at the
    earliest offset) or ``timestamps`` (``offsets`` holds a timestamp per queue; queues not
    listed start at the earliest offset).
    """

    kind: Literal["earliest", "latest", "timestamp", "offsets", "timestamps"]
    timestamp: int | None = None
    offsets: Mapping[MessageQueue, int] = field(default_factory=dict)

    def to_offset(self) -> dict[str, Any]:
        """The symbolic offset dict a streaming query starts from (canonical key order)."""
        out: dict[str, Any] = {INITIAL_KEY: self.kind}
        if self.kind == "timestamp":
            out["timestamp"] = self.timestamp
        elif self.kind in ("offsets", "timestamps"):
            out["offsets"] = to_json(self.offsets)
        return out

    @classmethod
    def from_offset(cls, obj: Mapping[str, Any]) -> StartingPosition:
        """The position of a symbolic offset dict (the inverse of :meth:`to_offset`)."""
        kind = obj.get(INITIAL_KEY)
        if kind in ("earliest", "latest"):
            return cls(kind)
        if kind == "timestamp" and type(obj.get("timestamp")) is int:
            return cls("timestamp", timestamp=obj["timestamp"])
        if kind in ("offsets", "timestamps"):
            return cls(kind, offsets=from_json(obj.get("offsets"), what="starting offsets", markers=True))
        raise ConfigError(f"not a starting position: {json.dumps(obj)}")


def is_symbolic(offset: Mapping[str, Any]) -> bool:
    """Whether a streaming offset dict is an unresolved :class:`StartingPosition`."""
    return INITIAL_KEY in offset


def resolve_start(
    position: StartingPosition,
    queues: Iterable[MessageQueue],
    *,
    min_offset: Callable[[MessageQueue], int],
    latest: Callable[[MessageQueue], int],
    search: Callable[[MessageQueue, int], int],
) -> OffsetMap:
    """Numbers for ``position`` on each of ``queues``.

    ``latest(q)`` is where "latest" lands: the batch's end offset in a stream (so a replay gives the
    same answer), the queue's max offset in a batch read.
    """
    out: OffsetMap = {}
    for q in queues:
        if position.kind == "earliest":
            out[q] = min_offset(q)
        elif position.kind == "latest":
            out[q] = latest(q)
        elif position.kind == "timestamp":
            assert position.timestamp is not None
            out[q] = search(q, position.timestamp)
        elif position.kind == "timestamps":
            ts = position.offsets.get(q)
            out[q] = min_offset(q) if ts is None else search(q, ts)
        else:
            value = position.offsets.get(q, EARLIEST)
            if value == EARLIEST:
                out[q] = min_offset(q)
            elif value == LATEST:
                out[q] = latest(q)
            else:
                out[q] = value
    return out


def fair_limit(start: Mapping[MessageQueue, int], end: Mapping[MessageQueue, int], limit: int) -> OffsetMap:
    """``end`` cut so that at most ``limit`` messages lie between ``start`` and it, shared fairly.

    Every queue with messages gets an equal share; what a queue cannot use (it has fewer) is
    shared among the rest, and the remainder of an uneven split goes one message each to the
    queues first in queue order, so the answer is deterministic. Queues missing from ``start``
    start at 0 here (callers resolve new queues first).
    """
    if limit < 0:
        raise ConfigError(f"read limit must be >= 0, got {limit}")
    avail = {q: max(0, end[q] - start.get(q, 0)) for q in end}
    if sum(avail.values()) <= limit:
        return dict(end)
    grant = dict.fromkeys(avail, 0)
    budget = limit
    open_queues = sorted(q for q, n in avail.items() if n > 0)
    while budget > 0 and open_queues:
        share = budget // len(open_queues)
        if share == 0:
            for q in open_queues[:budget]:
                grant[q] += 1
            break
        still_open = []
        for q in open_queues:
            take = min(share, avail[q] - grant[q])
            grant[q] += take
            budget -= take
            if grant[q] < avail[q]:
                still_open.append(q)
        open_queues = still_open
    return {q: (start.get(q, 0) + grant[q] if avail[q] > 0 else end[q]) for q in end}


def check_data_loss(queue: MessageQueue, requested: int, min_offset: int, *, fail: bool) -> int:
    """Where to start reading ``queue`` when ``requested`` may be below the broker's ``min_offset``.

    Messages below ``min_offset`` were removed by retention. With ``fail`` (the
    ``failOnDataLoss`` default) that raises :class:`~rocketq.errors.DataLossError`; without, a
    warning is logged and reading resumes at ``min_offset``.
    """
    if requested >= min_offset:
        return requested
    text = (
        f"{queue.topic} {queue.broker_name}:{queue.queue_id}: offsets {requested}..{min_offset - 1} "
        f"({min_offset - requested} messages) are no longer on the broker (removed by retention); "
    )
    if fail:
        raise DataLossError(text + "set failOnDataLoss to false to skip them, or start from a later offset")
    logger.warning("%sskipping them (failOnDataLoss is false)", text)
    return min_offset


def split_range(start: int, end: int, max_per_split: int) -> list[tuple[int, int]]:
    """``[start, end)`` cut into ranges of at most ``max_per_split`` offsets (none when empty).

    >>> split_range(0, 10, 4)
    [(0, 4), (4, 8), (8, 10)]
    """
    if max_per_split <= 0:
        raise ConfigError(f"split size must be > 0, got {max_per_split}")
    return [(s, min(s + max_per_split, end)) for s in range(start, end, max_per_split)]
