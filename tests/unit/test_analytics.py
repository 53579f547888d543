"""The one definition of the rebalance figures (``rocketq.analytics``), on hand-made records.

The scripted scenario is the Spark report's (``tests/spark/test_report.py``): consumer A owns four
queues; B joins at 1000 and takes queues 2 and 3; A gives them up at 1200 after consuming one more
message of queue 2; B restarts queue 2 at that message and queue 3 at the last one A consumed
there - two duplicates, both attributed to A's NOTIFY; a failed delivery and its retry are not
duplicates. The Spark test checks that the report, fed the same facts through real topics, gives
these same numbers.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.analytics import (
    DEFINITIONS,
    Delivery,
    RebalanceEvent,
    Stored,
    analyze,
    backlog_buckets,
    footnote,
    queue_ranges,
)
from rocketq.client.rebalance.log import RebalanceRecord, RebalanceTrigger
from rocketq.models import MessageQueue

T = "T"
A, B = "10.0.0.1@a", "10.0.0.2@b"
Q = [MessageQueue(T, "broker-a", i) for i in range(4)]


def ev(
    client: str, seq: int, trigger: str, at: int, ids: tuple[str, ...], added=(), removed=()
) -> RebalanceEvent:  # type: ignore[no-untyped-def]
    return RebalanceEvent(
        client, seq, trigger, T, ids, tuple(Q[i] for i in added), tuple(Q[i] for i in removed), at,
        changed=bool(added or removed),
    )  # fmt: skip


def scripted() -> tuple[list[Delivery], list[RebalanceEvent], list[Stored]]:
    stored = [Stored(f"m{q}-{o}", Q[q], 10 + q) for q in range(4) for o in range(10)]
    raw = [(A, q, o, 100 + 40 * (q * 5 + o), True) for q in range(4) for o in range(5)]
    raw += [(A, 2, 5, 1100, True), (B, 2, 5, 1300, True)]  # duplicate 1
    raw += [(B, 2, o, 1300 + 10 * (o - 5), True) for o in range(6, 10)]
    raw += [(B, 3, 4, 1400, True)]  # duplicate 2
    raw += [(B, 3, o, 1400 + 10 * (o - 4), True) for o in range(5, 10)]
    raw += [(A, 0, 5, 1500, False), (A, 0, 5, 1600, True)]  # failed, then retried: no duplicate
    raw += [(A, 0, o, 1600 + 10 * (o - 5), True) for o in range(6, 10)]
    raw += [(A, 1, o, 1700 + 10 * (o - 5), True) for o in range(5, 10)]
    deliveries = [
        Delivery(c, f"m{q}-{o}", Q[q], at, ok, 10 + q, f"R{n:03d}") for n, (c, q, o, at, ok) in enumerate(raw)
    ]
    events = [
        ev(A, 1, "start", 0, (A,), added=(0, 1, 2, 3)),
        ev(B, 1, "start", 1000, (A, B), added=(2, 3)),
        ev(A, 2, "notify", 1200, (A, B), removed=(2, 3)),
        ev(A, 3, "periodic", 2500, (A, B)),
    ]
    return deliveries, events, stored


def test_scripted_figures() -> None:
    a = analyze(*scripted())
    f = a.figures
    assert (f.delivered, f.deliveries, f.duplicates, f.attributed) == (40, 43, 2, 2)
    assert (f.not_consumed, f.moves, f.rebalances, f.consumers) == (0, 2, 3, 2)
    # queue 2: A's last delivery began at 1100, B's first at 1300; queue 3: 860 -> 1400
    assert [(m.queue.queue_id, m.from_client, m.to_client, m.pause_ms) for m in a.moves] == [
        (2, A, B, 200), (3, A, B, 540),
    ]  # fmt: skip
    assert {(m.pause_start_kind, m.last_consumed_by, m.trigger, m.removed_ms) for m in a.moves} == {
        ("last consumption", A, "start", 1200)
    }
    assert f.longest_pause_ms == 540
    assert [(c.label, c.moves, c.duplicates) for c in a.costs] == [("start 1", 0, 0), ("1 -> 2", 2, 2)]
    assert a.costs[1].change.joined == (B,)


def test_duplicates_are_attributed_to_the_latest_record_touching_the_queue() -> None:
    a = analyze(*scripted())
    dups = [
        (d.delivery.msg_id, d.delivery.start_ms, d.first_client_id, d.first_start_ms) for d in a.duplicates
    ]
    assert dups == [("m2-5", 1300, A, 1100), ("m3-4", 1400, A, 860)]
    assert {
        (d.rebalance.client_id, d.rebalance.trigger, d.rebalance_kind) for d in a.duplicates if d.rebalance
    } == {(A, "notify", "removed")}
    retried = [v for v in a.verdicts if v.delivery.msg_id == "m0-5"]
    assert [(v.rank, v.duplicate, v.delivery.success) for v in retried] == [
        (1, False, False),
        (2, False, True),
    ]


def test_ownership_stretches() -> None:
    a = analyze(*scripted())
    own = {(s.client_id, s.queue.queue_id): (s.from_ms, s.to_ms, s.removed_by) for s in a.stretches}
    assert own == {
        (A, 0): (0, None, None), (A, 1): (0, None, None),
        (A, 2): (0, 1200, "notify"), (A, 3): (0, 1200, "notify"),
        (B, 2): (1000, None, None), (B, 3): (1000, None, None),
    }  # fmt: skip


def test_backlog_peaks_and_buckets() -> None:
    a = analyze(*scripted())
    # all 40 messages stored by 13; none delivered before 100
    assert a.figures.peak_backlog == 40
    assert a.backlog.at(99) == 40
    assert a.backlog.at(5000) == 0
    rows = backlog_buckets(a, 500)
    assert sum(r[2] for r in rows) == 40  # stored
    assert sum(r[3] for r in rows) == 40  # first delivered
    last = {}
    for q, _, _, _, lag, _ in sorted(rows, key=lambda r: r[1]):
        last[q.queue_id] = lag
    assert last == {0: 0, 1: 0, 2: 0, 3: 0}


def test_since_keeps_later_events_judged_against_the_history() -> None:
    a = analyze(*scripted(), since_ms=1250)
    f = a.figures
    assert (f.delivered, f.deliveries, f.duplicates, f.attributed, f.not_consumed) == (21, 22, 2, 2, 0)
    assert (f.longest_pause_ms, f.moves, f.rebalances, f.consumers) == (None, 0, 0, 2)
    assert f.peak_backlog == 19  # 21 first deliveries began before 1250


def test_pause_from_the_removal_when_nobody_consumed_the_queue_before() -> None:
    q = Q[1]
    events = [
        ev(A, 1, "start", 0, (A,), added=(0, 1)),
        ev(A, 2, "notify", 1040, (A, B), removed=(1,)),
        ev(B, 1, "start", 1000, (A, B), added=(1,)),
    ]
    # the message is stored before the removal: it waited from the removal on
    a = analyze([Delivery(B, "x", q, 1250, True, 1000)], events, [Stored("x", q, 1000)])
    (move,) = a.moves
    assert (move.pause_start_kind, move.pause_ms, move.first_message_store_ms) == ("removal", 210, 1000)


def test_a_queue_with_nothing_waiting_is_idle_not_paused() -> None:
    """The demo's trace: consumers start and the group grows before the producer sends its first
    message; the seconds of that idle lead-in are no pause. A pause begins when a message waits."""
    q = Q[1]
    events = [
        ev(A, 1, "start", 0, (A,), added=(0, 1)),
        ev(B, 1, "start", 1000, (A, B), added=(1,)),
        ev(A, 2, "notify", 1040, (A, B), removed=(1,)),
    ]
    # the producer starts at 5000: the first message of queue 1 is stored at 5030, B takes it at 5045
    a = analyze([Delivery(B, "x", q, 5045, True, 5030)], events, [Stored("x", q, 5030)])
    (move,) = a.moves
    assert (move.pause_start_kind, move.pause_start_ms, move.pause_ms) == ("message stored", 5030, 15)
    assert a.figures.longest_pause_ms == 15  # not 4,005 ms from the removal


@settings(max_examples=60, deadline=None)
@given(
    lead_in=st.integers(0, 20_000),
    handoff=st.integers(0, 500),
    store_to_delivery=st.integers(0, 2_000),
    consumed_before=st.booleans(),
)
def test_a_pause_is_time_with_a_message_waiting(
    lead_in: int, handoff: int, store_to_delivery: int, consumed_before: bool
) -> None:
    """Whatever the idle lead-in, the pause of the move is the time a message of the queue waited
    after the old owner let go (or last consumed it): never the idle seconds before."""
    q = Q[1]
    events = [
        ev(A, 1, "start", 0, (A,), added=(0, 1)),
        ev(B, 1, "start", 1000, (A, B), added=(1,)),
        ev(A, 2, "notify", 1000 + handoff, (A, B), removed=(1,)),
    ]
    deliveries, stored = [], []
    if consumed_before:  # A consumed one message of the queue, at 500
        stored.append(Stored("early", q, 490))
        deliveries.append(Delivery(A, "early", q, 500, True, 490))
    store = 1000 + lead_in
    stored.append(Stored("x", q, store))
    deliveries.append(Delivery(B, "x", q, store + store_to_delivery, True, store))
    (move,) = analyze(deliveries, events, stored).moves
    began = 500 if consumed_before else 1000 + handoff
    assert move.pause_ms == max(store + store_to_delivery - max(began, store), 0)  # 0: B began first
    assert move.pause_ms <= store_to_delivery


def test_changes_ignore_records_without_members_and_count_moves_per_change() -> None:
    events = [
        ev(A, 1, "start", 0, (A,), added=(0, 1, 2, 3)),
        ev(A, 2, "notify", 100, (A, B), removed=(2, 3)),
        ev(B, 1, "start", 101, (A, B), added=(2, 3)),
        ev(B, 2, "shutdown", 500, (), removed=(2, 3)),  # a shutdown record has no member list
        ev(A, 3, "notify", 501, (A,), added=(2, 3)),
    ]
    a = analyze([], events, [])
    assert [(c.label, c.moves) for c in a.costs] == [("start 1", 0), ("1 -> 2", 2), ("2 -> 1", 2)]
    assert a.costs[2].change.left == (B,)
    assert all(m.pause_ms is None for m in a.moves)  # nothing consumed: no pause to measure


def test_events_from_the_rebalance_log_json() -> None:
    record = RebalanceRecord(
        seq=4, trigger=RebalanceTrigger.NOTIFY, group="g", client_id=A, topic=T, message_model="CLUSTERING",
        strategy="AVG", client_ids=(A, B), all_queues=tuple(Q), owned=(Q[0],), added=(Q[0],),
        removed=(Q[1],), start_ms=5, end_ms=7,
    )  # fmt: skip
    e = RebalanceEvent.from_dict(record.to_dict())
    assert (e.client_id, e.seq, e.trigger, e.client_ids, e.added, e.removed, e.end_ms, e.changed) == (
        A, 4, "notify", (A, B), (Q[0],), (Q[1],), 7, True,
    )  # fmt: skip


def test_definitions_are_one_line_each_and_queue_ranges() -> None:
    assert set(DEFINITIONS) == {
        "change", "move", "pause", "duplicate", "backlog", "not consumed", "rebalance",
    }  # fmt: skip
    assert all("\n" not in line for line in footnote())
    assert footnote("pause") == [DEFINITIONS["pause"]]
    assert queue_ranges(Q) == "[0..3]"


def test_every_trigger_word_is_explained() -> None:
    """The demo explains each trigger word its REBALANCE lines use ("view", ...): every one a
    rebalance record can carry has its sentence."""
    from rocketq.analytics import TRIGGERS

    assert set(TRIGGERS) == {t.value for t in RebalanceTrigger}
    assert "view fence" in TRIGGERS["view"]
