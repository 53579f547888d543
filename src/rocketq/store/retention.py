"""Retention: deleting expired commit-log segments, then the consume-queue files and index
entries left pointing only at deleted data (RocketMQ's ``CleanCommitLogService`` +
``CleanConsumeQueueService``), and the disk-full guard that refuses appends, as RocketMQ's
``RunningFlags`` do, until the disk has room again.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from pathlib import Path

from rocketq.store.commitlog import CommitLog
from rocketq.store.config import StoreConfig
from rocketq.store.index import IndexService
from rocketq.store.queues import QueueTable

__all__ = ["Retention"]

log = logging.getLogger("rocketq.store.message_store")


class Retention:
    """The retention of one store (see the module docstring)."""

    def __init__(
        self,
        root: Path,
        config: StoreConfig,
        commit_log: CommitLog,
        queues: QueueTable,
        index: IndexService | None,
        lock: threading.Lock,
    ) -> None:
        self._root = root
        self._config = config
        self._log = commit_log
        self._queues = queues
        self._index = index
        self._lock = lock
        self._last_cq_min_physic = 0
        #: True while the disk is fuller than ``disk_full_ratio``: appends are refused.
        self.disk_full = False

    def disk_used_ratio(self) -> float:
        """Used fraction (0..1) of the partition holding the commit log."""
        usage = shutil.disk_usage(self._log.files.directory)
        return usage.used / usage.total if usage.total else 1.0

    def clean(self, now: float, ratio: float, *, force: bool) -> int:
        """One retention run at ``now`` with the disk ``ratio`` full; returns the segments
        deleted (the rules are :meth:`~rocketq.store.message_store.MessageStore.clean_expired_files`')."""
        cfg = self._config
        time_up = time.localtime(now).tm_hour in cfg.delete_hours()
        space_full = ratio * 100 > cfg.disk_max_used_space_ratio
        self._update_disk_full(ratio > cfg.disk_full_ratio, ratio)
        deleted = 0
        if time_up or space_full or force:
            deleted = self._delete_segments(now, ratio, time_up)
        self._delete_stale_entries()
        return deleted

    def _update_disk_full(self, disk_full: bool, ratio: float) -> None:
        if disk_full == self.disk_full:
            return
        self.disk_full = disk_full
        if disk_full:
            log.error(
                "disk of %s is %.0f%% full: refusing appends until space returns", self._root, ratio * 100
            )
        else:
            log.info("disk of %s is %.0f%% full: accepting appends again", self._root, ratio * 100)

    def _delete_segments(self, now: float, ratio: float, time_up: bool) -> int:
        cfg = self._config
        clean_now = ratio > cfg.disk_clean_forcibly_ratio
        files = self._log.files
        deleted = 0
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
        return deleted

    def _delete_stale_entries(self) -> None:
        min_physic = self._log.min_offset
        if min_physic <= self._last_cq_min_physic:
            return
        self._last_cq_min_physic = min_physic
        if self._index is not None:
            with self._lock:
                self._index.delete_expired(min_physic)
        for cq in self._queues.all():
            with self._lock:  # the writer may be creating this queue's next file
                cq.delete_expired(min_physic)
            cq.files.close_deferred()
