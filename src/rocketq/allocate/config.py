"""``CONFIG``: RocketMQ's ``AllocateMessageQueueByConfig``, a fixed list of queues."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rocketq.allocate.base import AllocationStrategy
from rocketq.models import MessageQueue

__all__ = ["AllocateByConfig"]


class AllocateByConfig(AllocationStrategy):
    """``CONFIG``: every consumer takes the configured queues, whatever the inputs.

    As in RocketMQ, nothing is checked or filtered: the configured list is returned as given
    (a fresh copy each call), even for queues not in ``mq_all``, and every consumer of the group
    gets the same list, so :func:`rocketq.allocate.plan` reports those queues as shared.

    >>> s = AllocateByConfig([MessageQueue("T", "broker-a", 1)])
    >>> s.allocate("g", "c1", [], [])
    [MessageQueue(topic='T', broker_name='broker-a', queue_id=1)]
    """

    __slots__ = ("_queues",)

    def __init__(self, queues: Iterable[MessageQueue]) -> None:
        self._queues: tuple[MessageQueue, ...] = tuple(queues)

    @property
    def name(self) -> str:
        return "CONFIG"

    @property
    def queues(self) -> tuple[MessageQueue, ...]:
        """The configured queues."""
        return self._queues

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return list(self._queues)
