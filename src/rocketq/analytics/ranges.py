"""Queue ids written the way the seeds write them (``[0..5] [6..10] [11..15]``), and counts with
their noun in the right number (``1 message``, ``2 messages``)."""

from __future__ import annotations

from collections.abc import Iterable

from rocketq.models import MessageQueue

__all__ = ["counted", "id_ranges", "queue_ranges"]


def id_ranges(ids: Iterable[int]) -> str:
    """Integers as compact ranges in brackets.

    >>> id_ranges([3, 0, 1, 2, 7, 9, 10])
    '[0..3, 7, 9..10]'
    >>> id_ranges([])
    '[]'
    """
    ordered = sorted(set(ids))
    if not ordered:
        return "[]"
    spans: list[str] = []
    start = prev = ordered[0]
    for i in [*ordered[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        spans.append(str(start) if start == prev else f"{start}..{prev}")
        if i is not None:
            start = prev = i
    return f"[{', '.join(spans)}]"


def queue_ranges(queues: Iterable[MessageQueue]) -> str:
    """Queue ids as compact ranges per topic and broker (named only when there are several).

    >>> qs = [MessageQueue("T", "broker-a", i) for i in (0, 1, 2, 3, 7, 9, 10)]
    >>> queue_ranges(qs)
    '[0..3, 7, 9..10]'
    >>> queue_ranges([MessageQueue("T", "a", 0), MessageQueue("T", "b", 1)])
    'a [0] b [1]'
    >>> queue_ranges([])
    '[]'
    """
    groups: dict[tuple[str, str], list[int]] = {}
    for q in sorted(queues):
        groups.setdefault((q.topic, q.broker_name), []).append(q.queue_id)
    many_topics = len({t for t, _ in groups}) > 1
    many_brokers = len({b for _, b in groups}) > 1
    parts = []
    for (topic, broker), ids in groups.items():
        label = "/".join(x for x, on in ((topic, many_topics), (broker, many_brokers)) if on)
        parts.append(f"{label} {id_ranges(ids)}" if label else id_ranges(ids))
    return " ".join(parts) if parts else "[]"


def counted(n: int, noun: str, plural: str | None = None, *, grouped: bool = False) -> str:
    """``n`` and its noun, singular for 1 (and -1), plural otherwise (``noun`` + s unless given).

    >>> counted(1, "message"), counted(0, "message"), counted(12, "rebalance"), counted(2, "copy", "copies")
    ('1 message', '0 messages', '12 rebalances', '2 copies')
    >>> counted(1327, "delivery", "deliveries", grouped=True)
    '1,327 deliveries'
    """
    number = f"{n:,}" if grouped else str(n)
    return f"{number} {noun if abs(n) == 1 else plural or noun + 's'}"
