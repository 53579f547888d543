"""Consume queues: one per (topic, queue id), a dense array of 20-byte entries.

Entry ``n`` of a queue describes the message at queue offset ``n``: its commit-log offset
(int64), stored size (int32) and tag hash code (int64), big-endian, as RocketMQ's
``ConsumeQueue`` writes them. Files of ``consume_queue_entries_per_file`` entries live in
``consumequeue/<topic>/<queueId>/`` and are named by the byte offset of their first entry.

Only the store's writer thread (holding the store lock) appends; readers take
:attr:`ConsumeQueue.max_index` once and then read entries below it from the mapped files
without a lock.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from pathlib import Path

from rocketq.store.config import CQ_ENTRY_SIZE
from rocketq.store.segments import FileIO, SegmentQueue

__all__ = ["CQ_ENTRY", "ConsumeQueue"]

log = logging.getLogger(__name__)

#: One entry: commit-log offset, size, tag hash code.
CQ_ENTRY = struct.Struct(">qiq")
_BLANK_SIZE = 0x7FFFFFFF  # RocketMQ's filler entry (0, Integer.MAX_VALUE, 0) before a late first entry
_BLANK_ENTRY = CQ_ENTRY.pack(0, _BLANK_SIZE, 0)


class ConsumeQueue:
    """The consume queue of one (topic, queue id)."""

    def __init__(self, directory: Path, topic: str, queue_id: int, entries_per_file: int, io: FileIO) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.entries_per_file = entries_per_file
        self.files = SegmentQueue(directory, entries_per_file * CQ_ENTRY_SIZE, io)
        #: First queue offset still readable.
        self.min_index = 0
        #: Next queue offset to write (= the queue's max offset, RocketMQ's ``getMaxOffsetInQueue``).
        self.max_index = 0
        #: Commit-log offset + size of the last entry (-1 when empty): where dispatch resumes.
        self.max_physic_offset = -1
        #: Entries below this index have been fsynced.
        self.flushed_index = 0
        #: Entries the existing files can hold (writes below it need no new file).
        self.capacity = 0
        #: Set once :meth:`destroy` ran (the topic was deleted): writers must look the queue up again.
        self.destroyed = False

    # -- loading and recovery -------------------------------------------------------------------

    def load_and_recover(self) -> None:
        """Open the files and find the end of the valid entries (RocketMQ's ``ConsumeQueue.recover``).

        The scan starts at the third file from the end; an entry with a negative offset or a
        non-positive size ends it, and everything after is discarded.
        """
        self.files.load()
        segs = self.files.segments
        if not segs:
            return
        file_size = self.files.segment_size
        index = max(0, len(segs) - 3)
        end = segs[index].start
        while index < len(segs):
            seg = segs[index]
            valid = _valid_prefix(seg.view, file_size)
            if valid:
                last_off, last_size, _ = CQ_ENTRY.unpack_from(seg.view, valid - CQ_ENTRY_SIZE)
                self.max_physic_offset = last_off + last_size
            end = seg.start + valid
            if valid < file_size:
                break
            index += 1
        self.files.truncate(end)
        self._update_capacity()
        self.max_index = end // CQ_ENTRY_SIZE
        self.flushed_index = self.max_index
        first = self.files.first
        self.min_index = first.start // CQ_ENTRY_SIZE if first else self.max_index

    def truncate_dirty(self, physic_offset: int) -> None:
        """Drop the entries pointing at or past ``physic_offset`` (the commit log's valid end)."""
        if self.max_physic_offset <= physic_offset:
            return
        lo, hi = self.min_index, self.max_index
        # Entries are in commit-log order: find the first one at or past the cut.
        while lo < hi:
            mid = (lo + hi) // 2
            entry = self.entry(mid)
            if entry is None or entry[0] >= physic_offset:
                hi = mid
            else:
                lo = mid + 1
        if lo == self.max_index:
            return
        log.info(
            "truncating consume queue %s-%s from %s to %s", self.topic, self.queue_id, self.max_index, lo
        )
        self.files.truncate(lo * CQ_ENTRY_SIZE)
        self._update_capacity()
        self.max_index = lo
        self.flushed_index = min(self.flushed_index, lo)
        if lo <= self.min_index:
            self.min_index = lo
            self.max_physic_offset = -1
        else:
            last = self.entry(lo - 1)
            self.max_physic_offset = last[0] + last[1] if last else -1

    # -- writing (store lock held) --------------------------------------------------------------

    def prepare(self, count: int) -> None:
        """Create the files that the next ``count`` entries need, so the append cannot fail later
        for want of a file (creating one is the step that can meet a full directory)."""
        begin = self.max_index * CQ_ENTRY_SIZE
        end = begin + count * CQ_ENTRY_SIZE
        size = self.files.segment_size
        last = self.files.last
        if last is None:
            first_start = begin - begin % size
            self.files.create(first_start)
            if begin > first_start:
                # A queue whose first entry is not at offset 0 (its older files were deleted):
                # RocketMQ fills the head with blank entries so that recovery scans through it.
                seg = self.files.segments[0]
                seg.write(0, _BLANK_ENTRY * ((begin - first_start) // CQ_ENTRY_SIZE))
                self.min_index = begin // CQ_ENTRY_SIZE
            last = self.files.last
            assert last is not None
        while last.end < end:
            last = self.files.create(last.end)
        self._update_capacity()

    def _update_capacity(self) -> None:
        last = self.files.last
        self.capacity = last.end // CQ_ENTRY_SIZE if last is not None else 0

    def write_one(self, entry: bytes, physic_end: int) -> None:
        """:meth:`write` for one entry (the hot path of single sends)."""
        pos = self.max_index * CQ_ENTRY_SIZE
        seg = self.files.find(pos)
        if seg is None:
            raise OSError(f"consume queue {self.topic}-{self.queue_id} has no file for {pos}")
        seg.write(pos - seg.start, entry)
        self.max_index += 1
        self.max_physic_offset = physic_end

    def write(self, entries: bytes | bytearray, physic_end: int) -> None:
        """Write ``entries`` (whole 20-byte entries) at :attr:`max_index`; :meth:`prepare` first.

        Raises ``OSError``; then the queue is unchanged (bytes past :attr:`max_index` are
        ignored by readers and overwritten by the next write).
        """
        begin = self.max_index * CQ_ENTRY_SIZE
        total = len(entries)
        done = 0
        while done < total:
            seg = self.files.find(begin + done)
            if seg is None:
                raise OSError(f"consume queue {self.topic}-{self.queue_id} has no file for {begin + done}")
            pos = begin + done - seg.start
            n = min(total - done, seg.size - pos)
            seg.write(pos, memoryview(entries)[done : done + n])
            done += n
        self.max_index += total // CQ_ENTRY_SIZE
        self.max_physic_offset = physic_end

    def discard_unwritten(self) -> None:
        """Best effort after a failed write: zero what a partial write may have left past the end."""
        seg = self.files.find(self.max_index * CQ_ENTRY_SIZE)
        if seg is not None:
            try:
                seg.write(self.max_index * CQ_ENTRY_SIZE - seg.start, bytes(CQ_ENTRY_SIZE))
            except OSError:
                pass

    # -- reading (no lock) ----------------------------------------------------------------------

    def entry(self, index: int) -> tuple[int, int, int] | None:
        """The entry at queue offset ``index`` (offset, size, tag code), or ``None`` if absent."""
        if not self.min_index <= index < self.max_index:
            return None
        pos = index * CQ_ENTRY_SIZE
        seg = self.files.find(pos)
        if seg is None:
            return None
        try:
            off, size, tag = CQ_ENTRY.unpack_from(seg.view, pos - seg.start)
        except ValueError:  # the file was deleted under us
            return None
        return off, size, tag

    def read_from(self, index: int, max_entries: int) -> memoryview | None:
        """Entries from ``index`` to the end of the written part of its file (at most
        ``max_entries``), as one slice of the mapped file (RocketMQ's ``getIndexBuffer``)."""
        end_index = self.max_index
        if not self.min_index <= index < end_index:
            return None
        pos = index * CQ_ENTRY_SIZE
        seg = self.files.find(pos)
        if seg is None:
            return None
        stop = min(end_index * CQ_ENTRY_SIZE, seg.end, pos + max_entries * CQ_ENTRY_SIZE)
        try:
            return seg.view[pos - seg.start : stop - seg.start]
        except ValueError:
            return None

    def roll_next_file(self, index: int) -> int:
        """Queue offset of the first entry of the file after the one holding ``index``."""
        per_file = self.entries_per_file
        return index + per_file - index % per_file

    def offset_by_time(
        self, timestamp_ms: int, store_time: Callable[[int, int], int], min_physic: int
    ) -> int:
        """Queue offset of the message stored at ``timestamp_ms`` or nearest to it.

        RocketMQ's ``getOffsetInQueueByTime``: an exact match wins, otherwise the nearer of the
        last message before and the first message after (the earlier on a tie); entries whose
        commit-log data is gone are skipped. ``store_time(offset, size)`` reads a message's store
        timestamp (-1 if unreadable). Returns 0 for an empty queue.
        """
        lo, hi = self.min_index, self.max_index - 1
        left = right = -1
        left_ts = right_ts = -1
        while lo <= hi:
            mid = (lo + hi) // 2
            entry = self.entry(mid)
            if entry is None:
                return 0
            if entry[0] < min_physic:
                lo = mid + 1
                left = mid
                continue
            ts = store_time(entry[0], entry[1])
            if ts < 0:
                return 0
            if ts == timestamp_ms:
                # walk to the first message with this exact timestamp
                hi = mid - 1
                right, right_ts = mid, ts
                while lo <= hi:
                    m = (lo + hi) // 2
                    e = self.entry(m)
                    if e is None or e[0] < min_physic or store_time(e[0], e[1]) < timestamp_ms:
                        lo = m + 1
                    else:
                        right, hi = m, m - 1
                return right
            if ts > timestamp_ms:
                hi = mid - 1
                right, right_ts = mid, ts
            else:
                lo = mid + 1
                left, left_ts = mid, ts
        if left < 0 and right < 0:
            return 0
        if left_ts < 0:
            return right if right >= 0 else left
        if right < 0:
            return left
        return right if abs(timestamp_ms - left_ts) > abs(timestamp_ms - right_ts) else left

    # -- flushing and retention -----------------------------------------------------------------

    def flush(self) -> None:
        """fdatasync the files holding entries written since the last flush."""
        end = self.max_index
        if end > self.flushed_index:
            self.files.sync_range(self.flushed_index * CQ_ENTRY_SIZE, end * CQ_ENTRY_SIZE)
            self.flushed_index = end

    def delete_expired(self, min_physic_offset: int) -> int:
        """Delete leading files whose every entry points below ``min_physic_offset`` (never the
        last file), then move :attr:`min_index` to the first entry still pointing at data.
        Returns the number of files deleted (RocketMQ's ``deleteExpiredFile``)."""
        deleted = 0
        while True:
            segs = self.files.segments
            if len(segs) < 2:
                break
            first = segs[0]
            try:
                last_off = CQ_ENTRY.unpack_from(first.view, first.size - CQ_ENTRY_SIZE)[0]
            except ValueError:
                break
            if last_off >= min_physic_offset:
                break
            self.files.delete_first(1)
            deleted += 1
        self.correct_min_offset(min_physic_offset)
        return deleted

    def correct_min_offset(self, min_physic_offset: int) -> None:
        """Set :attr:`min_index` to the first entry of the first file pointing at kept data."""
        first = self.files.first
        if first is None:
            self.min_index = self.max_index
            return
        base = first.start // CQ_ENTRY_SIZE
        limit = min(self.max_index, base + self.entries_per_file)
        try:
            view = first.view[: (limit - base) * CQ_ENTRY_SIZE]
            for i, (off, size, _) in enumerate(CQ_ENTRY.iter_unpack(view)):
                if off >= min_physic_offset and size != _BLANK_SIZE:
                    self.min_index = base + i
                    return
        except ValueError:
            return
        self.min_index = max(self.min_index, limit)

    def close(self) -> None:
        self.files.close()

    def destroy(self) -> None:
        """Delete every file of this queue."""
        self.files.delete_all()
        self.capacity = 0
        self.destroyed = True
        self.min_index = self.max_index = self.flushed_index = 0
        self.max_physic_offset = -1


def _valid_prefix(view: memoryview, file_size: int) -> int:
    """Bytes of ``view`` (one CQ file) holding valid entries before the first invalid one."""
    count = 0
    for off, size, _ in CQ_ENTRY.iter_unpack(view[:file_size]):
        if off < 0 or size <= 0:
            break
        count += 1
    return count * CQ_ENTRY_SIZE
