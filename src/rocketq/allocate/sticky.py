"""``STICKY`` — not in RocketMQ: balanced like ``AVG``, but moving as few queues as possible.

RocketMQ's strategies forget the previous assignment, so one consumer joining a group of
*n* can move almost every queue (with ``AVG``, every block boundary shifts). Kafka's sticky
assignor showed the better contract, which this strategy keeps:

* **balanced**: share sizes differ by at most one (each consumer gets ``n // c`` or
  ``n // c + 1`` of *n* queues among *c* distinct client ids);
* **sticky**: among all balanced assignments it keeps the most queues where they were, i.e.
  moves the fewest. A consumer keeps up to its quota of its previous queues, and the larger
  quotas go to the consumers that held the most, so the number kept is the maximum
  ``sum(min(held, n // c)) + min(n % c, #consumers holding more than n // c)``;
* **deterministic**: a pure function of (previous assignment, queues, client ids), independent
  of the order of the lists, so every consumer computes the same whole assignment and takes its
  own part, with no coordinator, as RocketMQ clients do.

With no previous assignment it gives exactly ``AVG``'s contiguous blocks over the sorted lists.
Duplicated client ids count once (and, as with every strategy, both processes take the same
queues). A queue that the previous assignment gave to several consumers stays with the first
of them in client-id order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rocketq.allocate.base import AllocationStrategy, check_arguments, check_arguments_all, java_sorted
from rocketq.allocate.base import sorted_queues as _sorted_queues
from rocketq.models import MessageQueue

__all__ = ["AllocateSticky", "sticky_assignment"]


def sticky_assignment(
    previous: Mapping[str, Sequence[MessageQueue]],
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[str],
) -> dict[str, list[MessageQueue]]:
    """The whole balanced, sticky assignment: each distinct client id (in Java order) → its queues.

    Each consumer's queues are listed in ``MessageQueue`` order.

    >>> qs = [MessageQueue("T", "broker-a", i) for i in range(6)]
    >>> before = sticky_assignment({}, qs, ["c1", "c2"])
    >>> [[q.queue_id for q in v] for v in before.values()]
    [[0, 1, 2], [3, 4, 5]]
    >>> after = sticky_assignment(before, qs, ["c1", "c2", "c3"])
    >>> [[q.queue_id for q in v] for v in after.values()]
    [[0, 1], [3, 4], [2, 5]]
    """
    consumers = java_sorted(dict.fromkeys(cid_all))
    queues = _sorted_queues(dict.fromkeys(mq_all))
    if not consumers:
        return {}
    position = {mq: i for i, mq in enumerate(queues)}

    # What each live consumer still holds: previous queues that still exist, each claimed once.
    held: dict[str, list[MessageQueue]] = {}
    claimed: set[MessageQueue] = set()
    for cid in consumers:
        mine = []
        for mq in previous.get(cid, ()):
            if mq in position and mq not in claimed:
                claimed.add(mq)
                mine.append(mq)
        mine.sort(key=position.__getitem__)
        held[cid] = mine

    base, extra = divmod(len(queues), len(consumers))
    # The `extra` larger quotas go to those holding the most (ties: earlier client id).
    order = {cid: i for i, cid in enumerate(consumers)}
    bigger = set(sorted(consumers, key=lambda cid: (-len(held[cid]), order[cid]))[:extra])

    result: dict[str, list[MessageQueue]] = {}
    owned: set[MessageQueue] = set()
    for cid in consumers:
        quota = base + 1 if cid in bigger else base
        keep = held[cid][:quota]
        owned.update(keep)
        result[cid] = keep
    free = iter([mq for mq in queues if mq not in owned])
    for cid in consumers:
        quota = base + 1 if cid in bigger else base
        share = result[cid]
        for _ in range(quota - len(share)):
            share.append(next(free))
        share.sort(key=position.__getitem__)
    return result


class AllocateSticky(AllocationStrategy):
    """``STICKY`` (not in RocketMQ): balanced shares that move the fewest queues from ``previous``.

    ``previous`` maps client ids to the queues they held (any topics; queues not offered now are
    ignored). Build a new strategy with the latest assignment before each rebalance.

    >>> qs = [MessageQueue("T", "broker-a", i) for i in range(4)]
    >>> s = AllocateSticky({"c1": qs[:2], "c2": qs[2:]})
    >>> [q.queue_id for q in s.allocate("g", "c3", qs, ["c1", "c2", "c3"])]
    [3]
    """

    __slots__ = ("_previous",)

    def __init__(self, previous: Mapping[str, Sequence[MessageQueue]] | None = None) -> None:
        self._previous: dict[str, tuple[MessageQueue, ...]] = {
            cid: tuple(queues) for cid, queues in (previous or {}).items()
        }

    @property
    def name(self) -> str:
        return "STICKY"

    @property
    def previous(self) -> Mapping[str, tuple[MessageQueue, ...]]:
        """The assignment this strategy sticks to."""
        return self._previous

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not check_arguments(consumer_group, current_cid, mq_all, cid_all):
            return []
        return sticky_assignment(self._previous, mq_all, cid_all)[current_cid]

    def allocate_all(
        self, consumer_group: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> dict[str, list[MessageQueue]]:
        if not check_arguments_all(mq_all, cid_all):
            return {}
        whole = sticky_assignment(self._previous, mq_all, cid_all)
        return {cid: whole[cid] for cid in dict.fromkeys(cid_all)}
