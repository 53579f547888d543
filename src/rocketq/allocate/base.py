"""The strategy interface and the argument checks every RocketMQ strategy shares.

A strategy answers one question for one consumer: *which of this topic's queues are mine?* Every
consumer of a group asks it independently, with the same inputs (all queues, all client ids), so
a strategy must be a pure function of its arguments; that is the whole coordination protocol of
RocketMQ's client-side rebalance.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from operator import attrgetter

from rocketq.models import MessageQueue

__all__ = [
    "CID_ALL_EMPTY",
    "CURRENT_CID_EMPTY",
    "MQ_ALL_EMPTY",
    "AllocationStrategy",
    "check_arguments",
    "check_arguments_all",
    "first_indexes",
    "java_sorted",
    "reject_empty_ids",
    "sorted_queues",
]

log = logging.getLogger(__name__)

# The messages of the IllegalArgumentException RocketMQ's AbstractAllocateMessageQueueStrategy throws.
CURRENT_CID_EMPTY = "currentCID is empty"
MQ_ALL_EMPTY = "mqAll is null or mqAll empty"
CID_ALL_EMPTY = "cidAll is null or cidAll empty"


def check_arguments(
    consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> bool:
    """Validate one consumer's allocation arguments the way RocketMQ does, in RocketMQ's order.

    Raises ``ValueError`` (RocketMQ's ``IllegalArgumentException``, same message) for an empty
    current id, queue list or client id list. Returns ``False``, after a warning, when
    ``current_cid`` is not in ``cid_all``: the strategy must then allocate nothing.

    >>> check_arguments("g", "", [MessageQueue("t", "b", 0)], ["c"])
    Traceback (most recent call last):
    ...
    ValueError: currentCID is empty
    >>> check_arguments("g", "x", [MessageQueue("t", "b", 0)], ["c"])
    False
    """
    if not current_cid:
        raise ValueError(CURRENT_CID_EMPTY)
    if not mq_all:
        raise ValueError(MQ_ALL_EMPTY)
    if not cid_all:
        raise ValueError(CID_ALL_EMPTY)
    if current_cid not in cid_all:
        log.warning(
            "consumer group %s: client id %s is not in the group's client id list %s; allocating nothing",
            consumer_group,
            current_cid,
            cid_all,
        )
        return False
    return True


def check_arguments_all(
    mq_all: Sequence[MessageQueue], cid_all: Sequence[str], *, empty_ids: bool = True
) -> bool:
    """The checks :meth:`AllocationStrategy.allocate_all` must make to fail as the per-consumer loop would.

    The loop calls ``allocate`` for each distinct id in list order, so the first error it meets is
    the one to raise: an empty queue list is reported against the first id (as an empty-id error
    if that id is itself empty), otherwise an empty id anywhere in the list. Returns ``False`` when
    there is nobody to allocate for (an empty client id list: the loop would not run at all).

    A strategy whose first call can fail in other ways (a resolver, a custom hash) passes
    ``empty_ids=False`` and calls :func:`reject_empty_ids` after that shared work, so its errors
    come in the loop's order.
    """
    if not cid_all:
        return False
    if not mq_all or not cid_all[0]:
        raise ValueError(CURRENT_CID_EMPTY if not cid_all[0] else MQ_ALL_EMPTY)
    if empty_ids:
        reject_empty_ids(cid_all)
    return True


def reject_empty_ids(cid_all: Sequence[str]) -> None:
    """Raise RocketMQ's empty-id error if any client id is empty."""
    if "" in cid_all:
        raise ValueError(CURRENT_CID_EMPTY)


def first_indexes(cid_all: Sequence[str]) -> dict[str, int]:
    """Each distinct client id mapped to its first position, i.e. Java's ``List.indexOf``.

    Built in one pass, so a whole-group plan does not pay ``list.index`` once per consumer. The
    dict's order is the order of first appearance.

    >>> first_indexes(["a", "b", "a", "c"])
    {'a': 0, 'b': 1, 'c': 3}
    """
    indexes: dict[str, int] = {}
    for i, cid in enumerate(cid_all):
        indexes.setdefault(cid, i)
    return indexes


def java_sorted(strings: Iterable[str]) -> list[str]:
    """``strings`` sorted as Java's ``Collections.sort`` sorts a ``List<String>`` (UTF-16 code units).

    >>> java_sorted(["b", "\U0001f600", "\uffff", "a"]) == ["a", "b", "\U0001f600", "\uffff"]
    True
    """
    items = list(strings)
    if all(s.isascii() for s in items):
        return sorted(items)
    return sorted(items, key=_utf16)


def _utf16(text: str) -> bytes:
    return text.encode("utf-16-be", "surrogatepass")


_queue_id = attrgetter("queue_id")


def sorted_queues(queues: Iterable[MessageQueue]) -> list[MessageQueue]:
    """``queues`` sorted by ``MessageQueue.compareTo``: topic, broker name (as Java strings), queue id.

    Equal to ``sorted(queues)``, but computed by grouping on (topic, broker name), of which there
    are few, and sorting each group by queue id: no per-queue string comparisons.

    >>> [q.short for q in sorted_queues([MessageQueue("t", "b", 1), MessageQueue("t", "a", 9)])]
    ['a:9', 'b:1']
    """
    groups: dict[tuple[str, str], list[MessageQueue]] = {}
    for mq in queues:
        key = (mq.topic, mq.broker_name)
        group = groups.get(key)
        if group is None:
            groups[key] = [mq]
        else:
            group.append(mq)
    keys = list(groups)
    if all(topic.isascii() and broker.isascii() for topic, broker in keys):
        keys.sort()
    else:
        keys.sort(key=lambda k: (_utf16(k[0]), _utf16(k[1])))
    result: list[MessageQueue] = []
    for key in keys:
        group = groups[key]
        group.sort(key=_queue_id)
        result += group
    return result


class AllocationStrategy(ABC):
    """How a consumer group's queues of one topic are shared among its consumers.

    The counterpart of RocketMQ's ``AllocateMessageQueueStrategy`` interface (and of aiokafka's
    ``AbstractPartitionAssignor``). Subclasses implement :meth:`allocate` (one consumer's share)
    and may override :meth:`allocate_all` (every consumer's share at once) with a faster
    computation, which must return exactly what calling :meth:`allocate` for each id returns.

    Strategies never sort or de-duplicate their inputs: RocketMQ's ``RebalanceImpl`` sorts both
    lists before calling, and :func:`rocketq.allocate.plan` does the same.
    """

    __slots__ = ()

    @property
    @abstractmethod
    def name(self) -> str:
        """The strategy's name as RocketMQ's ``getName()`` reports it (``"AVG"``, ...)."""

    @abstractmethod
    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        """The queues of ``mq_all`` that ``current_cid`` owns, in the strategy's order."""

    def allocate_all(
        self, consumer_group: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> dict[str, list[MessageQueue]]:
        """Every distinct client id of ``cid_all`` (in first-appearance order) mapped to its share.

        Equal, by contract, to calling :meth:`allocate` for each distinct id. Duplicated ids get
        one entry: every process using that id computes, and takes, the same queues.
        """
        return {cid: self.allocate(consumer_group, cid, mq_all, cid_all) for cid in dict.fromkeys(cid_all)}

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"
