"""The chaos invariants on hand-written timelines: every figure and verdict from data, no sleeping."""

from __future__ import annotations

import doctest
import importlib
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketq.chaos.invariants import (
    Expectations,
    convergence,
    duplicates,
    evaluate,
    holdings,
    lost,
    merge,
    orderly,
    orphan,
    overlap,
    resume,
    segments,
    split_view_seconds,
    startup_time,
)
from rocketq.chaos.scenarios import SCENARIOS, Form, make_plan
from rocketq.chaos.timeline import (
    Life,
    MemberQuery,
    Notify,
    Pull,
    Rebalance,
    Recv,
    Release,
    Sent,
    Timeline,
    Window,
    parse_line,
    parse_queues,
)

A0 = ("broker-a", 0)
A1 = ("broker-a", 1)
QUEUES = (A0, A1)
DEFAULT = Expectations(handoff="rocketmq")
CLEAN = Expectations(handoff="clean")


@pytest.mark.parametrize(
    "module",
    ["rocketq.chaos.timeline", "rocketq.chaos.invariants", "rocketq.chaos.proxy", "rocketq.chaos.scenarios"],
)
def test_doctests(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module))
    assert result.failed == 0
    assert result.attempted > 0


def pull(
    c: str, q: tuple[str, int], offset: int, sent: float, answered: float, n: int = 1, code: int = 0
) -> Pull:
    return Pull(c, q[0], q[1], offset, sent, answered, code, offset + n)


def recv(c: str, q: tuple[str, int], offset: int, t: float, seq: int) -> Recv:
    return Recv(c, t, f"ip@{c}", q[0], q[1], offset, f"id{seq}", f"seq={seq}")


def rebalance(c: str, t: float, *owned: tuple[str, int]) -> Rebalance:
    return Rebalance(c, t, f"ip@{c}", "T", tuple(owned), (), ())


def timeline(**kw: object) -> Timeline:
    base: dict[str, object] = {
        "topic": "T",
        "queue_sets": ((-math.inf, QUEUES),),
        "lives": (Life("c1", -10.0), Life("c2", -10.0)),
        "t0": 0.0,
        "t_end": 20.0,
    }
    base.update(kw)
    return Timeline(**base)  # type: ignore[arg-type]


# ------------------------------------------------------------------ the line contract


def test_line_contract_parses_recv_and_rebalance_and_ignores_the_rest() -> None:
    r = parse_line("RECV 1.2.3.4@c1 broker-b 7 42 ABCD hello world, with spaces\n", "c1", 3.0)
    assert isinstance(r, Recv)
    assert (r.client_id, r.queue, r.offset, r.msg_id, r.body) == (
        "1.2.3.4@c1",
        ("broker-b", 7),
        42,
        "ABCD",
        "hello world, with spaces",
    )
    empty = parse_line("RECV id broker-a 0 1 MSG", "c1", 1.0)
    assert isinstance(empty, Recv)
    assert empty.body == ""
    rb = parse_line(
        "REBALANCE id T owned=[broker-a:0,a:b:3] added=[] removed=[broker-b:1] error=x", "c2", 2.0
    )
    assert isinstance(rb, Rebalance)
    assert rb.owned == (("broker-a", 0), ("a:b", 3))
    assert rb.removed == (("broker-b", 1),)
    for junk in (
        "hello",
        "RECV x y notanumber 1 m b",
        "REBALANCE id T owned=[broker-a:x] added=[] removed=[]",
        "",
    ):
        assert parse_line(junk, "c1", 0.0) is None
    with pytest.raises(ValueError, match="not a queue"):
        parse_queues("[nocolon]")


# ------------------------------------------------------------------ holding


def test_holding_merges_close_actions_and_stops_at_the_line_that_gave_the_queue_up() -> None:
    assert merge([(0, 1), (1.5, 2)], gap=1.0) == [(0, 2)]
    assert merge([(0, 1), (3, 4)], gap=1.0) == [(0, 1), (3, 4)]
    tl = timeline(
        pulls=(
            pull("c1", A0, 0, 0.0, 0.5),
            pull("c1", A0, 1, 0.6, 15.0),  # a long poll still held at the broker ...
            pull("c2", A0, 1, 5.0, 5.2),
        ),
        rebalances=(rebalance("c1", -1, A0, A1), rebalance("c1", 5.0, A1), rebalance("c2", 5.0, A0)),
    )
    hold = holdings(tl, gap=1.0)
    assert hold[A0]["c1"] == [(0.0, 5.0)]  # ... ends with c1's line giving A0 up at 5.0
    assert hold[A0]["c2"] == [(5.0, 5.2)]
    assert [s.holders for s in segments(hold, A0, 0.0, 6.0)] == [
        frozenset({"c1"}),
        frozenset({"c2"}),
        frozenset(),
    ]


def test_a_message_counts_from_the_answer_that_brought_it_until_it_was_printed() -> None:
    # c1 gave A0 up at 2.0 but its listener printed a message fetched at 1.0 only at 6.0
    tl = timeline(
        sent=(Sent(1, 0.0, "broker-a", 0, 0),),
        pulls=(pull("c1", A0, 0, 0.5, 1.0),),
        recvs=(recv("c1", A0, 0, 6.0, 1),),
        rebalances=(rebalance("c1", -1, A0), rebalance("c1", 2.0)),
    )
    assert holdings(tl)[A0]["c1"] == [(0.5, 6.0)]


def test_a_pull_sent_after_the_queue_was_given_up_counts_in_full() -> None:
    tl = timeline(
        pulls=(pull("c1", A0, 0, 6.0, 8.0),),
        rebalances=(rebalance("c1", -1, A0), rebalance("c1", 5.0)),
    )
    assert holdings(tl)[A0]["c1"] == [(6.0, 8.0)]


def test_messages_redelivered_through_the_retry_topic_do_not_count_as_holding_the_queue() -> None:
    tl = timeline(
        sent=(Sent(1, 0.0, "broker-a", 1, 9),),
        recvs=(recv("c2", A0, 0, 3.0, 1),),  # seq 1 was stored at broker-a:1@9; this copy came by retry
    )
    assert A0 not in holdings(tl)


# ------------------------------------------------------------------ lost and duplicates


def test_lost_counts_acknowledged_sequence_numbers_nobody_printed() -> None:
    tl = timeline(
        sent=(Sent(1, 0, "broker-a", 0, 0), Sent(2, 0, "broker-a", 0, 1), Sent(3, 0, "broker-a", 1, 0)),
        recvs=(recv("c1", A0, 0, 1, 1), recv("c2", A0, 5, 12, 2)),  # seq 2 came back by the retry topic
    )
    result = lost(tl)
    assert (result.ok, result.figure) == (False, 1)
    assert result.data["missing"] == [3]
    assert result.data["retried"] == 1
    assert "seq 3 (broker-a:1@0)" in result.detail


def _handoff(y_started: float) -> Timeline:
    """c1 fetched offsets 0..3 of A0 at t=1 and printed them; c2 starts on A0 from offset 2 at
    ``y_started`` and prints 2..3 again."""
    sent = tuple(Sent(o + 1, 0.0, "broker-a", 0, o) for o in range(4))
    return timeline(
        sent=sent,
        pulls=(pull("c1", A0, 0, 0.5, 1.0, n=4), pull("c2", A0, 2, y_started, y_started + 0.1, n=2)),
        recvs=(
            *(recv("c1", A0, o, 1.1 + o / 100, o + 1) for o in range(4)),
            *(recv("c2", A0, o, y_started + 0.2, o + 1) for o in (2, 3)),
        ),
    )


def test_repeats_after_a_handoff_are_within_the_bound() -> None:
    result = duplicates(_handoff(y_started=2.0), DEFAULT)
    assert (result.ok, result.figure) == (True, 2)
    assert result.data == {"within_bound": 2, "beyond_bound": 0, "bound": 2}


def test_repeats_of_two_consumers_pulling_at_once_are_beyond_the_bound() -> None:
    # c2 started on A0 (from offset 2) at 0.6, before c1's pull answered with offsets 0..3 at 1.0
    result = duplicates(_handoff(y_started=0.6), DEFAULT)
    assert (result.ok, result.figure) == (False, 2)
    assert result.data["beyond_bound"] == 2
    assert "seq 3 (broker-a:0@2) by c2 and c1" in result.detail  # c2 printed it first


def test_an_old_owner_printing_late_what_it_fetched_before_the_move_is_a_handoff_re_read() -> None:
    # c1 fetched 0..3 at 1.0 but its (slow) listener printed them only at 5.0; c2 started from
    # offset 2 at 2.0 and printed 2..3 at 2.2: the repeats are re-reads, whoever printed first
    sent = tuple(Sent(o + 1, 0.0, "broker-a", 0, o) for o in range(4))
    tl = timeline(
        sent=sent,
        pulls=(pull("c1", A0, 0, 0.5, 1.0, n=4), pull("c2", A0, 2, 2.0, 2.1, n=2)),
        recvs=(
            *(recv("c1", A0, o, 5.0 + o / 100, o + 1) for o in range(4)),
            *(recv("c2", A0, o, 2.2, o + 1) for o in (2, 3)),
        ),
    )
    result = duplicates(tl, DEFAULT)
    assert result.data == {"within_bound": 2, "beyond_bound": 0, "bound": 2}
    # ... and the time c1 had them in hand after c2 began pulling is not two consumers pulling
    hold, pulling = holdings(tl), holdings(tl, in_hand=False)
    judged = overlap(tl, hold, 0.0, DEFAULT, pulling)
    assert judged.figure == 0
    assert judged.data["with_in_hand_s"] == pytest.approx(0.2)  # c2's pull 2.0..2.1 and print at 2.2
    assert "with messages in hand" in judged.detail


def test_a_queue_given_up_and_taken_again_begins_a_new_run_even_at_the_next_offset() -> None:
    # c2 pulled 0..1 from 0.2, gave A0 up at 1.5 (its line), c1 fetched 2..3 at 2.0, and c2 took
    # A0 back at 3.0 from offset 2 - where its old run had stopped: a new run, a re-read
    sent = tuple(Sent(o + 1, 0.0, "broker-a", 0, o) for o in range(4))
    tl = timeline(
        sent=sent,
        pulls=(
            pull("c2", A0, 0, 0.2, 0.3, n=2),
            pull("c1", A0, 2, 1.9, 2.0, n=2),
            pull("c2", A0, 2, 3.0, 3.1, n=2),
        ),
        recvs=(
            recv("c2", A0, 0, 0.4, 1),
            recv("c2", A0, 1, 0.4, 2),
            *(recv("c1", A0, o, 2.1, o + 1) for o in (2, 3)),
            *(recv("c2", A0, o, 3.2, o + 1) for o in (2, 3)),
        ),
        rebalances=(rebalance("c2", 0.0, A0), rebalance("c2", 1.5), rebalance("c2", 2.9, A0)),
    )
    assert duplicates(tl, DEFAULT).data == {"within_bound": 2, "beyond_bound": 0, "bound": 2}


def test_clean_handoff_with_graceful_changes_allows_no_repeat_at_all() -> None:
    assert duplicates(_handoff(y_started=2.0), CLEAN).ok is False
    ungraceful = Expectations(handoff="clean", graceful=False)
    assert duplicates(_handoff(y_started=2.0), ungraceful).ok is True


def test_a_failed_pull_retried_at_the_same_offset_continues_the_run() -> None:
    # c2's run began at 0.2 (before c1's fetch at 1.0); its failed pull and the retry do not restart it
    sent = tuple(Sent(o + 1, 0.0, "broker-a", 0, o) for o in range(2))
    tl = timeline(
        sent=sent,
        pulls=(
            pull("c2", A0, 0, 0.2, 0.3, n=0, code=19),
            Pull("c2", "broker-a", 0, 0, 0.4, 0.5, None, None),
            pull("c1", A0, 0, 0.5, 1.0, n=2),
            pull("c2", A0, 0, 1.5, 1.6, n=2),
        ),
        recvs=(recv("c1", A0, 0, 1.1, 1), recv("c2", A0, 0, 1.7, 1)),
    )
    assert duplicates(tl, DEFAULT).data["beyond_bound"] == 1


# ------------------------------------------------------------------ overlap and orphan


def _two_holders(c2_from: float, c2_to: float) -> Timeline:
    return timeline(
        pulls=(
            pull("c1", A0, 0, 0.0, 10.0),
            pull("c2", A0, 0, c2_from, c2_to),
            pull("c1", A1, 0, 0.0, 20.0),
        ),
        t_end=10.0,
    )


def test_overlap_counts_time_two_consumers_held_a_queue() -> None:
    tl = _two_holders(4.0, 5.5)
    hold = holdings(tl)
    result = overlap(tl, hold, 0.0, DEFAULT)
    assert result.figure == pytest.approx(1.5)
    assert result.ok is True  # one episode of 1.5 s, within the 2 s a handoff may take
    assert "broker-a:0 +4.0..+5.5 s by c1,c2" in result.detail
    assert overlap(tl, hold, 0.0, CLEAN).ok is False
    assert overlap(tl, hold, 5.0, DEFAULT).figure == pytest.approx(0.5)  # only after ``start``
    long = _two_holders(2.0, 6.0)
    assert overlap(long, holdings(long), 0.0, DEFAULT).ok is False


@given(
    release=st.floats(min_value=0.5, max_value=8.0),
    handover=st.floats(min_value=0.0, max_value=0.5),
    line_late=st.floats(min_value=0.0, max_value=1.0),
)
def test_a_release_at_the_proxy_ends_the_old_owners_hold(
    release: float, handover: float, line_late: float
) -> None:
    """A clean handoff: c1's long-poll pull of A0 is open at the broker when c1 releases the queue
    (UNLOCK_BATCH_MQ at ``release``); c2 starts pulling ``handover`` s later; c1's REBALANCE line
    that dropped A0 is read ``line_late`` s after the release. No overlap: the release, not the
    line, is when c1 gave the queue up. Without the release the same run shows the line's lag."""
    c2_from = release + handover
    pulls = (pull("c1", A0, 0, 0.0, 10.0), pull("c2", A0, 0, c2_from, 10.0), pull("c1", A1, 0, 0.0, 10.0))
    lines = (rebalance("c1", -1.0, A0, A1), rebalance("c1", release + line_late, A1))
    freed = (Release("c1", A0[0], A0[1], release),)
    released = timeline(pulls=pulls, rebalances=lines, releases=freed, t_end=10.0)
    assert overlap(released, holdings(released, in_hand=False), 0.0, CLEAN).figure == pytest.approx(0.0)
    unseen = timeline(pulls=pulls, rebalances=lines, t_end=10.0)
    lag = max(0.0, line_late - handover)
    lag = lag if lag >= CLEAN.resolution else 0.0  # shorter episodes are below the witnesses' resolution
    assert overlap(unseen, holdings(unseen, in_hand=False), 0.0, CLEAN).figure == pytest.approx(lag, abs=1e-9)


def test_orphan_counts_time_nobody_held_a_queue_apart_from_broker_downtime_and_paused_holders() -> None:
    tl = timeline(
        pulls=(pull("c1", A0, 0, 0.0, 3.0), pull("c2", A0, 0, 7.0, 12.0), pull("c1", A1, 0, 0.0, 12.0)),
        t_end=12.0,
    )
    hold = holdings(tl)
    result = orphan(tl, hold, 0.0, DEFAULT)
    assert result.figure == pytest.approx(4.0)  # 3.0 .. 7.0
    assert result.ok is False
    down = timeline(pulls=tl.pulls, t_end=12.0, windows=(Window("broker-down", "broker-a", 2.0, 6.0),))
    assert orphan(down, holdings(down), 0.0, DEFAULT).figure == pytest.approx(1.0)
    paused = timeline(
        pulls=tl.pulls, t_end=12.0, lives=(Life("c1", -1.0, pauses=((2.9, 6.5),)), Life("c2", -1.0))
    )
    result = orphan(paused, holdings(paused), 0.0, DEFAULT)
    assert result.figure == pytest.approx(0.5)
    assert result.data["paused_s"] == pytest.approx(3.5)


@given(
    cut_start=st.floats(1.0, 4.0),
    cut_len=st.floats(2.5, 6.0),
    back=st.floats(0.0, 1.5),
    broker=st.sampled_from(["broker-a", "broker-b", "*"]),
)
def test_orphan_sets_apart_a_cut_off_orderly_holder_only(
    cut_start: float, cut_len: float, back: float, broker: str
) -> None:
    """c1 holds A0 until it is cut off; it (or c2) takes A0 again ``back`` s after the heal. With
    orderly consumers the cut-off time is apart when the cut is from A0's broker (c1's lock
    outlives the cut); with concurrent ones, or a cut from another broker, it is an orphan."""
    heal = cut_start + cut_len
    tl = timeline(
        pulls=(
            pull("c1", A0, 0, 0.0, cut_start),
            pull("c2", A0, 0, heal + back, 20.0),
            pull("c2", A1, 0, 0.0, 20.0),
        ),
        windows=(Window("cut", "c1", cut_start, heal, broker),),
    )
    print(f"drew cut {cut_start:.3f}+{cut_len:.3f} s from {broker}, back after {back:.3f} s")
    whole = heal + back - cut_start
    concurrent = orphan(tl, holdings(tl), 0.0, CLEAN)
    assert concurrent.figure == pytest.approx(whole)
    ordered = orphan(tl, holdings(tl), 0.0, Expectations(handoff="clean", orderly=True))
    assert ordered.figure == pytest.approx(back if broker in ("broker-a", "*") else whole, abs=1e-6)


def test_a_queue_added_later_is_an_orphan_only_from_when_it_appeared() -> None:
    tl = timeline(
        queue_sets=((-math.inf, (A0,)), (5.0, QUEUES)),
        pulls=(pull("c1", A0, 0, 0.0, 10.0), pull("c2", A1, 0, 6.0, 10.0)),
        t_end=10.0,
    )
    assert orphan(tl, holdings(tl), 0.0, DEFAULT).figure == pytest.approx(1.0)


# ------------------------------------------------------------------ convergence and start-up


def test_convergence_is_when_lines_and_wire_both_settled_after_the_last_heal() -> None:
    tl = timeline(
        rebalances=(
            rebalance("c1", 0.0, A0, A1),
            rebalance("c2", 0.0),
            rebalance("c1", 6.0, A0),
            rebalance("c2", 6.5, A1),
        ),
        pulls=(pull("c1", A0, 0, 0.0, 20.0), pull("c1", A1, 0, 0.0, 6.0), pull("c2", A1, 0, 6.8, 20.0)),
        last_heal=5.0,
    )
    result = convergence(tl, holdings(tl), DEFAULT)
    assert result.ok is True
    assert result.figure == pytest.approx(1.8)  # the lines at 6.5, the wire at 6.8 (A1's gap ended)
    assert result.data == {"lines_s": 1.5, "wire_s": 1.8}


def test_convergence_fails_when_two_consumers_own_a_queue_at_the_end() -> None:
    tl = timeline(
        rebalances=(rebalance("c1", 0.0, A0, A1), rebalance("c2", 1.0, A1)),
        pulls=(pull("c1", A0, 0, 0.0, 20.0), pull("c1", A1, 0, 0.0, 20.0), pull("c2", A1, 0, 1.0, 20.0)),
        last_heal=0.5,
    )
    result = convergence(tl, holdings(tl), DEFAULT)
    assert (result.ok, result.figure) == (False, math.inf)
    assert "never shared the queues exactly" in result.detail
    # a dead consumer's lines no longer count
    dead = timeline(
        rebalances=(rebalance("c1", 0.0, A0), rebalance("c2", 0.0, A1), rebalance("c1", 3.0, A0, A1)),
        pulls=(pull("c1", A0, 0, 0.0, 20.0), pull("c2", A1, 0, 0.0, 2.0), pull("c1", A1, 0, 3.0, 20.0)),
        lives=(Life("c1", -1.0), Life("c2", -1.0, 2.0, "killed")),
        last_heal=2.0,
    )
    assert convergence(dead, holdings(dead), DEFAULT).figure == pytest.approx(1.0)


def test_startup_waits_for_the_lines_and_for_the_wire_to_show_one_holder_per_queue() -> None:
    # c1 gave A1 up at -0.5 by its line but sent one more pull of it at -0.45, answered at 0.3
    tl = timeline(
        rebalances=(rebalance("c1", -2.0, A0, A1), rebalance("c1", -0.5, A0), rebalance("c2", -0.4, A1)),
        pulls=(pull("c1", A0, 0, -2.0, 20.0), pull("c1", A1, 0, -0.45, 0.3), pull("c2", A1, 0, -0.3, 20.0)),
    )
    assert startup_time(tl, holdings(tl)) == pytest.approx(0.3)
    never = timeline(rebalances=(rebalance("c1", 0.0, A0),))
    assert startup_time(never, holdings(never)) == math.inf


# ------------------------------------------------------------------ orderly, figures


def test_orderly_finds_interleaved_consumers_and_offsets_going_back() -> None:
    tl = timeline(
        recvs=(
            recv("c1", A0, 0, 1.0, 1),
            recv("c2", A0, 1, 1.1, 2),
            recv("c1", A0, 2, 1.2, 3),  # c1 again within 1 s while c2 printed A0: interleaved
            recv("c1", A1, 5, 2.0, 4),
            recv("c1", A1, 4, 2.1, 5),  # c1 went back on A1
        )
    )
    exclusive, order = orderly(tl, DEFAULT)
    assert (exclusive.ok, exclusive.figure) == (False, 1)
    assert (order.ok, order.figure) == (False, 1)
    calm = timeline(recvs=(recv("c1", A0, 0, 1.0, 1), recv("c2", A0, 1, 3.0, 2), recv("c2", A0, 2, 3.1, 3)))
    assert all(r.ok for r in orderly(calm, DEFAULT))


def test_orderly_a_queue_handed_over_and_back_within_the_gap_is_not_interleaving() -> None:
    prints = (recv("c1", A0, 0, 1.0, 1), recv("c2", A0, 1, 1.2, 2), recv("c1", A0, 2, 1.5, 3))
    back = Rebalance("c1", 1.4, "ip@c1", "T", (A0,), (A0,), ())
    exclusive, _ = orderly(timeline(recvs=prints, rebalances=(back,)), DEFAULT)
    assert (exclusive.ok, exclusive.figure) == (True, 0)
    exclusive, _ = orderly(timeline(recvs=prints), DEFAULT)
    assert (exclusive.ok, exclusive.figure) == (False, 1)


def test_orderly_a_queue_got_back_is_a_new_run_not_disorder() -> None:
    """A consumer that lost A0 and got it back replays from the committed offset (4 < 6): in
    order within the new run. Going back without getting the queue back is still disorder."""
    prints = (
        recv("c1", A0, 5, 1.0, 1),
        recv("c1", A0, 6, 1.1, 2),
        recv("c1", A0, 4, 3.0, 3),
        recv("c1", A0, 5, 3.1, 4),
    )
    got_back = Rebalance("c1", 2.5, "ip@c1", "T", (A0,), (A0,), ())
    _, order = orderly(timeline(recvs=prints, rebalances=(got_back,)), DEFAULT)
    assert (order.ok, order.figure) == (True, 0)
    _, order = orderly(timeline(recvs=prints), DEFAULT)
    assert (order.ok, order.figure) == (False, 1)
    later = Rebalance("c1", 3.05, "ip@c1", "T", (A0,), (A0,), ())  # after the step back
    _, order = orderly(timeline(recvs=prints, rebalances=(later,)), DEFAULT)
    assert (order.ok, order.figure) == (False, 1)
    # a broker restart: no REBALANCE line, but c1 pulls A0 again from 4, below the 7 it had reached
    pulls = (pull("c1", A0, 5, 0.5, 0.6, n=2), pull("c1", A0, 4, 2.9, 2.95, n=2))
    _, order = orderly(timeline(recvs=prints, pulls=pulls), DEFAULT)
    assert (order.ok, order.figure) == (True, 0)
    onward = (pull("c1", A0, 5, 0.5, 0.6, n=2), pull("c1", A0, 7, 2.9, 2.95, n=2))
    _, order = orderly(timeline(recvs=prints, pulls=onward), DEFAULT)
    assert (order.ok, order.figure) == (False, 1)


def test_split_view_seconds_and_resume() -> None:
    both = ("ip@c1", "ip@c2")
    tl = timeline(
        queries=(
            MemberQuery("c1", "broker-a", 0.9, 1.0, both),
            MemberQuery("c2", "broker-b", 1.9, 2.0, ("ip@c1",)),
            MemberQuery("c1", "broker-b", 4.9, 5.0, both),
            MemberQuery("c2", "broker-a", 5.9, 6.0, None),
        ),
        t_end=10.0,
    )
    assert split_view_seconds(tl) == pytest.approx(3.0)
    restart = timeline(
        windows=(Window("broker-down", "broker-a", 2.0, 4.0),),
        pulls=(
            pull("c1", A0, 0, 4.5, 5.0, code=24),  # SUBSCRIPTION_NOT_EXIST: not served yet
            pull("c1", A0, 0, 5.0, 6.5, n=0, code=19),
            pull("c2", A1, 0, 4.2, 4.4),
        ),
    )
    result = resume(restart, Expectations(resume=3.0))
    assert result is not None
    assert result.ok is True
    assert result.figure == pytest.approx(2.5)
    assert resume(timeline(), DEFAULT) is None


def test_evaluate_names_every_invariant_and_the_notification_figures() -> None:
    tl = _handoff(y_started=2.0)
    tl = timeline(
        sent=tl.sent,
        pulls=(*tl.pulls, pull("c1", A1, 0, 0.0, 20.0)),
        recvs=tl.recvs,
        rebalances=(
            rebalance("c1", -1.0, A0, A1),
            rebalance("c2", -1.0),
            rebalance("c1", 1.9, A1),
            rebalance("c2", 1.95, A0),
        ),
        notifies=(Notify("c1", "broker-a", 1.9), Notify("c2", "broker-a", 1.9, dropped=True)),
        last_heal=1.9,
    )
    results, up = evaluate(tl, Expectations(orderly=True))
    names = [r.name for r in results]
    assert names == [
        "lost", "duplicates", "overlap", "orphan", "convergence", "exclusive", "order",
        "notifications", "rebalances", "split-view",
    ]  # fmt: skip
    figures = {r.name: r for r in results}
    assert figures["notifications"].figure == 2
    assert figures["notifications"].data["dropped"] == 1
    assert figures["notifications"].ok is None
    assert figures["notifications"].line().startswith("INFO  notifications  2")
    assert up == pytest.approx(0.5)  # A0 had no holder before c1's first pull


# ------------------------------------------------------------------ plans


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_seed_always_gives_the_same_plan_and_another_seed_another(name: str) -> None:
    form = Form(short=True)
    first = make_plan(name, 7, form)
    assert make_plan(name, 7, form) == first
    assert first.actions
    assert all(0 < a.at < form.produce_seconds for a in first.actions)
    plans = {tuple(a.at for a in make_plan(name, seed, form).actions) for seed in range(6)}
    assert len(plans) > 1
    heals = {a.target for a in first.actions if a.do == "heal"}
    assert heals == {a.target for a in first.actions if a.do == "fault"}
    assert SCENARIOS[name].plan(random.Random(f"{name}:7"), form, 7) == first


# ------------------------------------------------------------------ the summary over runs


def test_summary_gives_each_figure_as_mean_and_worst_per_scenario_and_mode() -> None:
    from rocketq.chaos.harness import ChaosOptions, ChaosResult
    from rocketq.chaos.invariants import InvariantResult
    from rocketq.chaos.report import summary, summary_lines

    def run(seed: int, handoff: str, dups: int, converge: float) -> ChaosResult:
        options = ChaosOptions(seed=seed, handoff=handoff)  # type: ignore[arg-type]
        plan = make_plan("kill", seed, Form(short=True))
        result = ChaosResult("kill", options, plan)
        result.invariants = [
            InvariantResult("duplicates", dups == 0 or handoff == "rocketmq", dups, "msgs", ""),
            InvariantResult("convergence", not math.isinf(converge), converge, "s", ""),
            InvariantResult("notifications", None, 16, "", ""),
        ]
        return result

    runs = [run(1, "rocketmq", 2, 0.5), run(2, "rocketmq", 4, math.inf), run(1, "clean", 1, 1.0)]
    rows = summary(runs)
    assert [(r["mode"], r["runs"], r["passed"]) for r in rows] == [
        ("handoff rocketmq", 2, 1),
        ("handoff clean", 1, 0),
    ]
    assert rows[0]["duplicates"] == {"mean": 3.0, "max": 4}
    assert rows[0]["convergence"] == {"mean": 0.5, "max": math.inf}
    assert rows[0]["failing"] == {"convergence": 1}
    assert rows[1]["failing"] == {"duplicates": 1}
    lines = summary_lines(runs)
    assert lines[0].split()[:4] == ["scenario", "mode", "pass", "dups"]
    assert "0.5 (inf)" in lines[1]
    assert lines[-1] == "figures: mean (max) over the runs; seeds 1, 2"
