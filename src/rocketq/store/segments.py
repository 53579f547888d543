"""Fixed-size segment files named by their start offset: RocketMQ's ``MappedFile(Queue)``.

A :class:`SegmentQueue` is a directory of files of equal size, each named by the logical offset
of its first byte, zero-padded to 20 digits (``00000000001073741824``), so the commit log and
every consume queue look on disk exactly as RocketMQ lays them out.

How bytes move (measured in ``bench/bench_store.py``, chosen for safety first):

* **Writes** use ``os.pwrite`` on a file descriptor. A full disk or an I/O error then surfaces as
  an ``OSError`` that the caller turns into :class:`~rocketq.errors.StoreFullError` /
  :class:`~rocketq.errors.StoreError` and rolls back. Writing through a shared writable ``mmap``
  would be a plain memory copy, but on a sparse file with no blocks left the kernel answers a
  page fault with ``SIGBUS`` and the whole process dies, taking acknowledged-but-unflushed data
  with it; RocketMQ avoids that by pre-touching every page of each 1 GiB file, which in Python
  costs seconds per segment.
* **Reads** use one read-only ``mmap`` per file and ``memoryview`` slices of it: the page cache
  is shared with ``pwrite``, so a pull sees every byte written before it without a syscall and
  without copying until the caller joins the slices into one response body.
* **Creation** is ``ftruncate`` to the full size: a sparse file, instant, so no background
  pre-allocation (RocketMQ's ``AllocateMappedFileService``) is needed; measured fsync cost is
  the same for sparse, ``posix_fallocate``-d and zero-filled files on ext4.
* **Durability** is ``os.fdatasync`` per file (sizes never change after creation, so the cheaper
  data-only sync suffices); the directory is fsynced once when a file is created or deleted.
* **Truncation** (recovery, failed writes) shrinks the file to the cut point and grows it back,
  which frees the blocks and makes everything after the cut read as zeros: old bytes past a cut
  can then never be mistaken for valid records by a later recovery.

All file-system calls go through a :class:`FileIO` object so tests can inject faults (``ENOSPC``
on the n-th write, failing fsync) without root or a tiny tmpfs.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import threading
from pathlib import Path

from mypy_extensions import mypyc_attr

from rocketq.errors import StoreCorruptError

__all__ = ["FileIO", "Segment", "SegmentQueue", "fsync_dir", "segment_name"]

log = logging.getLogger(__name__)

_NAME_DIGITS = 20
# Unmaps pages of a shared file mapping without discarding their data (Linux; absent elsewhere).
_MADV_DONTNEED: int | None = getattr(mmap, "MADV_DONTNEED", None)


def segment_name(start: int) -> str:
    """File name of the segment starting at ``start`` (RocketMQ's ``UtilAll.offset2FileName``)."""
    return f"{start:0{_NAME_DIGITS}d}"


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (created, renamed, deleted files) durable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# compiled by mypyc: tests subclass it to inject faults
@mypyc_attr(allow_interpreted_subclasses=True)
class FileIO:
    """The file-system calls the store's data files make; subclass to inject faults in tests."""

    def pwrite(self, fd: int, data: bytes | bytearray | memoryview, offset: int) -> int:
        """Write ``data`` at ``offset``; returns the bytes written (may be fewer than asked)."""
        return os.pwrite(fd, data, offset)

    def fdatasync(self, fd: int) -> None:
        """Make the file's data durable."""
        os.fdatasync(fd)

    def ftruncate(self, fd: int, length: int) -> None:
        """Set the file's length."""
        os.ftruncate(fd, length)


class Segment:
    """One fixed-size file: pwrite for writing, a read-only mmap for reading.

    ``view`` is a ``memoryview`` of the whole file; slicing it costs no copy and no syscall.
    Once :meth:`close` has run, the view raises ``ValueError``; readers that race with a
    deletion treat that as "the data was removed".
    """

    __slots__ = ("_closed", "_io", "_mm", "fd", "path", "size", "start", "view")

    def __init__(self, path: Path, start: int, size: int, io: FileIO, *, create: bool) -> None:
        self.path = path
        self.start = start
        self.size = size
        self._io = io
        self._closed = False
        flags = os.O_RDWR | getattr(os, "O_CLOEXEC", 0)
        if create:
            flags |= os.O_CREAT | os.O_EXCL
        self.fd = os.open(path, flags, 0o644)
        try:
            if create:
                io.ftruncate(self.fd, size)
            else:
                actual = os.fstat(self.fd).st_size
                if actual != size:
                    raise StoreCorruptError(f"{path} is {actual} bytes, expected {size}")
            self._mm = mmap.mmap(self.fd, size, access=mmap.ACCESS_READ)
        except BaseException:
            os.close(self.fd)
            if create:
                with contextlib.suppress(OSError):
                    os.unlink(path)
            raise
        self.view = memoryview(self._mm)

    @property
    def end(self) -> int:
        """Logical offset one past this segment's last byte."""
        return self.start + self.size

    def write(self, position: int, data: bytes | bytearray | memoryview) -> None:
        """Write all of ``data`` at ``position`` (relative to the file), or raise ``OSError``."""
        total = len(data)
        done = self._io.pwrite(self.fd, data, position)
        if done == total:
            return
        if done <= 0:
            raise OSError(f"short write to {self.path}")
        mv = memoryview(data)
        while done < total:
            n = self._io.pwrite(self.fd, mv[done:], position + done)
            if n <= 0:
                raise OSError(f"short write to {self.path}")
            done += n

    def sync(self) -> None:
        """fdatasync the file."""
        self._io.fdatasync(self.fd)

    def zero_from(self, position: int) -> None:
        """Discard everything from ``position`` (relative) on: it reads as zeros afterwards."""
        self._io.ftruncate(self.fd, position)
        self._io.ftruncate(self.fd, self.size)

    def release_pages(self) -> None:
        """Unmap the pages of this file the process touched (``madvise(MADV_DONTNEED)``).

        The mapping is shared and read-only, so nothing is lost: the pages stay in the page
        cache, and the next read of one maps it again from there (a minor fault). What goes is
        the process's own hold on them - its resident set (``RssFile``) - which a recovery scan
        over gigabytes would otherwise leave behind for the life of the process.
        """
        if not self._closed and _MADV_DONTNEED is not None:
            with contextlib.suppress(OSError, ValueError):
                self._mm.madvise(_MADV_DONTNEED)

    def mtime(self) -> float:
        """Last modification time of the file (RocketMQ ages segments by it)."""
        return os.fstat(self.fd).st_mtime

    def close(self) -> bool:
        """Release the mapping and the descriptor; ``False`` while a reader still holds a slice."""
        if self._closed:
            return True
        self.view.release()
        try:
            self._mm.close()
        except BufferError:
            return False
        os.close(self.fd)
        self._closed = True
        return True

    def __repr__(self) -> str:
        return f"Segment({self.path.name}, size={self.size})"


class SegmentQueue:
    """A directory of equal-size segments covering one contiguous logical range.

    The list of segments is replaced (copy on write), never mutated, so readers can take
    :attr:`segments` without a lock and keep a consistent picture while the writer appends or
    retention deletes.
    """

    def __init__(self, directory: Path, segment_size: int, io: FileIO | None = None) -> None:
        self.directory = directory
        self.segment_size = segment_size
        self.io = io or FileIO()
        self.segments: tuple[Segment, ...] = ()
        self._closing: list[Segment] = []
        self._lock = threading.Lock()

    def load(self) -> None:
        """Open the segments found on disk (the directory is created if missing).

        Raises :class:`~rocketq.errors.StoreCorruptError` if a file has another size than the
        configured one or the files are not contiguous, as RocketMQ refuses to start in that
        case rather than guess (a changed segment size needs a new data directory).
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        starts: list[int] = []
        for entry in os.listdir(self.directory):
            if len(entry) == _NAME_DIGITS and entry.isdigit():
                starts.append(int(entry))
            elif entry.endswith(".tmp"):
                continue
            else:
                log.warning("ignoring foreign file %s in %s", entry, self.directory)
        starts.sort()
        segments: list[Segment] = []
        try:
            for start in starts:
                if start % self.segment_size:
                    raise StoreCorruptError(
                        f"segment {segment_name(start)} in {self.directory} is not aligned"
                    )
                if segments and start != segments[-1].end:
                    raise StoreCorruptError(f"segment {segment_name(start)} in {self.directory} leaves a gap")
                path = self.directory / segment_name(start)
                segments.append(Segment(path, start, self.segment_size, self.io, create=False))
        except BaseException:
            for seg in segments:
                seg.close()
            raise
        self.segments = tuple(segments)

    @property
    def first(self) -> Segment | None:
        segs = self.segments
        return segs[0] if segs else None

    @property
    def last(self) -> Segment | None:
        segs = self.segments
        return segs[-1] if segs else None

    @property
    def min_offset(self) -> int:
        """Logical offset of the first byte kept (0 when empty)."""
        segs = self.segments
        return segs[0].start if segs else 0

    def find(self, offset: int) -> Segment | None:
        """The segment holding logical ``offset``, or ``None``."""
        segs = self.segments
        if not segs:
            return None
        index = (offset - segs[0].start) // self.segment_size
        if 0 <= index < len(segs):
            return segs[index]
        return None

    def create(self, start: int) -> Segment:
        """Create (and make durable in its directory) the segment starting at ``start``."""
        if start % self.segment_size:
            raise ValueError(f"segment start {start} is not a multiple of {self.segment_size}")
        self.directory.mkdir(parents=True, exist_ok=True)
        segs = self.segments
        if segs and start != segs[-1].end:
            raise ValueError(f"segment {start} would not follow {segs[-1].start}")
        seg = Segment(self.directory / segment_name(start), start, self.segment_size, self.io, create=True)
        fsync_dir(self.directory)
        self.segments = (*segs, seg)
        return seg

    def truncate(self, offset: int) -> None:
        """Drop every byte at or after logical ``offset``: later files deleted, the cut one zeroed.

        As RocketMQ's ``truncateDirtyFiles``, a segment starting exactly at ``offset`` is kept
        (emptied), so writing continues in it.
        """
        keep: list[Segment] = []
        dropped = False
        for seg in self.segments:
            if seg.start > offset:
                self._destroy(seg)
                dropped = True
                continue
            if offset < seg.end:
                seg.zero_from(offset - seg.start)
            keep.append(seg)
        self.segments = tuple(keep)
        if dropped:
            fsync_dir(self.directory)

    def delete_first(self, count: int = 1) -> list[Segment]:
        """Delete the ``count`` oldest segments (never the last one); returns those deleted."""
        segs = self.segments
        count = min(count, len(segs) - 1)
        if count <= 0:
            return []
        gone = list(segs[:count])
        self.segments = segs[count:]
        for seg in gone:
            self._destroy(seg)
        fsync_dir(self.directory)
        return gone

    def delete_all(self) -> None:
        """Delete every segment and the directory itself if it is then empty."""
        segs = self.segments
        self.segments = ()
        for seg in segs:
            self._destroy(seg)
        with contextlib.suppress(OSError):
            self.directory.rmdir()

    def _destroy(self, seg: Segment) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(seg.path)
        if not seg.close():
            with self._lock:
                self._closing.append(seg)

    def close_deferred(self) -> None:
        """Retry closing deleted segments whose mapping a reader held (RocketMQ's "hanged" files)."""
        with self._lock:
            self._closing = [seg for seg in self._closing if not seg.close()]

    def sync_range(self, begin: int, end: int) -> None:
        """fdatasync every segment holding bytes in the logical range ``[begin, end)``."""
        if end <= begin:
            return
        for seg in self.segments:
            if seg.end > begin and seg.start < end:
                seg.sync()

    def release_pages(self) -> None:
        """:meth:`Segment.release_pages` for every segment (after a scan over all of them)."""
        for seg in self.segments:
            seg.release_pages()

    def close(self) -> None:
        """Close every segment (the files stay)."""
        segs = self.segments
        self.segments = ()
        for seg in segs:
            if not seg.close():
                with self._lock:
                    self._closing.append(seg)
        self.close_deferred()
