"""RocketMQ's two averaging strategies: contiguous blocks (``AVG``) and round robin (``AVG_BY_CIRCLE``)."""

from __future__ import annotations

from collections.abc import Sequence

from rocketq.allocate.base import AllocationStrategy, check_arguments, check_arguments_all, first_indexes
from rocketq.models import MessageQueue

__all__ = ["AllocateAveragely", "AllocateAveragelyByCircle"]


def _avg_block(n_mq: int, n_cid: int, index: int) -> tuple[int, int]:
    """``(start, stop)`` of consumer ``index``'s block, with RocketMQ's integer arithmetic.

    The first ``n_mq % n_cid`` consumers take ``n_mq // n_cid + 1`` queues, the others one less;
    when there are no more queues than consumers each of the first ``n_mq`` takes one. All values
    are non-negative, so Python's ``//`` and ``%`` are Java's ``/`` and ``%`` here.
    """
    mod = n_mq % n_cid
    if n_mq <= n_cid:
        average = 1
    elif mod > 0 and index < mod:
        average = n_mq // n_cid + 1
    else:
        average = n_mq // n_cid
    start = index * average if (mod > 0 and index < mod) else index * average + mod
    count = min(average, n_mq - start)
    # RocketMQ indexes (start + i) % n_mq, but start + i < n_mq whenever count > 0: no wrap.
    return start, start + max(count, 0)


class AllocateAveragely(AllocationStrategy):
    """``AVG`` (RocketMQ's ``AllocateMessageQueueAveragely``, the default): contiguous blocks.

    Consumer number *i* (its first position in ``cid_all``) takes a contiguous block of
    ``mq_all``; the first ``len(mq_all) % len(cid_all)`` consumers take one queue more. Consumers
    beyond the number of queues take nothing. A duplicated client id finds the same position, so
    both processes take the same block and a later block is left to nobody.

    >>> qs = [MessageQueue("T", "broker-a", i) for i in range(16)]
    >>> cids = ["c1", "c2", "c3"]
    >>> [[q.queue_id for q in AllocateAveragely().allocate("g", c, qs, cids)] for c in cids]
    [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11, 12, 13, 14, 15]]
    >>> [q.queue_id for q in AllocateAveragely().allocate("g", "c2", qs[:4], ["c1", "c2", "c2"])]
    [2]

    (Both processes named ``c2`` take queue 2; queue 3, the third consumer's block, goes to nobody.)
    """

    __slots__ = ()

    @property
    def name(self) -> str:
        return "AVG"

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not check_arguments(consumer_group, current_cid, mq_all, cid_all):
            return []
        start, stop = _avg_block(len(mq_all), len(cid_all), list(cid_all).index(current_cid))
        return list(mq_all[start:stop])

    def allocate_all(
        self, consumer_group: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> dict[str, list[MessageQueue]]:
        if not check_arguments_all(mq_all, cid_all):
            return {}
        n_mq, n_cid = len(mq_all), len(cid_all)
        result: dict[str, list[MessageQueue]] = {}
        for cid, index in first_indexes(cid_all).items():
            start, stop = _avg_block(n_mq, n_cid, index)
            result[cid] = list(mq_all[start:stop])
        return result


class AllocateAveragelyByCircle(AllocationStrategy):
    """``AVG_BY_CIRCLE`` (RocketMQ's ``AllocateMessageQueueAveragelyByCircle``): round robin.

    Consumer number *i* takes queues *i*, *i + n*, *i + 2n* ... of ``mq_all`` (*n* consumers).

    >>> qs = [MessageQueue("T", "broker-a", i) for i in range(10)]
    >>> cids = ["c0", "c1", "c2", "c3"]
    >>> [[q.queue_id for q in AllocateAveragelyByCircle().allocate("g", c, qs, cids)] for c in cids]
    [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]
    """

    __slots__ = ()

    @property
    def name(self) -> str:
        return "AVG_BY_CIRCLE"

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not check_arguments(consumer_group, current_cid, mq_all, cid_all):
            return []
        index = list(cid_all).index(current_cid)
        return list(mq_all[index :: len(cid_all)])

    def allocate_all(
        self, consumer_group: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> dict[str, list[MessageQueue]]:
        if not check_arguments_all(mq_all, cid_all):
            return {}
        step = len(cid_all)
        return {cid: list(mq_all[index::step]) for cid, index in first_indexes(cid_all).items()}
