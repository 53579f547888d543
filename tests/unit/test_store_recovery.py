"""Start-up recovery: torn and corrupt commit-log tails, dirty and missing consume-queue entries."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from rocketq.errors import StoreCorruptError
from rocketq.protocol.message import decode_messages, encode_message
from rocketq.protocol.properties import tags_code
from rocketq.store import GetMessageStatus, MessageStore, StoreConfig

CFG = StoreConfig(commit_log_segment_size=8192, consume_queue_entries_per_file=16)


def record(queue_id: int, body: bytes, tags: str | None = None) -> bytes:
    props = {"TAGS": tags} if tags else {}
    return encode_message(topic="T", body=body, properties=props, queue_id=queue_id)


def fill(root: Path, n: int, queues: int = 2) -> list[tuple[int, int, int]]:
    """Append n messages round-robin over queues; returns (queue, commit offset, size) per message."""
    out = []
    with MessageStore(root, CFG, start_services=False) as store:
        for i in range(n):
            tags = "even" if i % 2 == 0 else "odd"
            r = store.put_message(
                "T", i % queues, record(i % queues, b"body-%03d" % i * 20, tags), tags_code(tags)
            )
            out.append((i % queues, r.commit_log_offset, r.wrote_bytes))
    return out


def crash(root: Path) -> None:
    """Make the next start believe the previous run died (the abort marker survives a crash)."""
    (root / "abort").touch()


def patch_commit_log(root: Path, offset: int, data: bytes) -> None:
    name = root / "commitlog" / f"{offset - offset % 8192:020d}"
    fd = os.open(name, os.O_WRONLY)
    try:
        os.pwrite(fd, data, offset % 8192)
    finally:
        os.close(fd)


def all_bodies(store: MessageStore, queue_id: int) -> list[bytes]:
    out: list[bytes] = []
    offset = store.min_offset("T", queue_id)
    while True:
        got = store.get_messages("T", queue_id, offset, 32)
        if got.status is not GetMessageStatus.FOUND:
            return out
        out += [m.body for m in decode_messages(got.data)]
        offset = got.next_begin_offset


@pytest.mark.parametrize("crashed", [True, False])
def test_torn_last_record_is_cut_off(tmp_path: Path, crashed: bool) -> None:
    msgs = fill(tmp_path, 30)
    queue, offset, size = msgs[-1]
    # the last record was only half written: its second half never reached the disk
    patch_commit_log(tmp_path, offset + size // 2, bytes(size - size // 2))
    if crashed:
        crash(tmp_path)
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        assert store.commit_log_max_offset == offset
        assert store.max_offset("T", queue) == 14  # the 15th message of queue 1 is gone
        assert all_bodies(store, queue) == [b"body-%03d" % i * 20 for i in range(1, 29, 2)]
        assert all_bodies(store, 0) == [b"body-%03d" % i * 20 for i in range(0, 30, 2)]
        # appending resumes exactly where the valid data ended
        again = store.put_message("T", queue, record(queue, b"again"))
        assert (again.commit_log_offset, again.queue_offset) == (offset, 14)


def test_corrupt_record_body_fails_its_crc_and_is_cut_with_everything_after(tmp_path: Path) -> None:
    msgs = fill(tmp_path, 30)
    _, offset, size = msgs[-3]
    patch_commit_log(tmp_path, offset + size - 40, b"\xff\xfe\xfd")  # flip bytes inside the body
    crash(tmp_path)
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        assert store.commit_log_max_offset == offset
        assert store.max_offset("T", 0) + store.max_offset("T", 1) == 27
        assert all_bodies(store, 0) == [b"body-%03d" % i * 20 for i in range(0, 27, 2)]
        assert all_bodies(store, 1) == [b"body-%03d" % i * 20 for i in range(1, 27, 2)]


def test_bad_magic_ends_the_log(tmp_path: Path) -> None:
    msgs = fill(tmp_path, 10)
    _, offset, _ = msgs[6]
    patch_commit_log(tmp_path, offset + 4, struct.pack(">i", 0x12345678))
    crash(tmp_path)
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        assert store.commit_log_max_offset == offset
        assert len(all_bodies(store, 0)) + len(all_bodies(store, 1)) == 6


def test_missing_consume_queue_entries_are_rebuilt_after_a_crash(tmp_path: Path) -> None:
    msgs = fill(tmp_path, 40)
    # lose the consume queues entirely (as if their pages never reached the disk)
    for q in (0, 1):
        qdir = tmp_path / "consumequeue" / "T" / str(q)
        for f in qdir.iterdir():
            f.unlink()
    crash(tmp_path)
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        assert store.max_offset("T", 0) == 20
        assert store.max_offset("T", 1) == 20
        got = store.get_messages("T", 0, 0, 32)
        found = decode_messages(got.data)
        assert [m.commit_log_offset for m in found] == [o for q, o, _ in msgs if q == 0][: len(found)]
        # tag codes were recomputed from the stored properties
        even = store.get_messages("T", 0, 0, 32, {tags_code("even")})
        assert even.message_count == got.message_count
        odd = store.get_messages("T", 1, 0, 32, {tags_code("even")})
        assert odd.status is GetMessageStatus.NO_MATCHED_MESSAGE


def test_truncated_consume_queue_tail_is_completed(tmp_path: Path) -> None:
    fill(tmp_path, 20, queues=1)
    cq_file = tmp_path / "consumequeue" / "T" / "0" / f"{16 * 20:020d}"
    cq_file.write_bytes(bytes(16 * 20))  # the second CQ file lost its 4 entries
    crash(tmp_path)
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        assert store.max_offset("T", 0) == 20
        assert all_bodies(store, 0) == [b"body-%03d" % i * 20 for i in range(20)]


def test_entries_pointing_past_the_valid_log_are_removed(tmp_path: Path) -> None:
    msgs = fill(tmp_path, 20, queues=1)
    _, offset, _ = msgs[15]
    # the commit log lost its last five records, the consume queue still names them
    patch_commit_log(tmp_path, offset, bytes(8))
    with MessageStore(tmp_path, CFG, start_services=False) as store:  # even after a clean stop
        assert store.max_offset("T", 0) == 15
        got = store.get_messages("T", 0, 15, 32)
        assert got.status is GetMessageStatus.OFFSET_OVERFLOW_ONE
        assert store.put_message("T", 0, record(0, b"x")).queue_offset == 15


def test_consume_queues_without_a_commit_log_are_dropped(tmp_path: Path) -> None:
    fill(tmp_path, 5)
    for f in (tmp_path / "commitlog").iterdir():
        f.unlink()
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        assert store.topics() == []
        assert store.put_message("T", 0, record(0, b"x")).queue_offset == 0


def test_crash_recovery_starts_from_the_checkpointed_segment(tmp_path: Path) -> None:
    now = [1_700_000_000.0]

    def clock() -> float:
        now[0] += 10.0  # ten seconds between appends
        return now[0]

    msgs = []
    with MessageStore(tmp_path, CFG, clock=clock, start_services=False) as store:
        for i in range(150):
            r = store.put_message("T", 0, record(0, b"body-%03d" % i * 20))
            msgs.append((r.commit_log_offset, r.wrote_bytes))
    assert len(os.listdir(tmp_path / "commitlog")) >= 5
    # corrupt a record in the first segment: a recovery that starts from the checkpoint's safe
    # segment (the newest, since everything was flushed) never looks there
    patch_commit_log(tmp_path, msgs[1][0] + 4, struct.pack(">i", 0))
    crash(tmp_path)
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        assert store.max_offset("T", 0) == 150
        assert store.commit_log_max_offset == msgs[-1][0] + msgs[-1][1]
    # without a usable checkpoint the whole log is scanned and the corruption found
    (tmp_path / "checkpoint").write_bytes(bytes(4096))
    crash(tmp_path)
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        assert store.max_offset("T", 0) == 1
        assert store.commit_log_max_offset == msgs[1][0]


def test_a_changed_segment_size_is_refused_not_guessed(tmp_path: Path) -> None:
    fill(tmp_path, 3)
    with pytest.raises(StoreCorruptError, match="expected 16384"):
        MessageStore(
            tmp_path,
            StoreConfig(commit_log_segment_size=16384, consume_queue_entries_per_file=16),
            start_services=False,
        )
    # the refusal left the directory usable with the right size
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        assert store.max_offset("T", 0) == 2
