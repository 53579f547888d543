"""The store checkpoint and the abort marker.

``checkpoint`` (one 4096-byte page, as RocketMQ's ``StoreCheckpoint``) holds three big-endian
int64 millisecond timestamps: at byte 0 the store time of the last commit-log message known to
be flushed, at 8 that of the last message whose consume-queue entry is flushed, at 16 that of
the last message whose index entries are flushed (kept for RocketMQ's tools; rocketq's own index
recovery reads each index file's header, see :mod:`rocketq.store.index`). After a crash,
recovery restarts from the last commit-log segment whose first message is older than
``min(physic, logics) - 3 s``: everything before that is known to be on disk everywhere.

``abort`` is an empty file created when the store opens and removed when it closes cleanly; its
presence at start-up means the last run did not close and the commit log must be re-checked.
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading
from pathlib import Path

from rocketq.store.segments import fsync_dir

__all__ = ["AbortMarker", "Checkpoint"]

_PAGE = 4096
_LAYOUT = struct.Struct(">qqq")
_SAFETY_MARGIN_MS = 3000  # RocketMQ's getMinTimestamp steps back 3 s


class Checkpoint:
    """The ``checkpoint`` file: physic, logics and index message timestamps (ms)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        existed = path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        self._lock = threading.Lock()
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0
        if existed:
            raw = os.pread(self._fd, _LAYOUT.size, 0)
            if len(raw) == _LAYOUT.size:
                self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp = (
                    _LAYOUT.unpack(raw)
                )
        if os.fstat(self._fd).st_size < _PAGE:
            os.ftruncate(self._fd, _PAGE)
            if not existed:
                fsync_dir(path.parent)

    @property
    def min_timestamp(self) -> int:
        """Store time before which everything is durable in commit log and consume queues (ms)."""
        low = min(self.physic_msg_timestamp, self.logics_msg_timestamp) - _SAFETY_MARGIN_MS
        return max(low, 0)

    def flush(self) -> None:
        """Write the three timestamps and fsync the file."""
        with self._lock:
            data = _LAYOUT.pack(
                self.physic_msg_timestamp, self.logics_msg_timestamp, self.index_msg_timestamp
            )
            os.pwrite(self._fd, data, 0)
            os.fdatasync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1


class AbortMarker:
    """The ``abort`` file whose presence at start-up means the previous run crashed."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def exists(self) -> bool:
        return self.path.exists()

    def create(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        os.close(fd)
        fsync_dir(self.path.parent)

    def remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        fsync_dir(self.path.parent)
