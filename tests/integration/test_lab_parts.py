"""The lab's pure parts, without servers: the rebalance-cost arithmetic, queue ranges, the
allocation sentences, and the strategies the worker builds from its options."""

from __future__ import annotations

from rocketq.allocate import get_strategy, plan
from rocketq.lab.common import explain_allocation
from rocketq.lab.harness import Received
from rocketq.lab.narrate import queue_ranges
from rocketq.lab.scaling import change_costs
from rocketq.lab.worker import InstanceRoomResolver, build_strategy, worker_args
from rocketq.models import MessageQueue

T = "T"


def q(i: int, broker: str = "broker-a") -> MessageQueue:
    return MessageQueue(T, broker, i)


def rec(worker: str, ts: int, queue: int, body: str) -> Received:
    return Received(worker, f"id-{worker}", ts, q(queue), 0, body, 0)


def test_change_costs_pause_duplicates_backlog() -> None:
    # two queues; c1 owns both, then c2 joins at t=1000 and takes queue 1 (settled at 1100)
    plans = [{"id-c1": [q(0), q(1)]}, {"id-c1": [q(0)], "id-c2": [q(1)]}]
    marks = [("start 1", 0, 10), ("1 -> 2", 1000, 1100)]
    sent = {f"m{i}": (q(i % 2), 100 * i) for i in range(20)}  # m1, m3, ... on queue 1
    receipts = [rec("c1", 100 * i + 5, i % 2, f"m{i}") for i in range(11)]  # c1 up to m10 (t=1005)
    # c2 starts queue 1 from an older commit: m9 again (a duplicate), then m11.. after a pause
    receipts += [rec("c2", 1400, 1, "m9"), *(rec("c2", 100 * i + 5, 1, f"m{i}") for i in range(11, 20, 2))]
    receipts += [rec("c1", 100 * i + 5, 0, f"m{i}") for i in range(12, 20, 2)]
    receipts.sort(key=lambda r: r.ts_ms)
    names = {"id-c1": "c1", "id-c2": "c2"}
    drops = {("c1", q(1)): [1050]}
    (cost,) = change_costs(receipts, sent, plans, marks, names, drops)
    assert cost.label == "1 -> 2"
    assert [(h.queue, h.old_owner, h.new_owner) for h in cost.handoffs] == [(q(1), "c1", "c2")]
    # c1 last consumed queue 1 at 905 (m9); c2's first consumption there is 1105 (m11)
    (handoff,) = cost.handoffs
    assert handoff.pause_ms == 1105 - 905
    assert handoff.backlog == 1  # m11, sent at 1100, waited out the pause
    assert cost.duplicates == 1
    assert cost.longest_pause_ms == cost.median_pause_ms == 200
    assert cost.peak_backlog >= 1


def test_change_costs_uses_the_drop_when_the_old_owner_consumed_nothing_there() -> None:
    plans = [{"id-c1": [q(0), q(1)]}, {"id-c1": [q(0)], "id-c2": [q(1)]}]
    marks = [("start 1", 0, 10), ("1 -> 2", 1000, 1100)]
    sent = {"a": (q(1), 1200)}
    receipts = [rec("c2", 1250, 1, "a")]
    (cost,) = change_costs(
        receipts, sent, plans, marks, {"id-c1": "c1", "id-c2": "c2"}, {("c1", q(1)): [1040]}
    )
    assert cost.handoffs[0].pause_ms == 1250 - 1040
    assert cost.duplicates == 0


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
