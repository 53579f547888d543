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
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass

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
from rocketq.store.commitlog import CommitLog

__all__ = ["StoredRecord", "find_valid_end", "iter_records", "pick_abnormal_start"]

log = logging.getLogger(__name__)

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
