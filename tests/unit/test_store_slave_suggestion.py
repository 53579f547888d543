"""The store's ``suggest_pulling_from_slave``: RocketMQ 4.9.4's rule in ``getMessage`` - the bytes
between the commit log's end and the last consume-queue entry a pull looked at exceed
``accessMessageInMemoryMaxRatio`` percent of the machine's memory (here an injected figure)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.errors import ConfigError
from rocketq.protocol.message import encode_message
from rocketq.store import MessageStore, StoreConfig
from rocketq.store.config import total_physical_memory


def test_the_threshold_is_the_ratio_of_memory() -> None:
    assert StoreConfig(physical_memory=1 << 20, access_message_in_memory_max_ratio=40).in_memory_bytes == int(
        (1 << 20) * 0.4
    )
    # RocketMQ's defaults: 40 percent of what the OS says the machine has
    assert StoreConfig().in_memory_bytes == int(total_physical_memory() * 0.4)
    assert total_physical_memory() > 0
    for bad in (-1, 101):
        with pytest.raises(ConfigError):
            StoreConfig(access_message_in_memory_max_ratio=bad)
    with pytest.raises(ConfigError):
        StoreConfig(physical_memory=-5)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=120),
    others=st.lists(st.integers(0, 3000), max_size=30),
    memory=st.integers(0, 400_000),
    ratio=st.integers(0, 100),
    data=st.data(),
)
def test_a_pull_far_behind_the_log_end_is_flagged(
    tmp_path_factory: pytest.TempPathFactory,
    sizes: list[int],
    others: list[int],
    memory: int,
    ratio: int,
    data: st.DataObject,
) -> None:
    root = tmp_path_factory.mktemp("suggest")
    config = StoreConfig(physical_memory=memory, access_message_in_memory_max_ratio=ratio)
    threshold = int(memory * ratio / 100)
    with MessageStore(root, config, start_services=False) as store:
        phys: list[int] = []
        for i, size in enumerate(sizes):
            put = store.put_message("T", 0, encode_message(topic="T", body=b"x" * size))
            phys.append(put.commit_log_offset)
            if i < len(others):  # another queue's messages in between: the log runs further
                store.put_message("U", 0, encode_message(topic="U", body=b"y" * others[i]))
        end = store.commit_log_max_offset
        offset = data.draw(st.integers(0, len(sizes) - 1), label="offset")
        max_count = data.draw(st.integers(1, 40), label="max_count")
        got = store.get_messages("T", 0, offset, max_count)
        assert got.message_count == min(max_count, len(sizes) - offset)
        # the last entry looked at: the one that stopped a full batch, else the last taken
        last = min(offset + max_count, len(sizes) - 1)
        assert got.suggest_pulling_from_slave is (end - phys[last] > threshold)
        # out-of-range reads are never flagged (4.9 sets the flag only where it scanned entries)
        assert not store.get_messages("T", 0, len(sizes), max_count).suggest_pulling_from_slave


def test_a_whole_backlog_far_behind_then_caught_up(tmp_path: Path) -> None:
    config = StoreConfig(physical_memory=100_000, access_message_in_memory_max_ratio=10)  # 10,000 bytes
    with MessageStore(tmp_path, config, start_services=False) as store:
        for _ in range(100):
            store.put_message("T", 0, encode_message(topic="T", body=b"z" * 500))
        assert store.get_messages("T", 0, 0, 32).suggest_pulling_from_slave
        assert not store.get_messages("T", 0, 90, 32).suggest_pulling_from_slave
