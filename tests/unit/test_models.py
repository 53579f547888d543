from __future__ import annotations

import functools

from hypothesis import given
from hypothesis import strategies as st

from rocketq.models import MessageQueue, java_string_compare


def _java_compare_reference(a: str, b: str) -> int:
    """Java's String.compareTo, spelled out over UTF-16 code units."""
    ua = a.encode("utf-16-be", "surrogatepass")
    ub = b.encode("utf-16-be", "surrogatepass")
    units_a = [int.from_bytes(ua[i : i + 2], "big") for i in range(0, len(ua), 2)]
    units_b = [int.from_bytes(ub[i : i + 2], "big") for i in range(0, len(ub), 2)]
    for x, y in zip(units_a, units_b, strict=False):
        if x != y:
            return x - y
    return len(units_a) - len(units_b)


def _sign(n: int) -> int:
    return (n > 0) - (n < 0)


def test_to_string_matches_rocketmq() -> None:
    assert str(MessageQueue("TopicTest", "broker-a", 0)) == (
        "MessageQueue [topic=TopicTest, brokerName=broker-a, queueId=0]"
    )


def test_orders_by_topic_then_broker_then_queue_id() -> None:
    queues = [
        MessageQueue("b", "broker-a", 0),
        MessageQueue("a", "broker-b", 0),
        MessageQueue("a", "broker-a", 10),
        MessageQueue("a", "broker-a", 2),
    ]
    assert sorted(queues) == [
        MessageQueue("a", "broker-a", 2),
        MessageQueue("a", "broker-a", 10),
        MessageQueue("a", "broker-b", 0),
        MessageQueue("b", "broker-a", 0),
    ]


def test_supplementary_characters_sort_as_java_does() -> None:
    # U+FFFF sorts after U+1F600 in Python (code points) but before... no: Java compares the
    # surrogate 0xD83D with 0xFFFF, so the emoji comes first.
    emoji, high_bmp = "\U0001f600", "\uffff"
    assert high_bmp < emoji  # Python's order
    assert MessageQueue(emoji, "b", 0) < MessageQueue(high_bmp, "b", 0)  # Java's order
    assert java_string_compare(emoji, high_bmp) < 0


def test_frozen_and_hashable() -> None:
    q = MessageQueue("t", "b", 1)
    assert {q, MessageQueue("t", "b", 1)} == {q}
    assert q.short == "b:1"


@given(st.text(max_size=6), st.text(max_size=6))
def test_java_string_compare_matches_reference(a: str, b: str) -> None:
    assert _sign(java_string_compare(a, b)) == _sign(_java_compare_reference(a, b))


@given(st.lists(st.tuples(st.text(max_size=3), st.text(max_size=3), st.integers(0, 50)), max_size=20))
def test_sorting_matches_java_comparator(rows: list[tuple[str, str, int]]) -> None:
    queues = [MessageQueue(*row) for row in rows]

    def java_cmp(x: MessageQueue, y: MessageQueue) -> int:
        return (
            _java_compare_reference(x.topic, y.topic)
            or _java_compare_reference(x.broker_name, y.broker_name)
            or x.queue_id - y.queue_id
        )

    assert sorted(queues) == sorted(queues, key=functools.cmp_to_key(java_cmp))
