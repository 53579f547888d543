"""Offset stores: in-memory rules and the broadcasting file in RocketMQ's format."""

from __future__ import annotations

import asyncio
from pathlib import Path

from rocketq.client.config import ReadOffsetType
from rocketq.client.consumer.offset_store import LocalFileOffsetStore
from rocketq.models import MessageQueue

Q0 = MessageQueue("T", "broker-a", 0)
Q1 = MessageQueue("T", "broker-a", 1)
OTHER = MessageQueue("U", "broker-b", 3)


def test_update_offset_increase_only_never_moves_back() -> None:
    store = LocalFileOffsetStore("g", "127.0.0.1@DEFAULT", "/nonexistent")
    store.update_offset(Q0, 10, True)
    store.update_offset(Q0, 5, True)
    assert store.memory_offset(Q0) == 10
    store.update_offset(Q0, 5, False)  # a reset may move it back
    assert store.memory_offset(Q0) == 5
    store.remove_offset(Q0)
    assert store.memory_offset(Q0) == -1
    assert asyncio.run(store.read_offset(Q0, ReadOffsetType.READ_FROM_MEMORY)) == -1


def test_local_file_round_trip_in_rocketmq_layout(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("grp", "127.0.0.1@DEFAULT", str(tmp_path))
    store.update_offset(Q0, 12, True)
    store.update_offset(Q1, 7, True)
    store.update_offset(OTHER, 3, True)
    asyncio.run(store.persist_all([Q0, Q1]))
    path = tmp_path / "127.0.0.1@DEFAULT" / "grp" / "offsets.json"
    assert store.path == path
    text = path.read_text()
    assert text.startswith('{\n\t"offsetTable":{{')  # fastjson PrettyFormat, object keys
    assert '"brokerName":"broker-a"' in text.replace("\n", "").replace("\t", "")
    assert "broker-b" not in text  # only the queues asked for, as Java's persistAll writes

    fresh = LocalFileOffsetStore("grp", "127.0.0.1@DEFAULT", str(tmp_path))
    asyncio.run(fresh.load())
    assert fresh.clone_offset_table() == {Q0: 12, Q1: 7}
    assert asyncio.run(fresh.read_offset(Q1, ReadOffsetType.READ_FROM_STORE)) == 7
    assert asyncio.run(fresh.read_offset(OTHER, ReadOffsetType.READ_FROM_STORE)) == -1
    assert asyncio.run(fresh.read_offset(Q0, ReadOffsetType.MEMORY_FIRST_THEN_STORE)) == 12


def test_a_damaged_file_falls_back_to_the_backup(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("grp", "c@1", str(tmp_path))
    store.update_offset(Q0, 1, True)
    asyncio.run(store.persist_all([Q0]))
    store.update_offset(Q0, 2, True)
    asyncio.run(store.persist_all([Q0]))  # the first file became offsets.json.bak
    store.path.write_text("{not json")
    fresh = LocalFileOffsetStore("grp", "c@1", str(tmp_path))
    asyncio.run(fresh.load())
    assert fresh.memory_offset(Q0) == 1


def test_java_written_offsets_file_is_read(tmp_path: Path) -> None:
    # the layout LocalFileOffsetStore writes in Java (OffsetSerializeWrapper.toJson(true))
    java = (
        '{\n\t"offsetTable":{{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":1,'
        '\n\t\t\t"topic":"T"\n\t\t}:42\n\t}\n}'
    )
    store = LocalFileOffsetStore("grp", "c@1", str(tmp_path))
    store.path.parent.mkdir(parents=True)
    store.path.write_text(java)
    asyncio.run(store.load())
    assert store.clone_offset_table() == {Q1: 42}
