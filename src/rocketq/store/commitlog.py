"""The commit log: every message of every topic, appended to fixed-size segment files.

Records are in RocketMQ's stored format (:mod:`rocketq.protocol.message`); a record never
straddles two segments. When the next record (or batch) does not fit before a segment's end
with 8 bytes to spare, the writer puts RocketMQ's blank record there - int32 size (the bytes
left in the segment) and int32 ``BLANK_MAGIC_CODE``, the rest of the segment left as it is - and
continues at the start of the next segment, exactly as RocketMQ's ``CommitLog`` does.

Every method that changes state runs under the message store's lock; readers use
:attr:`CommitLog.max_offset` and the mapped segments without one.
"""

from __future__ import annotations

import logging
import struct
import threading
from pathlib import Path

from rocketq.protocol.message import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    SYS_FLAG_POSITION,
    store_timestamp_position,
)
from rocketq.store.segments import FileIO, Segment, SegmentQueue

__all__ = ["END_FILE_MIN_BLANK_LENGTH", "CommitLog"]

log = logging.getLogger(__name__)

#: A segment always keeps room for a blank record's size and magic (RocketMQ's constant).
END_FILE_MIN_BLANK_LENGTH = 8

_HEAD = struct.Struct(">ii")
_MAGICS = frozenset({MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2})
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class CommitLog:
    """Segments under ``<root>/commitlog`` and the write / flush positions over them."""

    def __init__(self, directory: Path, segment_size: int, io: FileIO) -> None:
        self.files = SegmentQueue(directory, segment_size, io)
        self.segment_size = segment_size
        #: Logical offset one past the last appended byte (RocketMQ's ``getMaxOffset``).
        self.max_offset = 0
        #: Everything below this offset has been fsynced.
        self.flushed_offset = 0
        #: (max offset, store timestamp of the record ending there), replaced as one value so a
        #: flusher reads a consistent pair without the store lock.
        self.tail: tuple[int, int] = (0, 0)
        #: Store timestamp (ms) of the last record known to be durable (for the checkpoint).
        self.flushed_timestamp = 0
        self._flush_lock = threading.Lock()

    # -- writing (store lock held) --------------------------------------------------------------

    def reserve(self, size: int) -> tuple[Segment, int]:
        """The segment and offset where a record (or batch) of ``size`` bytes goes: closes the
        current segment with a blank record and opens the next one when it would not fit.
        Raises ``OSError`` if a file cannot be created or the blank record written; the log is
        then unchanged."""
        pos = self.max_offset
        seg = self.files.find(pos) or self.files.create(pos)
        left = seg.end - pos
        if size + END_FILE_MIN_BLANK_LENGTH > left:
            if size + END_FILE_MIN_BLANK_LENGTH > self.segment_size:
                raise ValueError(f"a {size}-byte record can never fit in a {self.segment_size}-byte segment")
            seg.write(pos - seg.start, _HEAD.pack(left, BLANK_MAGIC_CODE))
            nxt = self.files.find(seg.end) or self.files.create(seg.end)
            self.max_offset = seg.end
            self.tail = (seg.end, self.tail[1])
            return nxt, nxt.start
        return seg, pos

    @staticmethod
    def write(segment: Segment, offset: int, data: bytes | bytearray) -> None:
        """Write records at ``offset`` in ``segment`` (as :meth:`reserve` returned them).
        Raises ``OSError``."""
        segment.write(offset - segment.start, data)

    def commit(self, end: int, store_timestamp: int) -> None:
        """Publish the records written up to ``end``."""
        self.tail = (end, store_timestamp)
        self.max_offset = end

    def discard_unwritten(self, offset: int) -> None:
        """Best effort after a failed write at ``offset``: clear the record header a partial
        write may have left, so no later recovery can read unacknowledged bytes as a record."""
        seg = self.files.find(offset)
        if seg is not None:
            try:
                seg.write(offset - seg.start, bytes(END_FILE_MIN_BLANK_LENGTH))
            except OSError:
                log.warning("could not clear the failed write at commit-log offset %s", offset)

    # -- flushing (any thread) ------------------------------------------------------------------

    def flush(self) -> int:
        """fdatasync everything appended so far; returns the offset now durable."""
        with self._flush_lock:
            end, timestamp = self.tail
            if end > self.flushed_offset:
                self.files.sync_range(self.flushed_offset, end)
                self.flushed_offset = end
                self.flushed_timestamp = timestamp
            return self.flushed_offset

    # -- reading (no lock) ----------------------------------------------------------------------

    @property
    def min_offset(self) -> int:
        """Offset of the first byte kept (0 when the log is empty)."""
        return self.files.min_offset

    def _locate(self, offset: int) -> tuple[Segment, int] | None:
        """The segment holding ``offset`` and the position in it; ``None`` if it is not stored."""
        if not self.files.min_offset <= offset < self.max_offset:
            return None
        seg = self.files.find(offset)
        return None if seg is None else (seg, offset - seg.start)

    def record_size(self, offset: int) -> int:
        """Size of the message record at ``offset``, or -1 if none is there (blank, out of range)."""
        located = self._locate(offset)
        if located is None:
            return -1
        seg, pos = located
        if pos + 8 > seg.size:
            return -1
        try:
            size, magic = _HEAD.unpack_from(seg.view, pos)
        except ValueError:
            return -1
        if magic not in _MAGICS:
            return -1
        if size <= 0 or offset + size > self.max_offset or pos + size > seg.size:
            return -1
        return int(size)

    def read(self, offset: int, size: int) -> bytes | None:
        """A copy of ``size`` bytes at ``offset``, or ``None`` if they are not all stored."""
        if size <= 0 or offset < self.files.min_offset or offset + size > self.max_offset:
            return None
        seg = self.files.find(offset)
        if seg is None or offset + size > seg.end:
            return None
        try:
            return bytes(seg.view[offset - seg.start : offset - seg.start + size])
        except ValueError:
            return None

    def store_timestamp(self, offset: int, size: int = 0) -> int:
        """Store timestamp (ms) of the record at ``offset``, -1 if it is gone
        (RocketMQ's ``pickupStoreTimestamp``)."""
        located = self._locate(offset)
        if located is None:
            return -1
        seg, pos = located
        try:
            (sys_flag,) = _I32.unpack_from(seg.view, pos + SYS_FLAG_POSITION)
            (timestamp,) = _I64.unpack_from(seg.view, pos + store_timestamp_position(sys_flag))
        except (ValueError, struct.error):
            return -1
        return int(timestamp)

    def close(self) -> None:
        self.files.close()
