"""Queue allocation: which consumer of a group reads which queue of a topic.

RocketMQ's consumers share a topic's queues without a coordinator: every consumer fetches the
topic's queues and the group's client ids, sorts both, and runs the same *strategy* to compute
its own share. This package holds the six strategies RocketMQ ships, each returning exactly the
list its Java class returns (``AVG``, ``AVG_BY_CIRCLE``, ``CONFIG``, ``MACHINE_ROOM``,
``MACHINE_ROOM_NEARBY``, ``CONSISTENT_HASH``), one that RocketMQ lacks (``STICKY``), group-wide
balancing across topics (:func:`plan_group` with ``balance="group"``), and whole-group views
that show what a strategy does (:func:`plan`, :func:`moves`, :func:`check_duplicate_client_ids`).

>>> qs = [MessageQueue("TopicTest", "broker-a", i) for i in range(16)]
>>> p = plan(get_strategy("AVG"), "group", qs, ["10.0.0.3@c", "10.0.0.1@a", "10.0.0.2@b"])
>>> {cid: [q.queue_id for q in share][::4] for cid, share in p.items()}
{'10.0.0.1@a': [0, 4], '10.0.0.2@b': [6, 10], '10.0.0.3@c': [11, 15]}
"""

from __future__ import annotations

from rocketq.allocate.average import AllocateAveragely, AllocateAveragelyByCircle
from rocketq.allocate.base import AllocationStrategy, java_sorted, sorted_queues
from rocketq.allocate.config import AllocateByConfig
from rocketq.allocate.consistent_hash import (
    DEFAULT_VIRTUAL_NODES,
    AllocateConsistentHash,
    HashFunction,
    HashRing,
    md5_hash,
)
from rocketq.allocate.machine_room import (
    AllocateByMachineRoom,
    AllocateMachineRoomNearby,
    AtSignRoomResolver,
    MachineRoomResolver,
)
from rocketq.allocate.plan import (
    Balance,
    DuplicateClientIdReport,
    GroupPlan,
    Plan,
    QueueMove,
    allocate_group,
    check_duplicate_client_ids,
    moves,
    plan,
    plan_group,
)
from rocketq.allocate.registry import ROCKETMQ_STRATEGIES, get_strategy, register_strategy, strategy_names
from rocketq.allocate.sticky import AllocateSticky, sticky_assignment
from rocketq.models import MessageQueue

__all__ = [
    "DEFAULT_VIRTUAL_NODES",
    "ROCKETMQ_STRATEGIES",
    "AllocateAveragely",
    "AllocateAveragelyByCircle",
    "AllocateByConfig",
    "AllocateByMachineRoom",
    "AllocateConsistentHash",
    "AllocateMachineRoomNearby",
    "AllocateSticky",
    "AllocationStrategy",
    "AtSignRoomResolver",
    "Balance",
    "DuplicateClientIdReport",
    "GroupPlan",
    "HashFunction",
    "HashRing",
    "MachineRoomResolver",
    "MessageQueue",
    "Plan",
    "QueueMove",
    "allocate_group",
    "check_duplicate_client_ids",
    "get_strategy",
    "java_sorted",
    "md5_hash",
    "moves",
    "plan",
    "plan_group",
    "register_strategy",
    "sorted_queues",
    "sticky_assignment",
    "strategy_names",
]
