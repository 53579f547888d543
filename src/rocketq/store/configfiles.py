"""Tables persisted as JSON files in the store's ``config/`` directory, written atomically with a backup.

``config/consumerOffset.json`` (:mod:`rocketq.store.offsets`, the store's own) and the broker's
``config/topics.json`` and ``config/subscriptionGroup.json`` (its tables, which it hands to
:meth:`~rocketq.store.MessageStore.add_config_table`) hold fastjson text in RocketMQ's own shapes,
so a data directory can be read by RocketMQ's tools and the other way round. A :class:`ConfigTable`
says how its content becomes bytes and back; the store only loads, writes and keeps the backups.

Writing (:func:`write_atomically`) is safer than RocketMQ's ``MixAll.string2File``: the new text
goes to ``<file>.tmp``, is fsynced, the previous content is kept as ``<file>.bak`` (as RocketMQ
keeps it), the temp file is renamed over the file and the directory fsynced. A crash at any point
leaves either the old or the new file whole. Reading (:func:`read_with_backup`) falls back to the
``.bak`` when the file is missing, empty or does not parse, as RocketMQ's ``ConfigManager.load``.

The tables are thread-safe and remember whether they changed; the store's periodic service calls
:meth:`ConfigTable.persist_if_dirty` every ``config_flush_interval`` (5 s, the broker's
``flushConsumerOffsetInterval``) and :meth:`ConfigTable.persist` at shutdown.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from rocketq.errors import RocketQError, StoreCorruptError
from rocketq.store.segments import fsync_dir

__all__ = ["ConfigTable", "read_with_backup", "write_atomically"]

log = logging.getLogger(__name__)

T = TypeVar("T")


def _write_file(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new content whole,
    keeping the previous content in ``<path>.bak``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    bak = path.with_name(path.name + ".bak")
    _write_file(tmp, data)
    try:
        previous = path.read_bytes()
    except FileNotFoundError:
        previous = None
    if previous:
        bak_tmp = path.with_name(path.name + ".bak.tmp")
        _write_file(bak_tmp, previous)
        os.replace(bak_tmp, bak)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def read_with_backup(path: Path, parse: Callable[[bytes], T]) -> T | None:
    """Parse ``path``, or ``<path>.bak`` when the file is missing, empty or unparsable.

    Returns ``None`` when neither file exists (a fresh data directory); raises
    :class:`~rocketq.errors.StoreCorruptError` when a file exists but neither parses.
    """
    problems: list[str] = []
    for candidate in (path, path.with_name(path.name + ".bak")):
        try:
            data = candidate.read_bytes()
        except FileNotFoundError:
            continue
        if not data.strip():
            problems.append(f"{candidate.name} is empty")
            continue
        try:
            return parse(data)
        except (RocketQError, ValueError, TypeError, KeyError) as exc:
            log.error("cannot parse %s (%s); trying its backup", candidate, exc)
            problems.append(f"{candidate.name}: {exc}")
    if problems:
        if all(p.endswith("is empty") for p in problems):
            return None
        raise StoreCorruptError(f"neither {path} nor its backup can be read: {'; '.join(problems)}")
    return None


class ConfigTable(ABC):
    """A table kept in memory and persisted to one JSON file (RocketMQ's ``ConfigManager``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        #: one write at a time: the periodic flush (the store's thread) and a change's immediate
        #: persist (the event loop) would otherwise share the temp and backup file names
        self._write_lock = threading.Lock()
        self._dirty = False

    @abstractmethod
    def encode(self) -> bytes:
        """The file content for the current table (called with the lock held)."""

    def snapshot(self) -> object:
        """What :meth:`persist` takes under the lock; :meth:`serialize` turns it into the file's
        content with the lock released. By default the content itself (:meth:`encode`); a large
        table returns a cheap copy instead, so that the writer thread does not hold the lock -
        and the event loop changing the table - while it serializes."""
        return self.encode()

    def serialize(self, snapshot: object) -> bytes:
        """The file content for a :meth:`snapshot` (called without the lock)."""
        assert isinstance(snapshot, bytes)
        return snapshot

    @abstractmethod
    def decode(self, data: bytes) -> None:
        """Replace the table with the file content ``data``; raise on bad data."""

    def load(self) -> None:
        """Read the file (or its backup); a missing file leaves the table empty."""
        with self._lock:
            read_with_backup(self.path, self.decode)
            self._dirty = False

    def persist(self) -> None:
        """Write the table now (atomically, keeping a backup); safe from any thread."""
        with self._write_lock:
            with self._lock:
                snapshot = self.snapshot()
                self._dirty = False
            try:
                write_atomically(self.path, self.serialize(snapshot))
            except OSError:
                with self._lock:
                    self._dirty = True
                raise

    @property
    def dirty(self) -> bool:
        """Whether the table changed since its last write."""
        return self._dirty

    def persist_if_dirty(self) -> bool:
        """Write the table if it changed since the last write; returns whether it wrote."""
        if not self._dirty:
            return False
        self.persist()
        return True

    def _changed(self) -> None:
        self._dirty = True


def remove_stale_temp_files(directory: Path) -> None:
    """Delete ``*.tmp`` leftovers of writes interrupted by a crash."""
    with contextlib.suppress(FileNotFoundError):
        for entry in directory.iterdir():
            if entry.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    entry.unlink()
