"""Publish and subscribe info from routes; RocketMQ's queue selection and retry on another broker."""

from __future__ import annotations

from collections import Counter

from rocketq.client.routes import (
    TopicPublishInfo,
    publish_info_from_route,
    route_for_auto_create,
    subscribe_info_from_route,
)
from rocketq.models import MessageQueue
from rocketq.protocol.bodies import BrokerData, QueueData, TopicRouteData


def route(*brokers: tuple[str, int, int], masterless: str | None = None) -> TopicRouteData:
    return TopicRouteData(
        queue_datas=tuple(
            QueueData(broker_name=name, read_queue_nums=n, write_queue_nums=n, perm=perm)
            for name, n, perm in brokers
        ),
        broker_datas=tuple(
            BrokerData(
                cluster="c",
                broker_name=name,
                broker_addrs={1: f"{name}:2"} if name == masterless else {0: f"{name}:1"},
            )
            for name, _, _ in brokers
        ),
    )


def test_publish_info_keeps_writable_queues_of_brokers_with_a_master_in_name_order() -> None:
    r = route(("b", 2, 6), ("a", 3, 6), ("ro", 4, 4), ("x", 2, 6), masterless="x")
    info = publish_info_from_route("T", r)
    assert [q.short for q in info.queues] == ["a:0", "a:1", "a:2", "b:0", "b:1"]
    assert info.ok
    assert not info.order_topic


def test_subscribe_info_keeps_readable_queues() -> None:
    r = route(("a", 2, 6), ("wo", 3, 2), ("ro", 1, 4))
    assert subscribe_info_from_route("T", r) == {
        MessageQueue("T", "a", 0),
        MessageQueue("T", "a", 1),
        MessageQueue("T", "ro", 0),
    }


def test_order_topic_conf_defines_the_queues() -> None:
    r = TopicRouteData(order_topic_conf="a:2;b:1", queue_datas=(), broker_datas=())
    info = publish_info_from_route("T", r)
    assert info.order_topic
    assert [q.short for q in info.queues] == ["a:0", "a:1", "b:0"]


def test_round_robin_spreads_sends_evenly_over_all_queues() -> None:
    info = publish_info_from_route("T", route(("a", 4, 6), ("b", 4, 6)))
    picks = Counter(info.select_one() for _ in range(800))
    assert set(picks.values()) == {100}


def test_retry_avoids_the_broker_that_just_failed() -> None:
    info = publish_info_from_route("T", route(("a", 4, 6), ("b", 1, 6)), start=0)
    for _ in range(50):
        assert info.select_one(last_broker="a").broker_name == "b"
        assert info.select_one(last_broker="b").broker_name == "a"


def test_a_single_broker_is_used_even_after_it_failed() -> None:
    info = TopicPublishInfo([MessageQueue("T", "a", 0)], None)
    assert info.select_one(last_broker="a") == MessageQueue("T", "a", 0)
    assert not info.have_route


def test_cursor_wraps_like_a_java_int() -> None:
    info = publish_info_from_route("T", route(("a", 3, 6)), start=2**31 - 2)
    assert [info.select_one().queue_id for _ in range(3)] == [(2**31 - 1) % 3, 0, 1]


def test_auto_create_route_caps_queue_counts() -> None:
    default = route(("a", 8, 7), ("b", 2, 7))
    capped = route_for_auto_create(default, 4)
    assert [(q.broker_name, q.read_queue_nums, q.write_queue_nums) for q in capped.queue_datas] == [
        ("a", 4, 4),
        ("b", 2, 2),
    ]
    assert [q.short for q in publish_info_from_route("New", capped).queues] == [
        "a:0",
        "a:1",
        "a:2",
        "a:3",
        "b:0",
        "b:1",
    ]
