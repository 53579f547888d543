"""Pull reads: a queue's stored records from a queue offset, as RocketMQ's ``getMessage`` finds
them, returned as they lie in the commit log (no message is decoded).

:func:`read_queue` walks consume-queue entries with ``struct.iter_unpack`` over a slice of the
mapped file, skips entries whose tag code (or, with an SQL92 filter, whose properties) do not
match, collects consecutive records as byte ranges and joins them once into one ``bytes``.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from rocketq.store.commitlog import CommitLog
from rocketq.store.config import CQ_ENTRY_SIZE
from rocketq.store.consumequeue import CQ_ENTRY, ConsumeQueue
from rocketq.store.records import record_properties
from rocketq.store.segments import Segment

__all__ = ["GetMessageResult", "GetMessageStatus", "PropertyFilter", "read_queue"]

#: Most consume-queue bytes one pull scans while filtering (RocketMQ's ``maxFilterMessageCount``
#: is ``max(16000, maxMsgNums * 20)``, compared against a byte position).
_MAX_FILTER_BYTES = 16000

#: A pull's filter on a message's properties (SQL92): true to deliver it.
PropertyFilter = Callable[[Mapping[str, str]], bool]


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
    suggest_pulling_from_slave: bool = False
    """The pull is further behind the commit log's end than the store reads from memory
    (RocketMQ's ``suggestPullingFromSlave``): the commit-log bytes after the last entry examined
    exceed ``in_memory`` (set on a FOUND / NO_MATCHED / REMOVING read only, as in 4.9)."""


#: What a walk over consume-queue entries found: byte ranges of the commit log to return (segment,
#: start, end), records taken, entries examined, whether an entry named deleted data, and the
#: commit-log offset of the last entry looked at (RocketMQ's ``maxPhyOffsetPulling``).
_Scan = tuple[list[tuple[Segment, int, int]], int, int, bool, int]


def _out_of_range(cq: ConsumeQueue | None, offset: int) -> GetMessageResult | None:
    """The answer when ``offset`` names no entry of ``cq`` (RocketMQ's suggested offsets)."""
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
        return GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_BADLY, max_offset, min_offset, max_offset)
    return None


def read_queue(
    cq: ConsumeQueue | None,
    commit_log: CommitLog,
    offset: int,
    max_count: int,
    max_bytes: int,
    tags_codes: AbstractSet[int] | None,
    property_filter: PropertyFilter | None,
    in_memory: int | None = None,
) -> GetMessageResult:
    """Up to ``max_count`` records (at least one, about ``max_bytes``) of ``cq`` from ``offset``
    whose tag code is in ``tags_codes`` (``None``: all) and which ``property_filter`` accepts.

    With ``in_memory`` (bytes), a read whose last examined entry lies more than that before the
    commit log's end is flagged ``suggest_pulling_from_slave`` (``DefaultMessageStore.getMessage``)."""
    if cq is None or not cq.min_index <= offset < cq.max_index:
        refused = _out_of_range(cq, offset)
        assert refused is not None
        return refused
    min_offset = cq.min_index
    max_offset = cq.max_index
    scan = max(_MAX_FILTER_BYTES, max_count * CQ_ENTRY_SIZE) // CQ_ENTRY_SIZE
    view = cq.read_from(offset, scan)
    if view is None:
        nxt = cq.roll_next_file(offset)
        return GetMessageResult(GetMessageStatus.OFFSET_FOUND_NULL, nxt, min_offset, max_offset)
    try:
        runs, count, examined, removed, last_phys = _scan(
            view, commit_log, max_count, max_bytes, tags_codes, property_filter
        )
    finally:
        view.release()
    try:
        data = _join(runs)
    except ValueError:  # a segment was deleted by retention while we read: let the caller retry
        return GetMessageResult(GetMessageStatus.MESSAGE_WAS_REMOVING, offset, min_offset, max_offset)
    if count:
        status = GetMessageStatus.FOUND
    elif removed:
        status = GetMessageStatus.MESSAGE_WAS_REMOVING
    else:
        status = GetMessageStatus.NO_MATCHED_MESSAGE
    slow = in_memory is not None and commit_log.max_offset - last_phys > in_memory
    return GetMessageResult(status, offset + examined, min_offset, max_offset, data, count, slow)


def _scan(
    view: memoryview,
    commit_log: CommitLog,
    max_count: int,
    limit_bytes: int,
    tags_codes: AbstractSet[int] | None,
    property_filter: PropertyFilter | None,
) -> _Scan:
    files = commit_log.files
    segs = files.segments
    seg_size = files.segment_size
    base = segs[0].start if segs else 0
    nsegs = len(segs)
    log_end = commit_log.max_offset
    # Consecutive entries usually name adjacent records: collect byte ranges, not records.
    runs: list[tuple[Segment, int, int]] = []
    run_seg: Segment | None = None
    run_start = run_end = 0
    total = count = examined = 0
    removed = False
    for phys, size, tag in CQ_ENTRY.iter_unpack(view):
        if count and (count >= max_count or total + size > limit_bytes):
            last = examined  # the entry that ended the batch was looked at (maxPhyOffsetPulling)
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
    else:
        last = examined - 1
    if run_seg is not None:
        runs.append((run_seg, run_start, run_end))
    # read once here rather than kept on every pass of the loop above
    last_phys: int = CQ_ENTRY.unpack_from(view, last * CQ_ENTRY_SIZE)[0] if last >= 0 else 0
    return runs, count, examined, removed, last_phys


def _join(runs: list[tuple[Segment, int, int]]) -> bytes:
    """The bytes of ``runs`` as one ``bytes``; ``ValueError`` if a segment was unmapped meanwhile."""
    if len(runs) == 1:
        seg, a, b = runs[0]
        return seg.view[a:b].tobytes()
    parts = [seg.view[a:b] for seg, a, b in runs]
    data = b"".join(parts)
    for part in parts:
        part.release()
    return data
