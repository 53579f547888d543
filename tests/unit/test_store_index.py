"""The message index: keys and unique ids of stored messages, found again through hash slots.

Files are made tiny (a few slots and entries) so that lookups walk shared slots, keys of one
message spill over into the next file, and recovery has several files to sort out.
"""

from __future__ import annotations

import errno
import mmap
import os
import shutil
from pathlib import Path

import pytest

from rocketq.protocol.message import MessageSysFlag, decode_messages, encode_message
from rocketq.protocol.properties import properties_to_string
from rocketq.store import MessageStore, StoreConfig
from rocketq.store.index import index_file_size, message_keys

CFG = StoreConfig(commit_log_segment_size=16384, max_hash_slot_num=7, max_index_num=9)
ALL = (0, 2**63 - 1)


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def record(
    topic: str, body: bytes, *, keys: str | None = None, uniq: str | None = None, sys_flag: int = 0
) -> bytes:
    props: dict[str, str] = {"TAGS": "t"}
    if keys is not None:
        props["KEYS"] = keys
    if uniq is not None:
        props["UNIQ_KEY"] = uniq
    return encode_message(topic=topic, body=body, properties=properties_to_string(props), sys_flag=sys_flag)


def bodies(
    store: MessageStore, topic: str, key: str, max_num: int = 64, span: tuple[int, int] = ALL
) -> list[bytes]:
    result = store.query_message(topic, key, max_num, *span)
    return [m.body for m in decode_messages(b"".join(result.messages))]


def fill(store: MessageStore, n: int, topic: str = "T") -> None:
    for i in range(n):
        store.put_message(topic, 0, record(topic, b"m%03d" % i, keys=f"k{i % 3} all", uniq=f"U{i:03d}"))


def file_count(store: MessageStore) -> int:
    assert store.index is not None
    return len(store.index.files)


def index_files(root: Path) -> list[str]:
    return sorted(p.name for p in (root / "index").iterdir() if p.name.isdigit())


# -- keys --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("props", "keys"),
    [
        (b"", []),
        (b"TAGS\x01a", []),
        (b"UNIQ_KEY\x01U\x02KEYS\x01a b", [b"U", b"a", b"b"]),
        (b"KEYS\x01 a  b \x02UNIQ_KEY\x01U", [b"U", b"a", b"b"]),  # empty words are skipped
        (b"XKEYS\x01a\x02MY_UNIQ_KEY\x01b", []),  # names must match whole
        (b"a\x01KEYS\x01v", []),  # "KEYS\x01v" inside a value is no pair
        (b"KEYS\x01a\x02KEYS\x01b", [b"b"]),  # the last pair wins, as in a Java HashMap
        (b"KEYS\x01a\x02KEYS\x01", [b"a"]),  # an empty value is no pair: the earlier one stays
        ("KEYS\x01ключ".encode(), ["ключ".encode()]),
    ],
)
def test_keys_of_a_property_string(props: bytes, keys: list[bytes]) -> None:
    assert message_keys(props) == keys


# -- look-ups ----------------------------------------------------------------------------------


def test_keys_and_unique_ids_are_found_across_files_and_topics(tmp_path: Path) -> None:
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        fill(store, 20)
        store.put_message("Other", 0, record("Other", b"elsewhere", keys="k1 all", uniq="U001"))
        assert len(index_files(tmp_path)) > 5  # 60 keys, 8 per file
        assert bodies(store, "T", "k1") == [b"m%03d" % i for i in range(1, 20, 3)]
        assert bodies(store, "T", "all") == [b"m%03d" % i for i in range(20)]
        assert bodies(store, "T", "U007") == [b"m007"]
        assert bodies(store, "Other", "k1") == [b"elsewhere"]
        assert bodies(store, "Other", "U001") == [b"elsewhere"]
        assert bodies(store, "T", "nope") == []
        assert bodies(store, "Nope", "k1") == []


def test_max_num_keeps_the_newest_in_commit_log_order_and_the_batch_limit_caps_it(tmp_path: Path) -> None:
    cfg = StoreConfig(
        commit_log_segment_size=16384, max_hash_slot_num=7, max_index_num=9, max_msgs_num_batch=5
    )
    with MessageStore(tmp_path, cfg, start_services=False) as store:
        fill(store, 20)
        assert bodies(store, "T", "all", max_num=3) == [b"m017", b"m018", b"m019"]
        assert bodies(store, "T", "all", max_num=32) == [b"m%03d" % i for i in range(15, 20)]
        result = store.query_message("T", "all", 1, *ALL)
        last = decode_messages(result.messages[0])[0]
        assert result.index_last_update_phyoffset == last.commit_log_offset
        assert result.index_last_update_timestamp == last.store_timestamp


def test_hash_collisions_are_not_answered(tmp_path: Path) -> None:
    """One slot for everything: every key shares one chain, and only real matches come back."""
    cfg = StoreConfig(max_hash_slot_num=1, max_index_num=1000)
    with MessageStore(tmp_path, cfg, start_services=False) as store:
        fill(store, 30)
        assert bodies(store, "T", "k2") == [b"m%03d" % i for i in range(2, 30, 3)]
        assert bodies(store, "T", "U029") == [b"m029"]


def test_time_range_is_honoured_to_the_second(tmp_path: Path) -> None:
    clock = Clock()
    with MessageStore(tmp_path, CFG, clock=clock, start_services=False) as store:
        stamps = []
        for i in range(6):
            clock.now += 10
            stamps.append(int(clock.now * 1000))
            store.put_message("T", 0, record("T", b"m%d" % i, keys="k"))
        assert bodies(store, "T", "k", span=(stamps[2], stamps[4])) == [b"m2", b"m3", b"m4"]
        assert bodies(store, "T", "k", span=(stamps[5] + 1000, 2**62)) == []
        assert bodies(store, "T", "k", span=(0, stamps[0] - 1000)) == []


def test_rolled_back_records_are_not_indexed(tmp_path: Path) -> None:
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        rollback = int(MessageSysFlag.TRANSACTION_ROLLBACK_TYPE)
        store.put_message("T", 0, record("T", b"gone", keys="k", sys_flag=rollback))
        store.put_message("T", 0, record("T", b"kept", keys="k"))
        assert bodies(store, "T", "k") == [b"kept"]


def test_batches_are_indexed_record_by_record(tmp_path: Path) -> None:
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        recs = [record("T", b"b%d" % i, keys=f"bk{i}", uniq=f"BU{i}") for i in range(4)]
        store.put_messages("T", 0, recs)
        assert [bodies(store, "T", f"bk{i}") for i in range(4)] == [[b"b%d" % i] for i in range(4)]
        assert bodies(store, "T", "BU3") == [b"b3"]


def test_index_disabled_answers_nothing(tmp_path: Path) -> None:
    cfg = StoreConfig(message_index_enable=False)
    with MessageStore(tmp_path, cfg, start_services=False) as store:
        fill(store, 3)
        assert store.index is None
        assert bodies(store, "T", "all") == []
    assert not (tmp_path / "index").exists()


# -- durability and recovery -------------------------------------------------------------------


def test_a_clean_restart_keeps_the_index_and_adds_nothing_twice(tmp_path: Path) -> None:
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        fill(store, 20)
    files = index_files(tmp_path)
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        assert store.index is not None
        assert store.index.keys_added == 0
        assert index_files(tmp_path) == files
        assert bodies(store, "T", "all") == [b"m%03d" % i for i in range(20)]
        store.put_message("T", 0, record("T", b"later", keys="all"))
        assert bodies(store, "T", "all")[-2:] == [b"m019", b"later"]


def _crash(store: MessageStore) -> None:
    """Die without closing: nothing flushed, the abort marker and the flock left as a kill would."""
    store._release_files(remove_abort=False)


@pytest.mark.parametrize("flushed", [0, 7, 20])
def test_after_a_crash_the_index_is_repaired_and_completed(tmp_path: Path, flushed: int) -> None:
    store = MessageStore(tmp_path, CFG, start_services=False)
    fill(store, flushed)
    store.flush_consume_queues()  # index headers durable up to here
    for i in range(flushed, 20):
        store.put_message("T", 0, record("T", b"m%03d" % i, keys=f"k{i % 3} all", uniq=f"U{i:03d}"))
    store.flush()
    _crash(store)
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        assert bodies(store, "T", "all") == [b"m%03d" % i for i in range(20)]
        assert bodies(store, "T", "k0") == [b"m%03d" % i for i in range(0, 20, 3)]
        assert [bodies(store, "T", f"U{i:03d}") for i in range(20)] == [[b"m%03d" % i] for i in range(20)]
        # each message is in the index exactly once: a chain of its unique id has one entry
        assert store.index is not None
        total = sum(f.count - 1 for f in store.index.files)
        assert total == 60


def test_slots_left_pointing_past_the_durable_header_are_rebuilt(tmp_path: Path) -> None:
    """A crash can leave slot pages on disk that are newer than the header page: they point at
    entries the header does not count. Recovery must not follow them."""
    store = MessageStore(tmp_path, CFG, start_services=False)
    fill(store, 4)
    store.flush_consume_queues()
    assert store.index is not None
    last = store.index.files[-1]
    # every slot of the current file now names an entry far past its count
    for slot in range(CFG.max_hash_slot_num):
        last._mm[40 + slot * 4 : 44 + slot * 4] = (CFG.max_index_num - 1).to_bytes(4, "big")
    store.flush()
    _crash(store)
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        assert bodies(store, "T", "all") == [b"m%03d" % i for i in range(4)]
        fill(store, 2)  # and new keys chain on correctly
        assert bodies(store, "T", "all") == [b"m%03d" % i for i in (0, 1, 2, 3, 0, 1)]


@pytest.mark.parametrize("crashed", [True, False])
def test_entries_of_a_torn_commit_log_tail_are_cut(tmp_path: Path, crashed: bool) -> None:
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        fill(store, 10)
        last = store.put_message("T", 0, record("T", b"torn", keys="all", uniq="TORN"))
    # the second half of the last record never reached the disk
    half = last.wrote_bytes // 2
    fd = os.open(tmp_path / "commitlog" / f"{0:020d}", os.O_WRONLY)
    try:
        os.pwrite(fd, bytes(last.wrote_bytes - half), last.commit_log_offset + half)
    finally:
        os.close(fd)
    if crashed:
        (tmp_path / "abort").touch()
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        assert store.commit_log_max_offset == last.commit_log_offset
        assert bodies(store, "T", "TORN") == []
        assert bodies(store, "T", "all") == [b"m%03d" % i for i in range(10)]
        again = store.put_message("T", 0, record("T", b"again", keys="all", uniq="TORN"))
        assert again.commit_log_offset == last.commit_log_offset
        assert bodies(store, "T", "TORN") == [b"again"]


def test_a_missing_or_foreign_index_is_rebuilt_from_the_commit_log(tmp_path: Path) -> None:
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        fill(store, 12)
    shutil.rmtree(tmp_path / "index")
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        assert bodies(store, "T", "all") == [b"m%03d" % i for i in range(12)]
    # a RocketMQ index directory (no HASH marker, Java hashes): replaced
    (tmp_path / "index" / "HASH").unlink()
    with MessageStore(tmp_path, CFG, start_services=False) as store:
        assert (tmp_path / "index" / "HASH").read_text() == "crc32\n"
        assert bodies(store, "T", "k2") == [b"m%03d" % i for i in range(2, 12, 3)]


def test_index_files_whose_messages_expired_are_deleted(tmp_path: Path) -> None:
    cfg = StoreConfig(commit_log_segment_size=4096, max_hash_slot_num=7, max_index_num=9)
    with MessageStore(tmp_path, cfg, start_services=False) as store:
        fill(store, 60)
        before = index_files(tmp_path)
        store.clean_expired_files(now=4e9, disk_used_ratio=0.1, force=True)
        after = index_files(tmp_path)
        assert len(after) < len(before)
        low = store.commit_log_min_offset
        assert store.index is not None
        assert all(f.end_phys >= low for f in store.index.files[:-1])
        # what is still stored is still found
        assert bodies(store, "T", "U059") == [b"m059"]


def test_a_full_disk_at_file_creation_stops_indexing_not_appending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()

    def no_space(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with MessageStore(tmp_path, CFG, clock=clock, start_services=False) as store:
        assert store.index is not None
        store.put_message("T", 0, record("T", b"first", keys="k"))
        with monkeypatch.context() as m:
            m.setattr(os, "posix_fallocate", no_space)  # the kernel cannot reserve the blocks
            fill(store, 4)  # 12 keys: the first file fills up, the next one cannot be made
            assert file_count(store) == 1
            clock.now += 0.5
            store.put_message("T", 0, record("T", b"too soon", keys="k"))  # no retry within 1 s
        assert store.max_offset("T", 0) == 6  # every append went through
        clock.now += 1
        store.put_message("T", 0, record("T", b"later", keys="k"))  # room again: a new file
        assert file_count(store) == 2
        assert bodies(store, "T", "k") == [b"first", b"later"]
        assert (tmp_path / "index" / "GAP").exists()
    # the next start indexes again from the first key that was lost
    with MessageStore(tmp_path, CFG, clock=clock, start_services=False) as store:
        assert bodies(store, "T", "k") == [b"first", b"too soon", b"later"]
        assert bodies(store, "T", "all") == [b"m%03d" % i for i in range(4)]
        assert bodies(store, "T", "U003") == [b"m003"]
        assert not (tmp_path / "index" / "GAP").exists()


def test_index_file_size_is_rocketmqs() -> None:
    assert index_file_size(5_000_000, 20_000_000) == 420_000_040


def test_index_files_take_disk_only_for_what_they_hold(tmp_path: Path) -> None:
    """A RocketMQ-sized index file is 420 MB of address space but sparse: its header and slot
    table (20 MB) are reserved when it is made, entries' blocks page by page as they fill."""
    slot_table = 40 + 4 * 5_000_000
    with MessageStore(tmp_path, StoreConfig(), start_services=False) as store:
        fill(store, 50)
        (path,) = [tmp_path / "index" / name for name in index_files(tmp_path)]
        assert path.stat().st_size == index_file_size(5_000_000, 20_000_000)
        # 150 keys: the slot table and a page or two of entries
        assert slot_table <= path.stat().st_blocks * 512 < slot_table + 1024 * 1024
        assert bodies(store, "T", "k1") == [b"m%03d" % i for i in range(1, 50, 3)]


def test_a_slot_table_not_reserved_at_once_is_reserved_page_by_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the one call for the whole slot table fails (a full disk), the file still works: each
    slot page is reserved before its first write, as entries are."""
    real = os.posix_fallocate
    calls: list[int] = []

    def small_only(fd: int, offset: int, length: int) -> None:
        if length > mmap.PAGESIZE:
            raise OSError(errno.ENOSPC, "No space left on device")
        calls.append(offset)
        real(fd, offset, length)

    monkeypatch.setattr(os, "posix_fallocate", small_only)
    with MessageStore(tmp_path, StoreConfig(), start_services=False) as store:
        fill(store, 20)
        (path,) = [tmp_path / "index" / name for name in index_files(tmp_path)]
        assert path.stat().st_blocks * 512 < 1024 * 1024  # only the pages written
        assert len(calls) > 20  # the keys' slot pages, one at a time
        assert bodies(store, "T", "k1") == [b"m%03d" % i for i in range(1, 20, 3)]


def test_no_room_for_a_page_loses_those_keys_until_the_next_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # enough messages (3 keys each) that the next one's entries run into a page not written yet
    entries_at = 40 + 4 * 5_000_000
    inside = ((entries_at // mmap.PAGESIZE + 1) * mmap.PAGESIZE - entries_at) // 20  # entries 0..inside-1
    before = -(-(inside - 3) // 3)
    with MessageStore(tmp_path, StoreConfig(), start_services=False) as store:
        fill(store, before)
        real = os.posix_fallocate

        def full(fd: int, offset: int, length: int) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(os, "posix_fallocate", full)
        store.put_message("T", 0, record("T", b"unindexed", keys="lost all", uniq="ULOST"))  # stored anyway
        monkeypatch.setattr(os, "posix_fallocate", real)
        assert store.max_offset("T", 0) == before + 1
        assert bodies(store, "T", "lost") == []
        assert (tmp_path / "index" / "GAP").exists()
    with MessageStore(tmp_path, StoreConfig(), start_services=False) as store:
        assert bodies(store, "T", "lost") == [b"unindexed"]
        assert bodies(store, "T", "ULOST") == [b"unindexed"]
        assert bodies(store, "T", "all") == [b"m%03d" % i for i in range(before)] + [b"unindexed"]


def test_reserving_the_last_page_keeps_the_file_size(tmp_path: Path) -> None:
    cfg = StoreConfig(max_hash_slot_num=7, max_index_num=300)  # 6,068 bytes: a partial last page
    with MessageStore(tmp_path, cfg, start_services=False) as store:
        fill(store, 60)
    sizes = {(tmp_path / "index" / name).stat().st_size for name in index_files(tmp_path)}
    assert sizes == {index_file_size(7, 300)}
    with MessageStore(tmp_path, cfg, start_services=False) as store:  # reopened as they are
        assert store.index is not None
        assert store.index.keys_added == 0
        assert bodies(store, "T", "U059") == [b"m059"]
