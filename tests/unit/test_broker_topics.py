"""The topic config manager: built-in topics, auto-creation from TBW102, retry/DLQ, admin edits."""

from __future__ import annotations

import doctest
from pathlib import Path

import pytest

import rocketq.broker.topics as topics_module
from rocketq.broker.topics import (
    MemoryTopicTable,
    PermName,
    TopicChange,
    TopicConfigManager,
    TopicConfigTable,
    TopicManagerConfig,
)
from rocketq.errors import ConfigError
from rocketq.protocol.bodies import DataVersion, TopicConfig, TopicConfigSerializeWrapper, TopicFilterType
from rocketq.protocol.topics import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    dlq_topic,
    is_inherited,
    is_not_allowed_send_topic,
    is_readable,
    is_writeable,
    perm_to_string,
    retry_topic,
    validate_topic,
)

RW = 6
RWX = 7


def manager(changes: list[TopicChange] | None = None, **config: object) -> TopicConfigManager:
    cfg = TopicManagerConfig(**config)  # type: ignore[arg-type]
    return TopicConfigManager(cfg, now=1000.0, on_change=None if changes is None else changes.append)


def test_perm_bits_and_helpers() -> None:
    assert (PermName.PERM_READ, PermName.PERM_WRITE, PermName.PERM_INHERIT, PermName.PERM_PRIORITY) == (
        4,
        2,
        1,
        8,
    )
    assert PermName.PERM_READ | PermName.PERM_WRITE == RW
    assert perm_to_string(RW) == "RW-"
    assert perm_to_string(RWX) == "RWX"
    assert perm_to_string(4) == "R--"
    assert is_readable(4)
    assert not is_writeable(4)
    assert is_inherited(RWX)
    assert not is_inherited(RW)


def test_builtin_topics_as_rocketmq_494() -> None:
    m = manager(broker_name="broker-x", broker_cluster_name="C1")
    expected = {
        "SELF_TEST_TOPIC": (1, 1, RW),
        "TBW102": (8, 8, RWX),
        "BenchmarkTest": (1024, 1024, RW),
        "C1": (16, 16, RWX),
        "broker-x": (1, 1, RWX),
        "OFFSET_MOVED_EVENT": (1, 1, RW),
        "SCHEDULE_TOPIC_XXXX": (18, 18, RW),
        "C1_REPLY_TOPIC": (1, 1, RW),
    }
    table = m.table()
    assert set(table) == set(expected)
    for name, (read, write, perm) in expected.items():
        config = table[name]
        assert (config.topic_name, config.read_queue_nums, config.write_queue_nums, config.perm) == (
            name,
            read,
            write,
            perm,
        ), name
        assert config.topic_filter_type is TopicFilterType.SINGLE_TAG
        assert m.is_system_topic(name)
    assert not m.is_system_topic("TopicTest")
    assert m.is_system_topic("rmq_sys_anything")
    assert m.is_system_topic("RMQ_SYS_TRANS_HALF_TOPIC")


def test_builtin_switches() -> None:
    m = manager(
        auto_create_topic_enable=False,
        cluster_topic_enable=False,
        broker_topic_enable=False,
        trace_topic_enable=True,
        default_topic_queue_nums=4,
    )
    assert AUTO_CREATE_TOPIC_KEY_TOPIC not in m
    cluster = m.select("DefaultCluster")
    broker = m.select("broker-a")
    assert cluster is not None
    assert cluster.perm == PermName.PERM_INHERIT
    assert broker is not None
    assert broker.perm == PermName.PERM_INHERIT
    trace = m.select("RMQ_SYS_TRACE_TOPIC")
    assert trace is not None
    assert (trace.read_queue_nums, trace.write_queue_nums) == (1, 1)
    tbw = manager(default_topic_queue_nums=4).select("TBW102")
    assert tbw is not None
    assert tbw.write_queue_nums == 4


def test_config_validation() -> None:
    with pytest.raises(ConfigError):
        TopicManagerConfig(broker_name="")
    assert "host.example.com" in manager(broker_name="host.example.com")  # as RocketMQ: no name check
    with pytest.raises(ConfigError):
        TopicManagerConfig(default_topic_queue_nums=0)


def test_auto_create_takes_min_of_requested_and_tbw102_queues_and_drops_inherit() -> None:
    changes: list[TopicChange] = []
    m = manager(changes)
    before = m.data_version
    config = m.resolve_for_send("TopicTest", "TBW102", 4, now=2000.0, remote_addr="10.0.0.1:5")
    assert config == TopicConfig("TopicTest", 4, 4, RW, TopicFilterType.SINGLE_TAG, 0, False)
    assert m.select("TopicTest") == config
    assert m.data_version.counter == before.counter + 1
    assert m.data_version.timestamp == 2_000_000
    assert [(c.kind, c.topic) for c in changes] == [("auto-create", "TopicTest")]
    assert changes[0].data_version == m.data_version
    # A larger request is capped by TBW102's 8 write queues.
    big = m.resolve_for_send("Big", "TBW102", 64, now=2001.0)
    assert big is not None
    assert (big.read_queue_nums, big.write_queue_nums) == (8, 8)
    # An existing topic is returned as is, without a version change.
    version = m.data_version
    assert m.resolve_for_send("TopicTest", "TBW102", 16, now=2002.0) == config
    assert m.data_version == version


def test_auto_create_from_a_custom_default_topic_needs_inherit() -> None:
    m = manager()
    m.update(TopicConfig("Template", 3, 5, RWX, TopicFilterType.MULTI_TAG), now=1.0)
    made = m.create_in_send("FromTemplate", "Template", 8, 0, now=2.0)
    assert made == TopicConfig("FromTemplate", 5, 5, RW, TopicFilterType.MULTI_TAG, 0)
    m.update(TopicConfig("NoInherit", 4, 4, RW), now=3.0)
    assert m.create_in_send("X", "NoInherit", 4, 0, now=4.0) is None
    assert m.create_in_send("X", "Missing", 4, 0, now=4.0) is None
    assert "X" not in m


def test_auto_create_inherits_read_only_perm_without_inherit() -> None:
    m = manager()
    m.update(TopicConfig("ReadOnlyTemplate", 2, 2, int(PermName.PERM_READ | PermName.PERM_INHERIT)), now=1.0)
    made = m.create_in_send("Child", "ReadOnlyTemplate", 4, 0, now=2.0)
    assert made is not None
    assert made.perm == PermName.PERM_READ


def test_auto_create_disabled_answers_topic_not_exist() -> None:
    m = manager(auto_create_topic_enable=False)
    assert m.resolve_for_send("TopicTest", "TBW102", 4, now=1.0) is None
    assert "TopicTest" not in m


def test_auto_create_disabled_strips_inherit_from_a_persisted_tbw102() -> None:
    table = MemoryTopicTable()
    table.put(TopicConfig("TBW102", 8, 8, RWX), now_ms=0)
    m = TopicConfigManager(TopicManagerConfig(auto_create_topic_enable=False), now=1.0, table=table)
    assert m.resolve_for_send("TopicTest", "TBW102", 4, now=2.0) is None
    tbw = m.select("TBW102")
    assert tbw is not None
    assert tbw.perm == RW


def test_unknown_retry_topic_is_created_with_one_queue_when_auto_create_is_off() -> None:
    m = manager(auto_create_topic_enable=False)
    config = m.resolve_for_send("%RETRY%G", "TBW102", 4, now=1.0)
    assert config == TopicConfig("%RETRY%G", 1, 1, RW)
    unit = m.resolve_for_send("%RETRY%U", "TBW102", 4, now=1.0, unit_mode=True)
    assert unit is not None
    assert unit.topic_sys_flag == 2  # FLAG_UNIT_SUB


def test_unit_mode_send_flags_the_new_topic() -> None:
    m = manager()
    config = m.resolve_for_send("UnitTopic", "TBW102", 4, now=1.0, unit_mode=True)
    assert config is not None
    assert config.topic_sys_flag == 1  # FLAG_UNIT


def test_retry_topic_on_heartbeat_and_dlq_topic() -> None:
    changes: list[TopicChange] = []
    m = manager(changes)
    assert retry_topic("G") == "%RETRY%G"
    assert dlq_topic("G") == "%DLQ%G"
    retry = m.ensure_retry_topic("G", 1, now=5.0)
    assert retry == TopicConfig("%RETRY%G", 1, 1, RW, TopicFilterType.SINGLE_TAG, 0)
    dlq = m.ensure_dlq_topic("G", now=6.0)
    assert dlq == TopicConfig("%DLQ%G", 1, 1, RW)  # 4.9.4: RW, not write-only
    unit = m.ensure_retry_topic("U", 2, now=7.0, unit_mode=True)
    assert (unit.read_queue_nums, unit.topic_sys_flag) == (2, 2)
    assert [c.kind for c in changes] == ["create", "create", "create"]
    # A second heartbeat finds it: no change, no version bump, even with other numbers.
    version = m.data_version
    assert m.ensure_retry_topic("G", 3, now=8.0) == retry
    assert m.data_version == version
    assert len(changes) == 3


def test_admin_update_and_delete_bump_the_version_and_notify() -> None:
    changes: list[TopicChange] = []
    m = manager(changes)
    v0 = m.data_version
    assert m.update(TopicConfig("A", 4, 4, RW), now=10.0) is None
    old = m.update(TopicConfig("A", 8, 8, int(PermName.PERM_READ)), now=11.0)
    assert old == TopicConfig("A", 4, 4, RW)
    assert m.data_version.counter == v0.counter + 2
    assert m.delete("A", now=12.0) == TopicConfig("A", 8, 8, 4)
    assert m.delete("A", now=13.0) is None
    assert m.data_version.counter == v0.counter + 3
    assert [(c.kind, c.topic) for c in changes] == [("update", "A"), ("update", "A"), ("delete", "A")]
    with pytest.raises(ConfigError):
        m.update(TopicConfig(None), now=14.0)


def test_flag_valued_perm_is_stored_as_a_plain_number() -> None:
    m = manager()
    m.update(TopicConfig("Flags", 1, 1, PermName.PERM_READ | PermName.PERM_WRITE), now=1.0)
    stored = m.select("Flags")
    assert stored is not None
    assert type(stored.perm) is int
    assert b'"perm":6' in m.wrapper().encode()
    assert b"PERM_" not in m.wrapper().encode()


def test_order_topics_follow_the_name_server_list() -> None:
    changes: list[TopicChange] = []
    m = manager(changes)
    m.update(TopicConfig("O1"), now=1.0)
    m.update(TopicConfig("O2"), now=1.0)
    assert m.update_order_topics(["O1", "NotHere"], now=2.0)
    assert m.is_order_topic("O1")
    assert not m.is_order_topic("O2")
    assert not m.update_order_topics(["O1"], now=3.0)
    assert m.update_order_topics([], now=4.0)
    assert not m.is_order_topic("O1")
    assert [c.kind for c in changes].count("order") == 2


def test_failing_listener_does_not_undo_the_change() -> None:
    def boom(change: TopicChange) -> None:
        raise RuntimeError("listener down")

    m = TopicConfigManager(now=0.0, on_change=boom)
    assert m.resolve_for_send("T", "TBW102", 4, now=1.0) is not None
    assert "T" in m


def test_wrapper_and_load_round_trip() -> None:
    m = manager()
    m.update(TopicConfig("Persisted", 2, 3, RW), now=50.0)
    body = m.wrapper().encode()
    decoded = TopicConfigSerializeWrapper.decode(body)
    fresh = manager()
    fresh.load(decoded)
    assert fresh.table() == m.table()
    assert fresh.data_version == m.data_version
    with pytest.raises(ConfigError):
        fresh.load(TopicConfigSerializeWrapper(topic_config_table={"A": TopicConfig("B")}))
    nameless = TopicConfigSerializeWrapper(
        topic_config_table={"Nameless": TopicConfig(None, 1, 1)}, data_version=DataVersion(5, 9)
    )
    fresh.load(nameless)
    assert fresh.select("Nameless") == TopicConfig("Nameless", 1, 1)
    assert fresh.data_version == DataVersion(5, 9)


def test_persisted_store_table_wins_over_builtins(tmp_path: Path) -> None:
    path = tmp_path / "config" / "topics.json"
    written = TopicConfigTable(path)
    first = TopicConfigManager(now=1.0, table=written)
    first.resolve_for_send("Kept", "TBW102", 4, now=2.0)
    first.update(TopicConfig("SELF_TEST_TOPIC", 2, 2, RW), now=3.0)  # overrides a built-in
    written.persist()
    # A restarted broker loads the store's table first, then builds the manager over it.
    reread = TopicConfigTable(path)
    reread.load()
    again = TopicConfigManager(now=10.0, table=reread)
    assert again.table() == first.table()
    assert again.data_version == first.data_version  # nothing was missing: no bump at start
    self_test = again.select("SELF_TEST_TOPIC")
    assert self_test is not None
    assert self_test.read_queue_nums == 2


def test_topic_validation_and_send_restrictions() -> None:
    assert validate_topic("Topic_A-1%|b") is None
    assert validate_topic("") == "The specified topic is blank."
    assert validate_topic("   ") == "The specified topic is blank."
    assert validate_topic("a.b") is not None
    assert validate_topic("é") is not None
    assert validate_topic("x" * 127) is None
    assert validate_topic("x" * 128) == "The specified topic is longer than topic max length."
    assert is_not_allowed_send_topic("SCHEDULE_TOPIC_XXXX")
    assert is_not_allowed_send_topic("RMQ_SYS_TRANS_HALF_TOPIC")
    assert not is_not_allowed_send_topic("TBW102")


def test_module_doctests() -> None:
    failures, tried = doctest.testmod(topics_module)
    assert tried > 0
    assert failures == 0
