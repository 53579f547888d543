"""Configuration of the message store: RocketMQ's ``MessageStoreConfig`` defaults, in seconds.

Every default below is RocketMQ 4.9.4's own (the Java field it mirrors is named in the comment);
durations are float seconds where RocketMQ counts milliseconds or hours. Small segment sizes are
accepted so that tests can cross segment boundaries with a few kilobytes of messages.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from rocketq.errors import ConfigError

__all__ = ["CQ_ENTRY_SIZE", "FlushMode", "StoreConfig", "total_physical_memory"]

#: Bytes of one consume-queue entry: commit-log offset (int64), size (int32), tag hash code (int64).
CQ_ENTRY_SIZE = 20

FlushMode = Literal["async", "sync"]

_MIN_SEGMENT = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreConfig:
    """How the store lays out, flushes, serves and expires its files.

    >>> StoreConfig().commit_log_segment_size == 1 << 30
    True
    >>> StoreConfig(flush="sync", commit_log_segment_size=64 * 1024).flush
    'sync'
    """

    #: Bytes per commit-log segment file (``mappedFileSizeCommitLog``, 1 GiB).
    commit_log_segment_size: int = 1024 * 1024 * 1024
    #: Entries per consume-queue file (``mappedFileSizeConsumeQueue`` = 300,000 × 20 bytes).
    consume_queue_entries_per_file: int = 300_000
    #: ``"async"`` (``ASYNC_FLUSH``, RocketMQ's default) or ``"sync"`` (``SYNC_FLUSH``: group commit).
    flush: FlushMode = "async"
    #: Period of the background commit-log flush under async flush (``flushIntervalCommitLog`` 500 ms).
    flush_interval: float = 0.5
    #: Period of the consume-queue and checkpoint flush (``flushIntervalConsumeQueue`` 1000 ms).
    flush_consume_queue_interval: float = 1.0
    #: How long a sync-flush sender should wait for its fsync (``syncFlushTimeout`` 5000 ms); the
    #: store itself never gives up, the broker uses this to answer FLUSH_DISK_TIMEOUT.
    sync_flush_timeout: float = 5.0
    #: Period of consumer-offset / topic / subscription-group persistence (broker's
    #: ``flushConsumerOffsetInterval`` 5000 ms).
    config_flush_interval: float = 5.0
    #: Age after which a commit-log segment may be deleted (``fileReservedTime`` 72 hours).
    file_reserved_time: float = 72 * 3600.0
    #: Hours of the day (local time, ``;``-separated) at which expired segments are deleted
    #: whatever the disk usage (``deleteWhen`` "04").
    delete_when: str = "04"
    #: Disk usage (percent of the partition) above which expired segments are deleted at any
    #: hour (``diskMaxUsedSpaceRatio`` 75).
    disk_max_used_space_ratio: int = 75
    #: Disk usage (fraction) above which expired-or-not segments are deleted at once, oldest
    #: first (RocketMQ's ``rocketmq.broker.diskSpaceCleanForciblyRatio`` 0.85).
    disk_clean_forcibly_ratio: float = 0.85
    #: Disk usage (fraction) above which appends are refused until retention frees space
    #: (RocketMQ's ``rocketmq.broker.diskSpaceWarningLevelRatio`` 0.90).
    disk_full_ratio: float = 0.90
    #: Period of the retention check (``cleanResourceInterval`` 10000 ms).
    clean_resource_interval: float = 10.0
    #: At most this many segments are deleted per retention run (``DELETE_FILES_BATCH_MAX`` 10).
    max_deleted_files_per_run: int = 10
    #: Largest stored message or batch, in bytes (``maxMessageSize`` 4 MiB); with segments
    #: smaller than that, a record may take at most a segment less 8 bytes.
    max_message_size: int = 4 * 1024 * 1024
    #: Verify body CRCs while recovering (``checkCRCOnRecover`` true).
    check_crc_on_recover: bool = True
    #: Most bytes one pull returns (``maxTransferBytesOnMessageInMemory`` 256 KiB).
    max_transfer_bytes: int = 256 * 1024
    #: Most messages one pull returns (``maxTransferCountOnMessageInMemory`` 32).
    max_transfer_count: int = 32
    #: Percent of the machine's physical memory a pull may be behind the commit log's end and
    #: still be read from memory (``accessMessageInMemoryMaxRatio`` 40): a pull further behind is
    #: flagged ``suggest_pulling_from_slave`` (a broker with ``slave_read_enable`` then tells the
    #: consumer to pull from its slave; ``docs/replication.md``).
    access_message_in_memory_max_ratio: int = 40
    #: Bytes of physical memory that ratio is taken of (RocketMQ's ``TOTAL_PHYSICAL_MEMORY_SIZE``,
    #: read from the OS). ``None``: the machine's (``os.sysconf``); a figure here is ours, for a
    #: store sharing its machine with others - or a test that does not fill 40% of the RAM.
    physical_memory: int | None = None
    #: Index message keys and unique ids for QUERY_MESSAGE (``messageIndexEnable`` true).
    message_index_enable: bool = True
    #: Hash slots per index file (``maxHashSlotNum`` 5,000,000).
    max_hash_slot_num: int = 5_000_000
    #: Entries per index file (``maxIndexNum`` 20,000,000; a file holds one less key).
    max_index_num: int = 20_000_000
    #: Most messages one QUERY_MESSAGE returns (``maxMsgsNumBatch`` 64).
    max_msgs_num_batch: int = 64
    #: Messages a query by unique key returns (``defaultQueryMaxNum`` 32).
    default_query_max_num: int = 32

    def __post_init__(self) -> None:
        if self.flush not in ("async", "sync"):
            raise ConfigError(f"flush must be 'async' or 'sync', not {self.flush!r}")
        if self.commit_log_segment_size < _MIN_SEGMENT:
            raise ConfigError(f"commit_log_segment_size must be at least {_MIN_SEGMENT} bytes")
        if self.consume_queue_entries_per_file < 1:
            raise ConfigError("consume_queue_entries_per_file must be positive")
        if self.max_message_size <= 0:
            raise ConfigError("max_message_size must be positive")
        for name in ("flush_interval", "flush_consume_queue_interval", "config_flush_interval"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive")
        if not 0 < self.disk_max_used_space_ratio <= 100:
            raise ConfigError("disk_max_used_space_ratio is a percentage in (0, 100]")
        if not 0 < self.disk_clean_forcibly_ratio <= 1 or not 0 < self.disk_full_ratio <= 1:
            raise ConfigError("disk_clean_forcibly_ratio and disk_full_ratio are fractions in (0, 1]")
        if self.max_transfer_count < 1 or self.max_transfer_bytes < 1:
            raise ConfigError("max_transfer_count and max_transfer_bytes must be positive")
        if self.max_hash_slot_num < 1 or self.max_index_num < 2:
            raise ConfigError("max_hash_slot_num must be positive and max_index_num at least 2")
        if self.max_msgs_num_batch < 1 or self.default_query_max_num < 1:
            raise ConfigError("max_msgs_num_batch and default_query_max_num must be positive")
        if not 0 <= self.access_message_in_memory_max_ratio <= 100:
            raise ConfigError("access_message_in_memory_max_ratio is a percentage in [0, 100]")
        if self.physical_memory is not None and self.physical_memory < 0:
            raise ConfigError("physical_memory must not be negative")
        self.delete_hours()  # validates delete_when

    @property
    def in_memory_bytes(self) -> int:
        """How far (bytes) behind the commit log's end a pull may read before it is flagged
        ``suggest_pulling_from_slave``: ``access_message_in_memory_max_ratio`` percent of
        ``physical_memory`` (``DefaultMessageStore.getMessage``'s ``memory``).

        >>> StoreConfig(physical_memory=1000, access_message_in_memory_max_ratio=40).in_memory_bytes
        400
        """
        memory = self.physical_memory if self.physical_memory is not None else total_physical_memory()
        return int(memory * (self.access_message_in_memory_max_ratio / 100.0))

    @property
    def consume_queue_file_size(self) -> int:
        """Bytes per consume-queue file."""
        return self.consume_queue_entries_per_file * CQ_ENTRY_SIZE

    @property
    def effective_max_message_size(self) -> int:
        """:attr:`max_message_size`, capped so a record fits a segment with its end marker."""
        return min(self.max_message_size, self.commit_log_segment_size - 8)

    def delete_hours(self) -> frozenset[int]:
        """The hours named by :attr:`delete_when` (RocketMQ's ``UtilAll.isItTimeToDo`` format)."""
        hours: set[int] = set()
        for raw in self.delete_when.split(";"):
            part = raw.strip()
            if not part:
                continue
            if not part.isdigit() or not 0 <= int(part) <= 23:
                raise ConfigError(
                    f"delete_when must be hours 00..23 separated by ';', not {self.delete_when!r}"
                )
            hours.add(int(part))
        return frozenset(hours)


def total_physical_memory() -> int:
    """The machine's physical memory in bytes (RocketMQ's ``StoreUtil.TOTAL_PHYSICAL_MEMORY_SIZE``;
    24 GiB, RocketMQ's fallback, where the OS does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 24 * 1024 * 1024 * 1024
