"""A slave's way in: commit-log bytes streamed from its master, written at the same offsets and
dispatched to consume queues and the index as they complete records (RocketMQ's
``appendToCommitLog`` and the reput service behind it), and the master's side of the stream
(:func:`read_commit_log`, RocketMQ's ``getCommitLogData``).

The store takes its lock around :meth:`ReplicaLog.append`; a replicated stream may end in the
middle of a record, which then waits for the next transfer (:attr:`ReplicaLog.reput_offset`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

from rocketq.errors import StoreError
from rocketq.protocol.message import BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2
from rocketq.store.commitlog import CommitLog
from rocketq.store.index import IndexService
from rocketq.store.queues import QueueTable
from rocketq.store.records import MIN_RECORD_SIZE
from rocketq.store.recovery import StoredRecord, TagsCodeFunction, dispatch_record, iter_records

__all__ = ["Dispatched", "ReplicaLog", "read_commit_log"]

_HEAD = struct.Struct(">ii")
_MAGICS = frozenset({MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2})


def read_commit_log(commit_log: CommitLog, offset: int, max_bytes: int) -> bytes | None:
    """Up to ``max_bytes`` of the commit log from ``offset``, never past the segment holding it:
    ``b""`` at the max offset, ``None`` when ``offset`` is not stored (deleted, or past the end)."""
    end = commit_log.max_offset
    if offset == end:
        return b""
    seg = commit_log.files.find(offset)
    if seg is None or not commit_log.min_offset <= offset < end:
        return None
    size = min(max_bytes, end - offset, seg.end - offset)
    return commit_log.read(offset, size)


@dataclass(slots=True)
class Dispatched:
    """What one replicated transfer completed: ``(topic, queue_id, max_offset, tag_code)`` per
    record given to a queue (for the arrival listeners), and the records and bytes dispatched."""

    arrived: list[tuple[str, int, int, int]] = field(default_factory=list)
    messages: int = 0
    size: int = 0
    last_timestamp: int = 0


class ReplicaLog:
    """Replicated bytes into one store's commit log, queues and index (store lock held)."""

    def __init__(
        self,
        commit_log: CommitLog,
        queues: QueueTable,
        index: IndexService | None,
        tags_code: TagsCodeFunction,
        on_index_failure: Callable[[int, Exception], None],
    ) -> None:
        self._log = commit_log
        self._queues = queues
        self._index = index
        self._tags_code = tags_code
        self._on_index_failure = on_index_failure
        #: How far the commit log's records are dispatched to queues and index.
        self.reput_offset = commit_log.max_offset

    def check_offset(self, offset: int) -> None:
        """Accept bytes at ``offset``: the log's end, or on an empty log the start of a segment
        (a new slave is streamed from the start of its master's last segment). Raises
        :class:`~rocketq.errors.StoreError` otherwise, or ``OSError``."""
        log_ = self._log
        if offset == log_.max_offset:
            return
        if log_.max_offset or log_.files.segments or offset % log_.segment_size:
            raise StoreError(f"replicated bytes at {offset}, but the commit log ends at {log_.max_offset}")
        log_.files.create(offset)
        log_.max_offset = self.reput_offset = offset
        log_.flushed_offset = offset

    def write(self, offset: int, data: bytes) -> int:
        """Write ``data`` at ``offset`` (checked by :meth:`check_offset`), creating segments as
        needed; returns the new end. Raises ``OSError``."""
        log_ = self._log
        pos = offset
        view = memoryview(data)
        while view:
            seg = log_.files.find(pos) or log_.files.create(pos)
            n = min(len(view), seg.end - pos)
            seg.write(pos - seg.start, view[:n])
            pos += n
            view = view[n:]
        log_.max_offset = pos
        return pos

    def dispatch(self, end: int) -> Dispatched:
        """Dispatch the whole records in ``[reput_offset, end)``. Raises
        :class:`~rocketq.errors.StoreError` when the bytes there hold no record (the slave
        must stop taking writes)."""
        log_ = self._log
        done = Dispatched(last_timestamp=log_.tail[1])
        pos = self.reput_offset
        while pos + 8 <= end:
            seg = log_.files.find(pos)
            if seg is None:
                break
            size, magic = _HEAD.unpack_from(seg.view, pos - seg.start)
            if magic == BLANK_MAGIC_CODE:
                pos = seg.end
                continue
            if magic not in _MAGICS or size < MIN_RECORD_SIZE or pos + size > seg.end:
                raise StoreError(f"the replicated commit log holds no record at {pos}: the slave stops")
            if pos + size > end:
                break  # the rest of this record is in the next transfer
            for record in iter_records(log_, pos, pos + size):
                self._dispatch_one(record, done)
            pos += size
        self.reput_offset = pos
        log_.tail = (end, done.last_timestamp)
        return done

    def _dispatch_one(self, record: StoredRecord, done: Dispatched) -> None:
        if dispatch_record(self._queues, record, self._tags_code):
            cq = self._queues.get(record.topic, record.queue_id)
            assert cq is not None
            code = self._tags_code(record.topic, record.properties(), record.store_timestamp)
            done.arrived.append((record.topic, record.queue_id, cq.max_index, code))
        if self._index is not None:
            raw = record.properties_raw
            try:
                self._index.add(
                    record.topic.encode(), raw, 0, len(raw), record.offset, record.store_timestamp,
                    record.sys_flag,
                )  # fmt: skip
            except (OSError, ValueError) as exc:
                self._on_index_failure(record.offset, exc)
        done.last_timestamp = record.store_timestamp
        done.messages += 1
        done.size += record.size
