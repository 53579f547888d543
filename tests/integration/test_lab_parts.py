"""The lab's pure parts, without servers: queue ranges, the allocation sentences, and the
strategies the worker builds from its options (the rebalance-cost arithmetic is
``rocketq.analytics``'s: tests/unit/test_analytics.py)."""

from __future__ import annotations

from rocketq.allocate import get_strategy, plan
from rocketq.lab.common import explain_allocation
from rocketq.lab.narrate import queue_ranges
from rocketq.lab.worker import InstanceRoomResolver, build_strategy, worker_args
from rocketq.models import MessageQueue

T = "T"


def q(i: int, broker: str = "broker-a") -> MessageQueue:
    return MessageQueue(T, broker, i)


def test_queue_ranges() -> None:
    assert queue_ranges([q(i) for i in (0, 1, 2, 5, 7, 8)]) == "[0..2, 5, 7..8]"
    two = [q(0, "room1@broker-a"), q(1, "room1@broker-a"), q(0, "room2@broker-b")]
    assert queue_ranges(two) == "room1@broker-a [0..1] room2@broker-b [0]"
    assert queue_ranges([]) == "[]"


def test_explain_allocation_cites_the_avg_rule() -> None:
    queues = [q(i) for i in range(16)]
    ids = ["127.0.0.1@consumer-2", "127.0.0.1@consumer-1", "127.0.0.1@consumer-3"]
    names = {cid: cid.split("@")[1] for cid in ids}
    text = explain_allocation("AVG", queues, ids, names)
    assert "16 queues / 3 consumers = 5 rem 1" in text
    assert "the first 1 in sorted order get 6" in text
    assert text.index("consumer-1 (") < text.index("consumer-2 (") < text.index("consumer-3 (")
    assert "8 each" in explain_allocation("AVG", queues, ids[:2], names)
    assert "i mod 3" in explain_allocation("AVG_BY_CIRCLE", queues, ids, names)


def test_worker_strategies_from_options() -> None:
    queues = [q(i, "room1@broker-a") for i in range(4)] + [q(i, "room2@broker-b") for i in range(4)]
    ids = ["127.0.0.1@room1-c1", "127.0.0.1@room1-c2", "127.0.0.1@room2-c3"]
    nearby = plan(build_strategy("MACHINE_ROOM_NEARBY", {"inner": "AVG"}), "g", queues, ids)
    assert nearby["127.0.0.1@room2-c3"] == queues[4:]
    assert nearby["127.0.0.1@room1-c1"] + nearby["127.0.0.1@room1-c2"] == queues[:4]
    rooms = plan(build_strategy("MACHINE_ROOM", {"rooms": ["room1"]}), "g", queues, ids)
    assert sorted(x for share in rooms.values() for x in share) == queues[:4]
    config = build_strategy("CONFIG", {"queues": [[T, "room2@broker-b", 3]]})
    assert config.allocate("g", ids[0], queues, ids) == [q(3, "room2@broker-b")]
    assert build_strategy("CONSISTENT_HASH").name == get_strategy("CONSISTENT_HASH").name
    assert InstanceRoomResolver().consumer_room("10.0.0.1@room9-x") == "room9"


def test_worker_args_round_trip() -> None:
    args = worker_args(
        namesrv="127.0.0.1:1", group="g", topics=["A", "B"], instance="c1", strategy="MACHINE_ROOM",
        strategy_options={"rooms": ["r1"]}, balance="group", handoff="clean", trace=True,
    )  # fmt: skip
    assert args[1:4] == ["-m", "rocketq.lab", "worker"]
    assert args.count("--topic") == 2
    assert args[args.index("--strategy-options") + 1] == '{"rooms": ["r1"]}'
    assert "--trace" in args
    assert args[args.index("--handoff") + 1] == "clean"
