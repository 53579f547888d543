"""The message store facade (RocketMQ's ``DefaultMessageStore``): what the broker calls.

Layout of a data directory (RocketMQ's, so its tools recognise it)::

    <root>/commitlog/00000000000000000000            segments of every message
    <root>/consumequeue/<topic>/<queueId>/0000...   20-byte entries per queue
    <root>/index/20260101120000000                  message keys -> commit-log offsets
    <root>/checkpoint                               flushed-message timestamps
    <root>/abort                                    present while the store is open
    <root>/lock                                     flock: one store per directory
    <root>/config/consumerOffset.json               committed consumer offsets
    <root>/config/topics.json ...                   the broker's tables (add_config_table)

**Appending.** :meth:`MessageStore.put_messages` takes records already encoded by
:func:`rocketq.protocol.message.encode_message` (outside any lock) and, under one lock
acquisition, stamps their queue offsets, commit-log offsets and store time, writes them with one
``pwrite`` and writes their consume-queue entries (one ``pwrite`` per queue file touched). The
consume queue is thus built *synchronously*: a message is readable by a pull as soon as
``put_messages`` returns. RocketMQ instead dispatches asynchronously (its ``ReputMessageService``
re-reads the commit log every millisecond); doing it in line costs one small write and removes
the lag and the thread. Arrival listeners (:meth:`MessageStore.add_arrival_listener`) are then
called in the appending thread, outside the lock - the broker's long polling wakes its waiters
there.

**Durability.** Under ``flush="sync"`` the :class:`PutResult` carries ``durable``, a
``concurrent.futures.Future`` completed once an fsync covered the records (group commit, see
:mod:`rocketq.store.flush`); the broker awaits it with ``asyncio.wrap_future`` and answers
FLUSH_DISK_TIMEOUT after ``sync_flush_timeout``. Under ``flush="async"`` ``durable`` is ``None``
and a background thread fsyncs every ``flush_interval``. Like RocketMQ, a consumer may read a
message before it is durable. The future is shared by every append of one fsync round, so an
asyncio caller may add one done-callback per distinct future rather than one per send. The
group-commit thread needs the GIL back after each fsync; with CPython's default 5 ms switch
interval a busy event loop can delay every round by up to that much, so a broker process should
call ``sys.setswitchinterval(0.0005)`` (``bench/bench_store.py --switch-interval`` shows the
difference; on our shared 2-core machine it mattered most when other processes kept the CPUs
busy, up to 2-4x more sync sends per second from 32 senders).

**Failures.** If a write fails (``ENOSPC``, ``EIO`` ...) the append raises
:class:`~rocketq.errors.StoreFullError` / :class:`~rocketq.errors.StoreError` and nothing moves:
offsets stay where they were, what was acknowledged is untouched, and the next append (once
space returns) writes over the failed attempt. If an fsync fails the store stops accepting
appends (the kernel may have dropped the unwritten pages; only a restart's recovery can tell what
is on disk).

**Indexing.** Each appended record's unique id and keys go into the message index
(:mod:`rocketq.store.index`) under the same lock; :meth:`MessageStore.query_message` looks them
up. A failure there never fails the append: the next start indexes the record again.

**Reading.** :meth:`MessageStore.get_messages` walks consume-queue entries with
``struct.iter_unpack`` over a slice of the mapped file and returns the stored records as they are
in the commit log, joined once into one ``bytes``: no message is decoded.

**Memory.** Reads go through read-only shared mappings, so every page a pull or the start-up
recovery reads counts in the process's resident set (``RssFile``) while it stays mapped - page
cache, shared and reclaimable, yet what ``ps`` and ``VmRSS`` show. Recovery reads up to the last
three segments after a clean stop (3 GiB with the default segments), so when it is done it
unmaps what it read (:meth:`~rocketq.store.segments.Segment.release_pages`; the pages stay
cached): a restarted broker's RSS is then its own memory, whatever the log's size
(``bench/bench_scale.py`` measures both).

Thread safety: every public method may be called from any thread.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import fcntl
import logging
import os
import shutil
import struct
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from rocketq.clock import ms
from rocketq.errors import ConfigError, RemoteProtocolError, StoreError, StoreFullError
from rocketq.lifecycle import Closing
from rocketq.protocol.message import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    QUEUE_OFFSET_POSITION,
    STORE_OFFSETS,
    SYS_FLAG_POSITION,
    MessageExt,
    decode_message,
    decode_messages,
    store_timestamp_position,
)
from rocketq.protocol.properties import MessageConst, string_to_properties, tags_code
from rocketq.store.checkpoint import AbortMarker, Checkpoint
from rocketq.store.commitlog import CommitLog
from rocketq.store.config import CQ_ENTRY_SIZE, StoreConfig
from rocketq.store.configfiles import ConfigTable, remove_stale_temp_files
from rocketq.store.consumequeue import CQ_ENTRY, ConsumeQueue
from rocketq.store.flush import GroupCommitService, PeriodicService
from rocketq.store.index import IndexService, message_keys
from rocketq.store.offsets import ConsumerOffsetTable
from rocketq.store.recovery import StoredRecord, find_valid_end, iter_records, pick_abnormal_start
from rocketq.store.segments import FileIO, Segment

__all__ = [
    "ArrivalListener",
    "GetMessageResult",
    "GetMessageStatus",
    "MessageStore",
    "PropertyFilter",
    "PutResult",
    "QueryMessageResult",
    "RecordProperties",
    "TagsCodeFunction",
    "default_tags_code",
    "record_properties",
]

log = logging.getLogger(__name__)

_I32 = struct.Struct(">i")
_HEAD = struct.Struct(">ii")
_QUEUE_ID_POSITION = 12
_MAGICS = frozenset({MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2})
_I64 = struct.Struct(">q")
_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
#: Most consume-queue bytes one pull scans while filtering (RocketMQ's ``maxFilterMessageCount``
#: is ``max(16000, maxMsgNums * 20)``, compared against a byte position).
_MAX_FILTER_BYTES = 16000

#: A pull's filter on a message's properties (SQL92): true to deliver it.
PropertyFilter = Callable[[Mapping[str, str]], bool]
#: ``(topic, queue_id, max_offset, tag_code, properties)`` after messages were appended to that
#: queue: its new max offset and, when one message arrived, its consume-queue tag code and the
#: properties its writer passed (``None`` when unknown; a batch passes ``None`` for both).
ArrivalListener = Callable[[str, int, int, int | None, Mapping[str, str] | None], None]
#: ``(topic, properties, store_timestamp_ms) -> tag code`` used when recovery re-dispatches.
TagsCodeFunction = Callable[[str, Mapping[str, str], int], int]


def default_tags_code(topic: str, properties: Mapping[str, str], store_timestamp: int) -> int:
    """The consume-queue tag code of a message: the Java hash of its ``TAGS`` property (0 without).

    The broker passes its own function when some topic needs another code (RocketMQ's schedule
    topic stores the delivery time there); recovery uses it to rebuild lost entries.
    """
    return tags_code(properties.get(MessageConst.TAGS))


class GetMessageStatus(enum.Enum):
    """Outcome of a pull read (RocketMQ's ``GetMessageStatus``)."""

    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


@dataclass(frozen=True, slots=True)
class GetMessageResult:
    """A pull read: ``data`` is the stored records back to back (a FOUND pull body as is)."""

    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    data: bytes = b""
    message_count: int = 0


@dataclass(frozen=True, slots=True)
class PutResult:
    """Where an append went. ``commit_log_offsets`` has one entry per record (for offset
    message ids); ``durable`` is the group-commit future under sync flush, else ``None``."""

    commit_log_offset: int
    queue_offset: int
    message_count: int
    wrote_bytes: int
    store_timestamp: int
    commit_log_offsets: tuple[int, ...]
    durable: Future[None] | None = None


@dataclass(frozen=True, slots=True)
class QueryMessageResult:
    """A look-up by key (QUERY_MESSAGE): the stored records found, in commit-log order, and where
    the index stood (RocketMQ's ``indexLastUpdateTimestamp`` / ``indexLastUpdatePhyoffset``)."""

    messages: tuple[bytes, ...]
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


def _check_record(
    buf: bytearray, pos: int, size: int, topic: bytes, magic: int, queue_id: int
) -> tuple[int, int, int]:
    """Check that the record at ``pos`` is for ``topic``, stamp ``queue_id`` into it (as RocketMQ
    writes the queue id under its lock) and return its store-timestamp position (relative), the
    absolute position of its property string and its sys flag."""
    (sys_flag,) = _I32.unpack_from(buf, pos + SYS_FLAG_POSITION)
    fixed = 88 + (12 if sys_flag & 0x10 else 0) + (12 if sys_flag & 0x20 else 0)
    (body_len,) = _I32.unpack_from(buf, pos + fixed - 4)
    at = pos + fixed + body_len
    if body_len < 0 or at + 3 > pos + size:
        raise ConfigError("the record's body overruns it")
    if magic == MESSAGE_MAGIC_CODE:
        start, length = at + 1, buf[at]
    else:
        start, length = at + 2, (buf[at] << 8) | buf[at + 1]
    if buf[start : start + length] != topic:
        raise ConfigError(f"a record for topic {topic.decode(errors='replace')!r} holds another topic")
    if start + length + 2 > pos + size:
        raise ConfigError("the record's topic overruns it")
    _I32.pack_into(buf, pos + _QUEUE_ID_POSITION, queue_id)
    return store_timestamp_position(sys_flag), start + length, sys_flag


class RecordProperties(Mapping[str, str]):
    """A stored record's property string, read as a map on demand: :meth:`get` finds one pair
    without splitting the others (a filter usually names one or two of a message's properties),
    with RocketMQ's decoding rules - the last pair with a name wins, empty values are no pair."""

    __slots__ = ("_all", "_raw")

    def __init__(self, raw: bytes) -> None:
        self._raw = raw
        self._all: dict[str, str] | None = None

    def get(self, name: str, default: str | None = None) -> str | None:  # type: ignore[override]
        raw = self._raw
        key = name.encode() + b"\x01"
        i = raw.rfind(key)
        while i >= 0:
            if i == 0 or raw[i - 1] == 2:
                start = i + len(key)
                stop = raw.find(b"\x02", start)
                value = raw[start:] if stop < 0 else raw[start:stop]
                if value:
                    return value.decode("utf-8", "replace")
            i = raw.rfind(key, 0, i)
        return default

    def _parsed(self) -> dict[str, str]:
        if self._all is None:
            self._all = string_to_properties(self._raw.decode("utf-8", "replace"))
        return self._all

    def __getitem__(self, name: str) -> str:
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._parsed())

    def __len__(self) -> int:
        return len(self._parsed())


def record_properties(view: memoryview | bytes, pos: int) -> RecordProperties:
    """The properties of the stored record at ``pos`` of ``view``, read without decoding the
    rest of it (for property filters at pull time)."""
    (sys_flag,) = _I32.unpack_from(view, pos + SYS_FLAG_POSITION)
    fixed = 88 + (12 if sys_flag & 0x10 else 0) + (12 if sys_flag & 0x20 else 0)
    (body_len,) = _I32.unpack_from(view, pos + fixed - 4)
    at = pos + fixed + body_len
    (magic,) = _I32.unpack_from(view, pos + 4)
    if magic == MESSAGE_MAGIC_CODE:
        at += 1 + view[at]
    else:
        at += 2 + ((view[at] << 8) | view[at + 1])
    length = (view[at] << 8) | view[at + 1]
    return RecordProperties(bytes(view[at + 2 : at + 2 + length]))


def _check_name(topic: str) -> None:
    if not topic or topic in (".", "..") or "/" in topic or "\0" in topic or os.sep in topic:
        raise ConfigError(f"topic name {topic!r} cannot name a consume-queue directory")


class MessageStore(Closing):
    """Commit log + consume queues + checkpoint + config tables in one directory.

    >>> import tempfile
    >>> from rocketq.protocol.message import encode_message
    >>> with tempfile.TemporaryDirectory() as d, MessageStore(d) as store:
    ...     put = store.put_messages("T", 0, [encode_message(topic="T", body=b"hi")])
    ...     store.get_messages("T", 0, 0, 32).message_count
    1
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        config: StoreConfig | None = None,
        *,
        clock: Callable[[], float] = time.time,
        io: FileIO | None = None,
        tags_code_function: TagsCodeFunction = default_tags_code,
        start_services: bool = True,
    ) -> None:
        """Open (creating if needed) and recover the store in ``root``.

        ``clock`` gives wall-clock seconds (store timestamps, retention); ``io`` lets tests inject
        write faults; ``start_services=False`` runs no background thread at all (tests then call
        :meth:`flush`, :meth:`clean_expired_files` ... themselves; sync appends still complete
        their ``durable`` future through the group-commit thread, which always runs under sync
        flush).
        """
        self.root = Path(root)
        self.config = config or StoreConfig()
        self._clock = clock
        self._io = io or FileIO()
        self._tags_code = tags_code_function
        self._lock = threading.Lock()
        self._writable = True
        self._closed = False
        self._listeners: list[ArrivalListener] = []
        self._queues: dict[str, dict[int, ConsumeQueue]] = {}
        self._last_dispatch_timestamp = 0
        self._last_cq_min_physic = 0
        self._disk_full = False
        self._misordered: set[tuple[str, int]] = set()
        self._started_ms = ms(clock())
        self._index_failed = False
        self._replica = False
        #: The message index (``None`` with ``message_index_enable`` off).
        self.index: IndexService | None = None
        #: Messages and bytes appended since the store opened.
        self.put_message_count = 0
        self.put_message_bytes = 0

        self.root.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(
            self.root / "lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644
        )
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self._lock_fd)
            raise StoreError(f"another process has the message store in {self.root} open") from None

        try:
            self.commit_log = CommitLog(
                self.root / "commitlog", self.config.commit_log_segment_size, self._io
            )
            self.checkpoint = Checkpoint(self.root / "checkpoint")
            if self.config.message_index_enable:
                self.index = IndexService(
                    self.root / "index",
                    slots=self.config.max_hash_slot_num,
                    entries=self.config.max_index_num,
                    clock=clock,
                )
            self._abort = AbortMarker(self.root / "abort")
            # the config files: the consumer offsets, and the tables of add_config_table
            self.config_dir = self.root / "config"
            self.config_dir.mkdir(exist_ok=True)
            remove_stale_temp_files(self.config_dir)
            self.consumer_offsets = ConsumerOffsetTable(self.config_dir / "consumerOffset.json")
            self.consumer_offsets.load()
            self._config_tables: tuple[ConfigTable, ...] = (self.consumer_offsets,)
            crashed = self._abort.exists()
            self._recover(crashed)
            self._abort.create()
            #: How far the commit log's records are dispatched to queues and index (a slave's
            #: replicated bytes may end in the middle of a record, which waits for its rest).
            self.reput_offset = self.commit_log.max_offset
        except BaseException:
            self._release_files()
            raise

        self._group_commit: GroupCommitService | None = None
        if self.config.flush == "sync":
            self._group_commit = GroupCommitService(self.commit_log.flush, self._flush_failed)
            self._group_commit.start()
        self._service: PeriodicService | None = None
        if start_services:
            cfg = self.config
            tasks: list[tuple[str, float, Callable[[], object]]] = [
                ("flush-consume-queues", cfg.flush_consume_queue_interval, self.flush_consume_queues),
                ("persist-config", cfg.config_flush_interval, self.persist_config),
                ("clean-expired-files", cfg.clean_resource_interval, self.clean_expired_files),
            ]
            if cfg.flush == "async":
                tasks.insert(0, ("flush-commit-log", cfg.flush_interval, self._flush_commit_log_task))
            self._service = PeriodicService(tasks)
            self._service.start()

    # -- lifecycle ------------------------------------------------------------------------------

    def close(self) -> None:
        """Flush everything, write the checkpoint and config files, remove the abort marker."""
        if self._closed:
            return
        self._closed = True
        if self._service is not None:
            self._service.stop()
        if self._group_commit is not None:
            self._group_commit.stop()
        clean = True
        try:
            with self._lock:
                self._writable = False
            self.commit_log.flush()
            self.flush_consume_queues()
        except OSError as exc:
            clean = False
            log.error("final flush of %s failed: %s; the next start will run crash recovery", self.root, exc)
        try:
            self.persist_config(force=True)
        except OSError as exc:
            log.error("could not persist config files of %s: %s", self.root, exc)
        self._release_files(remove_abort=clean)

    def _release_files(self, *, remove_abort: bool = False) -> None:
        for queues in list(self._queues.values()):
            for cq in queues.values():
                cq.close()
        if self.index is not None:
            self.index.close()
        if hasattr(self, "commit_log"):
            self.commit_log.close()
        if hasattr(self, "checkpoint"):
            self.checkpoint.close()
        if remove_abort:
            self._abort.remove()
        os.close(self._lock_fd)

    # -- recovery -------------------------------------------------------------------------------

    def _recover(self, crashed: bool) -> None:
        cq_root = self.root / "consumequeue"
        cq_root.mkdir(exist_ok=True)
        for topic_dir in sorted(cq_root.iterdir()):
            if not topic_dir.is_dir():
                continue
            for queue_dir in sorted(topic_dir.iterdir()):
                if not (queue_dir.is_dir() and queue_dir.name.isdigit()):
                    continue
                cq = self._new_queue(topic_dir.name, int(queue_dir.name))
                cq.load_and_recover()
        self.commit_log.files.load()
        segs = self.commit_log.files.segments
        if not segs:
            if any(self._queues.values()):
                log.warning("the commit log of %s is empty: deleting every consume queue", self.root)
                for queues in self._queues.values():
                    for cq in queues.values():
                        cq.destroy()
            self._queues.clear()
            if self.index is not None:
                self.index.load(crashed=crashed, log_min=0, log_end=0)
                self.index.recovered()
            return
        if crashed:
            start = pick_abnormal_start(self.commit_log, self.checkpoint.min_timestamp)
            log.warning(
                "%s was not closed cleanly: recovering from commit-log segment %s",
                self.root,
                segs[start].path.name,
            )
        else:
            start = max(0, len(segs) - 3)
        end = find_valid_end(self.commit_log, start, self.config.check_crc_on_recover)
        self.commit_log.files.truncate(end)
        self.commit_log.max_offset = self.commit_log.flushed_offset = end
        for queues in self._queues.values():
            for cq in queues.values():
                cq.truncate_dirty(end)
        # Dispatch what the queues miss: after a crash everything from the safe segment on, after
        # a clean stop whatever lies past the furthest point any queue reached.
        if crashed:
            begin = segs[start].start
        else:
            ends = [cq.max_physic_offset for qs in self._queues.values() for cq in qs.values()]
            begin = max([self.commit_log.min_offset, *ends])
        index = self.index
        resume = end
        if index is not None:
            resume = index.load(crashed=crashed, log_min=self.commit_log.min_offset, log_end=end)
        dispatched = indexed = 0
        if min(begin, resume) < end:
            known: dict[tuple[bytes, int], ConsumeQueue | None] = {}

            def reached(topic: bytes, queue_id: int) -> int:
                key = (topic, queue_id)
                if key in known:
                    queue = known[key]
                else:
                    queue = known[key] = self._queues.get(topic.decode(errors="replace"), {}).get(queue_id)
                return queue.max_physic_offset if queue is not None else -1

            for record in iter_records(self.commit_log, min(begin, resume), end, reached, keep_from=resume):
                if index is not None and record.offset >= resume:
                    index.add(
                        record.topic.encode(),
                        record.properties_raw,
                        0,
                        len(record.properties_raw),
                        record.offset,
                        record.store_timestamp,
                        record.sys_flag,
                        dedupe=record.offset == resume,
                    )
                    indexed += 1
                if record.offset >= begin and self._redispatch(record):
                    dispatched += 1
                    known.pop((record.topic.encode(), record.queue_id), None)
        if dispatched:
            log.warning("rebuilt %s consume-queue entries of %s from the commit log", dispatched, self.root)
        if indexed > 1 or (indexed and crashed):
            log.warning("indexed %s messages of %s again from the commit log", indexed, self.root)
        if index is not None:
            self.checkpoint.index_msg_timestamp = index.recovered()
        min_physic = self.commit_log.min_offset
        for queues in self._queues.values():
            for cq in queues.values():
                cq.correct_min_offset(min_physic)
                cq.flush()
        self.commit_log.files.sync_range(self.commit_log.min_offset, end)
        last_timestamp = self._last_record_timestamp(end) if end > 0 else 0
        # The scans above mapped every page they read (up to three 1 GiB segments after a clean
        # stop); let go of them so the process's RSS does not carry the scanned log.
        self.commit_log.files.release_pages()
        for queues in self._queues.values():
            for cq in queues.values():
                cq.files.release_pages()
        self.commit_log.tail = (end, last_timestamp)
        self.commit_log.flushed_timestamp = last_timestamp
        self._last_dispatch_timestamp = last_timestamp
        self.checkpoint.physic_msg_timestamp = max(self.checkpoint.physic_msg_timestamp, last_timestamp)
        self.checkpoint.logics_msg_timestamp = max(self.checkpoint.logics_msg_timestamp, last_timestamp)
        self.checkpoint.flush()

    def _last_record_timestamp(self, end: int) -> int:
        # The newest queue entry names the last dispatched record; good enough for the checkpoint.
        best = (-1, 0)
        for queues in self._queues.values():
            for cq in queues.values():
                entry = cq.entry(cq.max_index - 1)
                if entry is not None and entry[0] > best[0] and entry[0] + entry[1] <= end:
                    best = (entry[0], entry[1])
        if best[0] < 0:
            return 0
        return max(self.commit_log.store_timestamp(best[0], best[1]), 0)

    def _redispatch(self, record: StoredRecord) -> bool:
        try:
            _check_name(record.topic)
        except ConfigError:
            log.error("skipping a record with topic %r at offset %s", record.topic, record.offset)
            return False
        # no lock taken here: recovery runs alone, a slave's dispatch holds the store lock
        cq = self._queue(record.topic, record.queue_id)
        if cq is None:
            if record.queue_id < 0:
                log.error("skipping a record with queue id %s at offset %s", record.queue_id, record.offset)
                return False
            cq = self._new_queue(record.topic, record.queue_id)
        if record.offset + record.size <= cq.max_physic_offset:
            return False
        if cq.max_index == 0 and not cq.files.segments and record.queue_offset > 0:
            cq.min_index = cq.max_index = cq.flushed_index = record.queue_offset
        elif record.queue_offset != cq.max_index and (record.topic, record.queue_id) not in self._misordered:
            self._misordered.add((record.topic, record.queue_id))  # once per queue, not per record
            log.warning(
                "queue %s-%s: record at %s has queue offset %s but the queue is at %s; appending it there",
                record.topic, record.queue_id, record.offset, record.queue_offset, cq.max_index,
            )  # fmt: skip
        code = self._tags_code(record.topic, record.properties(), record.store_timestamp)
        cq.prepare(1)
        cq.write(CQ_ENTRY.pack(record.offset, record.size, code), record.offset + record.size)
        return True

    # -- consume-queue table --------------------------------------------------------------------

    def _new_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = ConsumeQueue(
            self.root / "consumequeue" / topic / str(queue_id),
            topic,
            queue_id,
            self.config.consume_queue_entries_per_file,
            self._io,
        )
        queues = self._queues.get(topic)
        if queues is None:
            queues = self._queues[topic] = {}
        queues[queue_id] = cq
        return cq

    def _queue(self, topic: str, queue_id: int, *, create: bool = False) -> ConsumeQueue | None:
        queues = self._queues.get(topic)
        if queues is not None:
            cq = queues.get(queue_id)
            if cq is not None:
                return cq
        if not create:
            return None
        if queue_id < 0:
            raise ConfigError(f"queue id must not be negative, got {queue_id}")
        _check_name(topic)
        with self._lock:  # two first sends to a queue must not create two objects for its files
            queues = self._queues.get(topic)
            cq = queues.get(queue_id) if queues is not None else None
            return cq if cq is not None else self._new_queue(topic, queue_id)

    # -- appending ------------------------------------------------------------------------------

    def add_arrival_listener(self, listener: ArrivalListener) -> None:
        """Call ``listener(topic, queue_id, max_offset, tag_code, properties)`` after every
        append to a queue (see :data:`ArrivalListener`): RocketMQ's ``MessageArrivingListener``,
        which lets a held pull whose filter refuses the message stay held.

        It runs in the appending thread right after the store lock is released: keep it short
        and thread-safe (an asyncio broker hands over with ``loop.call_soon_threadsafe``).
        """
        self._listeners.append(listener)

    def remove_arrival_listener(self, listener: ArrivalListener) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def put_message(
        self,
        topic: str,
        queue_id: int,
        record: bytes | bytearray,
        tags_code: int = 0,
        properties: Mapping[str, str] | None = None,
    ) -> PutResult:
        """Append one record: :meth:`put_messages` for a batch of one, on a shorter path.

        The arrival listeners get ``tags_code`` and ``properties`` (the record's properties, if
        the caller has them parsed: an SQL92 filter of a held pull is tried on them)."""
        buf = bytearray(record)
        total = len(buf)
        limit = self.config.effective_max_message_size
        if total < 92 or total > limit:
            if total >= 92:
                raise ConfigError(f"{total} bytes exceed the maximum message size of {limit}")
            raise ConfigError("the record is too short to be a stored message")
        size, magic = _HEAD.unpack_from(buf, 0)
        if magic not in _MAGICS or size != total:
            raise ConfigError("the record is not a stored message")
        topic_bytes = topic.encode()
        ts_pos, props_pos, sys_flag = _check_record(buf, 0, total, topic_bytes, magic, queue_id)
        queues = self._queues.get(topic)
        cq = queues.get(queue_id) if queues is not None else None
        if cq is None:
            cq = self._queue(topic, queue_id, create=True)
            assert cq is not None
        commit_log = self.commit_log
        with self._lock:
            if not self._writable or self._replica:
                raise self._not_writable()
            if self._disk_full:
                raise StoreFullError(f"the disk of the message store in {self.root} is nearly full")
            if cq.destroyed:  # the topic was deleted since we looked the queue up
                cq = self._new_queue(topic, queue_id)
            now_ms = int(self._clock() * 1000)  # clock.ms inline: no call on the append path
            try:
                if cq.max_index >= cq.capacity:
                    cq.prepare(1)
                seg, phys = commit_log.reserve(total)
            except OSError as exc:
                raise self._write_error(exc) from exc
            queue_offset = cq.max_index
            STORE_OFFSETS.pack_into(buf, QUEUE_OFFSET_POSITION, queue_offset, phys)
            _I64.pack_into(buf, ts_pos, now_ms)
            end = phys + total
            try:
                seg.write(phys - seg.start, buf)
            except OSError as exc:
                commit_log.discard_unwritten(phys)
                raise self._write_error(exc) from exc
            try:
                cq.write_one(CQ_ENTRY.pack(phys, total, tags_code), end)
            except OSError as exc:
                commit_log.discard_unwritten(phys)
                cq.discard_unwritten()
                raise self._write_error(exc) from exc
            commit_log.tail = (end, now_ms)
            commit_log.max_offset = end
            self._last_dispatch_timestamp = now_ms
            self.put_message_count += 1
            self.put_message_bytes += total
            index = self.index
            if index is not None:
                try:
                    index.add(topic_bytes, buf, props_pos + 2, total, phys, now_ms, sys_flag)
                except (OSError, ValueError) as exc:
                    self._index_failure(phys, exc)
        for listener in self._listeners:
            try:
                listener(topic, queue_id, queue_offset + 1, tags_code, properties)
            except Exception:
                log.exception("arrival listener %r failed", listener)
        durable = self._group_commit.request() if self._group_commit is not None else None
        return PutResult(phys, queue_offset, 1, total, now_ms, (phys,), durable)

    def put_messages(
        self,
        topic: str,
        queue_id: int,
        records: Sequence[bytes | bytearray],
        tags_codes: Sequence[int] | None = None,
    ) -> PutResult:
        """Append records for one queue as one unit: one lock, one commit-log write.

        ``records`` are stored records from :func:`~rocketq.protocol.message.encode_message` for
        this ``topic`` and ``queue_id`` (their offset fields and store timestamp are overwritten
        here); ``tags_codes`` their consume-queue tag codes (default: all 0, "no tags"). A
        batch always lands in one segment with consecutive queue offsets, as RocketMQ stores a
        ``SEND_BATCH_MESSAGE``.

        Raises :class:`~rocketq.errors.ConfigError` for an empty, malformed or oversized batch
        (over ``max_message_size``), :class:`~rocketq.errors.StoreFullError` when the disk is
        full, :class:`~rocketq.errors.StoreError` for other write failures or a closed store.
        """
        count = len(records)
        if count == 0:
            raise ConfigError("nothing to append")
        if tags_codes is None:
            tags_codes = (0,) * count
        elif len(tags_codes) != count:
            raise ConfigError(f"{count} records but {len(tags_codes)} tag codes")
        buf = records[0] if count == 1 and type(records[0]) is bytearray else bytearray().join(records)
        total = len(buf)
        if total > self.config.effective_max_message_size:
            raise ConfigError(
                f"{total} bytes exceed the maximum message size of {self.config.effective_max_message_size}"
            )
        # Record boundaries and stamp positions are computed before taking the lock.
        starts: list[int] = []
        sizes: list[int] = []
        ts_positions: list[int] = []
        props_positions: list[int] = []
        sys_flags: list[int] = []
        pos = 0
        topic_bytes = topic.encode()
        for _ in range(count):
            if total - pos < 92:
                raise ConfigError(f"record {len(starts)} of the batch is truncated")
            size, magic = _HEAD.unpack_from(buf, pos)
            if magic not in _MAGICS or size < 92 or pos + size > total:
                raise ConfigError(f"record {len(starts)} of the batch is not a stored message")
            starts.append(pos)
            sizes.append(size)
            ts_rel, props_pos, sys_flag = _check_record(buf, pos, size, topic_bytes, magic, queue_id)
            ts_positions.append(pos + ts_rel)
            props_positions.append(props_pos)
            sys_flags.append(sys_flag)
            pos += size
        if pos != total:
            raise ConfigError("the records' sizes do not add up to their length")
        cq = self._queue(topic, queue_id, create=True)
        assert cq is not None
        pack_offsets = STORE_OFFSETS.pack_into
        pack_ts = _I64.pack_into
        commit_log = self.commit_log
        with self._lock:
            if not self._writable or self._replica:
                raise self._not_writable()
            if self._disk_full:
                raise StoreFullError(f"the disk of the message store in {self.root} is nearly full")
            if cq.destroyed:  # the topic was deleted since we looked the queue up
                cq = self._new_queue(topic, queue_id)
            now_ms = int(self._clock() * 1000)  # clock.ms inline: no call on the append path
            try:
                cq.prepare(count)
                seg, phys = commit_log.reserve(total)
            except OSError as exc:
                raise self._write_error(exc) from exc
            queue_offset = cq.max_index
            if count == 1:
                pack_offsets(buf, QUEUE_OFFSET_POSITION, queue_offset, phys)
                pack_ts(buf, ts_positions[0], now_ms)
                offsets: tuple[int, ...] = (phys,)
                entries = CQ_ENTRY.pack(phys, total, tags_codes[0])
            else:
                offsets = tuple(phys + s for s in starts)
                for i in range(count):
                    pack_offsets(buf, starts[i] + QUEUE_OFFSET_POSITION, queue_offset + i, offsets[i])
                    pack_ts(buf, ts_positions[i], now_ms)
                entries = b"".join([CQ_ENTRY.pack(offsets[i], sizes[i], tags_codes[i]) for i in range(count)])
            try:
                commit_log.write(seg, phys, buf)
            except OSError as exc:
                commit_log.discard_unwritten(phys)
                raise self._write_error(exc) from exc
            try:
                cq.write(entries, phys + total)
            except OSError as exc:
                commit_log.discard_unwritten(phys)
                cq.discard_unwritten()
                raise self._write_error(exc) from exc
            commit_log.commit(phys + total, now_ms)
            self._last_dispatch_timestamp = now_ms
            self.put_message_count += count
            self.put_message_bytes += total
            max_offset = cq.max_index
            index = self.index
            if index is not None:
                for i in range(count):
                    try:
                        index.add(
                            topic_bytes,
                            buf,
                            props_positions[i] + 2,
                            starts[i] + sizes[i],
                            phys + starts[i],
                            now_ms,
                            sys_flags[i],
                        )
                    except (OSError, ValueError) as exc:
                        self._index_failure(phys + starts[i], exc)
        for listener in self._listeners:
            try:
                listener(topic, queue_id, max_offset, None, None)
            except Exception:
                log.exception("arrival listener %r failed", listener)
        durable = self._group_commit.request() if self._group_commit is not None else None
        return PutResult(phys, queue_offset, count, total, now_ms, offsets, durable)

    def _not_writable(self) -> StoreError:
        if self._replica:
            return StoreError("the message store is a slave's: it takes only its master's bytes")
        return StoreError("the message store is closed or stopped accepting writes after a failure")

    # -- replication ------------------------------------------------------------------------------

    @property
    def replica(self) -> bool:
        """True once :meth:`become_replica` was called: appends come only from a master."""
        return self._replica

    def become_replica(self) -> None:
        """Make this store a slave's: :meth:`put_message` / :meth:`put_messages` refuse, and
        :meth:`append_replica` is the only way in (RocketMQ's store in role ``SLAVE``)."""
        self._replica = True

    def read_commit_log(self, offset: int, max_bytes: int) -> bytes | None:
        """Up to ``max_bytes`` of the commit log from ``offset``, never past the segment holding
        it (RocketMQ's ``getCommitLogData``, which a master streams to its slave): ``b""`` at the
        max offset, ``None`` when ``offset`` is not stored (deleted, or past the end)."""
        log_ = self.commit_log
        end = log_.max_offset
        if offset == end:
            return b""
        seg = log_.files.find(offset)
        if seg is None or not log_.min_offset <= offset < end:
            return None
        size = min(max_bytes, end - offset, seg.end - offset)
        return log_.read(offset, size)

    def append_replica(self, offset: int, data: bytes) -> int:
        """Append commit-log bytes a master sent, at the same physical ``offset``, and dispatch
        every record they complete to its consume queue and the index (RocketMQ's
        ``appendToCommitLog`` and the reput service behind it). Returns the new max offset.

        ``offset`` must be the commit log's end - or, on an empty log, the start of a segment
        (a new slave is streamed from the start of its master's last segment). Raises
        :class:`~rocketq.errors.StoreError` otherwise, or when a write fails."""
        log_ = self.commit_log
        with self._lock:
            if not self._writable:
                raise self._not_writable()
            if offset != log_.max_offset:
                if log_.max_offset or log_.files.segments or offset % log_.segment_size:
                    raise StoreError(
                        f"replicated bytes at {offset}, but the commit log ends at {log_.max_offset}"
                    )
                log_.files.create(offset)
                log_.max_offset = self.reput_offset = offset
                log_.flushed_offset = offset
            pos = offset
            view = memoryview(data)
            try:
                while view:
                    seg = log_.files.find(pos) or log_.files.create(pos)
                    n = min(len(view), seg.end - pos)
                    seg.write(pos - seg.start, view[:n])
                    pos += n
                    view = view[n:]
            except OSError as exc:
                raise self._write_error(exc) from exc
            log_.max_offset = pos
            arrived = self._dispatch_replicated(pos)
        for topic, queue_id, max_offset, code in arrived:
            for listener in self._listeners:
                try:
                    listener(topic, queue_id, max_offset, code, None)
                except Exception:
                    log.exception("arrival listener %r failed", listener)
        if self._group_commit is not None:
            self._group_commit.request()  # the slave reports without waiting for its fsync
        return pos

    def _dispatch_replicated(self, end: int) -> list[tuple[str, int, int, int]]:
        """Dispatch the whole records in ``[reput_offset, end)`` (store lock held)."""
        log_ = self.commit_log
        arrived: list[tuple[str, int, int, int]] = []
        pos = self.reput_offset
        last_ts = log_.tail[1]
        while pos + 8 <= end:
            seg = log_.files.find(pos)
            if seg is None:
                break
            size, magic = _HEAD.unpack_from(seg.view, pos - seg.start)
            if magic == BLANK_MAGIC_CODE:
                pos = seg.end
                continue
            if magic not in _MAGICS or size < 92 or pos + size > seg.end:
                self._writable = False
                raise StoreError(f"the replicated commit log holds no record at {pos}: the slave stops")
            if pos + size > end:
                break  # the rest of this record is in the next transfer
            for record in iter_records(log_, pos, pos + size):
                if self._redispatch(record):
                    cq = self._queue(record.topic, record.queue_id)
                    assert cq is not None
                    code = self._tags_code(record.topic, record.properties(), record.store_timestamp)
                    arrived.append((record.topic, record.queue_id, cq.max_index, code))
                if self.index is not None:
                    raw = record.properties_raw
                    try:
                        self.index.add(
                            record.topic.encode(), raw, 0, len(raw), record.offset,
                            record.store_timestamp, record.sys_flag,
                        )  # fmt: skip
                    except (OSError, ValueError) as exc:
                        self._index_failure(record.offset, exc)
                last_ts = record.store_timestamp
                self.put_message_count += 1
                self.put_message_bytes += record.size
            pos += size
        self.reput_offset = pos
        log_.tail = (end, last_ts)
        self._last_dispatch_timestamp = last_ts
        return arrived

    def _index_failure(self, phys: int, exc: Exception) -> None:
        """Indexing a record just appended failed: it costs the index (until the next start
        indexes the record again), never the append."""
        assert self.index is not None
        if not self._index_failed:
            log.error("indexing the message at %s failed: %s (the next start indexes it again)", phys, exc)
        self._index_failed = True
        self.index.mark_unindexed(phys)

    def _write_error(self, exc: OSError) -> StoreError:
        if exc.errno in _NO_SPACE:
            log.error("message store %s is out of space: %s", self.root, exc)
            return StoreFullError(f"no space left for the message store in {self.root}: {exc}")
        log.error("message store %s failed to write: %s", self.root, exc)
        return StoreError(f"the message store in {self.root} failed to write: {exc}")

    def _flush_failed(self, exc: BaseException) -> None:
        with self._lock:
            self._writable = False
        log.critical("fsync failed in %s: the store no longer accepts writes (%s)", self.root, exc)

    # -- flushing -------------------------------------------------------------------------------

    def flush(self) -> int:
        """fsync the commit log now; returns the offset durable on disk."""
        try:
            return self.commit_log.flush()
        except OSError as exc:
            self._flush_failed(exc)
            raise StoreError(f"fsync of the commit log failed: {exc}") from exc

    def _flush_commit_log_task(self) -> None:
        self.flush()

    def flush_consume_queues(self) -> None:
        """fsync the consume queues and write the checkpoint (RocketMQ's ``FlushConsumeQueueService``)."""
        logics_timestamp = self._last_dispatch_timestamp
        for queues in list(self._queues.values()):
            for cq in list(queues.values()):
                cq.flush()
        if self.index is not None:
            try:
                self.checkpoint.index_msg_timestamp = self.index.flush()
            except (OSError, ValueError) as exc:
                log.error("flushing the message index of %s failed: %s", self.root, exc)
        self.checkpoint.logics_msg_timestamp = logics_timestamp
        self.checkpoint.physic_msg_timestamp = self.commit_log.flushed_timestamp
        self.checkpoint.flush()

    def add_config_table(self, table: ConfigTable) -> None:
        """Load ``table`` from its file (or the file's backup; nothing if neither exists) and
        write it from now on as the store writes its own config: when it changed, every
        ``config_flush_interval``, and at :meth:`close`.

        The broker keeps its topic and subscription group tables in :attr:`config_dir` this way;
        the store does not know what they hold. Raises
        :class:`~rocketq.errors.StoreCorruptError` when the file and its backup are both unreadable.
        """
        table.load()
        self._config_tables = (*self._config_tables, table)

    def persist_config(self, *, force: bool = False) -> None:
        """Write the consumer offsets, and the tables of :meth:`add_config_table`, that changed
        (all of them with ``force``)."""
        for table in self._config_tables:
            if force:
                table.persist()
            else:
                table.persist_if_dirty()

    @property
    def group_commit_fsyncs(self) -> int:
        """fsync rounds done by the group-commit thread (0 under async flush)."""
        return self._group_commit.fsync_count if self._group_commit is not None else 0

    # -- reading --------------------------------------------------------------------------------

    def get_messages(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int,
        tags_codes: AbstractSet[int] | None = None,
        max_bytes: int | None = None,
        *,
        group: str | None = None,
        property_filter: PropertyFilter | None = None,
        max_transfer: int | None = None,
    ) -> GetMessageResult:
        """Up to ``max_count`` stored records of a queue from queue offset ``offset``.

        Only messages whose tag code is in ``tags_codes`` are returned (``None``: all), and
        with ``property_filter`` only those for whose properties it returns true (RocketMQ's
        ``isMatchedByCommitLog``: the record's properties are read for that). At most
        ``max_transfer_count`` messages (or ``max_transfer``, when given: a bulk pull) and about
        ``max_bytes`` (default ``max_transfer_bytes``) are returned, but always at least one.
        ``next_begin_offset`` follows the last entry examined (RocketMQ's rules, including the
        suggested offsets for the OFFSET_* statuses); ``group`` is accepted for symmetry with
        RocketMQ and unused.
        """
        cq = self._queue(topic, queue_id)
        if cq is None:
            return GetMessageResult(GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, 0, 0, 0)
        min_offset = cq.min_index
        max_offset = cq.max_index
        if max_offset == 0:
            return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, min_offset, max_offset)
        if offset < min_offset:
            return GetMessageResult(GetMessageStatus.OFFSET_TOO_SMALL, min_offset, min_offset, max_offset)
        if offset == max_offset:
            return GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, offset, min_offset, max_offset)
        if offset > max_offset:
            return GetMessageResult(
                GetMessageStatus.OFFSET_OVERFLOW_BADLY, max_offset, min_offset, max_offset
            )
        cfg = self.config
        max_count = max(1, min(max_count, cfg.max_transfer_count if max_transfer is None else max_transfer))
        limit_bytes = cfg.max_transfer_bytes if max_bytes is None else max_bytes
        scan = max(_MAX_FILTER_BYTES, max_count * CQ_ENTRY_SIZE) // CQ_ENTRY_SIZE
        view = cq.read_from(offset, scan)
        if view is None:
            nxt = cq.roll_next_file(offset)
            return GetMessageResult(GetMessageStatus.OFFSET_FOUND_NULL, nxt, min_offset, max_offset)
        files = self.commit_log.files
        segs = files.segments
        seg_size = files.segment_size
        base = segs[0].start if segs else 0
        nsegs = len(segs)
        log_end = self.commit_log.max_offset
        # Consecutive entries usually name adjacent records: collect byte ranges, not records.
        runs: list[tuple[Segment, int, int]] = []
        run_seg: Segment | None = None
        run_start = run_end = 0
        total = 0
        count = 0
        examined = 0
        removed = False
        try:
            for phys, size, tag in CQ_ENTRY.iter_unpack(view):
                if count and (count >= max_count or total + size > limit_bytes):
                    break
                examined += 1
                if tags_codes is not None and tag not in tags_codes:
                    continue
                index = (phys - base) // seg_size
                if phys < base or index >= nsegs or phys + size > log_end:
                    removed = True
                    continue
                seg = segs[index]
                start = phys - seg.start
                if property_filter is not None and not property_filter(record_properties(seg.view, start)):
                    continue
                if seg is run_seg and start == run_end:
                    run_end = start + size
                else:
                    if run_seg is not None:
                        runs.append((run_seg, run_start, run_end))
                    run_seg, run_start, run_end = seg, start, start + size
                total += size
                count += 1
        finally:
            view.release()
        if run_seg is not None:
            runs.append((run_seg, run_start, run_end))
        try:
            if len(runs) == 1:
                seg, a, b = runs[0]
                data = seg.view[a:b].tobytes()
            else:
                parts = [seg.view[a:b] for seg, a, b in runs]
                data = b"".join(parts)
                for part in parts:
                    part.release()
        except ValueError:  # a segment was deleted by retention while we read: let the caller retry
            return GetMessageResult(GetMessageStatus.MESSAGE_WAS_REMOVING, offset, min_offset, max_offset)
        if count:
            status = GetMessageStatus.FOUND
        elif removed:
            status = GetMessageStatus.MESSAGE_WAS_REMOVING
        else:
            status = GetMessageStatus.NO_MATCHED_MESSAGE
        return GetMessageResult(status, offset + examined, min_offset, max_offset, data, count)

    def max_offset(self, topic: str, queue_id: int) -> int:
        """Next queue offset to be written (0 for an unknown queue)."""
        cq = self._queue(topic, queue_id)
        return cq.max_index if cq is not None else 0

    def min_offset(self, topic: str, queue_id: int) -> int:
        """First queue offset still readable (0 for an unknown queue)."""
        cq = self._queue(topic, queue_id)
        return cq.min_index if cq is not None else 0

    def message_count(self, topic: str, queue_id: int) -> int:
        """Messages currently readable in a queue (max - min offset)."""
        cq = self._queue(topic, queue_id)
        return cq.max_index - cq.min_index if cq is not None else 0

    @property
    def commit_log_min_offset(self) -> int:
        return self.commit_log.min_offset

    @property
    def commit_log_max_offset(self) -> int:
        return self.commit_log.max_offset

    def offset_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """Queue offset of the message stored at (or nearest to) ``timestamp_ms``
        (``SEARCH_OFFSET_BY_TIMESTAMP``; RocketMQ's ``getOffsetInQueueByTime``)."""
        cq = self._queue(topic, queue_id)
        if cq is None:
            return 0
        return cq.offset_by_time(timestamp_ms, self.commit_log.store_timestamp, self.commit_log.min_offset)

    def store_time_at(self, topic: str, queue_id: int, queue_offset: int) -> int:
        """Store timestamp (ms) of the message at ``queue_offset``, -1 if there is none."""
        cq = self._queue(topic, queue_id)
        entry = cq.entry(queue_offset) if cq is not None else None
        if entry is None:
            return -1
        return self.commit_log.store_timestamp(entry[0], entry[1])

    def earliest_message_time(self, topic: str, queue_id: int) -> int:
        """Store timestamp of the oldest readable message of a queue, -1 if none
        (``GET_EARLIEST_MSG_STORETIME``)."""
        cq = self._queue(topic, queue_id)
        if cq is None:
            return -1
        return self.store_time_at(topic, queue_id, cq.min_index)

    def earliest_store_time(self) -> int:
        """Store timestamp of the oldest message in the commit log, -1 if it is empty."""
        return self.commit_log.store_timestamp(self.commit_log.min_offset)

    def read_message_bytes(self, commit_log_offset: int) -> bytes | None:
        """The stored record at a commit-log offset (from an offset message id), or ``None``
        (``VIEW_MESSAGE_BY_ID`` answers with these bytes)."""
        size = self.commit_log.record_size(commit_log_offset)
        if size < 0:
            return None
        return self.commit_log.read(commit_log_offset, size)

    def query_message(
        self, topic: str, key: str, max_num: int, begin_timestamp: int, end_timestamp: int
    ) -> QueryMessageResult:
        """The messages of ``topic`` whose unique id or one of whose keys is ``key``, stored within
        ``[begin_timestamp, end_timestamp]`` (ms), through the message index (RocketMQ's
        ``queryMessage``): at most ``max_num`` (capped by ``max_msgs_num_batch``), the newest
        ones, returned in commit-log order.

        RocketMQ returns whatever shares the key's hash and lets the client drop the others;
        here each candidate's topic and keys are checked, so every message returned matches.
        The index stores times to the second (as RocketMQ's does), so the range is that coarse.
        """
        index = self.index
        if index is None:
            return QueryMessageResult((), 0, 0)
        last_ts, last_phys = index.last_update
        limit = max(1, min(max_num, self.config.max_msgs_num_batch))
        wanted = key.encode()
        found: dict[int, bytes] = {}
        for phys in index.query(topic, key, begin_timestamp, end_timestamp):
            if phys in found:
                continue
            data = self.read_message_bytes(phys)
            if data is None:
                continue
            try:
                msg = decode_messages(data, read_body=False)[0]
            except RemoteProtocolError:
                continue
            if msg.topic != topic:
                continue
            props = msg.stored_properties.encode()
            if wanted not in message_keys(props):
                continue
            found[phys] = data
            if len(found) >= limit:
                break
        return QueryMessageResult(tuple(found[p] for p in sorted(found)), last_ts, last_phys)

    def look_message(self, commit_log_offset: int) -> MessageExt | None:
        """The decoded message at a commit-log offset (RocketMQ's ``lookMessageByOffset``)."""
        data = self.read_message_bytes(commit_log_offset)
        if data is None:
            return None
        return decode_message(data)[0]

    def topics(self) -> list[str]:
        """Topics that have consume queues."""
        return list(self._queues)

    def queue_ids(self, topic: str) -> list[int]:
        """Queue ids of ``topic`` that have consume queues."""
        return sorted(self._queues.get(topic, {}))

    def delete_topics(self, topics: Iterable[str]) -> None:
        """Delete the consume queues of ``topics`` (their messages stay in the commit log until
        retention removes them; offsets restart at 0 if the topic is created again)."""
        with self._lock:
            for topic in topics:
                queues = self._queues.pop(topic, None)
                if not queues:
                    continue
                for cq in queues.values():
                    cq.destroy()
                with contextlib.suppress(OSError):
                    (self.root / "consumequeue" / topic).rmdir()

    def runtime_info(self) -> dict[str, str]:
        """Store figures for the broker's ``GET_BROKER_RUNTIME_INFO`` table, under RocketMQ's
        key names (values as strings, as that table carries them)."""
        return {
            "commitLogMinOffset": str(self.commit_log.min_offset),
            "commitLogMaxOffset": str(self.commit_log.max_offset),
            "commitLogDiskRatio": f"{self.disk_used_ratio():.4f}",
            "earliestMessageTimeStamp": str(self.earliest_store_time()),
            "dispatchBehindBytes": "0",  # consume queues are built in line with the append
            "putMessageTimesTotal": str(self.put_message_count),
            "putMessageSizeTotal": str(self.put_message_bytes),
            "bootTimestamp": str(self._started_ms),
            "flushDiskType": "SYNC_FLUSH" if self.config.flush == "sync" else "ASYNC_FLUSH",
        }

    # -- retention ------------------------------------------------------------------------------

    def disk_used_ratio(self) -> float:
        """Used fraction (0..1) of the partition holding the commit log."""
        usage = shutil.disk_usage(self.commit_log.files.directory)
        return usage.used / usage.total if usage.total else 1.0

    def clean_expired_files(
        self, *, now: float | None = None, disk_used_ratio: float | None = None, force: bool = False
    ) -> int:
        """Delete expired commit-log segments, then the consume-queue files left pointing only
        at deleted data (RocketMQ's ``CleanCommitLogService`` + ``CleanConsumeQueueService``).

        Segments are deleted oldest first while their last modification is older than
        ``file_reserved_time`` - only when it is one of the ``delete_when`` hours, the disk is
        fuller than ``disk_max_used_space_ratio`` or ``force`` is given, never the segment being
        written, at most ``max_deleted_files_per_run`` per call. Above
        ``disk_clean_forcibly_ratio`` segments go whatever their age; above
        ``disk_full_ratio`` the store also refuses appends (:class:`~rocketq.errors.StoreFullError`)
        until a later run finds the disk below it again, as RocketMQ's ``RunningFlags`` do.
        ``now`` defaults to the store clock, ``disk_used_ratio`` to the real disk usage.
        Returns the segments deleted.
        """
        cfg = self.config
        now = self._clock() if now is None else now
        ratio = self.disk_used_ratio() if disk_used_ratio is None else disk_used_ratio
        time_up = time.localtime(now).tm_hour in cfg.delete_hours()
        space_full = ratio * 100 > cfg.disk_max_used_space_ratio
        clean_now = ratio > cfg.disk_clean_forcibly_ratio
        disk_full = ratio > cfg.disk_full_ratio
        if disk_full != self._disk_full:
            self._disk_full = disk_full
            if disk_full:
                log.error(
                    "disk of %s is %.0f%% full: refusing appends until space returns", self.root, ratio * 100
                )
            else:
                log.info("disk of %s is %.0f%% full: accepting appends again", self.root, ratio * 100)
        deleted = 0
        if time_up or space_full or force:
            files = self.commit_log.files
            while deleted < cfg.max_deleted_files_per_run:
                segs = files.segments
                if len(segs) < 2:
                    break
                first = segs[0]
                if now < first.mtime() + cfg.file_reserved_time and not clean_now:
                    break
                with self._lock:
                    files.delete_first(1)
                deleted += 1
                log.info(
                    "deleted expired commit-log segment %s (time %s, disk %.0f%%)",
                    first.path.name,
                    time_up,
                    ratio * 100,
                )
            files.close_deferred()
        min_physic = self.commit_log.min_offset
        if min_physic > self._last_cq_min_physic:
            self._last_cq_min_physic = min_physic
            if self.index is not None:
                with self._lock:
                    self.index.delete_expired(min_physic)
            for queues in list(self._queues.values()):
                for cq in list(queues.values()):
                    with self._lock:  # the writer may be creating this queue's next file
                        cq.delete_expired(min_physic)
                    cq.files.close_deferred()
        return deleted
