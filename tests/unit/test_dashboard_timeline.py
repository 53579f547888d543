"""The dashboard's group timeline: changes, moves, stretches and costs from observations, with the
time passed in (no clock, no server)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from rocketq.dashboard.timeline import GroupTimeline, RebalanceNote
from rocketq.models import MessageQueue

Q = [MessageQueue("T", "broker-a", i) for i in range(4)]


def owners(**share: Sequence[int]) -> Mapping[str, tuple[MessageQueue, ...]]:
    return {cid: tuple(Q[i] for i in ids) for cid, ids in share.items()}


def test_first_look_is_no_change_and_growing_the_group_moves_queues() -> None:
    t = GroupTimeline("g")
    assert t.observe(1_000, owners(c1=[0, 1, 2, 3]), dict.fromkeys(Q, 0)) is None
    assert t.observe(2_000, owners(c1=[0, 1, 2, 3]), dict.fromkeys(Q, 5)) is None  # lag alone is no change
    change = t.observe(3_000, owners(c1=[0, 1], c2=[2, 3]), dict.fromkeys(Q, 7))
    assert change is not None
    assert (change.label, change.joined, change.left) == ("1 -> 2", ("c2",), ())
    assert [(m.queue.queue_id, m.before, m.after) for m in change.moves] == [(2, "c1", "c2"), (3, "c1", "c2")]
    assert (change.lag_before, change.peak_lag_after) == (20, 28)
    # a later poll within the cost window raises the change's peak lag
    t.observe(4_000, owners(c1=[0, 1], c2=[2, 3]), dict.fromkeys(Q, 10))
    assert change.peak_lag_after == 40
    assert (t.rebalances, t.queues_moved, dict(t.moves_by_topic)) == (1, 2, {"T": 2})
    assert t.last_change_ms == 3_000


def test_a_member_leaving_hands_its_queues_back_and_stretches_show_who_owned_what() -> None:
    t = GroupTimeline("g")
    t.observe(0, owners(c1=[0, 1], c2=[2, 3]), {})
    change = t.observe(10_000, owners(c1=[0, 1, 2, 3]), {})
    assert change is not None
    assert change.left == ("c2",)
    assert len(change.moves) == 2
    stretches = t.stretches(20_000)
    assert [(s.owner, s.from_ms, s.to_ms) for s in stretches[Q[3]]] == [
        ("c2", 0, 10_000),
        ("c1", 10_000, None),
    ]
    assert [(s.owner, s.to_ms) for s in stretches[Q[0]]] == [("c1", None)]


def test_a_queue_nobody_owned_for_a_while_still_counts_as_moved_to_its_new_owner() -> None:
    t = GroupTimeline("g")
    t.observe(0, owners(c1=[0, 1]), {})
    first = t.observe(1_000, owners(c1=[0]), {})  # queue 1 released, nobody took it yet
    assert first is not None
    assert first.moves == ()
    second = t.observe(2_000, owners(c1=[0], c2=[1]), {})
    assert second is not None
    assert [(m.before, m.after) for m in second.moves] == [("c1", "c2")]
    # and back to the same owner it had last is no move
    t2 = GroupTimeline("g")
    t2.observe(0, owners(c1=[0]), {})
    t2.observe(1_000, owners(c1=[]), {}, members=["c1"])
    back = t2.observe(2_000, owners(c1=[0]), {})
    assert back is not None
    assert back.moves == ()


def test_history_expires_and_counters_never_go_down() -> None:
    t = GroupTimeline("g", history_ms=10_000)
    t.observe(0, owners(c1=[0, 1]), {Q[0]: 1})
    t.observe(1_000, owners(c1=[0], c2=[1]), {Q[0]: 1})
    t.observe(30_000, owners(c1=[0], c2=[1]), {Q[0]: 1})
    assert list(t.changes) == []
    assert [p.at_ms for p in t.lag] == [30_000]
    assert (t.rebalances, t.queues_moved) == (1, 1)
    # the open stretch is clipped to the window, the closed one is gone
    assert [(s.owner, s.from_ms, s.to_ms) for s in t.stretches(30_000)[Q[1]]] == [("c2", 20_000, None)]


def test_rebalance_records_explain_the_change_they_belong_to() -> None:
    record = {
        "v": 1, "seq": 2, "trigger": "notify", "group": "g", "client_id": "c1", "topic": "T",
        "added": [], "removed": [{"topic": "T", "broker": "broker-a", "queue_id": 1}],
        "start_ms": 990, "end_ms": 998, "duration_ms": 8,
    }  # fmt: skip
    note = RebalanceNote.from_dict(json.loads(json.dumps(record)))
    assert (note.client_id, note.trigger, note.duration_ms, note.removed) == ("c1", "notify", 8, (Q[1],))
    t = GroupTimeline("g")
    t.observe(0, owners(c1=[0, 1]), {})
    change = t.observe(1_000, owners(c1=[0], c2=[1]), {})
    t.record(note)
    assert change is not None
    assert (change.rebalance_ms, change.to_dict()["triggers"]) == (8, ["notify"])
    # a record that came before the poll saw the change is attached when the change is made
    t2 = GroupTimeline("g")
    t2.observe(0, owners(c1=[0, 1]), {})
    t2.observe(600, owners(c1=[0, 1]), {})
    t2.record(note)
    t2.record(RebalanceNote.from_dict({**record, "end_ms": 1_100, "duration_ms": 50, "changed": False}))
    later = t2.observe(1_200, owners(c1=[0], c2=[1]), {})
    assert later is not None
    assert later.rebalance_ms == 8  # the unchanged record explains nothing
    # a record from before the previous poll belongs to an earlier change, not this one
    t2.record(RebalanceNote.from_dict({**record, "end_ms": 500, "duration_ms": 99}))
    assert later.rebalance_ms == 8
