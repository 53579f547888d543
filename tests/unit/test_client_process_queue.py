"""ProcessQueue: the committed offset is the lowest in flight; flow-control figures; orderly view."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketq.client.consumer.process_queue import DropReason, ProcessQueue
from rocketq.protocol.message import MessageExt
from rocketq.protocol.properties import MessageConst


def msgs(*offsets: int, size: int = 10) -> list[MessageExt]:
    return [MessageExt("T", b"x" * size, queue_offset=o) for o in offsets]


def test_lowest_offset_in_flight_is_committed_never_past_an_unfinished_message() -> None:
    pq = ProcessQueue(now=0.0)
    pq.put_messages(msgs(10, 11, 12, 13))
    assert pq.remove_messages(msgs(12), now=1.0) == 10
    assert pq.remove_messages(msgs(11, 13), now=2.0) == 10
    assert pq.remove_messages(msgs(10), now=3.0) == 14  # empty: one past the last put
    assert pq.last_consume_timestamp == 3.0
    assert pq.remove_messages(msgs(10), now=4.0) == -1  # nothing cached at all


def test_counts_sizes_and_span() -> None:
    pq = ProcessQueue(now=0.0)
    assert pq.max_span() == 0
    pq.put_messages(msgs(100, 101, size=1000))
    pq.put_messages(msgs(101, 2100, size=1000))  # 101 again is ignored
    assert pq.msg_count == 3
    assert pq.msg_size == 3000
    assert pq.max_span() == 2000
    pq.remove_messages(msgs(100), now=1.0)
    assert pq.max_span() == 1999
    assert pq.msg_count == 2
    assert pq.msg_size == 2000


def test_put_reports_dispatch_once_until_consuming_is_cleared() -> None:
    pq = ProcessQueue(now=0.0)
    assert pq.put_messages(msgs(1)) is True
    assert pq.put_messages(msgs(2)) is False  # a consumer is already dispatched (orderly)
    assert pq.put_messages([]) is False


def test_max_offset_property_gives_the_backlog() -> None:
    pq = ProcessQueue(now=0.0)
    m = msgs(5)
    m[0].properties[MessageConst.MAX_OFFSET] = "50"
    pq.put_messages(m)
    assert pq.msg_acc_cnt == 45


def test_out_of_order_puts_still_give_the_lowest_offset() -> None:
    pq = ProcessQueue(now=0.0)
    pq.put_messages(msgs(20, 21))
    pq.put_messages(msgs(3))
    assert pq.min_offset() == 3
    assert pq.max_offset() == 21
    assert pq.remove_messages(msgs(21), now=0.0) == 3


def test_pull_expiry_and_info() -> None:
    pq = ProcessQueue(now=100.0)
    assert not pq.is_pull_expired(220.0, 120.0)
    assert pq.is_pull_expired(220.5, 120.0)
    pq.put_messages(msgs(7, 9, size=2 * 1024 * 1024))
    info = pq.info(commit_offset=7)
    assert (info.commit_offset, info.cached_msg_min_offset, info.cached_msg_max_offset) == (7, 7, 9)
    assert (info.cached_msg_count, info.cached_msg_size_in_mib, info.droped) == (2, 4, False)
    assert info.last_pull_timestamp == 100_000


def test_orderly_take_commit_rollback() -> None:
    pq = ProcessQueue(now=0.0)
    pq.put_messages(msgs(1, 2, 3, 4))
    taken = pq.take_messages(2)
    assert [m.queue_offset for m in taken] == [1, 2]
    pq.rollback()
    assert [m.queue_offset for m in pq.take_messages(3)] == [1, 2, 3]
    assert pq.commit() == 4
    assert pq.msg_count == 1
    again = pq.take_messages(1)
    pq.make_messages_to_consume_again(again)
    assert [m.queue_offset for m in pq.take_messages(5)] == [4]
    assert pq.commit() == 5
    assert pq.take_messages(1) == []
    assert pq.consuming is False


@given(st.lists(st.integers(0, 200), min_size=1, max_size=60, unique=True), st.data())
def test_committed_offset_never_passes_an_unfinished_message(offsets: list[int], data: st.DataObject) -> None:
    pq = ProcessQueue(now=0.0)
    pq.put_messages(msgs(*sorted(offsets)))
    pending = set(offsets)
    order = data.draw(st.permutations(offsets))
    for o in order:
        committed = pq.remove_messages(msgs(o), now=0.0)
        pending.discard(o)
        if pending:
            assert committed == min(pending)
        else:
            assert committed == max(offsets) + 1


def test_flow_control_thresholds_of_the_push_consumer() -> None:
    from rocketq.client.consumer.pull import flow_control_reason

    limits = {"max_count": 1000, "max_size_mib": 100, "max_span": 2000}
    pq = ProcessQueue(now=0.0)
    pq.put_messages(msgs(*range(1000)))
    assert flow_control_reason(pq, **limits) is None  # exactly at the limit still pulls
    pq.put_messages(msgs(1000))
    assert flow_control_reason(pq, **limits) == "count"
    big = ProcessQueue(now=0.0)
    big.put_messages(msgs(1, 2, size=60 * 1024 * 1024))
    assert flow_control_reason(big, **limits) == "size"
    wide = ProcessQueue(now=0.0)
    wide.put_messages(msgs(0, 2000))
    assert flow_control_reason(wide, **limits) is None
    wide.put_messages(msgs(2001))
    assert flow_control_reason(wide, **limits) == "span"
    assert flow_control_reason(wide, max_count=1000, max_size_mib=100, max_span=None) is None  # orderly


def test_lowest_and_highest_stay_right_through_fifo_drains_and_out_of_order_inserts() -> None:
    pq = ProcessQueue(now=0.0)
    for start in range(0, 5000, 32):  # pulls arrive in order, consumption drains from the front
        pq.put_messages(msgs(*range(start, start + 32)))
        assert pq.remove_messages(msgs(*range(start, start + 16)), now=0.0) == start + 16
        assert (pq.min_offset(), pq.max_offset()) == (start + 16, start + 31)
        pq.remove_messages(msgs(*range(start + 16, start + 32)), now=0.0)
    pq.put_messages(msgs(9000, 9001, 9005))
    pq.remove_messages(msgs(9005), now=0.0)  # the highest goes first
    assert (pq.min_offset(), pq.max_offset(), pq.max_span()) == (9000, 9001, 1)
    pq.put_messages(msgs(8990))  # out of order
    assert [m.queue_offset for m in pq.cached()] == [8990, 9000, 9001]
    assert pq.remove_messages(msgs(8990, 9000), now=0.0) == 9001
    assert pq.take_messages(5) == msgs(9001)


def test_orderly_take_skips_offsets_removed_meanwhile() -> None:
    pq = ProcessQueue(now=0.0)
    pq.put_messages(msgs(1, 2, 3, 4))
    pq.remove_messages(msgs(2), now=0.0)  # e.g. the consume-timeout scan took it
    assert [m.queue_offset for m in pq.take_messages(2)] == [1, 3]
    pq.rollback()
    assert [m.queue_offset for m in pq.take_messages(10)] == [1, 3, 4]
    assert pq.commit() == 5
    assert pq.msg_count == 0


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 60)), max_size=200))
def test_cache_order_matches_a_sorted_model(ops: list[tuple[bool, int]]) -> None:
    pq = ProcessQueue(now=0.0)
    model: set[int] = set()
    for put, offset in ops:
        if put:
            pq.put_messages(msgs(offset))
            model.add(offset)
        else:
            pq.remove_messages(msgs(offset), now=0.0)
            model.discard(offset)
        assert [m.queue_offset for m in pq.cached()] == sorted(model)
        assert pq.min_offset() == (min(model) if model else -1)
        assert pq.max_offset() == (max(model) if model else -1)
        assert pq.msg_count == len(model)


def test_drop_is_the_one_way_out_and_keeps_the_first_reason() -> None:
    pq = ProcessQueue(now=0.0)
    assert (pq.dropped, pq.drop_reason) == (False, None)
    pq.drop(DropReason.OFFSET_ILLEGAL)
    pq.drop(DropReason.SHUTDOWN)
    assert (pq.dropped, pq.drop_reason) == (True, DropReason.OFFSET_ILLEGAL)
    assert pq.info(5).droped
