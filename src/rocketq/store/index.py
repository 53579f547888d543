"""The message index: look messages up by key or unique id (RocketMQ's ``IndexService``).

Every stored message is indexed under ``<topic>#<key>`` for its unique id (the ``UNIQ_KEY``
property, the "msgId" a producer sees) and for each of its space-separated ``KEYS``; a rolled
back transaction record is not indexed, as in RocketMQ. ``QUERY_MESSAGE`` then finds a key's
messages in a handful of reads, however large the store.

**Files.** ``<root>/index/`` holds index files named by their creation time
(``yyyyMMddHHmmssSSS``, RocketMQ's names). Each is laid out as RocketMQ lays it out:

======  ===========  ==============================================================
offset  size         field
======  ===========  ==============================================================
0       40           header: begin / end store timestamp (ms), begin / end commit-log
                     offset (int64 each), used slots, entry count (int32 each)
40      4 × slots    hash slots: the number of the newest entry whose key hashes
                     there (0 = none)
..      20 × entries entries: key hash (int32), commit-log offset (int64), seconds
                     since the file's begin timestamp (int32), previous entry of the
                     same slot (int32; 0 ends the chain)
======  ===========  ==============================================================

Entry 0 is never used, so a file of ``max_index_num`` entries holds ``max_index_num - 1`` keys;
a full file is closed and a new one started (RocketMQ's defaults: 5,000,000 slots and
20,000,000 entries, a 420 MB file; :class:`~rocketq.store.StoreConfig` makes both smaller for
tests). A lookup hashes the key, reads its slot and walks the chain from the newest entry back,
newest file first, until it has enough matches or the entries are older than the time range:
its cost depends on how many entries share the key's slot, not on how many messages are stored.

One difference from RocketMQ: the slot hash is CRC-32 of the UTF-8 key (``& 0x7FFFFFFF``), not
Java's ``String.hashCode()``, which costs about 3 µs a key in Python against 0.15 µs, on the
send path. So a RocketMQ index directory is not read as is: a ``HASH`` file marks ours, and any
index found without it is rebuilt from the commit log at start.

**Writing.** Index files are sparse and mapped writable (``mmap``); before the first write to a
page of the mapping, ``posix_fallocate`` reserves that page's blocks, so a write through the
mapping can never meet a full disk (which would kill the process with ``SIGBUS``). The header and
the slot table are reserved with one call when a file is created or opened (keys land on random
slots, so page by page would cost a ``fallocate`` on most of a new file's first sends); entries'
pages are reserved as they fill. A file thus takes the disk of its slot table (20 MB at RocketMQ's
defaults) and of the entries written (a RocketMQ-sized file is 420 MB, most of it holes for a long
time). If a reservation fails the message's keys are left out and the index
notes where (the ``GAP`` file): the message store keeps working, and the next start indexes again
from there. The store indexes each record right after appending it, under its lock: two
``bytes.rfind`` for the keys, a CRC and three ``struct`` operations a key, about 4 µs of CPU a
message with a unique id and one key (``bench/bench_index.py``); the header is kept in memory
and written on flush.

**Durability and recovery.** :meth:`IndexService.flush` (with the consume queues, every
second) makes a file's entries and slots durable first, then writes its header and makes that
durable: the header on disk always describes entries that are on disk. After a crash the first file whose
header is short of full is repaired - its slots are rebuilt from the entries its header
counts, the later files removed - and entries pointing at or past the commit log's valid end
(a torn tail) are cut. The store then indexes again every record from the last one the index
holds: :meth:`IndexService.load` tells it where to start, and the boundary record's keys that
are already present are not added twice. A missing or foreign index is rebuilt from the whole
commit log the same way.

Thread safety: one writer (the store's lock) and any number of readers. A writer fills an
entry, then raises the entry count, then points the slot at it, so a reader never follows a
slot past the count; the list of files is replaced, never changed in place.
"""

from __future__ import annotations

import array
import contextlib
import logging
import mmap
import os
import struct
import sys
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from zlib import crc32

from rocketq.store.segments import fsync_dir

__all__ = [
    "INDEX_ENTRY_SIZE",
    "INDEX_HEADER_SIZE",
    "IndexFile",
    "IndexService",
    "QueryOffsetResult",
    "index_file_size",
    "index_key_hash",
    "message_keys",
]

log = logging.getLogger(__name__)

INDEX_HEADER_SIZE = 40
INDEX_ENTRY_SIZE = 20
_SLOT = struct.Struct(">i")
_HEADER = struct.Struct(">qqqqii")
_ENTRY = struct.Struct(">iqii")
_PAGE = mmap.PAGESIZE
_SHIFT = _PAGE.bit_length() - 1
_MARKER = "HASH"
_GAP = "GAP"
_MARKER_TEXT = "crc32\n"
_UNIQ = b"UNIQ_KEY\x01"
_KEYS = b"KEYS\x01"
_ROLLBACK = 0xC  # MessageSysFlag transaction bits of TRANSACTION_ROLLBACK_TYPE
_CREATE_RETRY = 1.0  # seconds between attempts to create an index file after a failure


def index_key_hash(key: bytes) -> int:
    """The slot hash of an index key (``topic#key`` as UTF-8): CRC-32, made non-negative.

    >>> index_key_hash(b"T#k1"), index_key_hash(b"T#k1") == index_key_hash(b"T#k2")
    (1445826474, False)
    """
    return zlib.crc32(key) & 0x7FFFFFFF


def index_file_size(slots: int, entries: int) -> int:
    """Bytes of an index file with ``slots`` hash slots and ``entries`` entries."""
    return INDEX_HEADER_SIZE + slots * _SLOT.size + entries * INDEX_ENTRY_SIZE


def _pair_value(data: bytes | bytearray, name: bytes, start: int, end: int) -> bytes | bytearray | None:
    """The value of the last ``name`` pair (``name`` ends in ``\\x01``) of the property string
    ``data[start:end]``, found from the end with ``rfind`` (the index's hot path); a match that
    is not at a pair's start, or an empty value, falls back to :func:`_last_value`."""
    at = data.rfind(name, start, end)
    if at == start or (at > start and data[at - 1] == 2):
        skip = at + len(name)
        stop = data.find(b"\x02", skip, end)
        return data[skip : end if stop < 0 else stop] or _last_value(data, name, start, at)
    return _last_value(data, name, start, at) if at > start else None


def _last_value(
    props: bytes | bytearray, name: bytes, start: int = 0, end: int | None = None
) -> bytes | None:
    """The value of the last ``name`` pair of the property string ``props[start:end]`` (as
    RocketMQ's decoder: the last pair with a name wins, pairs with an empty value are skipped),
    or ``None``."""
    end = len(props) if end is None else end
    i = props.rfind(name, start, end)
    while i >= 0:
        if i == start or props[i - 1] == 2:
            begin = i + len(name)
            stop = props.find(b"\x02", begin, end)
            value = props[begin:end] if stop < 0 else props[begin:stop]
            if value:
                return bytes(value)
        i = props.rfind(name, start, i)
    return None


def message_keys(props: bytes) -> list[bytes]:
    """The index keys of a message from its stored property string: its ``UNIQ_KEY`` first,
    then each non-empty word of ``KEYS`` (RocketMQ's ``buildIndex`` order).

    >>> message_keys(b"KEYS\\x01a  b\\x02UNIQ_KEY\\x01U1\\x02TAGS\\x01t")
    [b'U1', b'a', b'b']
    >>> message_keys(b"XKEYS\\x01a")
    []
    """
    out: list[bytes] = []
    if not props:
        return out
    uniq = _last_value(props, _UNIQ)
    if uniq is not None:
        out.append(uniq)
    keys = _last_value(props, _KEYS)
    if keys is not None:
        out.extend(k for k in keys.split(b" ") if k)
    return out


def _file_name(ms: int) -> str:
    """RocketMQ's ``UtilAll.timeMillisToHumanString``: local time, ``yyyyMMddHHmmssSSS``."""
    t = time.localtime(ms // 1000)
    return time.strftime("%Y%m%d%H%M%S", t) + f"{ms % 1000:03d}"


def _cut(files: list[IndexFile], phys: int, why: str) -> None:
    """Drop the entries of ``files`` (in commit-log order) pointing at or past ``phys``."""
    while files and (files[-1].count <= 1 or files[-1].begin_phys >= phys):
        files.pop().destroy()  # past the cut, or empty (the next key makes a new file)
    if files and files[-1].count > 1 and files[-1].end_phys >= phys:
        last = files[-1]
        cut = last.first_at_or_after(phys)
        log.warning("index file %s: cutting %d entries %s", last.path.name, last.count - cut, why)
        last.rebuild_slots(cut)


class IndexFile:
    """One index file (see the module docstring for the layout).

    The header lives in the attributes below and reaches the file only in :meth:`flush`; the
    slots and entries are written through the mapping as keys are added.
    """

    __slots__ = (
        "_closed",
        "_entries_at",
        "_fd",
        "_mm",
        "_reserved",
        "_size",
        "begin_phys",
        "begin_timestamp",
        "capacity",
        "count",
        "end_phys",
        "end_timestamp",
        "flushed_count",
        "path",
        "slot_count",
        "slots",
    )

    begin_timestamp: int
    end_timestamp: int
    begin_phys: int
    end_phys: int
    slot_count: int
    count: int

    def __init__(self, path: Path, slots: int, capacity: int, *, create: bool) -> None:
        """Open ``path`` (``create``: make it, reserving every block). Raises ``OSError``."""
        self.path = path
        self.slots = slots
        self.capacity = capacity
        self._entries_at = INDEX_HEADER_SIZE + slots * _SLOT.size
        size = index_file_size(slots, capacity)
        flags = os.O_RDWR | getattr(os, "O_CLOEXEC", 0)
        if create:
            flags |= os.O_CREAT | os.O_EXCL
        self._fd = os.open(path, flags, 0o644)
        try:
            if create:
                os.ftruncate(self._fd, size)  # sparse: pages get their blocks when first written
                os.posix_fallocate(self._fd, 0, min(size, _PAGE))  # the header's page
            elif os.fstat(self._fd).st_size != size:
                raise OSError(f"{path} is {os.fstat(self._fd).st_size} bytes, expected {size}")
            self._mm = mmap.mmap(self._fd, size, access=mmap.ACCESS_WRITE)
        except BaseException:
            os.close(self._fd)
            if create:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise
        self._closed = False
        #: one byte per page of the file: 1 once its blocks are reserved (by this process)
        self._size = size
        self._reserved = bytearray((size + _PAGE - 1) >> _SHIFT)
        if create:
            self._reserved[0] = 1
        self._reserve_slots()
        (
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phys,
            self.end_phys,
            self.slot_count,
            self.count,
        ) = _HEADER.unpack_from(self._mm, 0)
        if self.count <= 0:
            self.count = 1  # RocketMQ's IndexHeader starts counting at 1: entry 0 is unused
        self.flushed_count = self.count

    # -- writing (store lock held) ---------------------------------------------------------------

    @property
    def full(self) -> bool:
        return self.count >= self.capacity

    def put(self, key_hash: int, phys: int, timestamp: int) -> bool:
        """Add an entry; ``False`` when the file is full. Raises ``OSError`` when the disk has no
        room for the page it goes to (nothing is written then)."""
        return self.put_all([key_hash], phys, timestamp) == 1

    def _reserve_slots(self) -> None:
        """Reserve the header's and the slot table's blocks with one call (20 MB at RocketMQ's
        5,000,000 slots). Keys hash to random slots, so reserving their pages one at a time cost a
        ``fallocate`` on most of a new file's first tens of thousands of sends. If it fails (a full
        disk), the pages are reserved one at a time as they are first written, as entries are."""
        end = min(self._size, ((self._entries_at + _PAGE - 1) >> _SHIFT) << _SHIFT)
        try:
            os.posix_fallocate(self._fd, 0, end)
        except OSError as exc:
            log.warning("index file %s: cannot reserve its slot table at once (%s)", self.path.name, exc)
            return
        pages = end >> _SHIFT
        self._reserved[:pages] = b"\x01" * pages

    def _reserve(self, page: int) -> None:
        """Reserve the blocks of one page before its first write through the mapping (the last
        page only up to the file's end: fallocate past it would grow the file)."""
        start = page << _SHIFT
        os.posix_fallocate(self._fd, start, min(_PAGE, self._size - start))
        self._reserved[page] = 1

    def put_all(self, hashes: list[int], phys: int, timestamp: int) -> int:
        """:meth:`put` for the keys of one message at once; returns how many fitted (the rest
        go to the next file)."""
        count = self.count
        room = self.capacity - count
        if room <= 0:
            return 0
        if len(hashes) > room:
            hashes = hashes[:room]
        mm = self._mm
        slots = self.slots
        # reserve the blocks of every page about to be written, before writing anything
        reserved = self._reserved
        entry_pos = self._entries_at + count * INDEX_ENTRY_SIZE
        first, last = entry_pos >> _SHIFT, (entry_pos + len(hashes) * INDEX_ENTRY_SIZE - 1) >> _SHIFT
        if not (reserved[first] and reserved[last]):
            for page in range(first, last + 1):
                if not reserved[page]:
                    self._reserve(page)
        for key_hash in hashes:
            page = (INDEX_HEADER_SIZE + (key_hash % slots) * 4) >> _SHIFT
            if not reserved[page]:
                self._reserve(page)
        if count == 1:
            self.begin_phys = phys
            self.begin_timestamp = timestamp
        diff = (timestamp - self.begin_timestamp) // 1000
        if diff < 0:
            diff = 0
        elif diff > 0x7FFFFFFF:
            diff = 0x7FFFFFFF
        unpack_slot = _SLOT.unpack_from
        pack_slot = _SLOT.pack_into
        pack_entry = _ENTRY.pack_into
        new_slots = 0
        for key_hash in hashes:
            slot_pos = INDEX_HEADER_SIZE + (key_hash % slots) * 4
            (head,) = unpack_slot(mm, slot_pos)
            if head <= 0 or head >= count:
                head = 0
                new_slots += 1
            pack_entry(mm, entry_pos, key_hash, phys, diff, head)
            entry_pos += INDEX_ENTRY_SIZE
            self.count = count + 1  # before the slot: a reader never sees a slot past the count
            pack_slot(mm, slot_pos, count)
            count += 1
        self.slot_count += new_slots
        self.end_phys = phys
        self.end_timestamp = timestamp
        return len(hashes)

    def start_after(self, phys: int, timestamp: int) -> None:
        """Make an empty file continue where the previous one ended (RocketMQ does the same)."""
        self.begin_phys = self.end_phys = phys
        self.begin_timestamp = self.end_timestamp = timestamp

    # -- reading (any thread) -------------------------------------------------------------------

    def entry(self, number: int) -> tuple[int, int, int, int]:
        """Entry ``number``: key hash, commit-log offset, time difference, previous entry."""
        hash_, phys, diff, prev = _ENTRY.unpack_from(self._mm, self._entries_at + number * INDEX_ENTRY_SIZE)
        return hash_, phys, diff, prev

    def head(self, key_hash: int) -> int:
        """The newest entry of ``key_hash``'s slot (0 for none)."""
        (head,) = _SLOT.unpack_from(self._mm, INDEX_HEADER_SIZE + (key_hash % self.slots) * 4)
        return head if 0 < head < self.count else 0

    def time_matched(self, begin: int, end: int) -> bool:
        """RocketMQ's ``isTimeMatched``: the file's time span overlaps ``[begin, end]``."""
        b, e = self.begin_timestamp, self.end_timestamp
        return (begin < b and end > e) or b <= begin <= e or b <= end <= e

    def select(self, key_hash: int, begin: int, end: int) -> Iterable[int]:
        """Commit-log offsets of the entries of ``key_hash`` stored in ``[begin, end]`` (ms),
        newest first (hash collisions included: the caller checks the messages)."""
        count = self.count
        number = self.head(key_hash)
        base = self.begin_timestamp
        seen = 0
        while 0 < number < count and seen < count:
            seen += 1
            hash_, phys, diff, prev = self.entry(number)
            if diff < 0:
                return
            stamp = base + diff * 1000
            if hash_ == key_hash and begin <= stamp <= end:
                yield phys
            if stamp < begin or prev <= 0 or prev >= number:
                return
            number = prev

    # -- durability -----------------------------------------------------------------------------

    def flush(self) -> None:
        """Make the entries and slots durable, then write the header and make it durable (so the
        header on disk never counts an entry that is not). Raises ``OSError``.

        ``fdatasync`` of the file, not ``mmap.flush``: on Linux both write back the pages dirtied
        through the mapping (``msync(MS_SYNC)`` is an fsync of the file), but CPython's
        ``mmap.flush`` holds the GIL for the whole msync (2-3 ms a second under load, the event
        loop stopped), where ``os.fdatasync`` lets the loop run."""
        if self._closed:
            return
        count, end_phys, end_ts = self.count, self.end_phys, self.end_timestamp
        header = _HEADER.pack(self.begin_timestamp, end_ts, self.begin_phys, end_phys, self.slot_count, count)
        if count == self.flushed_count and self._mm[:INDEX_HEADER_SIZE] == header:
            return
        os.fdatasync(self._fd)
        self._mm[:INDEX_HEADER_SIZE] = header
        os.fdatasync(self._fd)
        self.flushed_count = count

    def rebuild_slots(self, count: int) -> None:
        """Keep entries ``1 .. count - 1`` and point every slot at its newest one (crash
        recovery: slots written after the header on disk may point past it)."""
        count = max(1, min(count, self.capacity))
        mm = self._mm
        at = self._entries_at
        slots = self.slots
        heads = array.array("i", bytes(4 * slots))
        view = memoryview(mm)[at + INDEX_ENTRY_SIZE : at + count * INDEX_ENTRY_SIZE]
        try:
            for number, (hash_, _, _, _) in enumerate(_ENTRY.iter_unpack(view), 1):
                heads[hash_ % slots] = number
        finally:
            view.release()
        used = slots - heads.count(0)
        if sys.byteorder == "little":
            heads.byteswap()
        table = heads.tobytes()
        # write only the pages that change: untouched ones stay holes (no blocks)
        for page in range(INDEX_HEADER_SIZE >> _SHIFT, ((at - 1) >> _SHIFT) + 1):
            lo = max(page << _SHIFT, INDEX_HEADER_SIZE)
            hi = min((page + 1) << _SHIFT, at)
            new = table[lo - INDEX_HEADER_SIZE : hi - INDEX_HEADER_SIZE]
            if mm[lo:hi] != new:
                if not self._reserved[page]:
                    self._reserve(page)
                mm[lo:hi] = new
        self.count = count
        self.slot_count = used
        if count > 1:
            _, self.end_phys, diff, _ = self.entry(count - 1)
            self.end_timestamp = self.begin_timestamp + diff * 1000
        else:
            self.end_phys, self.end_timestamp = self.begin_phys, self.begin_timestamp
        self.flushed_count = 0  # force the next flush to write the header

    def first_at_or_after(self, phys: int) -> int:
        """The number of the first entry whose commit-log offset is ``>= phys`` (entries are in
        commit-log order), or :attr:`count` when there is none."""
        lo, hi = 1, self.count
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entry(mid)[1] >= phys:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._mm.close()
        except BufferError:  # a reader still holds a view: the mapping goes with the last one
            log.debug("index file %s closed while a reader held it", self.path.name)
        os.close(self._fd)

    def destroy(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def __repr__(self) -> str:
        return f"IndexFile({self.path.name}, {self.count - 1} keys)"


@dataclass(frozen=True, slots=True)
class QueryOffsetResult:
    """Commit-log offsets of a key's messages (newest first), and where the index stands
    (RocketMQ's ``indexLastUpdateTimestamp`` / ``indexLastUpdatePhyoffset``)."""

    offsets: tuple[int, ...]
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


class IndexService:
    """The index files of one store: adding keys, looking them up, flush, recovery, retention."""

    def __init__(
        self, directory: Path, *, slots: int, entries: int, clock: Callable[[], float] = time.time
    ) -> None:
        self.directory = directory
        self.slots = slots
        self.entries = entries
        self._clock = clock
        self.files: tuple[IndexFile, ...] = ()
        self._failed_at = -1.0
        self._gap = -1
        self._seeds: dict[bytes, int] = {}
        #: Keys added since the store opened.
        self.keys_added = 0

    # -- start-up -------------------------------------------------------------------------------

    def load(self, *, crashed: bool, log_min: int, log_end: int) -> int:
        """Open the index files and make them agree with a commit log valid in
        ``[log_min, log_end)``; return the commit-log offset from which records must be indexed
        again (:meth:`add` with ``dedupe`` for the record at exactly that offset).

        After a crash the first file whose header on disk is short of full has its slots rebuilt
        from its counted entries and the files after it are removed; entries at or past
        ``log_end`` are cut whatever the shutdown. A directory without our ``HASH`` marker (a
        RocketMQ index, or an unfinished rebuild) is emptied and rebuilt from ``log_min``.
        """
        files = self._open_files()
        if crashed:
            for i, f in enumerate(files):
                if not f.full:
                    f.rebuild_slots(f.count)
                    for later in files[i + 1 :]:
                        later.destroy()
                    del files[i + 1 :]
                    break
        # a torn commit-log tail: drop what points at or past the valid end
        _cut(files, log_end, "past the commit log's end")
        # keys lost to a failure (no room for a new file) are indexed again from the first one
        gap_file = self.directory / _GAP
        if gap_file.exists():
            try:
                gap = int(gap_file.read_text().strip() or 0)
            except ValueError:
                gap = log_min
            _cut(files, gap, "after keys that could not be indexed")
        # and what points below the commit log's start (retention ran while we were down)
        while len(files) > 1 and files[0].end_phys < log_min:
            files.pop(0).destroy()
        for f in files:
            with contextlib.suppress(OSError):
                f.flush()
        self.files = tuple(files)
        resume = log_min
        for f in reversed(files):
            if f.count > 1:
                resume = f.end_phys
                break
        return max(resume, log_min)

    def _open_files(self) -> list[IndexFile]:
        """The index files of the directory, oldest first: none if the directory is not ours (it
        is emptied), up to the first unusable one (it and the later ones are removed)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        marker = self.directory / _MARKER
        names = sorted(p.name for p in self.directory.iterdir() if p.name.isdigit() and p.is_file())
        if names and (not marker.exists() or marker.read_text() != _MARKER_TEXT):
            log.warning("index in %s was not written by rocketq: rebuilding it", self.directory)
            for name in names:
                os.unlink(self.directory / name)
            names = []
        if not marker.exists():
            marker.write_text(_MARKER_TEXT)
            fsync_dir(self.directory)
        files: list[IndexFile] = []
        for name in names:
            try:
                files.append(IndexFile(self.directory / name, self.slots, self.entries, create=False))
            except OSError as exc:
                log.warning("index file %s is unusable (%s): it and the later ones are rebuilt", name, exc)
                for stale in names[names.index(name) :]:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(self.directory / stale)
                break
        return files

    def recovered(self) -> int:
        """The store indexed what :meth:`load` asked for: flush, and forget any gap. Returns
        the end timestamp now on disk."""
        stamp = self.flush()
        gap_file = self.directory / _GAP
        if gap_file.exists():
            gap_file.unlink()
            fsync_dir(self.directory)
        self._gap = -1
        return stamp

    def mark_unindexed(self, phys: int) -> None:
        """Keys of the record at ``phys`` could not be indexed: remember where, on disk, so the
        next start indexes again from there."""
        if self._gap >= 0:
            return
        self._gap = phys
        try:
            (self.directory / _GAP).write_text(f"{phys}\n")
            fsync_dir(self.directory)
        except OSError as exc:
            log.error("cannot record the index gap at %s (%s): those keys stay unindexed", phys, exc)

    # -- writing (store lock held) --------------------------------------------------------------

    def add(
        self,
        topic: bytes,
        data: bytes | bytearray,
        start: int,
        end: int,
        phys: int,
        timestamp: int,
        sys_flag: int = 0,
        *,
        dedupe: bool = False,
    ) -> None:
        """Index one stored record: its topic, its stored property string ``data[start:end]``
        (the store passes the record itself, whose properties run to its end: no copy), its
        commit-log offset, store time and sys flag. ``dedupe``: skip keys the index already
        holds for this offset.

        The hot path of every append, so written for speed: the keys are found with ``rfind``
        rather than by parsing the properties (:func:`message_keys` is the readable version of
        the same rule) and the CRC of ``<topic>#`` is computed once per topic."""
        if sys_flag & _ROLLBACK == _ROLLBACK or start >= end:
            return
        seed = self._seeds.get(topic)
        if seed is None:
            if len(self._seeds) > 10_000:
                self._seeds.clear()
            seed = self._seeds[topic] = crc32(topic + b"#")
        hashes: list[int] = []
        value = _pair_value(data, _UNIQ, start, end)
        if value:
            hashes.append(crc32(value, seed) & 0x7FFFFFFF)
        value = _pair_value(data, _KEYS, start, end)
        if value:
            if b" " in value:
                hashes.extend(crc32(k, seed) & 0x7FFFFFFF for k in value.split(b" ") if k)
            else:
                hashes.append(crc32(value, seed) & 0x7FFFFFFF)
        if not hashes:
            return
        if dedupe:
            hashes = [h for h in hashes if not self._holds(h, phys)]
        while hashes:
            files = self.files
            f = files[-1] if files and not files[-1].full else self._writable()
            if f is None:
                self.mark_unindexed(phys)
                return
            done = f.put_all(hashes, phys, timestamp)
            self.keys_added += done
            if done == len(hashes):
                return
            hashes = hashes[done:]

    def _holds(self, key_hash: int, phys: int) -> bool:
        """Whether the newest entries (those of the record at ``phys``, the last one indexed)
        include ``key_hash``; a slot is shared, so walk its chain while it names ``phys``."""
        for f in self.files[-2:]:
            number = f.head(key_hash)
            while number:
                hash_, at, _, prev = f.entry(number)
                if at != phys:
                    break
                if hash_ == key_hash:
                    return True
                number = prev if 0 < prev < number else 0
        return False

    def _writable(self) -> IndexFile | None:
        files = self.files
        if files and not files[-1].full:
            return files[-1]
        now = self._clock()
        if self._failed_at >= 0 and now - self._failed_at < _CREATE_RETRY:
            return None
        ms = int(now * 1000)
        path = self.directory / _file_name(ms)
        while path.exists() or (files and path.name <= files[-1].path.name):
            ms += 1
            path = self.directory / _file_name(ms)
        try:
            f = IndexFile(path, self.slots, self.entries, create=True)
            fsync_dir(self.directory)
        except OSError as exc:
            if self._failed_at < 0:
                log.error(
                    "cannot create index file %s (%s): messages are not indexed until it can", path, exc
                )
            self._failed_at = now
            return None
        if self._failed_at >= 0:
            log.warning("index file %s created: indexing again", path.name)
            self._failed_at = -1.0
        if files:
            f.start_after(files[-1].end_phys, files[-1].end_timestamp)
        self.files = (*files, f)
        return f

    # -- reading (any thread) -------------------------------------------------------------------

    def query(self, topic: str, key: str, begin: int, end: int) -> Iterable[int]:
        """Commit-log offsets of the entries of ``topic#key`` stored within ``[begin, end]`` (ms),
        newest first, hash collisions included (RocketMQ's ``queryOffset``, without its limit:
        the caller stops reading when it has enough)."""
        key_hash = index_key_hash(f"{topic}#{key}".encode())
        for f in reversed(self.files):
            try:
                if f.time_matched(begin, end):
                    yield from f.select(key_hash, begin, end)
                if f.begin_timestamp < begin:
                    return
            except ValueError:  # the file was deleted by retention while we read it
                continue

    @property
    def last_update(self) -> tuple[int, int]:
        """(end timestamp, end commit-log offset) of the newest file, (0, 0) without one."""
        files = self.files
        return (files[-1].end_timestamp, files[-1].end_phys) if files else (0, 0)

    # -- flushing and retention -----------------------------------------------------------------

    def flush(self) -> int:
        """Make every file durable (header last); returns the end timestamp now on disk, 0 if
        there is no index. Raises ``OSError``."""
        stamp = 0
        for f in self.files:
            f.flush()
            stamp = f.end_timestamp
        return stamp

    def delete_expired(self, min_phys: int) -> int:
        """Delete files whose every entry points below ``min_phys`` (never the newest one);
        returns how many (RocketMQ's ``deleteExpiredFile``)."""
        files = list(self.files)
        gone = 0
        while len(files) > 1 and files[0].end_phys < min_phys:
            f = files.pop(0)
            self.files = tuple(files)
            f.destroy()
            gone += 1
        if gone:
            fsync_dir(self.directory)
        return gone

    def close(self) -> None:
        files, self.files = self.files, ()
        for f in files:
            f.close()
