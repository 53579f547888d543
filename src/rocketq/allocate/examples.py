"""Synthetic groups for trying a strategy without a server: broker names, client ids, a member change.

``rocketq allocate`` and the dashboard's planner both build their example groups here, so the
command line and the browser show the same tables for the same inputs:

>>> broker_names(3, 0), broker_names(2, 2)
(['broker-a', 'broker-b', 'broker-c'], ['room1@broker-a', 'room2@broker-b'])
>>> client_ids(3, 2, 0, duplicates=1)
['127.0.0.1@consumer-01', '127.0.0.1@consumer-02', '127.0.0.1@consumer-01']
>>> from rocketq.allocate import get_strategy
>>> topics = {"T": [MessageQueue("T", "broker-a", i) for i in range(6)]}
>>> change = plan_change(get_strategy("AVG"), "g", topics, client_ids(2, 2, 0), client_ids(3, 2, 0))
>>> [(m.queue.queue_id, m.before[0][-2:], m.after[0][-2:]) for m in change.moves]
[(2, '01', '02'), (4, '02', '03'), (5, '02', '03')]
>>> change.sticky_moves
2
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rocketq.allocate.base import AllocationStrategy
from rocketq.allocate.plan import Balance, GroupPlan, QueueMove, moves, plan_group
from rocketq.allocate.sticky import AllocateSticky
from rocketq.models import MessageQueue

__all__ = ["PlannedChange", "broker_names", "client_ids", "plan_change"]


def broker_names(count: int, rooms: int) -> list[str]:
    """``broker-a`` ... ``broker-z``, ``broker-aa`` ...; ``roomK@`` prefixed when rooms are used."""
    names = []
    for i in range(count):
        suffix = chr(ord("a") + i) if i < 26 else chr(ord("a") + i // 26 - 1) + chr(ord("a") + i % 26)
        name = f"broker-{suffix}"
        names.append(f"room{i % rooms + 1}@{name}" if rooms else name)
    return names


def client_ids(count: int, width: int, rooms: int, duplicates: int = 0) -> list[str]:
    """Consumer client ids, numbered from 1 and zero-padded to ``width`` digits (so Java's string
    order is numeric order); the last ``duplicates`` reuse the first one's id."""
    ids = []
    for i in range(count):
        instance = f"consumer-{i + 1:0{width}d}"
        ids.append(f"room{i % rooms + 1}@{instance}" if rooms else f"127.0.0.1@{instance}")
    if duplicates:
        ids[-duplicates:] = [ids[0]] * duplicates
    return ids


@dataclass(frozen=True, slots=True)
class PlannedChange:
    """A group planned before and after a member change: ``after`` (``before`` is ``None`` when
    there is no "before"), the queues that change owner, and how many STICKY would move instead
    (``None`` when the strategy is STICKY itself or there is no "before")."""

    after: GroupPlan
    before: GroupPlan | None
    moves: list[QueueMove]
    sticky_moves: int | None


def plan_change(
    strategy: AllocationStrategy,
    group: str,
    topic_queues: Mapping[str, Sequence[MessageQueue]],
    before_ids: Sequence[str] | None,
    after_ids: Sequence[str],
    *,
    balance: Balance = "topic",
) -> PlannedChange:
    """Plan the group with ``after_ids`` (and ``before_ids`` when given, for the moves), as every
    consumer computes it. A STICKY strategy starts from the "before" plan, as it would live."""
    if before_ids is None:
        return PlannedChange(
            plan_group(strategy, group, topic_queues, after_ids, balance=balance), None, [], None
        )
    before = plan_group(strategy, group, topic_queues, before_ids, balance=balance)
    sticky_moves: int | None = None
    if isinstance(strategy, AllocateSticky):
        strategy = AllocateSticky(before)
    else:
        sticky = plan_group(AllocateSticky(before), group, topic_queues, after_ids, balance=balance)
        sticky_moves = len(moves(before, sticky))
    after = plan_group(strategy, group, topic_queues, after_ids, balance=balance)
    return PlannedChange(after, before, moves(before, after), sticky_moves)
