"""Start-up recovery: find where the commit log stops being valid and make the consume queues
match it (RocketMQ's ``recoverNormally`` / ``recoverAbnormally`` plus the reput service's
catch-up).

1. Every consume queue is scanned from its third-last file; its valid entries end at the first
   entry with a negative offset or a non-positive size.
2. The commit log is scanned with :func:`rocketq.protocol.message.scan_stored` (magic code,
   size, fields adding up, body CRC): after a clean shutdown from the third-last segment, after
   a crash (the abort marker was left behind) from the last segment whose first message was
   stored before the checkpoint's safe time. The first torn or corrupt record ends the log:
   the log is cut there and later segments deleted.
3. Consume-queue entries pointing at or past the cut are removed.
4. Records after the point every queue has reached are dispatched again: each queue gets the
   entries it is missing (duplicates are recognised by commit-log offset and skipped); records
   after the last one the message index holds are indexed again (:mod:`rocketq.store.index`).
5. The queues' minimum offsets follow the log's first offset, the checkpoint records where the
   log ends, and the pages the scans mapped are let go of.

:class:`Recovery` runs these steps for :class:`~rocketq.store.message_store.MessageStore` when
it opens; :func:`dispatch_record` (one record to its consume queue) also serves a slave's
replicated bytes (:mod:`rocketq.store.replica`).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from rocketq.errors import ConfigError
from rocketq.protocol.message import (
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    QUEUE_OFFSET_POSITION,
    SYS_FLAG_POSITION,
    ScanStop,
    scan_stored,
    store_timestamp_position,
    stored_size,
)
from rocketq.protocol.properties import string_to_properties
from rocketq.store.checkpoint import Checkpoint
from rocketq.store.commitlog import CommitLog
from rocketq.store.consumequeue import CQ_ENTRY, ConsumeQueue
from rocketq.store.index import IndexService
from rocketq.store.queues import QueueTable
from rocketq.store.records import check_topic_name

__all__ = [
    "Recovery",
    "StoredRecord",
    "TagsCodeFunction",
    "dispatch_record",
    "find_valid_end",
    "iter_records",
    "pick_abnormal_start",
]

log = logging.getLogger(__name__)
# The store's own messages keep the logger name they always had.
store_log = logging.getLogger("rocketq.store.message_store")

#: ``(topic, properties, store_timestamp_ms) -> tag code`` used when recovery re-dispatches.
TagsCodeFunction = Callable[[str, Mapping[str, str], int], int]

_HEAD = struct.Struct(">ii")  # size, magic
# The fixed part of a record with IPv4 hosts, store size through body length (88 bytes).
_V4_FIXED = struct.Struct(">iiiiiqqiq8sq8siqi")
_MAGICS = frozenset({MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2})
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")
_I16 = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """What dispatch needs of one stored record (the body is not read)."""

    offset: int
    size: int
    topic: str
    queue_id: int
    queue_offset: int
    store_timestamp: int
    properties_raw: bytes
    sys_flag: int = 0

    def properties(self) -> dict[str, str]:
        """The record's properties (parsed on demand: only re-dispatched records need them)."""
        return string_to_properties(self.properties_raw.decode()) if self.properties_raw else {}


def pick_abnormal_start(commitlog: CommitLog, safe_timestamp: int) -> int:
    """Index of the segment to start a crash recovery from: the last one whose first record is a
    message stored at or before ``safe_timestamp`` (ms), else the first segment."""
    segs = commitlog.files.segments
    for index in range(len(segs) - 1, -1, -1):
        view = segs[index].view
        size, magic = struct.unpack_from(">ii", view, 0)
        if magic != MESSAGE_MAGIC_CODE or size <= 0:
            continue
        (sys_flag,) = _I32.unpack_from(view, SYS_FLAG_POSITION)
        (timestamp,) = _I64.unpack_from(view, store_timestamp_position(sys_flag))
        if timestamp != 0 and timestamp <= safe_timestamp:
            return index
    return 0


def find_valid_end(commitlog: CommitLog, start_index: int, check_crc: bool) -> int:
    """Scan the segments from ``start_index`` on; the logical offset where valid data ends."""
    segs = commitlog.files.segments
    if not segs:
        return 0
    index = start_index
    while True:
        seg = segs[index]
        result = scan_stored(seg.view, 0, seg.size, check_crc=check_crc)
        end = seg.start + result.end
        if result.stop is ScanStop.BLANK or result.stop is ScanStop.END:
            if index + 1 < len(segs):
                index += 1
                continue
            return end
        if not result.clean:
            log.warning(
                "commit log %s: %s record at offset %s; truncating there",
                seg.path.name,
                result.stop.value,
                end,
            )
        return end


def iter_records(
    commitlog: CommitLog,
    begin: int,
    end: int,
    reached: Callable[[bytes, int], int] | None = None,
    *,
    keep_from: int | None = None,
) -> Iterator[StoredRecord]:
    """The records in ``[begin, end)``, which must start at a record boundary and have been
    validated by :func:`find_valid_end`; blank records move on to the next segment.

    ``reached(topic_utf8, queue_id)`` may name how far (commit-log offset) a queue's entries
    already go; records ending at or before that are skipped without building anything, which
    is most of them when a crash left the consume queues intact - unless they start at or after
    ``keep_from`` (the message index wants those whatever the queues hold).
    """
    pos = begin
    v4 = _V4_FIXED.unpack_from
    while pos < end:
        seg = commitlog.files.find(pos)
        if seg is None:
            return
        view = seg.view
        rel = pos - seg.start
        stop = min(end, seg.end) - seg.start
        while rel < stop:
            size, magic = _HEAD.unpack_from(view, rel)
            if magic not in _MAGICS:
                break  # blank record: the rest of this segment is padding
            (sys_flag,) = _I32.unpack_from(view, rel + SYS_FLAG_POSITION)
            if sys_flag & 0x30 == 0:  # IPv4 hosts: one unpack gives every fixed field
                (_, _, _, queue_id, _, queue_offset, _, _, _, _, timestamp, _, _, _, body_len) = v4(view, rel)
                fixed = _V4_FIXED.size
            else:
                (queue_id,) = _I32.unpack_from(view, rel + 12)
                (queue_offset,) = _I64.unpack_from(view, rel + QUEUE_OFFSET_POSITION)
                (timestamp,) = _I64.unpack_from(view, rel + store_timestamp_position(sys_flag))
                fixed = stored_size(sys_flag, 0, 0, 0) - 3
                (body_len,) = _I32.unpack_from(view, rel + fixed - 4)
            body_end = rel + fixed + body_len
            if magic == MESSAGE_MAGIC_CODE:
                topic_start, topic_len = body_end + 1, view[body_end]
            else:
                topic_start, topic_len = body_end + 2, _U16.unpack_from(view, body_end)[0]
            topic_end = topic_start + topic_len
            topic = bytes(view[topic_start:topic_end])
            offset = seg.start + rel
            rel += size
            if (
                reached is not None
                and (keep_from is None or offset < keep_from)
                and offset + size <= reached(topic, queue_id)
            ):
                continue
            (props_len,) = _I16.unpack_from(view, topic_end)
            yield StoredRecord(
                offset,
                size,
                topic.decode(),
                queue_id,
                queue_offset,
                timestamp,
                bytes(view[topic_end + 2 : topic_end + 2 + props_len]),
                sys_flag,
            )
        pos = seg.end


def dispatch_record(queues: QueueTable, record: StoredRecord, tags_code: TagsCodeFunction) -> bool:
    """Give ``record`` its consume-queue entry unless its queue already has it (by commit-log
    offset); false when it was skipped. The caller holds the store lock, or recovery runs alone."""
    try:
        check_topic_name(record.topic)
    except ConfigError:
        store_log.error("skipping a record with topic %r at offset %s", record.topic, record.offset)
        return False
    cq = queues.get(record.topic, record.queue_id)
    if cq is None:
        if record.queue_id < 0:
            store_log.error("skipping a record with queue id %s at offset %s", record.queue_id, record.offset)
            return False
        cq = queues.new(record.topic, record.queue_id)
    if record.offset + record.size <= cq.max_physic_offset:
        return False
    if cq.max_index == 0 and not cq.files.segments and record.queue_offset > 0:
        cq.min_index = cq.max_index = cq.flushed_index = record.queue_offset
    elif record.queue_offset != cq.max_index and (record.topic, record.queue_id) not in queues.misordered:
        queues.misordered.add((record.topic, record.queue_id))  # once per queue, not per record
        store_log.warning(
            "queue %s-%s: record at %s has queue offset %s but the queue is at %s; appending it there",
            record.topic, record.queue_id, record.offset, record.queue_offset, cq.max_index,
        )  # fmt: skip
    code = tags_code(record.topic, record.properties(), record.store_timestamp)
    cq.prepare(1)
    cq.write(CQ_ENTRY.pack(record.offset, record.size, code), record.offset + record.size)
    return True


class Recovery:
    """The start-up recovery of one store's files (the steps of the module docstring)."""

    def __init__(
        self,
        root: Path,
        commit_log: CommitLog,
        queues: QueueTable,
        index: IndexService | None,
        checkpoint: Checkpoint,
        tags_code: TagsCodeFunction,
    ) -> None:
        self._root = root
        self._log = commit_log
        self._queues = queues
        self._index = index
        self._checkpoint = checkpoint
        self._tags_code = tags_code

    def run(self, crashed: bool, *, check_crc: bool) -> int:
        """Recover; ``crashed`` when the abort marker was left behind. Returns the store time of
        the last dispatched record (0 for an empty log)."""
        self._queues.load()
        self._log.files.load()
        segs = self._log.files.segments
        if not segs:
            self._queues.destroy_all()
            if self._index is not None:
                self._index.load(crashed=crashed, log_min=0, log_end=0)
                self._index.recovered()
            return 0
        if crashed:
            start = pick_abnormal_start(self._log, self._checkpoint.min_timestamp)
            store_log.warning(
                "%s was not closed cleanly: recovering from commit-log segment %s",
                self._root,
                segs[start].path.name,
            )
        else:
            start = max(0, len(segs) - 3)
        end = find_valid_end(self._log, start, check_crc)
        self._log.files.truncate(end)
        self._log.max_offset = self._log.flushed_offset = end
        for cq in self._queues.all():
            cq.truncate_dirty(end)
        # Dispatch what the queues miss: after a crash everything from the safe segment on, after
        # a clean stop whatever lies past the furthest point any queue reached.
        if crashed:
            begin = segs[start].start
        else:
            begin = max([self._log.min_offset, *(cq.max_physic_offset for cq in self._queues.all())])
        self._dispatch_missing(begin, end, crashed)
        return self._finish(end)

    def _dispatch_missing(self, begin: int, end: int, crashed: bool) -> None:
        """Give the queues the records of ``[begin, end)`` they miss, and index the records past
        the last one the index holds."""
        index = self._index
        resume = end
        if index is not None:
            resume = index.load(crashed=crashed, log_min=self._log.min_offset, log_end=end)
        dispatched = indexed = 0
        if min(begin, resume) < end:
            known: dict[tuple[bytes, int], ConsumeQueue | None] = {}

            def reached(topic: bytes, queue_id: int) -> int:
                key = (topic, queue_id)
                if key in known:
                    queue = known[key]
                else:
                    queue = known[key] = self._queues.get(topic.decode(errors="replace"), queue_id)
                return queue.max_physic_offset if queue is not None else -1

            for record in iter_records(self._log, min(begin, resume), end, reached, keep_from=resume):
                if index is not None and record.offset >= resume:
                    raw = record.properties_raw
                    index.add(
                        record.topic.encode(), raw, 0, len(raw), record.offset, record.store_timestamp,
                        record.sys_flag, dedupe=record.offset == resume,
                    )  # fmt: skip
                    indexed += 1
                if record.offset >= begin and dispatch_record(self._queues, record, self._tags_code):
                    dispatched += 1
                    known.pop((record.topic.encode(), record.queue_id), None)
        if dispatched:
            store_log.warning(
                "rebuilt %s consume-queue entries of %s from the commit log", dispatched, self._root
            )
        if indexed > 1 or (indexed and crashed):
            store_log.warning("indexed %s messages of %s again from the commit log", indexed, self._root)
        if index is not None:
            self._checkpoint.index_msg_timestamp = index.recovered()

    def _finish(self, end: int) -> int:
        """Align the queues with the log's start, sync, let go of the scanned pages and write
        the checkpoint; returns the last record's store time."""
        commit_log = self._log
        min_physic = commit_log.min_offset
        queues = self._queues.all()
        for cq in queues:
            cq.correct_min_offset(min_physic)
            cq.flush()
        commit_log.files.sync_range(commit_log.min_offset, end)
        last_timestamp = self._last_record_timestamp(end) if end > 0 else 0
        # The scans above mapped every page they read (up to three 1 GiB segments after a clean
        # stop); let go of them so the process's RSS does not carry the scanned log.
        commit_log.files.release_pages()
        for cq in queues:
            cq.files.release_pages()
        commit_log.tail = (end, last_timestamp)
        commit_log.flushed_timestamp = last_timestamp
        checkpoint = self._checkpoint
        checkpoint.physic_msg_timestamp = max(checkpoint.physic_msg_timestamp, last_timestamp)
        checkpoint.logics_msg_timestamp = max(checkpoint.logics_msg_timestamp, last_timestamp)
        checkpoint.flush()
        return last_timestamp

    def _last_record_timestamp(self, end: int) -> int:
        # The newest queue entry names the last dispatched record; good enough for the checkpoint.
        best = (-1, 0)
        for cq in self._queues.all():
            entry = cq.entry(cq.max_index - 1)
            if entry is not None and entry[0] > best[0] and entry[0] + entry[1] <= end:
                best = (entry[0], entry[1])
        if best[0] < 0:
            return 0
        return max(self._log.store_timestamp(best[0], best[1]), 0)
