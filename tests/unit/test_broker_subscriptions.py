"""Subscription group configs: RocketMQ's defaults, built-in groups, auto-creation, admin edits."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.broker.subscriptions import (
    BUILTIN_SUBSCRIPTION_GROUPS,
    SubscriptionGroupChange,
    SubscriptionGroupManager,
    SubscriptionGroupTable,
    is_sys_consumer_group,
)
from rocketq.errors import ConfigError
from rocketq.protocol.bodies import DataVersion, SubscriptionGroupConfig, SubscriptionGroupWrapper


def test_defaults_are_rocketmqs() -> None:
    config = SubscriptionGroupConfig(group_name="G")
    assert config.consume_enable is True
    assert config.consume_from_min_enable is True
    assert config.consume_broadcast_enable is True
    assert config.retry_queue_nums == 1
    assert config.retry_max_times == 16
    assert config.broker_id == 0
    assert config.which_broker_when_consume_slowly == 1
    assert config.notify_consumer_ids_changed_enable is True


def test_builtin_groups() -> None:
    m = SubscriptionGroupManager(now=0.0)
    assert set(m.groups()) == set(BUILTIN_SUBSCRIPTION_GROUPS)
    assert "TOOLS_CONSUMER" in m
    assert "CID_ONS-HTTP-PROXY" in m
    assert len(m) == 7


def test_find_auto_creates_with_defaults_and_notifies_once() -> None:
    changes: list[SubscriptionGroupChange] = []
    m = SubscriptionGroupManager(now=0.0, on_change=changes.append)
    v0 = m.data_version
    assert m.get("G") is None
    config = m.find("G", now=5.0)
    assert config == SubscriptionGroupConfig(group_name="G")
    assert m.get("G") == config
    assert m.data_version == DataVersion(5000, v0.counter + 1)
    assert m.find("G", now=6.0) == config  # found: no second creation
    assert [(c.kind, c.group) for c in changes] == [("auto-create", "G")]


def test_auto_create_off_except_for_system_groups() -> None:
    m = SubscriptionGroupManager(now=0.0, auto_create_subscription_group=False)
    assert m.find("G", now=1.0) is None
    assert "G" not in m
    assert is_sys_consumer_group("CID_RMQ_SYS_TRANS")
    assert m.find("CID_RMQ_SYS_TRANS", now=1.0) is not None


def test_notify_flag_lookup() -> None:
    m = SubscriptionGroupManager(now=0.0)
    assert m.notify_enabled("unknown") is True  # as RocketMQ's heartbeat assumes
    m.update(SubscriptionGroupConfig(group_name="Quiet", notify_consumer_ids_changed_enable=False), now=1.0)
    assert m.notify_enabled("Quiet") is False


def test_update_disable_delete() -> None:
    changes: list[SubscriptionGroupChange] = []
    m = SubscriptionGroupManager(now=0.0, on_change=changes.append)
    assert m.update(SubscriptionGroupConfig(group_name="G", retry_max_times=3), now=1.0) is None
    assert m.disable_consume("G", now=2.0)
    config = m.get("G")
    assert config is not None
    assert config.consume_enable is False
    assert config.retry_max_times == 3
    assert not m.disable_consume("nope", now=2.0)
    deleted = m.delete("G", now=3.0)
    assert deleted is not None
    assert deleted.group_name == "G"
    assert m.delete("G", now=4.0) is None
    assert [c.kind for c in changes] == ["update", "disable", "delete"]
    with pytest.raises(ConfigError):
        m.update(SubscriptionGroupConfig(group_name=None), now=5.0)


def test_wrapper_load_and_store_table(tmp_path: Path) -> None:
    path = tmp_path / "subscriptionGroup.json"
    table = SubscriptionGroupTable(path)
    m = SubscriptionGroupManager(now=1.0, table=table)
    m.find("G", now=2.0)
    m.update(SubscriptionGroupConfig(group_name="TOOLS_CONSUMER", retry_queue_nums=4), now=3.0)
    table.persist()
    reread = SubscriptionGroupTable(path)
    reread.load()
    again = SubscriptionGroupManager(now=10.0, table=reread)
    assert again.table() == m.table()
    assert again.data_version == m.data_version
    tools = again.get("TOOLS_CONSUMER")
    assert tools is not None
    assert tools.retry_queue_nums == 4  # disk wins over the built-in default
    body = again.wrapper().encode()
    fresh = SubscriptionGroupManager(now=0.0)
    fresh.load(SubscriptionGroupWrapper.decode(body))
    assert fresh.table() == again.table()
    with pytest.raises(ConfigError):
        fresh.load(
            SubscriptionGroupWrapper(subscription_group_table={"A": SubscriptionGroupConfig(group_name="B")})
        )
