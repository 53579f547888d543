"""The consumer registry: membership, subscriptions, expiry, notifications and duplicate ids.

Connections are plain strings here (the registry takes any hashable); time is driven by the test.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketq.broker.consumers import (
    CHANNEL_EXPIRED_TIMEOUT,
    CLIENT_HOUSEKEEPING_INTERVAL,
    Changes,
    ClientChannelInfo,
    ConsumerGroupEvent,
    ConsumerRegistry,
    ConsumerRegistryConfig,
    apply_heartbeat,
    apply_unregister_client,
    tag_filter,
)
from rocketq.broker.producers import ProducerRegistry
from rocketq.broker.subscriptions import SubscriptionGroupManager
from rocketq.broker.topics import TopicConfigManager
from rocketq.broker.view_fence import GENERATION_FILE, next_boot_generation
from rocketq.errors import ConfigError, RemoteProtocolError
from rocketq.protocol.bodies import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    ProducerData,
    SubscriptionData,
    SubscriptionGroupConfig,
)

CHANGE = ConsumerGroupEvent.CHANGE
UNREGISTER = ConsumerGroupEvent.UNREGISTER
REGISTER = ConsumerGroupEvent.REGISTER


def sub(topic: str, expr: str = "*", version: int = 1, tags: Iterable[str] = ()) -> SubscriptionData:
    tag_tuple = tuple(tags)
    return SubscriptionData(
        topic=topic,
        sub_string=expr,
        tags_set=tag_tuple,
        code_set=tuple(hash(t) & 0x7FFFFFFF for t in tag_tuple),
        sub_version=version,
    )


def heartbeat(
    reg: ConsumerRegistry[str],
    conn: str,
    client_id: str,
    now: float,
    subs: Iterable[SubscriptionData] = (),
    group: str = "G",
    *,
    notify: bool = True,
    model: MessageModel = MessageModel.CLUSTERING,
) -> Changes[str]:
    addr = f"127.0.0.1:{1000 + len(conn)}" if not conn.startswith("addr=") else conn[5:]
    return reg.register(
        group,
        ClientChannelInfo(conn, client_id, addr, "JAVA", 401, now),
        ConsumeType.CONSUME_PASSIVELY,
        model,
        ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        list(subs) or [sub("T")],
        notify=notify,
    )


def kinds(changes: Changes[str]) -> list[ConsumerGroupEvent]:
    return [e.kind for e in changes.events]


def test_constants_and_config_are_rocketmqs() -> None:
    assert CHANNEL_EXPIRED_TIMEOUT == 120.0
    assert CLIENT_HOUSEKEEPING_INTERVAL == 10.0
    cfg = ConsumerRegistryConfig()
    assert cfg.channel_expired_timeout == 120.0
    assert cfg.scan_interval == 10.0
    assert cfg.notify_consumer_ids_changed_enable is True
    assert cfg.notify_on_subscription_update is False
    with pytest.raises(ConfigError):
        ConsumerRegistryConfig(channel_expired_timeout=-1)


def test_first_heartbeat_creates_group_and_notifies_the_newcomer() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    ch = heartbeat(reg, "conn-a", "10.0.0.1@1", now=0.0)
    assert ch.changed is True
    assert kinds(ch) == [CHANGE, REGISTER]
    assert ch.notifications() == [("G", ["conn-a"])]
    assert ch.events[1].subscriptions == (sub("T"),)
    assert reg.client_ids("G") == ["10.0.0.1@1"]
    assert reg.groups() == ["G"]
    assert "G" in reg


def test_join_notifies_every_member_including_the_new_one() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "conn-a", "A", now=0.0)
    ch = heartbeat(reg, "conn-b", "B", now=1.0)
    assert ch.changed
    assert ch.notifications() == [("G", ["conn-a", "conn-b"])]
    assert reg.client_ids("G") == ["A", "B"]


def test_repeated_heartbeat_changes_nothing_and_notifies_nobody() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "conn-a", "A", now=0.0)
    heartbeat(reg, "conn-b", "B", now=0.0)
    ch = heartbeat(reg, "conn-a", "A", now=30.0)
    assert ch.changed is False
    assert kinds(ch) == [REGISTER]  # REGISTER is always emitted, CHANGE only on a change
    assert ch.notifications() == []


def test_topic_added_or_removed_notifies_all_members() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "conn-a", "A", now=0.0, subs=[sub("T")])
    heartbeat(reg, "conn-b", "B", now=0.0, subs=[sub("T")])
    added = heartbeat(reg, "conn-a", "A", now=1.0, subs=[sub("T"), sub("U")])
    assert added.changed
    assert added.notifications() == [("G", ["conn-a", "conn-b"])]
    assert set(reg.subscriptions("G")) == {"T", "U"}
    assert reg.groups_consuming("U") == ["G"]
    removed = heartbeat(reg, "conn-a", "A", now=2.0, subs=[sub("U")])
    assert removed.changed
    assert removed.notifications() == [("G", ["conn-a", "conn-b"])]
    assert set(reg.subscriptions("G")) == {"U"}
    assert reg.groups_consuming("T") == []


def test_newer_expression_replaces_without_notifying_as_rocketmq() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "conn-a", "A", now=0.0, subs=[sub("T", "*", version=1)])
    newer = sub("T", "TagA", version=2, tags=["TagA"])
    ch = heartbeat(reg, "conn-a", "A", now=1.0, subs=[newer])
    assert ch.changed is False
    assert ch.notifications() == []
    assert reg.find_subscription("G", "T") == newer
    # An older version never replaces a newer one.
    heartbeat(reg, "conn-a", "A", now=2.0, subs=[sub("T", "*", version=1)])
    assert reg.find_subscription("G", "T") == newer


def test_expression_change_can_be_made_to_notify() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry(ConsumerRegistryConfig(notify_on_subscription_update=True))
    heartbeat(reg, "conn-a", "A", now=0.0, subs=[sub("T", "*", version=1)])
    same_filter_newer = heartbeat(reg, "conn-a", "A", now=1.0, subs=[sub("T", "*", version=2)])
    assert same_filter_newer.notifications() == []
    ch = heartbeat(reg, "conn-a", "A", now=2.0, subs=[sub("T", "TagA", version=3, tags=["TagA"])])
    assert ch.changed is False  # still RocketMQ's return value
    assert ch.notifications() == [("G", ["conn-a"])]


def test_group_flag_off_suppresses_change_on_heartbeat_and_unregister() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "conn-a", "A", now=0.0)
    ch = heartbeat(reg, "conn-b", "B", now=0.0, notify=False)
    assert ch.changed is True
    assert kinds(ch) == [REGISTER]
    ch = reg.unregister("G", "conn-b", "B", notify=False)
    assert ch.changed
    assert kinds(ch) == []


def test_broker_wide_switch_empties_every_notification() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry(
        ConsumerRegistryConfig(notify_consumer_ids_changed_enable=False)
    )
    heartbeat(reg, "conn-a", "A", now=0.0)
    ch = heartbeat(reg, "conn-b", "B", now=0.0)
    assert kinds(ch) == [CHANGE, REGISTER]
    assert ch.events[0].notify == ()
    assert ch.notifications() == []
    assert reg.connection_closed("conn-a").notifications() == []


def test_unregister_notifies_the_rest_and_drops_an_empty_group() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "conn-a", "A", now=0.0)
    heartbeat(reg, "conn-b", "B", now=0.0)
    ch = reg.unregister("G", "conn-a", "A")
    assert ch.changed
    assert kinds(ch) == [CHANGE]
    assert ch.notifications() == [("G", ["conn-b"])]
    assert reg.client_ids("G") == ["B"]
    last = reg.unregister("G", "conn-b", "B")
    # UNREGISTER first, then a CHANGE with nobody left to tell (RocketMQ's order).
    assert kinds(last) == [UNREGISTER, CHANGE]
    assert last.events[1].notify == ()
    assert last.notifications() == []
    assert "G" not in reg
    assert reg.client_ids("G") == []
    assert reg.unregister("G", "conn-b", "B") == Changes()


def test_unregister_from_a_connection_not_in_the_group_still_notifies() -> None:
    # RocketMQ's unregisterConsumer notifies whether or not the channel was a member.
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "conn-a", "A", now=0.0)
    ch = reg.unregister("G", "conn-x", "X")
    assert ch.changed is False
    assert ch.notifications() == [("G", ["conn-a"])]


def test_connection_close_leaves_every_group_and_notifies_the_rest() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "conn-a", "A", now=0.0, group="G1")
    heartbeat(reg, "conn-a", "A", now=0.0, group="G2")
    heartbeat(reg, "conn-b", "B", now=0.0, group="G1")
    assert reg.groups_of("conn-a") == ["G1", "G2"]
    ch = reg.connection_closed("conn-a")
    assert ch.changed
    assert [(e.kind, e.group) for e in ch.events] == [(CHANGE, "G1"), (UNREGISTER, "G2"), (CHANGE, "G2")]
    assert ch.notifications() == [("G1", ["conn-b"])]
    assert reg.groups() == ["G1"]
    assert reg.groups_of("conn-a") == []
    assert reg.connection_closed("conn-a") == Changes()  # second close: nothing left


def test_connection_close_can_honour_the_group_flag() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "conn-a", "A", now=0.0)
    heartbeat(reg, "conn-b", "B", now=0.0)
    ch = reg.connection_closed("conn-a", notify_enabled=lambda group: False)
    assert ch.changed
    assert ch.notifications() == []


def test_expiry_after_120_silent_seconds_notifies_the_rest_and_closes() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "conn-a", "A", now=0.0)
    heartbeat(reg, "conn-b", "B", now=0.0)
    heartbeat(reg, "conn-b", "B", now=30.0)  # B keeps beating, A falls silent
    assert reg.scan_expired(now=120.0) == Changes()  # exactly 120 s: not yet (strictly more)
    ch = reg.scan_expired(now=120.5)
    assert ch.close == ("conn-a",)
    assert ch.notifications() == [("G", ["conn-b"])]
    assert ch.events[0].reason == "expiry"
    assert reg.client_ids("G") == ["B"]
    assert reg.groups_of("conn-a") == []
    # The adapter then closes conn-a; the close finds nothing left to do.
    assert reg.connection_closed("conn-a") == Changes()
    # B expires too: the group is dropped.
    ch = reg.scan_expired(now=151.0)
    assert ch.close == ("conn-b",)
    assert kinds(ch) == [UNREGISTER]
    assert reg.groups() == []


def test_expiry_like_rocketmq_494_is_silent() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry(ConsumerRegistryConfig(notify_on_expiry=False))
    heartbeat(reg, "conn-a", "A", now=0.0)
    heartbeat(reg, "conn-b", "B", now=100.0)
    ch = reg.scan_expired(now=121.0)
    assert ch.close == ("conn-a",)
    assert ch.events == ()
    assert reg.client_ids("G") == ["B"]


def test_expiry_of_a_connection_in_several_groups_closes_it_once() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry(ConsumerRegistryConfig(channel_expired_timeout=10.0))
    heartbeat(reg, "conn-a", "A", now=0.0, group="G1")
    heartbeat(reg, "conn-a", "A", now=0.0, group="G2")
    ch = reg.scan_expired(now=11.0)
    assert ch.close == ("conn-a",)
    assert sorted(e.group for e in ch.events if e.kind is UNREGISTER) == ["G1", "G2"]


def test_heartbeat_renews_the_channel() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "conn-a", "A", now=0.0)
    heartbeat(reg, "conn-a", "A", now=100.0)
    assert reg.scan_expired(now=200.0) == Changes()
    assert reg.connections("G")[0].last_update == 100.0
    assert reg.scan_expired(now=220.5).close == ("conn-a",)


def test_duplicate_client_id_is_listed_twice_detected_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "addr=10.0.0.1:5000", "SAME@1", now=0.0)
    heartbeat(reg, "addr=10.0.0.2:6000", "OTHER@1", now=0.0)
    assert reg.duplicates() == []
    with caplog.at_level(logging.WARNING, logger="rocketq.broker.consumers"):
        ch = heartbeat(reg, "addr=10.0.0.3:7000", "SAME@1", now=1.0)
        heartbeat(reg, "addr=10.0.0.3:7000", "SAME@1", now=2.0)  # a later heartbeat: no new warning
    assert ch.changed
    warnings = [r for r in caplog.records if "DUPLICATE CLIENT ID" in r.getMessage()]
    assert len(warnings) == 1
    assert "10.0.0.1:5000" in warnings[0].getMessage()
    assert "10.0.0.3:7000" in warnings[0].getMessage()
    # On the wire, RocketMQ's behaviour: both channels are members, the id is returned twice.
    assert reg.client_ids("G") == ["SAME@1", "OTHER@1", "SAME@1"]
    assert ch.notifications() == [("G", ["addr=10.0.0.1:5000", "addr=10.0.0.2:6000", "addr=10.0.0.3:7000"])]
    (dup,) = reg.duplicates("G")
    assert dup.group == "G"
    assert dup.client_id == "SAME@1"
    assert dup.addresses == ("10.0.0.1:5000", "10.0.0.3:7000")
    assert reg.duplicates() == [dup]
    # find_channel answers the first one that joined.
    found = reg.find_channel("G", "SAME@1")
    assert found is not None
    assert found.conn == "addr=10.0.0.1:5000"
    # One of them leaves: no longer a duplicate.
    reg.connection_closed("addr=10.0.0.1:5000")
    assert reg.duplicates() == []
    assert reg.client_ids("G") == ["OTHER@1", "SAME@1"]


def test_same_client_id_in_different_groups_is_not_a_duplicate() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "conn-a", "A", now=0.0, group="G1")
    heartbeat(reg, "conn-b", "A", now=0.0, group="G2")
    assert reg.duplicates() == []


def test_connection_changing_its_client_id_is_replaced_without_notice(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "conn-a", "A", now=0.0)
    with caplog.at_level(logging.ERROR, logger="rocketq.broker.consumers"):
        ch = heartbeat(reg, "conn-a", "A2", now=1.0)
    assert ch.changed is False
    assert ch.notifications() == []
    assert reg.client_ids("G") == ["A2"]
    assert any("re-registered as A2" in r.getMessage() for r in caplog.records)


def test_group_attributes_follow_the_latest_heartbeat() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "conn-a", "A", now=0.0)
    heartbeat(reg, "conn-b", "B", now=5.0, model=MessageModel.BROADCASTING)
    view = reg.view("G")
    assert view is not None
    assert view.consume_type is ConsumeType.CONSUME_PASSIVELY
    assert view.message_model is MessageModel.BROADCASTING
    assert view.consume_from_where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    assert view.last_update == 5.0
    assert [m.client_id for m in view.members] == ["A", "B"]
    assert view.members[0].language == "JAVA"
    assert view.members[0].version == 401
    assert set(view.subscriptions) == {"T"}
    assert reg.view("nope") is None


def test_connection_list_and_lookups() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    heartbeat(reg, "addr=10.0.0.9:1234", "A", now=0.0)
    (member,) = reg.connections("G")
    assert (member.client_id, member.remote_addr, member.language, member.version) == (
        "A",
        "10.0.0.9:1234",
        "JAVA",
        401,
    )
    assert reg.find_channel("G", "nobody") is None
    assert reg.find_channel("nope", "A") is None
    assert reg.find_subscription("G", "T") == sub("T")
    assert reg.find_subscription("G", "U") is None
    assert reg.find_subscription("nope", "T") is None
    assert reg.connections("nope") == []
    assert reg.subscriptions("nope") == {}
    assert len(reg) == 1


def test_member_order_is_join_order_and_survives_renewal() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    for i, cid in enumerate(["c3", "c1", "c2"]):
        heartbeat(reg, f"conn-{cid}", cid, now=float(i))
    heartbeat(reg, "conn-c3", "c3", now=10.0)
    assert reg.client_ids("G") == ["c3", "c1", "c2"]


def test_heartbeat_with_a_topicless_subscription_is_rejected_and_records_nothing() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    with pytest.raises(RemoteProtocolError):
        heartbeat(reg, "conn-a", "A", now=0.0, subs=[SubscriptionData(topic=None, sub_string="*")])
    assert reg.groups() == []


def test_changes_combine() -> None:
    reg: ConsumerRegistry[str] = ConsumerRegistry()
    a = heartbeat(reg, "conn-a", "A", now=0.0, group="G1")
    b = heartbeat(reg, "conn-b", "B", now=0.0, group="G2")
    both = a + b
    assert both.changed
    assert both.notifications() == [("G1", ["conn-a"]), ("G2", ["conn-b"])]


def test_tag_filter() -> None:
    assert tag_filter(sub("T", "*")) is None
    assert tag_filter(SubscriptionData(topic="T", sub_string="TagA || TagB", code_set=(1, 2))) == {1, 2}
    assert tag_filter(SubscriptionData(topic="T", sub_string="a > 1", expression_type="SQL92")) is None
    assert (
        tag_filter(SubscriptionData(topic="T", sub_string="TagA", code_set=(1,), class_filter_mode=True))
        is None
    )


def _tables(
    auto_create_groups: bool = True,
) -> tuple[ConsumerRegistry[str], ProducerRegistry[str], TopicConfigManager, SubscriptionGroupManager]:
    return (
        ConsumerRegistry(),
        ProducerRegistry(),
        TopicConfigManager(now=0.0),
        SubscriptionGroupManager(now=0.0, auto_create_subscription_group=auto_create_groups),
    )


def beat(
    consumers: ConsumerRegistry[str],
    producers: ProducerRegistry[str],
    topics: TopicConfigManager,
    groups: SubscriptionGroupManager,
    body: HeartbeatData,
    conn: str,
    now: float,
) -> Changes[str]:
    return apply_heartbeat(
        body,
        conn,
        "10.0.0.1:1",
        "JAVA",
        401,
        now,
        consumers=consumers,
        producers=producers,
        topics=topics,
        groups=groups,
    )


def _hb(client_id: str | None, *groups: str, producers: tuple[str, ...] = ("PG",)) -> HeartbeatData:
    return HeartbeatData(
        client_id=client_id,
        producer_data_set=tuple(ProducerData(group_name=p) for p in producers),
        consumer_data_set=tuple(
            ConsumerData(
                group_name=g,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                subscription_data_set=(sub("T"), sub(f"%RETRY%{g}")),
            )
            for g in groups
        ),
    )


def test_apply_heartbeat_creates_group_config_and_retry_topic_then_registers() -> None:
    consumers, producers, topics, groups = _tables()
    ch = beat(consumers, producers, topics, groups, _hb("c1", "G"), "conn-a", 5.0)
    assert ch.notifications() == [("G", ["conn-a"])]
    assert groups.get("G") is not None
    retry = topics.select("%RETRY%G")
    assert retry is not None
    assert (retry.read_queue_nums, retry.write_queue_nums, retry.perm) == (1, 1, 6)
    assert consumers.client_ids("G") == ["c1"]
    assert set(consumers.subscriptions("G")) == {"T", "%RETRY%G"}
    assert [m.client_id for m in producers.connections("PG")] == ["c1"]


def test_apply_heartbeat_honours_the_group_notify_flag_and_retry_queue_nums() -> None:
    consumers, producers, topics, groups = _tables()
    groups.update(
        SubscriptionGroupConfig(group_name="Q", retry_queue_nums=3, notify_consumer_ids_changed_enable=False),
        1.0,
    )
    ch = beat(consumers, producers, topics, groups, _hb("c1", "Q"), "conn-a", 2.0)
    assert ch.changed
    assert ch.notifications() == []
    retry = topics.select("%RETRY%Q")
    assert retry is not None
    assert retry.write_queue_nums == 3


def test_apply_heartbeat_without_group_auto_creation_registers_but_makes_no_retry_topic() -> None:
    consumers, producers, topics, groups = _tables(auto_create_groups=False)
    ch = beat(consumers, producers, topics, groups, _hb("c1", "G"), "conn-a", 2.0)
    assert ch.notifications() == [("G", ["conn-a"])]  # no config: notify assumed on
    assert "%RETRY%G" not in topics
    assert consumers.client_ids("G") == ["c1"]


@pytest.mark.parametrize(
    "body",
    [
        _hb(None, "G"),
        _hb("c1", "G", ""),
        _hb("c1", "G", producers=("",)),
        HeartbeatData(
            client_id="c1",
            consumer_data_set=(
                ConsumerData(group_name="G", subscription_data_set=(SubscriptionData(topic="T"),)),
                ConsumerData(group_name="H", subscription_data_set=(SubscriptionData(topic=None),)),
            ),
        ),
    ],
)
def test_apply_heartbeat_rejects_a_malformed_body_whole(body: HeartbeatData) -> None:
    consumers, producers, topics, groups = _tables()
    before = topics.data_version, groups.data_version
    with pytest.raises(RemoteProtocolError):
        beat(consumers, producers, topics, groups, body, "conn-a", 2.0)
    assert consumers.groups() == []
    assert producers.groups() == []
    assert (topics.data_version, groups.data_version) == before


def test_apply_unregister_client() -> None:
    consumers, producers, topics, groups = _tables()
    for conn, cid in (("conn-a", "c1"), ("conn-b", "c2")):
        beat(consumers, producers, topics, groups, _hb(cid, "G"), conn, 1.0)
    ch = apply_unregister_client(
        "c1", "PG", None, "conn-a", 2.0, consumers=consumers, producers=producers, groups=groups
    )
    assert ch == Changes()
    assert [m.client_id for m in producers.connections("PG")] == ["c2"]
    assert consumers.client_ids("G") == ["c1", "c2"]
    ch = apply_unregister_client(
        "c1", None, "G", "conn-a", 3.0, consumers=consumers, producers=producers, groups=groups
    )
    assert ch.notifications() == [("G", ["conn-b"])]
    assert consumers.client_ids("G") == ["c2"]


# ------------------------------------------------------------------ epochs (the view fence)

_ACTIONS = ("join", "leave", "close", "expire", "beat", "bump")


@settings(max_examples=60, deadline=None)
@given(
    actions=st.lists(st.tuples(st.sampled_from(_ACTIONS), st.integers(0, 3)), min_size=1, max_size=30),
    base=st.integers(0, 5),
)
def test_a_groups_epoch_grows_on_every_change_of_its_members_and_never_repeats(
    actions: list[tuple[str, int]], base: int
) -> None:
    """Random joins, leaves, closes, expiries, plain heartbeats and bumps: the epoch moves exactly
    when the member list changed (or a bump said so), only up, so a list that comes back to what
    it was (A -> B -> A) never gets an epoch it had before."""
    print(f"drawn: base generation {base}, actions {actions}")
    reg: ConsumerRegistry[str] = ConsumerRegistry(
        ConsumerRegistryConfig(channel_expired_timeout=10.0), epoch_base=base << 32
    )
    now = 0.0
    live: dict[str, float] = {}  # conn -> last heartbeat
    seen: list[int] = [reg.epoch("g")]
    assert seen[0] == base << 32
    for action, n in actions:
        conn = f"conn{n}"
        before = sorted(reg.client_ids("g"))
        now += 1.0
        if action in ("join", "beat"):
            if action == "beat" and conn not in live:
                continue
            heartbeat(reg, conn, f"c@{n}", now, [sub("T")])
            live[conn] = now
        elif action == "leave":
            apply_unregister_client(
                f"c@{n}", None, "g", conn, now, consumers=reg, producers=ProducerRegistry(10.0),
                groups=SubscriptionGroupManager(now=now),
            )  # fmt: skip
            live.pop(conn, None)
        elif action == "close":
            reg.connection_closed(conn)
            live.pop(conn, None)
        elif action == "expire":
            now += 11.0 if live.get(conn) is not None else 0.0
            reg.scan_expired(now)
            live = {c: t for c, t in live.items() if now - t <= 10.0}
        else:
            reg.bump(["g"])
        epoch = reg.epoch("g")
        changed = sorted(reg.client_ids("g")) != before or action == "bump"
        assert (epoch > seen[-1]) if changed else (epoch == seen[-1]), (action, n, before)
        if changed:
            assert epoch not in seen
        seen.append(epoch)


def test_the_boot_generation_counts_starts_so_epochs_of_two_runs_never_meet(tmp_path: Path) -> None:
    assert [next_boot_generation(tmp_path, 1000.5) for _ in range(3)] == [1000, 1001, 1002]
    assert next_boot_generation(tmp_path, 5000.0) == 5000  # the clock is ahead: it wins
    assert next_boot_generation(tmp_path, 10.0) == 5001  # the clock went back: the count wins
    (tmp_path / GENERATION_FILE).write_text("damaged")
    assert next_boot_generation(tmp_path, 6000.0) == 6000  # lost count: the clock still moved on
    assert (tmp_path / GENERATION_FILE).read_text() == "6000\n"
