"""The message store: appends, pull reads, segments, restart, group commit, faults, retention."""

from __future__ import annotations

import errno
import os
import struct
import threading
import time
from collections.abc import Iterator
from concurrent.futures import wait
from pathlib import Path

import pytest

from rocketq.errors import ConfigError, StoreError, StoreFullError
from rocketq.protocol.message import BLANK_MAGIC_CODE, decode_messages, encode_message
from rocketq.protocol.properties import tags_code
from rocketq.store import FileIO, GetMessageStatus, MessageStore, StoreConfig
from rocketq.store.consumequeue import CQ_ENTRY

SMALL = StoreConfig(commit_log_segment_size=8192, consume_queue_entries_per_file=16)


def record(topic: str, queue_id: int, body: bytes, tags: str | None = None) -> bytes:
    props = {"TAGS": tags} if tags else {}
    return encode_message(topic=topic, body=body, properties=props, queue_id=queue_id, born_timestamp=1)


def put(store: MessageStore, topic: str, queue_id: int, body: bytes, tags: str | None = None) -> int:
    result = store.put_message(topic, queue_id, record(topic, queue_id, body, tags), tags_code(tags))
    return result.queue_offset


def bodies(data: bytes) -> list[bytes]:
    return [m.body for m in decode_messages(data)]


class Clock:
    """A settable wall clock (seconds)."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    with MessageStore(tmp_path / "store", SMALL, start_services=False) as s:
        yield s


def test_append_and_read_one_message(store: MessageStore) -> None:
    result = store.put_message("T", 3, record("T", 3, b"hello", "TagA"), tags_code("TagA"))
    assert (result.commit_log_offset, result.queue_offset, result.message_count) == (0, 0, 1)
    assert result.durable is None  # async flush
    got = store.get_messages("T", 3, 0, 32)
    assert got.status is GetMessageStatus.FOUND
    assert (got.message_count, got.next_begin_offset, got.min_offset, got.max_offset) == (1, 1, 0, 1)
    (msg,) = decode_messages(got.data)
    assert (msg.topic, msg.queue_id, msg.queue_offset, msg.commit_log_offset) == ("T", 3, 0, 0)
    assert msg.body == b"hello"
    assert msg.tags == "TagA"
    assert msg.store_timestamp == result.store_timestamp
    assert got.data == store.read_message_bytes(0)
    looked = store.look_message(0)
    assert looked is not None
    assert looked.body == b"hello"


def test_batch_is_one_unit_with_consecutive_offsets(store: MessageStore) -> None:
    put(store, "T", 0, b"first")
    recs = [record("T", 0, f"m{i}".encode(), "A" if i % 2 else "B") for i in range(5)]
    codes = [tags_code("A" if i % 2 else "B") for i in range(5)]
    result = store.put_messages("T", 0, recs, codes)
    assert result.queue_offset == 1
    assert result.message_count == 5
    assert result.commit_log_offsets[0] == result.commit_log_offset
    assert list(result.commit_log_offsets) == [
        result.commit_log_offset + sum(map(len, recs[:i])) for i in range(5)
    ]
    msgs = decode_messages(store.get_messages("T", 0, 1, 32).data)
    assert [m.queue_offset for m in msgs] == [1, 2, 3, 4, 5]
    assert [m.commit_log_offset for m in msgs] == list(result.commit_log_offsets)
    assert {m.store_timestamp for m in msgs} == {result.store_timestamp}


def test_records_cross_segments_with_a_blank_end_marker(tmp_path: Path) -> None:
    with MessageStore(tmp_path, SMALL, start_services=False) as store:
        body = b"x" * 1000
        size = len(record("T", 0, body + b"\0"))
        n = 30
        for i in range(n):
            put(store, "T", i % 2, body + bytes([i]))
        files = sorted(os.listdir(tmp_path / "commitlog"))
        assert files[:2] == ["00000000000000000000", "00000000000000008192"]
        assert all(len(f) == 20 and os.path.getsize(tmp_path / "commitlog" / f) == 8192 for f in files)
        per_segment = (8192 - 8) // size
        raw = (tmp_path / "commitlog" / files[0]).read_bytes()
        left, magic = struct.unpack_from(">ii", raw, per_segment * size)
        assert magic == BLANK_MAGIC_CODE
        assert left == 8192 - per_segment * size
        seen = []
        for q in (0, 1):
            offset = 0
            while True:
                got = store.get_messages("T", q, offset, 4)
                if got.status is not GetMessageStatus.FOUND:
                    assert got.status is GetMessageStatus.OFFSET_OVERFLOW_ONE
                    break
                seen += bodies(got.data)
                offset = got.next_begin_offset
        assert sorted(seen) == sorted(body + bytes([i]) for i in range(n))


def test_pull_statuses_and_suggested_offsets(store: MessageStore) -> None:
    assert store.get_messages("nope", 0, 0, 32).status is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    for i in range(3):
        put(store, "T", 0, b"m%d" % i)
    one = store.get_messages("T", 0, 3, 32)
    assert (one.status, one.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_ONE, 3)
    badly = store.get_messages("T", 0, 10, 32)
    assert (badly.status, badly.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 3)
    got = store.get_messages("T", 0, 1, 1)
    assert (got.status, got.message_count, got.next_begin_offset) == (GetMessageStatus.FOUND, 1, 2)


def test_tag_filter_skips_unmatched_and_reports_no_match(store: MessageStore) -> None:
    for i in range(10):
        put(store, "T", 0, b"%d" % i, "A" if i % 3 == 0 else "B")
    only_a = store.get_messages("T", 0, 0, 32, frozenset({tags_code("A")}))
    assert bodies(only_a.data) == [b"0", b"3", b"6", b"9"]
    assert only_a.next_begin_offset == 10
    none = store.get_messages("T", 0, 0, 32, {tags_code("C")})
    assert none.status is GetMessageStatus.NO_MATCHED_MESSAGE
    assert none.data == b""
    assert none.next_begin_offset == 10  # every entry examined, the consumer moves past them


def test_pull_limits_count_and_bytes_but_returns_at_least_one(tmp_path: Path) -> None:
    cfg = StoreConfig(max_transfer_count=4, max_transfer_bytes=600)
    with MessageStore(tmp_path, cfg, start_services=False) as store:
        for i in range(10):
            put(store, "T", 0, bytes([i]) * 200)
        got = store.get_messages("T", 0, 0, 32)
        assert got.message_count == 2
        assert got.next_begin_offset == 2
        assert store.get_messages("T", 0, 0, 32, max_bytes=10_000).message_count == 4
        assert store.get_messages("T", 0, 0, 32, max_bytes=1).message_count == 1


def test_clean_restart_keeps_everything_and_continues_offsets(tmp_path: Path) -> None:
    with MessageStore(tmp_path, SMALL, start_services=False) as store:
        for i in range(40):
            put(store, "T", i % 4, b"%d" % i * 50)
        end = store.commit_log_max_offset
    assert not (tmp_path / "abort").exists()
    with MessageStore(tmp_path, SMALL, start_services=False) as store:
        assert store.commit_log_max_offset == end
        assert [store.max_offset("T", q) for q in range(4)] == [10, 10, 10, 10]
        assert put(store, "T", 1, b"more") == 10
        msgs = decode_messages(store.get_messages("T", 1, 8, 32).data)
        assert [m.body for m in msgs] == [b"33" * 50, b"37" * 50, b"more"]
        assert msgs[-1].commit_log_offset == end or msgs[-1].commit_log_offset % 8192 == 0


def _rss_file() -> int:
    """This process's mapped file pages (``RssFile``), bytes."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("RssFile:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no RssFile in /proc/self/status")


def _fill_segments(root: Path, config: StoreConfig, segments: float) -> list[bytes]:
    """Bodies of 1 KiB, four queues, until the commit log spans ``segments`` segments."""
    sent: list[bytes] = []
    with MessageStore(root, config, start_services=False) as store:
        while store.commit_log_max_offset < segments * config.commit_log_segment_size:
            q = len(sent) // 32 % 4
            batch = [b"%06d" % (len(sent) + i) + os.urandom(1018) for i in range(32)]
            store.put_messages("T", q, [record("T", q, body) for body in batch])
            sent += batch
    return sent


@pytest.mark.parametrize("crashed", [False, True])
def test_a_restart_reads_every_record_back_after_recovery_lets_go_of_its_pages(
    tmp_path: Path, crashed: bool
) -> None:
    config = StoreConfig(commit_log_segment_size=4 << 20)
    sent = _fill_segments(tmp_path, config, 3.5)
    if crashed:
        (tmp_path / "abort").touch()
    with MessageStore(tmp_path, config, start_services=False) as store:
        got: dict[int, list[bytes]] = {}
        for q in range(4):
            offset, got[q] = 0, []
            while (r := store.get_messages("T", q, offset, 32)).status is GetMessageStatus.FOUND:
                got[q] += bodies(r.data)
                offset = r.next_begin_offset
        # batches of 32 went round-robin over the four queues, each queue in its order
        assert got == {q: [b for i, b in enumerate(sent) if i // 32 % 4 == q] for q in range(4)}
        assert put(store, "T", 0, b"after") == len(got[0])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RssFile from /proc (Linux)")
def test_a_clean_restart_does_not_keep_the_scanned_log_in_its_resident_set(tmp_path: Path) -> None:
    config = StoreConfig(commit_log_segment_size=4 << 20)
    _fill_segments(tmp_path, config, 3.5)  # recovery after a clean stop scans the last three segments
    before = _rss_file()
    with MessageStore(tmp_path, config, start_services=False) as store:
        grown = _rss_file() - before
        assert store.commit_log_max_offset > 3 * config.commit_log_segment_size
    # the scan read ~10 MiB through the mapping; without the release all of it stays resident
    assert grown < 2 << 20, f"RssFile grew by {grown / (1 << 20):.1f} MiB over the recovery"


def test_store_directory_is_locked(tmp_path: Path) -> None:
    with (
        MessageStore(tmp_path, SMALL, start_services=False),
        pytest.raises(StoreError, match="another process"),
    ):
        MessageStore(tmp_path, SMALL, start_services=False)


def test_bad_input_is_refused_without_side_effects(store: MessageStore) -> None:
    with pytest.raises(ConfigError):
        store.put_messages("T", 0, [])
    with pytest.raises(ConfigError):
        store.put_message("T", 0, b"\x00" * 200)
    with pytest.raises(ConfigError):
        store.put_message("T", 0, record("T", 0, b"x" * 9000))  # bigger than a segment
    with pytest.raises(ConfigError):
        store.put_message("../evil", 0, record("../evil", 0, b"x"))
    assert store.commit_log_max_offset == 0


def test_arrival_listener_hears_every_append(store: MessageStore) -> None:
    heard: list[tuple[str, int, int]] = []
    store.add_arrival_listener(lambda t, q, m, *_: heard.append((t, q, m)))
    put(store, "T", 2, b"a")
    store.put_messages("T", 2, [record("T", 2, b"b"), record("T", 2, b"c")])
    assert heard == [("T", 2, 1), ("T", 2, 3)]


def test_arrival_listener_gets_the_tag_code_and_properties_of_one_message(store: MessageStore) -> None:
    """What a held pull's filters need, as arguments: RocketMQ's arriving listener's tag code and
    properties (a batch has no single tag code: ``None``, every held pull of the queue re-runs)."""
    heard: list[tuple[int | None, object]] = []
    store.add_arrival_listener(lambda t, q, m, code, props: heard.append((code, props)))
    props = {"TAGS": "TagA", "a": "1"}
    store.put_message("T", 0, record("T", 0, b"a", "TagA"), tags_code("TagA"), props)
    put(store, "T", 0, b"b", "TagB")
    store.put_messages("T", 0, [record("T", 0, b"c", "TagA")], [tags_code("TagA")])
    assert heard == [(tags_code("TagA"), props), (tags_code("TagB"), None), (None, None)]


def test_offset_by_timestamp_finds_exact_or_nearest(tmp_path: Path) -> None:
    clock = Clock(1000.0)
    with MessageStore(tmp_path, SMALL, clock=clock, start_services=False) as store:
        for i in range(10):
            clock.now = 1000.0 + i  # store times 1_000_000, 1_001_000, ... ms
            put(store, "T", 0, b"%d" % i)
        assert store.offset_by_time("T", 0, 1_004_000) == 4
        assert store.offset_by_time("T", 0, 1_004_400) == 4  # nearer to 4 than 5
        assert store.offset_by_time("T", 0, 1_004_600) == 5
        assert store.offset_by_time("T", 0, 1_004_500) == 4  # a tie goes to the earlier
        assert store.offset_by_time("T", 0, 5) == 0
        assert store.offset_by_time("T", 0, 2_000_000) == 9
        assert store.offset_by_time("none", 0, 1) == 0
        assert store.earliest_message_time("T", 0) == 1_000_000
        assert store.store_time_at("T", 0, 7) == 1_007_000
        assert store.earliest_store_time() == 1_000_000


class FaultyIO(FileIO):
    """Real file I/O that fails writes with a chosen errno while ``fail`` is set."""

    def __init__(self) -> None:
        self.fail: int | None = None
        self.partial = False
        self.sync_delay = 0.0
        self.syncs = 0

    def pwrite(self, fd: int, data: bytes | bytearray | memoryview, offset: int) -> int:
        if self.fail is not None:
            if self.partial and len(data) > 16:
                os.pwrite(fd, memoryview(data)[: len(data) // 2], offset)
                self.partial = False
                return len(data) // 2
            raise OSError(self.fail, os.strerror(self.fail))
        return super().pwrite(fd, data, offset)

    def fdatasync(self, fd: int) -> None:
        self.syncs += 1
        if self.sync_delay:
            time.sleep(self.sync_delay)
        super().fdatasync(fd)


def test_full_disk_fails_the_append_and_loses_nothing(tmp_path: Path) -> None:
    io = FaultyIO()
    with MessageStore(tmp_path, SMALL, io=io, start_services=False) as store:
        for i in range(5):
            put(store, "T", 0, b"ok%d" % i)
        end = store.commit_log_max_offset
        io.fail = errno.ENOSPC
        io.partial = True  # half the record reaches the disk before the error
        with pytest.raises(StoreFullError):
            put(store, "T", 0, b"lost")
        with pytest.raises(StoreFullError):
            store.put_messages("T", 0, [record("T", 0, b"lost-batch")] * 3)
        with pytest.raises(StoreFullError):
            put(store, "Fresh", 0, b"lost")  # a queue that never got a message
        assert store.commit_log_max_offset == end
        assert store.max_offset("T", 0) == 5
        assert store.get_messages("Fresh", 0, 0, 32).status is GetMessageStatus.NO_MESSAGE_IN_QUEUE
        io.fail = errno.EIO
        with pytest.raises(StoreError) as info:
            put(store, "T", 0, b"lost")
        assert not isinstance(info.value, StoreFullError)
        io.fail = None  # space is back
        assert put(store, "T", 0, b"after") == 5
        assert bodies(store.get_messages("T", 0, 0, 32).data) == [*(b"ok%d" % i for i in range(5)), b"after"]
    # and a crash-recovery of the same files agrees
    (tmp_path / "abort").touch()
    with MessageStore(tmp_path, SMALL, start_services=False) as store:
        assert bodies(store.get_messages("T", 0, 0, 32).data) == [*(b"ok%d" % i for i in range(5)), b"after"]


def test_sync_flush_shares_fsyncs_between_concurrent_appenders(tmp_path: Path) -> None:
    io = FaultyIO()
    io.sync_delay = 0.005  # a disk whose fsync takes 5 ms
    cfg = StoreConfig(flush="sync", commit_log_segment_size=1 << 20)
    threads, per_thread = 16, 20
    with MessageStore(tmp_path, cfg, io=io, start_services=False) as store:
        durable_ok: list[bool] = []

        def appender(n: int) -> None:
            for i in range(per_thread):
                result = store.put_message("T", n % 4, record("T", n % 4, b"%d-%d" % (n, i)))
                assert result.durable is not None
                result.durable.result(timeout=10)
                durable_ok.append(
                    store.commit_log.flushed_offset >= result.commit_log_offset + result.wrote_bytes
                )

        workers = [threading.Thread(target=appender, args=(n,)) for n in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        total = threads * per_thread
        assert len(durable_ok) == total
        assert all(durable_ok)
        # every append waited for an fsync covering it, yet far fewer fsyncs than appends ran
        assert 0 < store.group_commit_fsyncs <= total // 4


def test_sync_flush_future_for_a_single_appender(tmp_path: Path) -> None:
    with MessageStore(tmp_path, StoreConfig(flush="sync"), start_services=False) as store:
        results = [store.put_message("T", 0, record("T", 0, b"%d" % i)) for i in range(5)]
        futures = [r.durable for r in results if r.durable is not None]
        assert len(futures) == 5
        _, not_done = wait(futures, timeout=10)
        assert not not_done
        assert all(f.exception() is None for f in futures)
        # appends that asked before the same fsync share its future
        assert len({id(f) for f in futures}) <= 5


def test_failed_fsync_stops_writes(tmp_path: Path) -> None:
    class BadSync(FileIO):
        def fdatasync(self, fd: int) -> None:
            raise OSError(errno.EIO, "I/O error")

    with MessageStore(tmp_path, StoreConfig(flush="sync"), io=BadSync(), start_services=False) as store:
        result = store.put_message("T", 0, record("T", 0, b"x"))
        assert result.durable is not None
        with pytest.raises(StoreError):
            result.durable.result(timeout=10)
        with pytest.raises(StoreError, match="stopped accepting writes"):
            put(store, "T", 0, b"y")


def test_retention_deletes_expired_segments_and_queue_files(tmp_path: Path) -> None:
    clock = Clock(time.time())
    cfg = StoreConfig(commit_log_segment_size=8192, consume_queue_entries_per_file=8, delete_when="04")
    with MessageStore(tmp_path, cfg, clock=clock, start_services=False) as store:
        for i in range(60):
            put(store, "T", 0, bytes([i]) * 900)
        segments = sorted(os.listdir(tmp_path / "commitlog"))
        assert len(segments) >= 6
        cq_files = len(os.listdir(tmp_path / "consumequeue" / "T" / "0"))
        # not old enough: nothing goes even with the disk over its 75% threshold
        assert store.clean_expired_files(now=clock.now + 3600, disk_used_ratio=0.80) == 0
        later = clock.now + 73 * 3600
        hour = time.localtime(later).tm_hour
        not_four = later if hour != 4 else later + 3600
        # old enough, but neither the hour nor the disk says so
        assert store.clean_expired_files(now=not_four, disk_used_ratio=0.10) == 0
        # a full disk: every segment but the one being written goes
        deleted = store.clean_expired_files(now=not_four, disk_used_ratio=0.80)
        assert deleted == len(segments) - 1
        assert sorted(os.listdir(tmp_path / "commitlog")) == segments[-1:]
        assert store.commit_log_min_offset == int(segments[-1])
        assert len(os.listdir(tmp_path / "consumequeue" / "T" / "0")) < cq_files
        low = store.min_offset("T", 0)
        assert low > 0
        too_small = store.get_messages("T", 0, 0, 32)
        assert (too_small.status, too_small.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, low)
        first = decode_messages(store.get_messages("T", 0, low, 1).data)[0]
        assert first.commit_log_offset >= store.commit_log_min_offset
        assert put(store, "T", 0, b"still writable") == 60
    with MessageStore(tmp_path, cfg, clock=clock, start_services=False) as store:
        assert store.min_offset("T", 0) == low
        assert store.max_offset("T", 0) == 61


def test_retention_at_the_delete_hour(tmp_path: Path) -> None:
    clock = Clock(time.time())
    later = clock.now + 73 * 3600
    cfg = StoreConfig(commit_log_segment_size=8192, delete_when=f"{time.localtime(later).tm_hour:02d}")
    with MessageStore(tmp_path, cfg, clock=clock, start_services=False) as store:
        for i in range(20):
            put(store, "T", 0, bytes([i]) * 900)
        n = len(os.listdir(tmp_path / "commitlog"))
        assert store.clean_expired_files(now=later, disk_used_ratio=0.0) == n - 1


def test_consume_queue_entries_are_rocketmq_layout(tmp_path: Path) -> None:
    with MessageStore(tmp_path, SMALL, start_services=False) as store:
        a = store.put_message("T", 1, record("T", 1, b"a", "TagA"), tags_code("TagA"))
        b = store.put_message("T", 1, record("T", 1, b"b"), 0)
    raw = (tmp_path / "consumequeue" / "T" / "1" / ("0" * 20)).read_bytes()
    assert len(raw) == 16 * 20
    entries = list(CQ_ENTRY.iter_unpack(raw))
    assert entries[0] == (a.commit_log_offset, a.wrote_bytes, 2598919)  # "TagA".hashCode()
    assert entries[1] == (b.commit_log_offset, b.wrote_bytes, 0)
    assert entries[2] == (0, 0, 0)


def test_checkpoint_file_layout(tmp_path: Path) -> None:
    clock = Clock(1234.5)
    with MessageStore(tmp_path, SMALL, clock=clock, start_services=False) as store:
        put(store, "T", 0, b"x")
        store.flush()
        store.flush_consume_queues()
        raw = (tmp_path / "checkpoint").read_bytes()
        assert len(raw) == 4096
        assert struct.unpack_from(">qqq", raw) == (1_234_500, 1_234_500, 0)
        assert (tmp_path / "abort").exists()
    assert not (tmp_path / "abort").exists()


def test_delete_topic_restarts_its_offsets(store: MessageStore) -> None:
    put(store, "T", 0, b"a")
    put(store, "T", 0, b"b")
    store.delete_topics(["T"])
    assert store.get_messages("T", 0, 0, 32).status is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    assert put(store, "T", 0, b"c") == 0
    assert bodies(store.get_messages("T", 0, 0, 32).data) == [b"c"]


def test_background_services_flush_on_their_own(tmp_path: Path) -> None:
    cfg = StoreConfig(flush_interval=0.01, flush_consume_queue_interval=0.01, config_flush_interval=0.01)
    with MessageStore(tmp_path, cfg) as store:
        result = store.put_message("T", 0, record("T", 0, b"x"))
        store.consumer_offsets.commit_offset("G", "T", 0, 1)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if (
                store.commit_log.flushed_offset >= result.wrote_bytes
                and (tmp_path / "config" / "consumerOffset.json").exists()
                and struct.unpack_from(">q", (tmp_path / "checkpoint").read_bytes(), 8)[0] > 0
            ):
                break
            time.sleep(0.01)
        assert store.commit_log.flushed_offset >= result.wrote_bytes
        assert (tmp_path / "config" / "consumerOffset.json").read_bytes() == b'{"offsetTable":{"T@G":{0:1}}}'


def test_concurrent_first_sends_to_a_new_queue_share_one_queue(tmp_path: Path) -> None:
    with MessageStore(tmp_path, SMALL, start_services=False) as store:
        barrier = threading.Barrier(8)

        def sender(n: int) -> None:
            barrier.wait()
            for i in range(25):
                put(store, "New", 0, b"%d-%d" % (n, i))

        workers = [threading.Thread(target=sender, args=(n,)) for n in range(8)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        assert store.max_offset("New", 0) == 200
        offset, seen = 0, []
        while offset < 200:
            got = store.get_messages("New", 0, offset, 32)
            msgs = decode_messages(got.data)
            assert [m.queue_offset for m in msgs] == list(range(offset, got.next_begin_offset))
            seen += [m.body for m in msgs]
            offset = got.next_begin_offset
        assert sorted(seen) == sorted(b"%d-%d" % (n, i) for n in range(8) for i in range(25))


def test_sync_durability_is_awaitable_from_asyncio(tmp_path: Path) -> None:
    import asyncio

    with MessageStore(tmp_path, StoreConfig(flush="sync"), start_services=False) as store:

        async def send(i: int) -> int:
            result = store.put_message("T", 0, record("T", 0, b"%d" % i))
            assert result.durable is not None
            await asyncio.wait_for(asyncio.wrap_future(result.durable), store.config.sync_flush_timeout)
            return result.commit_log_offset + result.wrote_bytes

        async def main() -> list[int]:
            return await asyncio.gather(*(send(i) for i in range(50)))

        ends = asyncio.run(main())
        assert store.commit_log.flushed_offset >= max(ends)


def test_consume_queue_write_failure_rolls_back_the_commit_log_too(tmp_path: Path) -> None:
    class CQFails(FileIO):
        fail = False

        def pwrite(self, fd: int, data: bytes | bytearray | memoryview, offset: int) -> int:
            if self.fail and len(data) == 20:  # a consume-queue entry
                raise OSError(errno.ENOSPC, "No space left on device")
            return super().pwrite(fd, data, offset)

    io = CQFails()
    with MessageStore(tmp_path, SMALL, io=io, start_services=False) as store:
        put(store, "T", 0, b"kept")
        end = store.commit_log_max_offset
        io.fail = True
        with pytest.raises(StoreFullError):
            put(store, "T", 0, b"phantom")
        assert store.commit_log_max_offset == end
        assert store.max_offset("T", 0) == 1
    (tmp_path / "abort").touch()  # even a crash recovery must not bring the failed record back
    with MessageStore(tmp_path, SMALL, start_services=False) as store:
        assert store.commit_log_max_offset == end
        assert bodies(store.get_messages("T", 0, 0, 32).data) == [b"kept"]


def test_a_lone_sync_appender_gets_its_own_fsync_each_time(tmp_path: Path) -> None:
    with MessageStore(tmp_path, StoreConfig(flush="sync"), start_services=False) as store:
        for i in range(20):
            result = store.put_message("T", 0, record("T", 0, b"%d" % i))
            assert result.durable is not None
            result.durable.result(timeout=10)
        assert store.group_commit_fsyncs == 20
        info = store.runtime_info()
        assert info["putMessageTimesTotal"] == "20"
        assert info["flushDiskType"] == "SYNC_FLUSH"
        assert info["commitLogMaxOffset"] == str(store.commit_log_max_offset)


def test_batch_spanning_two_consume_queue_files(store: MessageStore) -> None:
    for i in range(14):
        put(store, "T", 0, b"s%d" % i)
    result = store.put_messages("T", 0, [record("T", 0, b"b%d" % i) for i in range(5)])
    assert result.queue_offset == 14
    first = store.get_messages("T", 0, 14, 32)
    assert bodies(first.data) == [b"b0", b"b1"]  # a read stops at the end of a consume-queue file
    rest = store.get_messages("T", 0, first.next_begin_offset, 32)
    assert bodies(rest.data) == [b"b2", b"b3", b"b4"]


def test_a_nearly_full_disk_deletes_young_segments_and_refuses_appends(tmp_path: Path) -> None:
    clock = Clock(time.time())
    with MessageStore(tmp_path, SMALL, clock=clock, start_services=False) as store:
        for i in range(20):
            put(store, "T", 0, bytes([i]) * 900)
        n = len(os.listdir(tmp_path / "commitlog"))
        # 80%: above the 75% threshold, but the segments are young: nothing goes
        assert store.clean_expired_files(now=clock.now, disk_used_ratio=0.80) == 0
        # 95%: young segments go anyway, and appends are refused
        assert store.clean_expired_files(now=clock.now, disk_used_ratio=0.95) == n - 1
        with pytest.raises(StoreFullError, match="nearly full"):
            put(store, "T", 0, b"refused")
        assert store.clean_expired_files(now=clock.now, disk_used_ratio=0.50) == 0
        assert put(store, "T", 0, b"accepted") == 20


def test_lookups_by_commit_log_offset_refuse_what_is_not_a_record(store: MessageStore) -> None:
    first = store.put_message("T", 0, record("T", 0, b"one"))
    second = store.put_message("T", 0, record("T", 0, b"two"))
    assert store.read_message_bytes(second.commit_log_offset) is not None
    assert store.read_message_bytes(first.commit_log_offset + 4) is None  # inside a record
    assert store.read_message_bytes(store.commit_log_max_offset) is None  # past the end
    assert store.read_message_bytes(-1) is None
    assert store.look_message(10**9) is None
    msg = store.look_message(second.commit_log_offset)
    assert msg is not None
    assert (msg.body, msg.queue_offset) == (b"two", 1)


def test_an_empty_store_answers_lookups(store: MessageStore) -> None:
    assert store.earliest_store_time() == -1
    assert store.earliest_message_time("T", 0) == -1
    assert store.store_time_at("T", 0, 0) == -1
    assert store.offset_by_time("T", 0, 123) == 0
    assert (store.min_offset("T", 0), store.max_offset("T", 0), store.message_count("T", 0)) == (0, 0, 0)
    assert (store.commit_log_min_offset, store.commit_log_max_offset) == (0, 0)


def test_pulls_racing_retention_never_fail(tmp_path: Path) -> None:
    with MessageStore(tmp_path, SMALL, start_services=False) as store:
        for i in range(200):
            put(store, "T", 0, bytes([i % 256]) * 500)
        seen: set[GetMessageStatus] = set()
        errors: list[BaseException] = []
        stop = threading.Event()

        def reader() -> None:
            try:
                while not stop.is_set():
                    for offset in range(0, 200, 7):
                        got = store.get_messages("T", 0, offset, 32)
                        seen.add(got.status)
                        if got.status is GetMessageStatus.FOUND:
                            assert len(decode_messages(got.data)) == got.message_count
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=reader) for _ in range(2)]
        for t in threads:
            t.start()
        while len(store.commit_log.files.segments) > 1:
            store.clean_expired_files(disk_used_ratio=0.86)  # above 85%: delete even young segments
            time.sleep(0.001)
        stop.set()
        for t in threads:
            t.join()
        assert not errors
        assert GetMessageStatus.FOUND in seen
        assert store.get_messages("T", 0, 0, 32).status is GetMessageStatus.OFFSET_TOO_SMALL
        store.commit_log.files.close_deferred()


def test_records_take_the_queue_they_are_appended_to_and_must_name_the_topic(store: MessageStore) -> None:
    rec = record("T", 0, b"x")  # encoded for queue 0
    result = store.put_message("T", 5, rec)
    (msg,) = decode_messages(store.get_messages("T", 5, 0, 1).data)
    assert (msg.queue_id, msg.queue_offset, result.queue_offset) == (5, 0, 0)
    store.put_messages("T", 6, [rec, rec])
    assert [m.queue_id for m in decode_messages(store.get_messages("T", 6, 0, 32).data)] == [6, 6]
    with pytest.raises(ConfigError, match="another topic"):
        store.put_message("U", 0, rec)
    with pytest.raises(ConfigError, match="another topic"):
        store.put_messages("U", 0, [record("U", 0, b"ok"), rec])
    assert store.max_offset("U", 0) == 0


def test_group_commit_waits_for_the_appenders_it_just_released() -> None:
    from rocketq.store.flush import GroupCommitService

    started: list[threading.Event] = [threading.Event() for _ in range(3)]
    release: list[threading.Event] = [threading.Event() for _ in range(3)]
    calls = [0]

    def flush() -> int:
        n = calls[0]
        calls[0] += 1
        started[n].set()
        assert release[n].wait(10)
        return n

    service = GroupCommitService(flush, lambda exc: None, max_wait=10.0)
    service.start()
    try:
        f1 = service.request()
        assert started[0].wait(10)  # round 1 runs for one appender
        f2 = service.request()
        f3 = service.request()  # two more ask while it runs: they share the next round
        assert f2 is f3
        assert f2 is not f1
        time.sleep(0.3)  # a slow disk: the wait for stragglers may last as long as an fsync
        release[0].set()
        f1.result(timeout=10)
        # three appenders are in flight now; the round waits for the one just released ...
        assert not started[1].wait(0.05)
        f4 = service.request()
        assert f4 is f2
        assert started[1].wait(10)  # ... and runs as soon as it is back
        release[1].set()
        f4.result(timeout=10)
        assert (service.fsync_count, service.request_count) == (2, 4)
    finally:
        for event in release:
            event.set()
        service.stop()


def test_group_commit_does_not_hold_back_a_lone_appender() -> None:
    from rocketq.store.flush import GroupCommitService

    service = GroupCommitService(lambda: 0, lambda exc: None, max_wait=10.0)
    service.start()
    try:
        for _ in range(5):
            service.request().result(timeout=5)  # would take 10 s per round if it waited
        assert service.fsync_count == 5
    finally:
        service.stop()
