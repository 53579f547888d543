"""Whole-group views of an allocation: who owns what, what nobody owns, what moves.

:func:`plan` runs a strategy for every consumer of a group, after sorting the inputs exactly as
RocketMQ's ``RebalanceImpl.rebalanceByTopic`` does, and reports the result as a dict with
diagnostics. :func:`plan_group` does it for a group subscribed to several topics and can
balance the group's total load across them (not something RocketMQ does).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from rocketq.allocate.average import AllocateAveragely
from rocketq.allocate.base import AllocationStrategy, java_sorted, sorted_queues
from rocketq.errors import ConfigError
from rocketq.models import MessageQueue

__all__ = [
    "Balance",
    "DuplicateClientIdReport",
    "GroupPlan",
    "Plan",
    "QueueMove",
    "allocate_group",
    "check_duplicate_client_ids",
    "moves",
    "plan",
    "plan_group",
]

Balance = Literal["topic", "group"]


class _Ownership(dict[str, list[MessageQueue]]):
    """A client id → queues mapping that knows the inputs it came from and who owns each queue.

    Keys are the distinct client ids in Java string order. ``consumers`` keeps duplicates,
    because two processes with one id both take that id's queues.
    """

    __slots__ = ("_owners", "consumers", "group", "queues", "strategy")

    def __init__(
        self,
        assignment: Mapping[str, list[MessageQueue]],
        *,
        strategy: str,
        group: str,
        queues: Sequence[MessageQueue],
        consumers: Sequence[str],
    ) -> None:
        super().__init__(assignment)
        self.strategy = strategy
        self.group = group
        self.queues: tuple[MessageQueue, ...] = tuple(queues)
        self.consumers: tuple[str, ...] = tuple(consumers)
        self._owners: dict[MessageQueue, list[str]] | None = None  # computed when first asked

    def _owner_table(self) -> dict[MessageQueue, list[str]]:
        if self._owners is None:
            multiplicity = Counter(self.consumers)
            owners: dict[MessageQueue, list[str]] = {mq: [] for mq in self.queues}
            for cid, share in self.items():
                times = multiplicity.get(cid, 1)
                for mq in dict.fromkeys(share):  # a consumer holds a queue once (RocketMQ keeps a set)
                    holders = owners.get(mq)
                    if holders is None:
                        owners[mq] = holders = []
                    holders += [cid] * times
            self._owners = owners
        return self._owners

    @property
    def owners(self) -> dict[MessageQueue, tuple[str, ...]]:
        """Every queue (offered ones first) → the processes taking it, one entry per process."""
        return {mq: tuple(cids) for mq, cids in self._owner_table().items()}

    @property
    def unowned(self) -> tuple[MessageQueue, ...]:
        """Offered queues nobody consumes: their messages pile up."""
        return tuple(mq for mq, cids in self._owner_table().items() if not cids)

    @property
    def shared(self) -> dict[MessageQueue, tuple[str, ...]]:
        """Queues taken by more than one process (duplicated ids count twice): consumed twice."""
        return {mq: tuple(cids) for mq, cids in self._owner_table().items() if len(cids) > 1}

    @property
    def duplicate_ids(self) -> dict[str, int]:
        """Client ids used by more than one consumer, with how many use each."""
        return {cid: n for cid, n in Counter(self.consumers).items() if n > 1}

    @property
    def counts(self) -> dict[str, int]:
        """How many distinct queues each client id takes."""
        return {cid: len(dict.fromkeys(share)) for cid, share in self.items()}

    @property
    def idle(self) -> tuple[str, ...]:
        """Client ids that take no queue."""
        return tuple(cid for cid, share in self.items() if not share)

    @property
    def spread(self) -> int:
        """Largest share minus smallest share (0 for an empty group)."""
        counts = self.counts.values()
        return max(counts) - min(counts) if counts else 0

    @property
    def ok(self) -> bool:
        """True when every offered queue has exactly one consuming process."""
        return all(len(cids) == 1 for cids in self._owner_table().values())


class Plan(_Ownership):
    """One topic's allocation for a whole group: ``dict[client id, list[MessageQueue]]`` plus
    diagnostics (``unowned``, ``shared``, ``idle``, ``counts``, ``spread``, ``duplicate_ids``).

    ``queues`` and ``consumers`` are the sorted inputs the strategy was given. The ownership
    diagnostics are computed once, on first use: treat a plan as read-only.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Plan({self.strategy}, group={self.group!r}, {dict(self)!r})"


def plan(
    strategy: AllocationStrategy, group: str, mq_all: Iterable[MessageQueue], cid_all: Iterable[str]
) -> Plan:
    """Every consumer's share, computed as each RocketMQ consumer computes its own.

    Like ``RebalanceImpl.rebalanceByTopic``: the queues are de-duplicated (RocketMQ holds them in
    a set) and sorted by ``MessageQueue`` order, the client ids sorted as Java strings but *not*
    de-duplicated, then the strategy runs for each distinct id. With no queues or no consumers
    nobody owns anything (RocketMQ's strategies would reject the call; its rebalance logs that and
    keeps the old assignment). Other strategy errors propagate.

    >>> from rocketq.allocate import get_strategy
    >>> qs = [MessageQueue("T", "broker-a", i) for i in range(12)]
    >>> p = plan(get_strategy("AVG"), "g", qs, [f"c{i}" for i in range(5)])
    >>> list(p.counts.values()), p.spread, p.unowned
    ([3, 3, 2, 2, 2], 1, ())
    >>> p = plan(get_strategy("AVG"), "g", qs, ["c1", "c2", "c2"])
    >>> p.duplicate_ids, [q.queue_id for q in p.unowned]
    ({'c2': 2}, [8, 9, 10, 11])
    """
    queues = sorted_queues(dict.fromkeys(mq_all))
    consumers = java_sorted(cid_all)
    return _plan_sorted(strategy, group, queues, consumers, consumers)


def _plan_sorted(
    strategy: AllocationStrategy,
    group: str,
    queues: list[MessageQueue],
    consumers: list[str],
    given: list[str],
) -> Plan:
    """``plan`` on already sorted inputs; the strategy sees ``given`` (a rotation of ``consumers``)."""
    if queues and given:
        raw = strategy.allocate_all(group, queues, given)
        assignment = {cid: raw[cid] for cid in dict.fromkeys(consumers)}
    else:
        assignment = {cid: [] for cid in dict.fromkeys(consumers)}
    return Plan(assignment, strategy=strategy.name, group=group, queues=queues, consumers=consumers)


def _rotation(n_before: int, n_consumers: int) -> int:
    return n_before % n_consumers if n_consumers else 0


def _group_inputs(
    topic_queues: Mapping[str, Iterable[MessageQueue]], cid_all: Iterable[str], balance: str
) -> tuple[list[tuple[str, list[MessageQueue], int]], list[str]]:
    """Topics in Java order with their sorted queues and the consumer-list rotation each gets."""
    if balance not in ("topic", "group"):
        raise ConfigError(f"balance must be 'topic' or 'group', not {balance!r}")
    consumers = java_sorted(cid_all)
    topics = []
    before = 0
    for topic in java_sorted(topic_queues):
        queues = sorted_queues(dict.fromkeys(topic_queues[topic]))
        shift = _rotation(before, len(consumers)) if balance == "group" else 0
        topics.append((topic, queues, shift))
        before += len(queues)
    return topics, consumers


def allocate_group(
    strategy: AllocationStrategy,
    group: str,
    current_cid: str,
    topic_queues: Mapping[str, Iterable[MessageQueue]],
    cid_all: Iterable[str],
    *,
    balance: Balance = "topic",
) -> dict[str, list[MessageQueue]]:
    """One consumer's queues in each topic the group subscribes: what a client computes.

    ``balance="topic"`` is RocketMQ: each topic is shared out on its own, over the sorted lists,
    so with ``AVG`` the first consumers get the extra queue of *every* topic. ``balance="group"``
    (not in RocketMQ) takes the topics in Java string order and, for each, rotates the sorted
    client id list left by the number of queues in the topics before it (modulo the group size):
    where one topic's extra queues stop, the next topic's start. With ``AVG`` or
    ``AVG_BY_CIRCLE`` every topic stays balanced on its own *and* each consumer's total differs
    from any other's by at most one. It depends only on (topics' queues, client ids), so every
    consumer computes its share alone. Strategies that do not depend on list order
    (``CONFIG``, ``STICKY``, and ``CONSISTENT_HASH`` barring ring-point collisions) give the same
    result either way, so group balance does not apply to them.
    """
    topics, consumers = _group_inputs(topic_queues, cid_all, balance)
    result: dict[str, list[MessageQueue]] = {}
    for topic, queues, shift in topics:
        given = consumers[shift:] + consumers[:shift]
        result[topic] = strategy.allocate(group, current_cid, queues, given) if queues else []
    return result


class GroupPlan(_Ownership):
    """A group's allocation over all its topics: client id → all its queues (topics in Java order).

    ``topics`` holds the per-topic :class:`Plan`; the diagnostics cover all topics together.
    """

    __slots__ = ("balance", "topics")

    def __init__(self, topics: Mapping[str, Plan], *, strategy: str, group: str, balance: Balance) -> None:
        consumers = next(iter(topics.values())).consumers if topics else ()
        merged: dict[str, list[MessageQueue]] = {cid: [] for cid in dict.fromkeys(consumers)}
        queues: list[MessageQueue] = []
        for p in topics.values():
            queues += p.queues
            for cid, share in p.items():
                merged[cid] += share
        super().__init__(merged, strategy=strategy, group=group, queues=queues, consumers=consumers)
        self.topics: dict[str, Plan] = dict(topics)
        self.balance: Balance = balance

    def __repr__(self) -> str:
        return f"GroupPlan({self.strategy}, group={self.group!r}, balance={self.balance!r}, {dict(self)!r})"


def plan_group(
    strategy: AllocationStrategy,
    group: str,
    topic_queues: Mapping[str, Iterable[MessageQueue]],
    cid_all: Iterable[str],
    *,
    balance: Balance = "topic",
) -> GroupPlan:
    """Every consumer's share of every topic; see :func:`allocate_group` for ``balance``.

    The seed's case: four consumers, two topics of two queues each. Per topic (RocketMQ), ``AVG``
    gives both topics' queues to the first two consumers; balanced over the group, each gets one.

    >>> from rocketq.allocate import get_strategy
    >>> topics = {t: [MessageQueue(t, "broker-a", i) for i in range(2)] for t in ("TopicS", "TopicP")}
    >>> cids = ["c1", "c2", "c3", "c4"]
    >>> list(plan_group(get_strategy("AVG"), "g", topics, cids).counts.values())
    [2, 2, 0, 0]
    >>> list(plan_group(get_strategy("AVG"), "g", topics, cids, balance="group").counts.values())
    [1, 1, 1, 1]
    """
    topics, consumers = _group_inputs(topic_queues, cid_all, balance)
    plans = {
        topic: _plan_sorted(strategy, group, queues, consumers, consumers[shift:] + consumers[:shift])
        for topic, queues, shift in topics
    }
    return GroupPlan(plans, strategy=strategy.name, group=group, balance=balance)


@dataclass(frozen=True, slots=True)
class QueueMove:
    """A queue whose consuming client ids differ between two assignments."""

    queue: MessageQueue
    before: tuple[str, ...]
    after: tuple[str, ...]


def moves(
    before: Mapping[str, Sequence[MessageQueue]], after: Mapping[str, Sequence[MessageQueue]]
) -> list[QueueMove]:
    """The queues whose owners change from ``before`` to ``after``, in ``MessageQueue`` order.

    Owners are distinct client ids in Java order; a queue absent on one side has no owner there.

    >>> q = [MessageQueue("T", "broker-a", i) for i in range(3)]
    >>> changes = moves({"a": q[:2], "b": q[2:]}, {"a": q[:1], "b": q[1:]})
    >>> [(m.queue.queue_id, m.before, m.after) for m in changes]
    [(1, ('a',), ('b',))]
    """

    def owners(assignment: Mapping[str, Sequence[MessageQueue]]) -> dict[MessageQueue, list[str]]:
        table: dict[MessageQueue, list[str]] = {}
        for cid in java_sorted(assignment):
            for mq in dict.fromkeys(assignment[cid]):
                table.setdefault(mq, []).append(cid)
        return table

    old, new = owners(before), owners(after)
    result = []
    for mq in sorted_queues(old.keys() | new.keys()):
        was, now = tuple(old.get(mq, ())), tuple(new.get(mq, ()))
        if was != now:
            result.append(QueueMove(mq, was, now))
    return result


@dataclass(frozen=True, slots=True)
class DuplicateClientIdReport:
    """What duplicated client ids do to a group: see :func:`check_duplicate_client_ids`."""

    duplicates: Mapping[str, int]
    """Each client id used by more than one consumer → how many use it."""
    unconsumed: tuple[MessageQueue, ...]
    """Queues no consumer takes (their messages pile up)."""
    consumed_twice: tuple[MessageQueue, ...]
    """Queues more than one process takes (their messages are consumed more than once)."""

    @property
    def ok(self) -> bool:
        """No duplicated id, nothing left unconsumed, nothing consumed twice."""
        return not (self.duplicates or self.unconsumed or self.consumed_twice)


def check_duplicate_client_ids(
    cid_all: Iterable[str],
    mq_all: Iterable[MessageQueue] = (),
    *,
    strategy: AllocationStrategy | None = None,
    group: str = "",
) -> DuplicateClientIdReport:
    """Find duplicated client ids and, given the queues, the damage under ``strategy`` (``AVG``).

    Two processes with one client id (e.g. two consumers in one JVM or container with the same
    instance name and IP) compute the same index, take the same queues, and leave the queues of
    the index they should have had to nobody.

    >>> qs = [MessageQueue("T", "broker-a", i) for i in range(8)]
    >>> r = check_duplicate_client_ids(["10.0.0.1@1", "10.0.0.1@1"], qs)
    >>> r.duplicates, [q.queue_id for q in r.unconsumed], [q.queue_id for q in r.consumed_twice]
    ({'10.0.0.1@1': 2}, [4, 5, 6, 7], [0, 1, 2, 3])
    """
    consumers = list(cid_all)
    duplicates = {cid: n for cid, n in Counter(consumers).items() if n > 1}
    queues = list(mq_all)
    if not queues:
        return DuplicateClientIdReport(duplicates, (), ())
    if strategy is None:
        strategy = AllocateAveragely()
    result = plan(strategy, group, queues, consumers)
    return DuplicateClientIdReport(duplicates, result.unowned, tuple(result.shared))
