"""The long-poll hold table: wake on arrival, tag filters, deadlines, periodic checks."""

from __future__ import annotations

import doctest

import pytest

import rocketq.broker.longpoll as longpoll_module
from rocketq.broker.longpoll import (
    LONG_POLLING_CHECK_INTERVAL,
    SHORT_POLLING_TIME_MILLS,
    LongPollingConfig,
    PullHoldTable,
    java_int,
)
from rocketq.errors import ConfigError


def test_config_defaults_are_rocketmqs() -> None:
    cfg = LongPollingConfig()
    assert cfg.long_polling_enable is True
    assert cfg.short_polling_time == SHORT_POLLING_TIME_MILLS == 1.0
    assert cfg.check_interval == LONG_POLLING_CHECK_INTERVAL == 5.0
    assert cfg.hold_time(15.0) == 15.0  # the consumer's suspend timeout
    short = LongPollingConfig(long_polling_enable=False)
    assert short.hold_time(15.0) == 1.0
    assert short.check_interval == 1.0
    with pytest.raises(ConfigError):
        LongPollingConfig(short_polling_time=0)


def test_wakes_only_when_max_offset_passes_the_requested_offset() -> None:
    table: PullHoldTable[str] = PullHoldTable()
    table.hold(("T", 0), "r1", 15.0, offset=5)
    table.hold(("T", 0), "r2", 15.0, offset=7)
    assert len(table) == 2
    assert table.on_arrival("T", 0, max_offset=5, now=1.0) == []
    assert table.on_arrival("T", 0, max_offset=6, now=1.0) == ["r1"]
    assert [h.request for h in table.held("T", 0)] == ["r2"]
    assert table.on_arrival("T", 0, max_offset=8, now=1.0) == ["r2"]
    assert len(table) == 0
    assert table.keys() == []


def test_other_queues_are_untouched() -> None:
    table: PullHoldTable[str] = PullHoldTable()
    table.hold(("T", 0), "q0", 15.0, offset=0)
    table.hold(("T", 1), "q1", 15.0, offset=0)
    table.hold(("U", 0), "u0", 15.0, offset=0)
    assert table.on_arrival("T", 1, max_offset=1, now=1.0) == ["q1"]
    assert table.on_arrival("X", 0, max_offset=100, now=1.0) == []
    assert sorted(table.keys()) == [("T", 0), ("U", 0)]


def test_tag_filter_decides_the_wake() -> None:
    table: PullHoldTable[str] = PullHoldTable()
    table.hold(("T", 0), "tagA", 15.0, offset=0, tag_codes=[111])
    table.hold(("T", 0), "all", 15.0, offset=0)
    # A message tagged 222 wakes only the unfiltered request.
    assert table.on_arrival("T", 0, max_offset=1, now=1.0, tag_code=222) == ["all"]
    assert table.on_arrival("T", 0, max_offset=2, now=1.0, tag_code=111) == ["tagA"]


def test_unknown_tag_code_wakes_filtered_requests() -> None:
    table: PullHoldTable[str] = PullHoldTable()
    table.hold(("T", 0), "tagA", 15.0, offset=0, tag_codes=[111])
    assert table.on_arrival("T", 0, max_offset=1, now=1.0, tag_code=None) == ["tagA"]


def test_tag_code_is_compared_as_a_java_int() -> None:
    assert java_int(-5) == -5
    assert java_int(2**32 - 1) == -1
    table: PullHoldTable[str] = PullHoldTable()
    table.hold(("T", 0), "neg", 15.0, offset=0, tag_codes=[-1])
    assert table.on_arrival("T", 0, max_offset=1, now=1.0, tag_code=2**32 - 1) == ["neg"]


def test_arrival_also_answers_requests_past_their_deadline() -> None:
    table: PullHoldTable[str] = PullHoldTable()
    table.hold(("T", 0), "old", 10.0, offset=0, tag_codes=[1])
    table.hold(("T", 0), "young", 20.0, offset=0, tag_codes=[1])
    # The message does not match either, but "old" has timed out.
    assert table.on_arrival("T", 0, max_offset=1, now=10.0, tag_code=2) == ["old"]
    assert [h.request for h in table.held("T", 0)] == ["young"]


def test_expired_returns_timed_out_requests_in_hold_order() -> None:
    table: PullHoldTable[str] = PullHoldTable()
    assert table.next_deadline() is None
    table.hold(("T", 0), "a", 15.0, offset=0)
    table.hold(("T", 1), "b", 5.0, offset=0)
    table.hold(("T", 0), "c", 5.0, offset=0)
    assert table.next_deadline() == 5.0
    assert table.expired(now=4.999) == []
    assert sorted(table.expired(now=5.0)) == ["b", "c"]
    assert table.next_deadline() == 15.0
    assert table.expired(now=14.0) == []
    assert table.expired(now=100.0) == ["a"]
    assert table.next_deadline() is None
    assert len(table) == 0


def test_next_deadline_skips_answered_requests() -> None:
    table: PullHoldTable[str] = PullHoldTable()
    table.hold(("T", 0), "early", 3.0, offset=0)
    table.hold(("T", 1), "late", 9.0, offset=0)
    assert table.on_arrival("T", 0, max_offset=1, now=1.0) == ["early"]
    assert table.next_deadline() == 9.0


def test_periodic_check_uses_the_store_max_offsets() -> None:
    table: PullHoldTable[str] = PullHoldTable()
    table.hold(("T", 0), "behind", 15.0, offset=3)
    table.hold(("T", 1), "caught-up", 15.0, offset=9)
    table.hold(("U", 0), "timed-out", 2.0, offset=0, tag_codes=[1])
    max_offsets = {("T", 0): 4, ("T", 1): 9, ("U", 0): 0}
    ready = table.check(now=2.0, max_offset_of=lambda t, q: max_offsets[(t, q)])
    assert sorted(ready) == ["behind", "timed-out"]
    assert [h.request for h in table.held("T", 1)] == ["caught-up"]


def test_drop_forgets_requests_of_a_closed_connection() -> None:
    table: PullHoldTable[tuple[str, int]] = PullHoldTable()
    table.hold(("T", 0), ("conn-a", 1), 15.0, offset=0)
    table.hold(("T", 0), ("conn-b", 2), 15.0, offset=0)
    table.hold(("T", 1), ("conn-a", 3), 15.0, offset=0)
    dropped = table.drop(lambda req: req[0] == "conn-a")
    assert sorted(dropped) == [("conn-a", 1), ("conn-a", 3)]
    assert len(table) == 1
    assert table.keys() == [("T", 0)]


def test_held_pull_records_what_it_waits_for() -> None:
    table: PullHoldTable[str] = PullHoldTable()
    held = table.hold(("T", 3), "r", 42.0, offset=17, tag_codes=(1, 2))
    assert (held.topic, held.queue_id, held.offset, held.deadline, held.tag_codes, held.request) == (
        "T",
        3,
        17,
        42.0,
        frozenset({1, 2}),
        "r",
    )


def test_many_answered_pulls_do_not_grow_the_deadline_heap_without_bound() -> None:
    table: PullHoldTable[int] = PullHoldTable()
    for i in range(20_000):
        table.hold(("T", 0), i, 1e9, offset=i)
        assert table.on_arrival("T", 0, max_offset=i + 1, now=0.0) == [i]
    assert len(table) == 0
    assert len(table._deadlines) < 2_100
    assert table.next_deadline() is None


def test_module_doctests() -> None:
    failures, tried = doctest.testmod(longpoll_module)
    assert tried > 0
    assert failures == 0
