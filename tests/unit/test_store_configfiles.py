"""Consumer offsets, topic configs and subscription groups on disk: format, atomicity, backups."""

from __future__ import annotations

from pathlib import Path

import pytest

from rocketq.broker.subscriptions import SubscriptionGroupTable
from rocketq.broker.topics import TopicConfigTable
from rocketq.errors import StoreCorruptError
from rocketq.protocol.bodies import SubscriptionGroupConfig, TopicConfig
from rocketq.store import ConsumerOffsetTable, MessageStore, read_with_backup, write_atomically


def test_consumer_offsets_use_rocketmq_format(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    table = ConsumerOffsetTable(path)
    assert table.query_offset("G", "T", 0) == -1
    table.commit_offset("G", "T", 0, 12)
    table.commit_offset("G", "T", 1, 7)
    table.commit_offset("H", "T", 0, 3)
    table.commit_offset("G", "U", 2, 5)
    assert table.persist_if_dirty()
    assert not table.persist_if_dirty()
    assert path.read_text() == '{"offsetTable":{"T@G":{0:12,1:7},"T@H":{0:3},"U@G":{2:5}}}'
    again = ConsumerOffsetTable(path)
    again.load()
    assert again.query_offset("G", "T", 1) == 7
    assert again.query_offsets("G", "T") == {0: 12, 1: 7}
    assert again.topics_of_group("G") == {"T", "U"}
    assert again.groups_of_topic("T") == {"G", "H"}
    again.clone_offsets("G", "K", "T")
    assert again.query_offsets("K", "T") == {0: 12, 1: 7}
    again.remove_group("G")
    again.remove_topic("U")
    assert again.table() == {"T@H": {0: 3}, "T@K": {0: 12, 1: 7}}


def test_offsets_written_by_rocketmq_are_read(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    # what a Java broker writes (pretty format, tabs, integer keys bare)
    path.write_text('{\n\t"offsetTable":{\n\t\t"%RETRY%G@G":{0:0\n\t\t},\n\t\t"T@G":{1:42,0:40}\n\t}\n}')
    table = ConsumerOffsetTable(path)
    table.load()
    assert table.query_offset("G", "T", 0) == 40
    assert table.query_offset("G", "%RETRY%G", 0) == 0


def test_atomic_write_keeps_the_previous_content_as_bak(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "f.json"
    write_atomically(path, b"one")
    assert path.read_bytes() == b"one"
    assert not path.with_name("f.json.bak").exists()
    write_atomically(path, b"two")
    assert path.read_bytes() == b"two"
    assert path.with_name("f.json.bak").read_bytes() == b"one"
    assert sorted(p.name for p in path.parent.iterdir()) == ["f.json", "f.json.bak"]


def test_corrupt_main_file_falls_back_to_the_backup(tmp_path: Path) -> None:
    path = tmp_path / "consumerOffset.json"
    table = ConsumerOffsetTable(path)
    table.commit_offset("G", "T", 0, 1)
    table.persist()
    table.commit_offset("G", "T", 0, 2)
    table.persist()
    path.write_bytes(b'{"offsetTable":{"T@G":{0:')  # torn by a crash of some other writer
    again = ConsumerOffsetTable(path)
    again.load()
    assert again.query_offset("G", "T", 0) == 1
    path.write_bytes(b"")  # empty: also the backup
    again = ConsumerOffsetTable(path)
    again.load()
    assert again.query_offset("G", "T", 0) == 1


def test_both_files_corrupt_is_an_error_not_an_empty_table(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b"{nope")
    path.with_name("x.json.bak").write_bytes(b"[also nope")
    with pytest.raises(StoreCorruptError):
        read_with_backup(path, ConsumerOffsetTable(path).decode)
    assert read_with_backup(tmp_path / "missing.json", bytes) is None


def test_topic_and_group_tables_round_trip_with_data_version(tmp_path: Path) -> None:
    topics = TopicConfigTable(tmp_path / "topics.json")
    topics.put(TopicConfig(topic_name="T", read_queue_nums=4, write_queue_nums=4), now_ms=1000)
    topics.put_all([TopicConfig(topic_name="U"), TopicConfig(topic_name="V", perm=4)], now_ms=2000)
    topics.delete("V", now_ms=3000)
    assert topics.data_version.counter == 3
    topics.persist()
    text = (tmp_path / "topics.json").read_text()
    assert text.startswith(
        '{"dataVersion":{"counter":3,"timestamp":3000},"topicConfigTable":{"T":{"order":false,'
    )
    loaded = TopicConfigTable(tmp_path / "topics.json")
    loaded.load()
    assert loaded.all() == topics.all()
    assert "T" in loaded
    assert len(loaded) == 2
    assert loaded.wrapper().data_version.counter == 3

    groups = SubscriptionGroupTable(tmp_path / "subscriptionGroup.json")
    groups.put(SubscriptionGroupConfig(group_name="G", retry_max_times=3), now_ms=5)
    groups.persist()
    loaded_groups = SubscriptionGroupTable(tmp_path / "subscriptionGroup.json")
    loaded_groups.load()
    cfg = loaded_groups.get("G")
    assert cfg is not None
    assert cfg.retry_max_times == 3
    assert groups.delete("G", now_ms=6) is not None
    assert groups.delete("G", now_ms=7) is None


def test_store_persists_its_tables_at_close_and_loads_them(tmp_path: Path) -> None:
    def open_store() -> tuple[MessageStore, TopicConfigTable, SubscriptionGroupTable]:
        """A store with the broker's tables handed to it, as the broker does."""
        store = MessageStore(tmp_path, start_services=False)
        topics = TopicConfigTable(store.config_dir / "topics.json")
        groups = SubscriptionGroupTable(store.config_dir / "subscriptionGroup.json")
        store.add_config_table(topics)
        store.add_config_table(groups)
        return store, topics, groups

    store, topic_configs, subscription_groups = open_store()
    with store:
        store.consumer_offsets.commit_offset("G", "T", 0, 9)
        topic_configs.put(TopicConfig(topic_name="T"), now_ms=1)
        subscription_groups.put(SubscriptionGroupConfig(group_name="G"), now_ms=1)
    names = sorted(p.name for p in (tmp_path / "config").iterdir())
    assert names == ["consumerOffset.json", "subscriptionGroup.json", "topics.json"]
    store, topic_configs, subscription_groups = open_store()
    with store:
        assert store.consumer_offsets.query_offset("G", "T", 0) == 9
        assert topic_configs.get("T") == TopicConfig(topic_name="T")
        assert "G" in subscription_groups
