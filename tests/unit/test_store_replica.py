"""A slave's store: raw commit-log bytes appended at the master's offsets, queues and index rebuilt."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketq.errors import StoreError
from rocketq.protocol.message import decode_messages, encode_message
from rocketq.protocol.properties import MessageConst, tags_code
from rocketq.store import MessageStore, StoreConfig

SMALL = StoreConfig(commit_log_segment_size=8192, consume_queue_entries_per_file=16)


def stream(master: MessageStore, slave: MessageStore, chunks: list[int]) -> None:
    """Copy the master's log to the slave as an HA link does, in chunks of the given sizes."""
    i = 0
    while slave.commit_log_max_offset < master.commit_log_max_offset:
        size = chunks[i % len(chunks)] if chunks else 32768
        i += 1
        data = master.read_commit_log(slave.commit_log_max_offset, size)
        assert data is not None
        slave.append_replica(slave.commit_log_max_offset, data)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(0, 900)), min_size=1, max_size=40),
    st.lists(st.integers(1, 5000), max_size=6),
)
def test_the_slave_serves_what_the_master_stored(
    tmp_path_factory: pytest.TempPathFactory, sends: list[tuple[int, int]], chunks: list[int]
) -> None:
    root = tmp_path_factory.mktemp("ha")
    with (
        MessageStore(root / "m", SMALL, start_services=False) as master,
        MessageStore(root / "s", SMALL, start_services=False) as slave,
    ):
        slave.become_replica()
        seen: list[tuple[str, int, int, int | None]] = []
        slave.add_arrival_listener(lambda t, q, m, c, p: seen.append((t, q, m, c)))
        for n, (qid, size) in enumerate(sends):
            props = {MessageConst.TAGS: f"t{qid}", MessageConst.KEYS: f"k{n}"}
            rec = encode_message(topic="T", queue_id=qid, body=bytes([n % 256]) * size, properties=props)
            master.put_message("T", qid, rec, tags_code(f"t{qid}"))
        stream(master, slave, chunks)
        assert slave.commit_log_max_offset == master.commit_log_max_offset
        assert slave.reput_offset >= master.commit_log_max_offset
        for qid in range(3):
            assert slave.max_offset("T", qid) == master.max_offset("T", qid)
            a = master.get_messages("T", qid, 0, 100)
            b = slave.get_messages("T", qid, 0, 100)
            assert [m.body for m in decode_messages(b.data)] == [m.body for m in decode_messages(a.data)]
        assert len(seen) == len(sends)
        assert {c for _, q, _, c in seen} == {tags_code(f"t{q}") for q, _ in sends}
        last = len(sends) - 1
        found = slave.query_message("T", f"k{last}", 4, 0, 2**62)
        assert len(found.messages) == 1


def test_a_slave_refuses_sends_and_bytes_out_of_place(tmp_path: Path) -> None:
    with MessageStore(tmp_path / "m", SMALL, start_services=False) as master:
        master.put_message("T", 0, encode_message(topic="T", body=b"x"))
        data = master.read_commit_log(0, 1 << 20)
        assert data is not None
        assert master.read_commit_log(len(data), 10) == b""
        assert master.read_commit_log(len(data) + 1, 10) is None
    with MessageStore(tmp_path / "s", SMALL, start_services=False) as slave:
        slave.become_replica()
        with pytest.raises(StoreError, match="slave"):
            slave.put_message("T", 0, encode_message(topic="T", body=b"x"))
        with pytest.raises(StoreError):
            slave.append_replica(5, data)  # not where its log ends, nor a segment start
        slave.append_replica(0, data[:10])
        with pytest.raises(StoreError):
            slave.append_replica(0, data)


def test_a_new_slave_starts_at_the_masters_last_segment(tmp_path: Path) -> None:
    with (
        MessageStore(tmp_path / "m", SMALL, start_services=False) as master,
        MessageStore(tmp_path / "s", SMALL, start_services=False) as slave,
    ):
        slave.become_replica()
        for n in range(30):
            master.put_message("T", 0, encode_message(topic="T", body=bytes(500) + bytes([n])))
        start = master.commit_log_max_offset - master.commit_log_max_offset % 8192
        data = master.read_commit_log(start, 1 << 20)
        assert data is not None
        slave.append_replica(start, data)
        assert slave.commit_log_min_offset == start
        got = slave.get_messages("T", 0, slave.min_offset("T", 0), 100)
        assert got.message_count == slave.max_offset("T", 0) - slave.min_offset("T", 0) > 0
        assert slave.max_offset("T", 0) == master.max_offset("T", 0)


def test_a_restarted_slave_resumes_where_its_whole_records_end(tmp_path: Path) -> None:
    with MessageStore(tmp_path / "m", SMALL, start_services=False) as master:
        for n in range(5):
            master.put_message("T", 0, encode_message(topic="T", body=bytes([n]) * 300))
        data = master.read_commit_log(0, 1 << 20)
        assert data is not None
        with MessageStore(tmp_path / "s", SMALL, start_services=False) as slave:
            slave.become_replica()
            slave.append_replica(0, data[:-10])  # the last record cut short
            assert slave.max_offset("T", 0) == 4
        with MessageStore(tmp_path / "s", SMALL, start_services=False) as slave:
            slave.become_replica()
            end = slave.commit_log_max_offset
            assert end < len(data) - 10
            assert slave.max_offset("T", 0) == 4
            slave.append_replica(end, data[end:])
            assert slave.max_offset("T", 0) == 5
