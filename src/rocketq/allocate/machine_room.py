"""RocketMQ's machine-room strategies: ``MACHINE_ROOM`` and ``MACHINE_ROOM_NEARBY``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from rocketq.allocate.base import (
    AllocationStrategy,
    check_arguments,
    check_arguments_all,
    first_indexes,
    java_sorted,
    reject_empty_ids,
)
from rocketq.models import MessageQueue

__all__ = [
    "AllocateByMachineRoom",
    "AllocateMachineRoomNearby",
    "AtSignRoomResolver",
    "MachineRoomResolver",
    "java_split_at",
]


def java_split_at(text: str) -> list[str]:
    """``text.split("@")`` as Java computes it: trailing empty strings are dropped.

    >>> java_split_at("room1@broker-a"), java_split_at("room1@broker-a@"), java_split_at("@")
    (['room1', 'broker-a'], ['room1', 'broker-a'], [])
    >>> java_split_at("")
    ['']
    """
    parts = text.split("@")
    if len(parts) == 1:  # no separator: Java returns the input itself, even when it is empty
        return parts
    while parts and not parts[-1]:
        parts.pop()
    return parts


class AllocateByMachineRoom(AllocationStrategy):
    """``MACHINE_ROOM`` (RocketMQ's ``AllocateMessageQueueByMachineRoom``).

    Only queues of brokers named ``room@broker`` (exactly two parts after Java's
    ``split("@")``) whose room is in ``rooms`` are shared out; the rest go to nobody. Among the
    kept queues, consumer *i* of *n* takes the block ``[i*k, i*k + k)`` with ``k = kept // n``,
    plus the single queue ``i + k*n`` if ``i < kept % n``: so the remainder is dealt from the
    end of the list, one each to the first consumers, and blocks are not contiguous.

    >>> qs = [MessageQueue("T", "room1@broker-a" if i < 5 else "room2@broker-b", i) for i in range(10)]
    >>> s = AllocateByMachineRoom({"room1"})
    >>> [[q.queue_id for q in s.allocate("g", c, qs, ["c0", "c1"])] for c in ("c0", "c1")]
    [[0, 1, 4], [2, 3]]
    """

    __slots__ = ("_rooms",)

    def __init__(self, rooms: Iterable[str]) -> None:
        self._rooms: frozenset[str] = frozenset(rooms)

    @property
    def name(self) -> str:
        return "MACHINE_ROOM"

    @property
    def rooms(self) -> frozenset[str]:
        """The machine rooms this group consumes from (RocketMQ's ``consumeridcs``)."""
        return self._rooms

    def _eligible(self, mq_all: Sequence[MessageQueue]) -> list[MessageQueue]:
        rooms = self._rooms
        kept = []
        for mq in mq_all:
            parts = java_split_at(mq.broker_name)
            if len(parts) == 2 and parts[0] in rooms:
                kept.append(mq)
        return kept

    @staticmethod
    def _share(eligible: list[MessageQueue], n_cid: int, index: int) -> list[MessageQueue]:
        per, rem = divmod(len(eligible), n_cid)
        share = eligible[per * index : per * index + per]
        if rem > index:
            share.append(eligible[index + per * n_cid])
        return share

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not check_arguments(consumer_group, current_cid, mq_all, cid_all):
            return []
        return self._share(self._eligible(mq_all), len(cid_all), list(cid_all).index(current_cid))

    def allocate_all(
        self, consumer_group: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> dict[str, list[MessageQueue]]:
        if not check_arguments_all(mq_all, cid_all):
            return {}
        eligible = self._eligible(mq_all)
        n_cid = len(cid_all)
        return {cid: self._share(eligible, n_cid, i) for cid, i in first_indexes(cid_all).items()}


@runtime_checkable
class MachineRoomResolver(Protocol):
    """Tells which machine room a broker (by its queue) and a consumer (by its client id) are in.

    The counterpart of RocketMQ's ``AllocateMachineRoomNearby.MachineRoomResolver``. An empty
    answer is an error, as in RocketMQ.
    """

    def broker_room(self, mq: MessageQueue) -> str:
        """The room of the broker serving ``mq``."""
        ...

    def consumer_room(self, client_id: str) -> str:
        """The room of the consumer with ``client_id``."""
        ...


class AtSignRoomResolver:
    """The default resolver: the room is the text before the first ``@``, or the whole string.

    A broker's room comes from its broker name (``room1@broker-a`` → ``room1``), a consumer's
    from its client id. Note that RocketMQ client ids look like ``127.0.0.1@12345#8173648``
    (IP ``@`` instance name), so with plain ids this resolver puts each consumer host in a room
    of its own named by its IP. Deployments that encode rooms use ``room@...`` instance naming
    or pass a resolver of their own.

    >>> r = AtSignRoomResolver()
    >>> r.broker_room(MessageQueue("T", "hz@broker-a", 0))
    'hz'
    >>> r.consumer_room("10.0.0.7@4242#1"), r.consumer_room("c1")
    ('10.0.0.7', 'c1')
    """

    __slots__ = ()

    def broker_room(self, mq: MessageQueue) -> str:
        return mq.broker_name.partition("@")[0]

    def consumer_room(self, client_id: str) -> str:
        return client_id.partition("@")[0]

    def __repr__(self) -> str:
        return "AtSignRoomResolver()"


class AllocateMachineRoomNearby(AllocationStrategy):
    """``MACHINE_ROOM_NEARBY`` (RocketMQ's ``AllocateMachineRoomNearby``): prefer your own room.

    Wraps another strategy. A consumer first takes, by the inner strategy, its share of the
    queues in its own room among the consumers of that room; then, for every room that has
    queues but no consumer at all (in room-name order, as RocketMQ's ``TreeMap`` iterates), its
    share of that room's queues among *all* consumers. ``name`` is ``"MACHINE_ROOM_NEARBY-"``
    followed by the inner strategy's name, as RocketMQ reports it.

    >>> from rocketq.allocate.average import AllocateAveragely
    >>> qs = [MessageQueue("T", f"{room}@broker", i) for room in ("r1", "r2", "r3") for i in range(2)]
    >>> s = AllocateMachineRoomNearby(AllocateAveragely())
    >>> cids = ["r1@a", "r1@b", "r2@c"]
    >>> [[q.short for q in s.allocate("g", c, qs, cids)] for c in cids]
    [['r1@broker:0', 'r3@broker:0'], ['r1@broker:1', 'r3@broker:1'], ['r2@broker:0', 'r2@broker:1']]
    """

    __slots__ = ("_inner", "_resolver")

    def __init__(self, inner: AllocationStrategy, resolver: MachineRoomResolver | None = None) -> None:
        self._inner = inner
        self._resolver: MachineRoomResolver = resolver if resolver is not None else AtSignRoomResolver()

    @property
    def name(self) -> str:
        return f"MACHINE_ROOM_NEARBY-{self._inner.name}"

    @property
    def inner(self) -> AllocationStrategy:
        """The strategy that shares out each room's queues."""
        return self._inner

    @property
    def resolver(self) -> MachineRoomResolver:
        """The resolver that places brokers and consumers in rooms."""
        return self._resolver

    def _group(
        self, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> tuple[dict[str, list[MessageQueue]], dict[str, list[str]]]:
        resolver = self._resolver
        room_queues: dict[str, list[MessageQueue]] = {}
        for mq in mq_all:
            room = resolver.broker_room(mq)
            if not room:
                raise ValueError(f"Machine room is null for mq {mq}")
            room_queues.setdefault(room, []).append(mq)
        room_consumers: dict[str, list[str]] = {}
        for cid in cid_all:
            room = resolver.consumer_room(cid)
            if not room:
                raise ValueError(f"Machine room is null for consumer id {cid}")
            room_consumers.setdefault(room, []).append(cid)
        return room_queues, room_consumers

    def allocate(
        self, consumer_group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not check_arguments(consumer_group, current_cid, mq_all, cid_all):
            return []
        room_queues, room_consumers = self._group(mq_all, cid_all)
        my_room = self._resolver.consumer_room(current_cid)
        result: list[MessageQueue] = []
        mine = room_queues.pop(my_room, None)
        if mine:
            result += self._inner.allocate(consumer_group, current_cid, mine, room_consumers[my_room])
        for room in java_sorted(room_queues):
            if room not in room_consumers:
                result += self._inner.allocate(consumer_group, current_cid, room_queues[room], cid_all)
        return result

    def allocate_all(
        self, consumer_group: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> dict[str, list[MessageQueue]]:
        if not check_arguments_all(mq_all, cid_all, empty_ids=False):
            return {}
        room_queues, room_consumers = self._group(mq_all, cid_all)  # may fail, as the first call would
        reject_empty_ids(cid_all)
        result: dict[str, list[MessageQueue]] = {cid: [] for cid in first_indexes(cid_all)}
        inner = self._inner
        for room, consumers in room_consumers.items():
            queues = room_queues.get(room)
            if queues:
                for cid, share in inner.allocate_all(consumer_group, queues, consumers).items():
                    result[cid] += share
        for room in java_sorted(room_queues):
            if room not in room_consumers:
                for cid, share in inner.allocate_all(consumer_group, room_queues[room], cid_all).items():
                    result[cid] += share
        return result
