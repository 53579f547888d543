"""The message store facade (RocketMQ's ``DefaultMessageStore``): what the broker calls.

Layout of a data directory (RocketMQ's, so its tools recognise it)::

    <root>/commitlog/00000000000000000000            segments of every message
    <root>/consumequeue/<topic>/<queueId>/0000...   20-byte entries per queue
    <root>/index/20260101120000000                  message keys -> commit-log offsets
    <root>/checkpoint                               flushed-message timestamps
    <root>/abort                                    present while the store is open
    <root>/lock                                     flock: one store per directory
    <root>/config/consumerOffset.json               committed consumer offsets
    <root>/config/topics.json ...                   the broker's tables (add_config_table)

**Appending.** :meth:`MessageStore.put_message` (one record, the hot path) and
:meth:`MessageStore.put_messages` (a batch) take records already encoded by
:func:`rocketq.protocol.message.encode_message`, check them outside any lock
(:mod:`rocketq.store.records`) and, in one locked append that serves both, stamp their queue
offsets, commit-log offsets and store time, write them with one ``pwrite`` and write their
consume-queue entries (one ``pwrite`` per queue file touched). The consume queue is thus built
*synchronously*: a message is readable by a pull as soon as the append returns. RocketMQ
instead dispatches asynchronously (its ``ReputMessageService`` re-reads the commit log every
millisecond); doing it in line costs one small write and removes the lag and the thread.
Arrival listeners (:meth:`MessageStore.add_arrival_listener`) are then called in the appending
thread, outside the lock - the broker's long polling wakes its waiters there.

**Durability.** Under ``flush="sync"`` the :class:`PutResult` carries ``durable``, a
``concurrent.futures.Future`` completed once an fsync covered the records (group commit, see
:mod:`rocketq.store.flush`); the broker awaits it with ``asyncio.wrap_future`` and answers
FLUSH_DISK_TIMEOUT after ``sync_flush_timeout``. Under ``flush="async"`` ``durable`` is ``None``
and a background thread fsyncs every ``flush_interval``. Like RocketMQ, a consumer may read a
message before it is durable. The future is shared by every append of one fsync round, so an
asyncio caller may add one done-callback per distinct future rather than one per send. The
group-commit thread needs the GIL back after each fsync; with CPython's default 5 ms switch
interval a busy event loop can delay every round by up to that much, so a broker process should
call ``sys.setswitchinterval(0.0005)`` (``bench/bench_store.py --switch-interval`` shows the
difference; on our shared 2-core machine it mattered most when other processes kept the CPUs
busy, up to 2-4x more sync sends per second from 32 senders).

**Failures.** If a write fails (``ENOSPC``, ``EIO`` ...) the append raises
:class:`~rocketq.errors.StoreFullError` / :class:`~rocketq.errors.StoreError` and nothing moves:
offsets stay where they were, what was acknowledged is untouched, and the next append (once
space returns) writes over the failed attempt. If an fsync fails the store stops accepting
appends (the kernel may have dropped the unwritten pages; only a restart's recovery can tell what
is on disk).

**Indexing.** Each appended record's unique id and keys go into the message index
(:mod:`rocketq.store.index`) under the same lock; :meth:`MessageStore.query_message` looks them
up. A failure there never fails the append: the next start indexes the record again.

**Reading.** :meth:`MessageStore.get_messages` walks consume-queue entries with
``struct.iter_unpack`` over a slice of the mapped file and returns the stored records as they are
in the commit log, joined once into one ``bytes``: no message is decoded
(:mod:`rocketq.store.reading`).

**The parts.** The facade composes: the consume-queue table (:mod:`rocketq.store.queues`), the
start-up recovery (:mod:`rocketq.store.recovery`, and only there), pull reads
(:mod:`rocketq.store.reading`), retention and the disk-full guard
(:mod:`rocketq.store.retention`), a slave's replicated appends (:mod:`rocketq.store.replica`)
and the background threads (:mod:`rocketq.store.flush`). It keeps the lock, the append and
the public API; every part is plain typed Python with no network in sight.

**Memory.** Reads go through read-only shared mappings, so every page a pull or the start-up
recovery reads counts in the process's resident set (``RssFile``) while it stays mapped - page
cache, shared and reclaimable, yet what ``ps`` and ``VmRSS`` show. Recovery reads up to the last
three segments after a clean stop (3 GiB with the default segments), so when it is done it
unmaps what it read (:meth:`~rocketq.store.segments.Segment.release_pages`; the pages stay
cached): a restarted broker's RSS is then its own memory, whatever the log's size
(``bench/bench_scale.py`` measures both).

Thread safety: every public method may be called from any thread.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import struct
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from rocketq.clock import ms
from rocketq.errors import ConfigError, RemoteProtocolError, StoreError, StoreFullError
from rocketq.lifecycle import Closing
from rocketq.protocol.message import (
    QUEUE_OFFSET_POSITION,
    STORE_OFFSETS,
    MessageExt,
    decode_message,
    decode_messages,
)
from rocketq.protocol.properties import MessageConst, tags_code
from rocketq.store.checkpoint import AbortMarker, Checkpoint
from rocketq.store.commitlog import CommitLog
from rocketq.store.config import StoreConfig
from rocketq.store.configfiles import ConfigTable, remove_stale_temp_files
from rocketq.store.consumequeue import CQ_ENTRY
from rocketq.store.flush import GroupCommitService, PeriodicService
from rocketq.store.index import IndexService, message_keys
from rocketq.store.offsets import ConsumerOffsetTable
from rocketq.store.queues import QueueTable
from rocketq.store.reading import GetMessageResult, GetMessageStatus, PropertyFilter, read_queue
from rocketq.store.records import (
    RecordLayout,
    RecordProperties,
    layout_batch,
    layout_one,
    record_properties,
)
from rocketq.store.recovery import Recovery, TagsCodeFunction
from rocketq.store.replica import ReplicaLog
from rocketq.store.replica import read_commit_log as _read_commit_log
from rocketq.store.retention import Retention
from rocketq.store.segments import FileIO

__all__ = [
    "ArrivalListener",
    "GetMessageResult",
    "GetMessageStatus",
    "MessageStore",
    "PropertyFilter",
    "PutResult",
    "QueryMessageResult",
    "RecordProperties",
    "TagsCodeFunction",
    "default_tags_code",
    "record_properties",
]

log = logging.getLogger(__name__)

_I64 = struct.Struct(">q")
_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})

#: ``(topic, queue_id, max_offset, tag_code, properties)`` after messages were appended to that
#: queue: its new max offset and, when one message arrived, its consume-queue tag code and the
#: properties its writer passed (``None`` when unknown; a batch passes ``None`` for both).
ArrivalListener = Callable[[str, int, int, int | None, Mapping[str, str] | None], None]


def default_tags_code(topic: str, properties: Mapping[str, str], store_timestamp: int) -> int:
    """The consume-queue tag code of a message: the Java hash of its ``TAGS`` property (0 without).

    The broker passes its own function when some topic needs another code (RocketMQ's schedule
    topic stores the delivery time there); recovery uses it to rebuild lost entries.
    """
    return tags_code(properties.get(MessageConst.TAGS))


@dataclass(frozen=True, slots=True)
class PutResult:
    """Where an append went. ``commit_log_offsets`` has one entry per record (for offset
    message ids); ``durable`` is the group-commit future under sync flush, else ``None``."""

    commit_log_offset: int
    queue_offset: int
    message_count: int
    wrote_bytes: int
    store_timestamp: int
    commit_log_offsets: tuple[int, ...]
    durable: Future[None] | None = None


@dataclass(frozen=True, slots=True)
class QueryMessageResult:
    """A look-up by key (QUERY_MESSAGE): the stored records found, in commit-log order, and where
    the index stood (RocketMQ's ``indexLastUpdateTimestamp`` / ``indexLastUpdatePhyoffset``)."""

    messages: tuple[bytes, ...]
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


class MessageStore(Closing):
    """Commit log + consume queues + checkpoint + config tables in one directory.

    >>> import tempfile
    >>> from rocketq.protocol.message import encode_message
    >>> with tempfile.TemporaryDirectory() as d, MessageStore(d) as store:
    ...     put = store.put_messages("T", 0, [encode_message(topic="T", body=b"hi")])
    ...     store.get_messages("T", 0, 0, 32).message_count
    1
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        config: StoreConfig | None = None,
        *,
        clock: Callable[[], float] = time.time,
        io: FileIO | None = None,
        tags_code_function: TagsCodeFunction = default_tags_code,
        start_services: bool = True,
    ) -> None:
        """Open (creating if needed) and recover the store in ``root``.

        ``clock`` gives wall-clock seconds (store timestamps, retention); ``io`` lets tests inject
        write faults; ``start_services=False`` runs no background thread at all (tests then call
        :meth:`flush`, :meth:`clean_expired_files` ... themselves; sync appends still complete
        their ``durable`` future through the group-commit thread, which always runs under sync
        flush).
        """
        self.root = Path(root)
        self.config = config or StoreConfig()
        self._clock = clock
        self._io = io or FileIO()
        self._tags_code = tags_code_function
        #: The config is frozen: the append reads its limit here rather than through a property.
        self._max_size = self.config.effective_max_message_size
        #: Bytes behind the log's end a pull may read before it suggests the slave (read once).
        self._in_memory = self.config.in_memory_bytes
        self._lock = threading.Lock()
        self._writable = True
        self._closed = False
        self._listeners: list[ArrivalListener] = []
        self._queues = QueueTable(
            self.root / "consumequeue", self.config.consume_queue_entries_per_file, self._io, self._lock
        )
        self._last_dispatch_timestamp = 0
        self._started_ms = ms(clock())
        self._index_failed = False
        self._replica = False
        #: The message index (``None`` with ``message_index_enable`` off).
        self.index: IndexService | None = None
        #: Messages and bytes appended since the store opened.
        self.put_message_count = 0
        self.put_message_bytes = 0
        self._lock_fd = self._lock_directory()
        try:
            self._open_files()
        except BaseException:
            self._release_files()
            raise
        self._retention = Retention(
            self.root, self.config, self.commit_log, self._queues, self.index, self._lock
        )
        self._replica_log = ReplicaLog(
            self.commit_log, self._queues, self.index, self._tags_code, self._index_failure
        )
        self._group_commit: GroupCommitService | None = None
        if self.config.flush == "sync":
            self._group_commit = GroupCommitService(self.commit_log.flush, self._flush_failed)
            self._group_commit.start()
        self._service: PeriodicService | None = None
        if start_services:
            self._service = PeriodicService(self._periodic_tasks())
            self._service.start()

    def _lock_directory(self) -> int:
        """flock ``<root>/lock``: one store per directory, across processes."""
        self.root.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.root / "lock", os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StoreError(f"another process has the message store in {self.root} open") from None
        return fd

    def _open_files(self) -> None:
        """Open the commit log, checkpoint, index and config files, and recover."""
        cfg = self.config
        self.commit_log = CommitLog(self.root / "commitlog", cfg.commit_log_segment_size, self._io)
        self.checkpoint = Checkpoint(self.root / "checkpoint")
        if cfg.message_index_enable:
            self.index = IndexService(
                self.root / "index", slots=cfg.max_hash_slot_num, entries=cfg.max_index_num, clock=self._clock
            )
        self._abort = AbortMarker(self.root / "abort")
        # the config files: the consumer offsets, and the tables of add_config_table
        self.config_dir = self.root / "config"
        self.config_dir.mkdir(exist_ok=True)
        remove_stale_temp_files(self.config_dir)
        self.consumer_offsets = ConsumerOffsetTable(self.config_dir / "consumerOffset.json")
        self.consumer_offsets.load()
        self._config_tables: tuple[ConfigTable, ...] = (self.consumer_offsets,)
        recovery = Recovery(
            self.root, self.commit_log, self._queues, self.index, self.checkpoint, self._tags_code
        )
        self._last_dispatch_timestamp = recovery.run(self._abort.exists(), check_crc=cfg.check_crc_on_recover)
        self._abort.create()

    def _periodic_tasks(self) -> list[tuple[str, float, Callable[[], object]]]:
        cfg = self.config
        tasks: list[tuple[str, float, Callable[[], object]]] = [
            ("flush-consume-queues", cfg.flush_consume_queue_interval, self.flush_consume_queues),
            ("persist-config", cfg.config_flush_interval, self.persist_config),
            ("clean-expired-files", cfg.clean_resource_interval, self.clean_expired_files),
        ]
        if cfg.flush == "async":
            tasks.insert(0, ("flush-commit-log", cfg.flush_interval, self._flush_commit_log_task))
        return tasks

    # -- lifecycle ------------------------------------------------------------------------------

    def close(self) -> None:
        """Flush everything, write the checkpoint and config files, remove the abort marker."""
        if self._closed:
            return
        self._closed = True
        if self._service is not None:
            self._service.stop()
        if self._group_commit is not None:
            self._group_commit.stop()
        clean = True
        try:
            with self._lock:
                self._writable = False
            self.commit_log.flush()
            self.flush_consume_queues()
        except OSError as exc:
            clean = False
            log.error("final flush of %s failed: %s; the next start will run crash recovery", self.root, exc)
        try:
            self.persist_config(force=True)
        except OSError as exc:
            log.error("could not persist config files of %s: %s", self.root, exc)
        self._release_files(remove_abort=clean)

    def _release_files(self, *, remove_abort: bool = False) -> None:
        self._queues.close()
        if self.index is not None:
            self.index.close()
        if hasattr(self, "commit_log"):
            self.commit_log.close()
        if hasattr(self, "checkpoint"):
            self.checkpoint.close()
        if remove_abort:
            self._abort.remove()
        os.close(self._lock_fd)

    # -- appending ------------------------------------------------------------------------------

    def add_arrival_listener(self, listener: ArrivalListener) -> None:
        """Call ``listener(topic, queue_id, max_offset, tag_code, properties)`` after every
        append to a queue (see :data:`ArrivalListener`): RocketMQ's ``MessageArrivingListener``,
        which lets a held pull whose filter refuses the message stay held.

        It runs in the appending thread right after the store lock is released: keep it short
        and thread-safe (an asyncio broker hands over with ``loop.call_soon_threadsafe``).
        """
        self._listeners.append(listener)

    def remove_arrival_listener(self, listener: ArrivalListener) -> None:
        with contextlib.suppress(ValueError):
            self._listeners.remove(listener)

    def put_message(
        self,
        topic: str,
        queue_id: int,
        record: bytes | bytearray,
        tags_code: int = 0,
        properties: Mapping[str, str] | None = None,
    ) -> PutResult:
        """Append one record: :meth:`put_messages` for a batch of one.

        The arrival listeners get ``tags_code`` and ``properties`` (the record's properties, if
        the caller has them parsed: an SQL92 filter of a held pull is tried on them)."""
        buf = bytearray(record)
        topic_bytes = topic.encode()
        layout = layout_one(buf, topic_bytes, queue_id, self._max_size, tags_code)
        result = self._append(topic, topic_bytes, queue_id, buf, layout)
        if self._listeners:
            self._notify(topic, queue_id, result.queue_offset + 1, tags_code, properties)
        return result

    def put_messages(
        self,
        topic: str,
        queue_id: int,
        records: Sequence[bytes | bytearray],
        tags_codes: Sequence[int] | None = None,
    ) -> PutResult:
        """Append records for one queue as one unit: one lock, one commit-log write.

        ``records`` are stored records from :func:`~rocketq.protocol.message.encode_message` for
        this ``topic`` and ``queue_id`` (their offset fields and store timestamp are overwritten
        here); ``tags_codes`` their consume-queue tag codes (default: all 0, "no tags"). A
        batch always lands in one segment with consecutive queue offsets, as RocketMQ stores a
        ``SEND_BATCH_MESSAGE``.

        Raises :class:`~rocketq.errors.ConfigError` for an empty, malformed or oversized batch
        (over ``max_message_size``), :class:`~rocketq.errors.StoreFullError` when the disk is
        full, :class:`~rocketq.errors.StoreError` for other write failures or a closed store.
        """
        count = len(records)
        if count == 0:
            raise ConfigError("nothing to append")
        if tags_codes is None:
            tags_codes = (0,) * count
        elif len(tags_codes) != count:
            raise ConfigError(f"{count} records but {len(tags_codes)} tag codes")
        buf = records[0] if count == 1 and type(records[0]) is bytearray else bytearray().join(records)
        if len(buf) > self._max_size:
            raise ConfigError(f"{len(buf)} bytes exceed the maximum message size of {self._max_size}")
        topic_bytes = topic.encode()
        layout = layout_batch(buf, count, topic_bytes, queue_id, tags_codes)
        result = self._append(topic, topic_bytes, queue_id, buf, layout)
        self._notify(topic, queue_id, result.queue_offset + count, None, None)
        return result

    def _append(
        self, topic: str, topic_bytes: bytes, queue_id: int, buf: bytearray, layout: RecordLayout
    ) -> PutResult:
        """The locked append of one record or a batch, checked (:mod:`~rocketq.store.records`):
        stamp offsets and store time, write the commit log once and the queue's entries, index."""
        queues = self._queues.by_topic.get(topic)
        cq = queues.get(queue_id) if queues is not None else None
        if cq is None:
            cq = self._queues.get_or_create(topic, queue_id)
        starts, _, ts_positions, props_positions, sys_flags, codes = layout
        count = len(starts)
        total = len(buf)
        commit_log = self.commit_log
        with self._lock:
            if not self._writable or self._replica or self._retention.disk_full:
                raise self._refusal()
            if cq.destroyed:  # the topic was deleted since we looked the queue up
                cq = self._queues.new(topic, queue_id)
            now_ms = int(self._clock() * 1000)  # clock.ms inline: no call on the append path
            try:
                if cq.max_index + count > cq.capacity:
                    cq.prepare(count)
                seg, phys = commit_log.reserve(total)
            except OSError as exc:
                raise self._write_error(exc) from exc
            queue_offset = cq.max_index
            end = phys + total
            if count == 1:
                STORE_OFFSETS.pack_into(buf, QUEUE_OFFSET_POSITION, queue_offset, phys)
                _I64.pack_into(buf, ts_positions[0], now_ms)
                offsets: tuple[int, ...] = (phys,)
                entries = CQ_ENTRY.pack(phys, total, codes[0])
            else:
                offsets, entries = _stamp_batch(buf, layout, queue_offset, phys, now_ms)
            try:
                seg.write(phys - seg.start, buf)
            except OSError as exc:
                commit_log.discard_unwritten(phys)
                raise self._write_error(exc) from exc
            try:
                if count == 1:
                    cq.write_one(entries, end)
                else:
                    cq.write(entries, end)
            except OSError as exc:
                commit_log.discard_unwritten(phys)
                cq.discard_unwritten()
                raise self._write_error(exc) from exc
            commit_log.tail = (end, now_ms)
            commit_log.max_offset = end
            self._last_dispatch_timestamp = now_ms
            self.put_message_count += count
            self.put_message_bytes += total
            index = self.index
            if index is not None and count == 1:
                try:
                    index.add(topic_bytes, buf, props_positions[0] + 2, total, phys, now_ms, sys_flags[0])
                except (OSError, ValueError) as exc:
                    self._index_failure(phys, exc)
            elif index is not None:
                self._index_batch(index, topic_bytes, buf, layout, phys, now_ms)
        durable = self._group_commit.request() if self._group_commit is not None else None
        return PutResult(phys, queue_offset, count, total, now_ms, offsets, durable)

    def _index_batch(
        self, index: IndexService, topic: bytes, buf: bytearray, layout: RecordLayout, phys: int, now_ms: int
    ) -> None:
        """Index a batch just appended at ``phys`` (store lock held); a failure costs the index only."""
        starts, sizes, _, props_positions, sys_flags, _ = layout
        for i in range(len(starts)):
            start = starts[i]
            try:
                index.add(
                    topic, buf, props_positions[i] + 2, start + sizes[i], phys + start, now_ms, sys_flags[i]
                )
            except (OSError, ValueError) as exc:
                self._index_failure(phys + start, exc)

    def _notify(
        self,
        topic: str,
        queue_id: int,
        max_offset: int,
        tag: int | None,
        properties: Mapping[str, str] | None,
    ) -> None:
        """Call the arrival listeners (outside the lock); one failing never fails the append."""
        for listener in self._listeners:
            try:
                listener(topic, queue_id, max_offset, tag, properties)
            except Exception:
                log.exception("arrival listener %r failed", listener)

    def _refusal(self) -> StoreError:
        if self._retention.disk_full and self._writable and not self._replica:
            return StoreFullError(f"the disk of the message store in {self.root} is nearly full")
        return self._not_writable()

    def _not_writable(self) -> StoreError:
        if self._replica:
            return StoreError("the message store is a slave's: it takes only its master's bytes")
        return StoreError("the message store is closed or stopped accepting writes after a failure")

    # -- replication ------------------------------------------------------------------------------

    @property
    def replica(self) -> bool:
        """True once :meth:`become_replica` was called: appends come only from a master."""
        return self._replica

    @property
    def reput_offset(self) -> int:
        """How far the commit log's records are dispatched to queues and index (a slave's
        replicated bytes may end in the middle of a record, which waits for its rest)."""
        return self._replica_log.reput_offset

    def become_replica(self) -> None:
        """Make this store a slave's: :meth:`put_message` / :meth:`put_messages` refuse, and
        :meth:`append_replica` is the only way in (RocketMQ's store in role ``SLAVE``)."""
        self._replica = True

    def read_commit_log(self, offset: int, max_bytes: int) -> bytes | None:
        """Up to ``max_bytes`` of the commit log from ``offset``, never past the segment holding
        it (RocketMQ's ``getCommitLogData``, which a master streams to its slave): ``b""`` at the
        max offset, ``None`` when ``offset`` is not stored (deleted, or past the end)."""
        return _read_commit_log(self.commit_log, offset, max_bytes)

    def append_replica(self, offset: int, data: bytes) -> int:
        """Append commit-log bytes a master sent, at the same physical ``offset``, and dispatch
        every record they complete to its consume queue and the index (RocketMQ's
        ``appendToCommitLog`` and the reput service behind it). Returns the new max offset.

        ``offset`` must be the commit log's end - or, on an empty log, the start of a segment
        (a new slave is streamed from the start of its master's last segment). Raises
        :class:`~rocketq.errors.StoreError` otherwise, or when a write fails."""
        replica = self._replica_log
        with self._lock:
            if not self._writable:
                raise self._not_writable()
            try:
                replica.check_offset(offset)
                pos = replica.write(offset, data)
            except OSError as exc:
                raise self._write_error(exc) from exc
            try:
                done = replica.dispatch(pos)
            except StoreError:
                self._writable = False
                raise
            self._last_dispatch_timestamp = done.last_timestamp
            self.put_message_count += done.messages
            self.put_message_bytes += done.size
        for topic, queue_id, max_offset, code in done.arrived:
            self._notify(topic, queue_id, max_offset, code, None)
        if self._group_commit is not None:
            self._group_commit.request()  # the slave reports without waiting for its fsync
        return pos

    def _index_failure(self, phys: int, exc: Exception) -> None:
        """Indexing a record just appended failed: it costs the index (until the next start
        indexes the record again), never the append."""
        assert self.index is not None
        if not self._index_failed:
            log.error("indexing the message at %s failed: %s (the next start indexes it again)", phys, exc)
        self._index_failed = True
        self.index.mark_unindexed(phys)

    def _write_error(self, exc: OSError) -> StoreError:
        if exc.errno in _NO_SPACE:
            log.error("message store %s is out of space: %s", self.root, exc)
            return StoreFullError(f"no space left for the message store in {self.root}: {exc}")
        log.error("message store %s failed to write: %s", self.root, exc)
        return StoreError(f"the message store in {self.root} failed to write: {exc}")

    def _flush_failed(self, exc: BaseException) -> None:
        with self._lock:
            self._writable = False
        log.critical("fsync failed in %s: the store no longer accepts writes (%s)", self.root, exc)

    # -- flushing -------------------------------------------------------------------------------

    def flush(self) -> int:
        """fsync the commit log now; returns the offset durable on disk."""
        try:
            return self.commit_log.flush()
        except OSError as exc:
            self._flush_failed(exc)
            raise StoreError(f"fsync of the commit log failed: {exc}") from exc

    def _flush_commit_log_task(self) -> None:
        self.flush()

    def flush_consume_queues(self) -> None:
        """fsync the consume queues and write the checkpoint (RocketMQ's ``FlushConsumeQueueService``)."""
        logics_timestamp = self._last_dispatch_timestamp
        for cq in self._queues.all():
            cq.flush()
        if self.index is not None:
            try:
                self.checkpoint.index_msg_timestamp = self.index.flush()
            except (OSError, ValueError) as exc:
                log.error("flushing the message index of %s failed: %s", self.root, exc)
        self.checkpoint.logics_msg_timestamp = logics_timestamp
        self.checkpoint.physic_msg_timestamp = self.commit_log.flushed_timestamp
        self.checkpoint.flush()

    def add_config_table(self, table: ConfigTable) -> None:
        """Load ``table`` from its file (or the file's backup; nothing if neither exists) and
        write it from now on as the store writes its own config: when it changed, every
        ``config_flush_interval``, and at :meth:`close`.

        The broker keeps its topic and subscription group tables in :attr:`config_dir` this way;
        the store does not know what they hold. Raises
        :class:`~rocketq.errors.StoreCorruptError` when the file and its backup are both unreadable.
        """
        table.load()
        self._config_tables = (*self._config_tables, table)

    def persist_config(self, *, force: bool = False) -> None:
        """Write the consumer offsets, and the tables of :meth:`add_config_table`, that changed
        (all of them with ``force``)."""
        for table in self._config_tables:
            if force:
                table.persist()
            else:
                table.persist_if_dirty()

    @property
    def group_commit_fsyncs(self) -> int:
        """fsync rounds done by the group-commit thread (0 under async flush)."""
        return self._group_commit.fsync_count if self._group_commit is not None else 0

    # -- reading --------------------------------------------------------------------------------

    def get_messages(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int,
        tags_codes: AbstractSet[int] | None = None,
        max_bytes: int | None = None,
        *,
        group: str | None = None,
        property_filter: PropertyFilter | None = None,
        max_transfer: int | None = None,
    ) -> GetMessageResult:
        """Up to ``max_count`` stored records of a queue from queue offset ``offset``.

        Only messages whose tag code is in ``tags_codes`` are returned (``None``: all), and
        with ``property_filter`` only those for whose properties it returns true (RocketMQ's
        ``isMatchedByCommitLog``: the record's properties are read for that). At most
        ``max_transfer_count`` messages (or ``max_transfer``, when given: a bulk pull) and about
        ``max_bytes`` (default ``max_transfer_bytes``) are returned, but always at least one.
        ``next_begin_offset`` follows the last entry examined (RocketMQ's rules, including the
        suggested offsets for the OFFSET_* statuses); ``group`` is accepted for symmetry with
        RocketMQ and unused. ``suggest_pulling_from_slave`` is set when the read is more than
        ``config.in_memory_bytes`` behind the commit log's end.
        """
        cfg = self.config
        max_count = max(1, min(max_count, cfg.max_transfer_count if max_transfer is None else max_transfer))
        limit_bytes = cfg.max_transfer_bytes if max_bytes is None else max_bytes
        cq = self._queues.get(topic, queue_id)
        return read_queue(
            cq, self.commit_log, offset, max_count, limit_bytes, tags_codes, property_filter, self._in_memory
        )

    def max_offset(self, topic: str, queue_id: int) -> int:
        """Next queue offset to be written (0 for an unknown queue)."""
        cq = self._queues.get(topic, queue_id)
        return cq.max_index if cq is not None else 0

    def min_offset(self, topic: str, queue_id: int) -> int:
        """First queue offset still readable (0 for an unknown queue)."""
        cq = self._queues.get(topic, queue_id)
        return cq.min_index if cq is not None else 0

    def message_count(self, topic: str, queue_id: int) -> int:
        """Messages currently readable in a queue (max - min offset)."""
        cq = self._queues.get(topic, queue_id)
        return cq.max_index - cq.min_index if cq is not None else 0

    @property
    def commit_log_min_offset(self) -> int:
        return self.commit_log.min_offset

    @property
    def commit_log_max_offset(self) -> int:
        return self.commit_log.max_offset

    def offset_by_time(self, topic: str, queue_id: int, timestamp_ms: int) -> int:
        """Queue offset of the message stored at (or nearest to) ``timestamp_ms``
        (``SEARCH_OFFSET_BY_TIMESTAMP``; RocketMQ's ``getOffsetInQueueByTime``)."""
        cq = self._queues.get(topic, queue_id)
        if cq is None:
            return 0
        return cq.offset_by_time(timestamp_ms, self.commit_log.store_timestamp, self.commit_log.min_offset)

    def store_time_at(self, topic: str, queue_id: int, queue_offset: int) -> int:
        """Store timestamp (ms) of the message at ``queue_offset``, -1 if there is none."""
        cq = self._queues.get(topic, queue_id)
        entry = cq.entry(queue_offset) if cq is not None else None
        if entry is None:
            return -1
        return self.commit_log.store_timestamp(entry[0], entry[1])

    def earliest_message_time(self, topic: str, queue_id: int) -> int:
        """Store timestamp of the oldest readable message of a queue, -1 if none
        (``GET_EARLIEST_MSG_STORETIME``)."""
        cq = self._queues.get(topic, queue_id)
        if cq is None:
            return -1
        return self.store_time_at(topic, queue_id, cq.min_index)

    def earliest_store_time(self) -> int:
        """Store timestamp of the oldest message in the commit log, -1 if it is empty."""
        return self.commit_log.store_timestamp(self.commit_log.min_offset)

    def latest_store_time(self) -> int:
        """Store timestamp of the newest whole message in the commit log (on a slave: the newest
        its master streamed in full), -1 if there is none."""
        end, timestamp = self.commit_log.tail
        return timestamp if end > 0 and timestamp > 0 else -1

    def read_message_bytes(self, commit_log_offset: int) -> bytes | None:
        """The stored record at a commit-log offset (from an offset message id), or ``None``
        (``VIEW_MESSAGE_BY_ID`` answers with these bytes)."""
        size = self.commit_log.record_size(commit_log_offset)
        if size < 0:
            return None
        return self.commit_log.read(commit_log_offset, size)

    def query_message(
        self, topic: str, key: str, max_num: int, begin_timestamp: int, end_timestamp: int
    ) -> QueryMessageResult:
        """The messages of ``topic`` whose unique id or one of whose keys is ``key``, stored within
        ``[begin_timestamp, end_timestamp]`` (ms), through the message index (RocketMQ's
        ``queryMessage``): at most ``max_num`` (capped by ``max_msgs_num_batch``), the newest
        ones, returned in commit-log order.

        RocketMQ returns whatever shares the key's hash and lets the client drop the others;
        here each candidate's topic and keys are checked, so every message returned matches.
        The index stores times to the second (as RocketMQ's does), so the range is that coarse.
        """
        index = self.index
        if index is None:
            return QueryMessageResult((), 0, 0)
        last_ts, last_phys = index.last_update
        limit = max(1, min(max_num, self.config.max_msgs_num_batch))
        wanted = key.encode()
        found: dict[int, bytes] = {}
        for phys in index.query(topic, key, begin_timestamp, end_timestamp):
            if phys in found:
                continue
            data = self.read_message_bytes(phys)
            if data is None:
                continue
            try:
                msg = decode_messages(data, read_body=False)[0]
            except RemoteProtocolError:
                continue
            if msg.topic != topic:
                continue
            props = msg.stored_properties.encode()
            if wanted not in message_keys(props):
                continue
            found[phys] = data
            if len(found) >= limit:
                break
        return QueryMessageResult(tuple(found[p] for p in sorted(found)), last_ts, last_phys)

    def look_message(self, commit_log_offset: int) -> MessageExt | None:
        """The decoded message at a commit-log offset (RocketMQ's ``lookMessageByOffset``)."""
        data = self.read_message_bytes(commit_log_offset)
        if data is None:
            return None
        return decode_message(data)[0]

    def topics(self) -> list[str]:
        """Topics that have consume queues."""
        return self._queues.topics()

    def queue_ids(self, topic: str) -> list[int]:
        """Queue ids of ``topic`` that have consume queues."""
        return self._queues.queue_ids(topic)

    def delete_topics(self, topics: Iterable[str]) -> None:
        """Delete the consume queues of ``topics`` (their messages stay in the commit log until
        retention removes them; offsets restart at 0 if the topic is created again)."""
        self._queues.delete_topics(topics)

    def runtime_info(self) -> dict[str, str]:
        """Store figures for the broker's ``GET_BROKER_RUNTIME_INFO`` table, under RocketMQ's
        key names (values as strings, as that table carries them)."""
        return {
            "commitLogMinOffset": str(self.commit_log.min_offset),
            "commitLogMaxOffset": str(self.commit_log.max_offset),
            "commitLogDiskRatio": f"{self.disk_used_ratio():.4f}",
            "earliestMessageTimeStamp": str(self.earliest_store_time()),
            "dispatchBehindBytes": "0",  # consume queues are built in line with the append
            "putMessageTimesTotal": str(self.put_message_count),
            "putMessageSizeTotal": str(self.put_message_bytes),
            "bootTimestamp": str(self._started_ms),
            "flushDiskType": "SYNC_FLUSH" if self.config.flush == "sync" else "ASYNC_FLUSH",
        }

    # -- retention ------------------------------------------------------------------------------

    def disk_used_ratio(self) -> float:
        """Used fraction (0..1) of the partition holding the commit log."""
        return self._retention.disk_used_ratio()

    def clean_expired_files(
        self, *, now: float | None = None, disk_used_ratio: float | None = None, force: bool = False
    ) -> int:
        """Delete expired commit-log segments, then the consume-queue files left pointing only
        at deleted data (RocketMQ's ``CleanCommitLogService`` + ``CleanConsumeQueueService``;
        :mod:`rocketq.store.retention`).

        Segments are deleted oldest first while their last modification is older than
        ``file_reserved_time`` - only when it is one of the ``delete_when`` hours, the disk is
        fuller than ``disk_max_used_space_ratio`` or ``force`` is given, never the segment being
        written, at most ``max_deleted_files_per_run`` per call. Above
        ``disk_clean_forcibly_ratio`` segments go whatever their age; above
        ``disk_full_ratio`` the store also refuses appends (:class:`~rocketq.errors.StoreFullError`)
        until a later run finds the disk below it again, as RocketMQ's ``RunningFlags`` do.
        ``now`` defaults to the store clock, ``disk_used_ratio`` to the real disk usage.
        Returns the segments deleted.
        """
        now = self._clock() if now is None else now
        ratio = self._retention.disk_used_ratio() if disk_used_ratio is None else disk_used_ratio
        return self._retention.clean(now, ratio, force=force)


def _stamp_batch(
    buf: bytearray, layout: RecordLayout, queue_offset: int, phys: int, now_ms: int
) -> tuple[tuple[int, ...], bytes]:
    """Stamp a batch's queue offsets, commit-log offsets and store time; its offsets and entries."""
    starts, sizes, ts_positions, _, _, codes = layout
    offsets = tuple(phys + s for s in starts)
    pack_offsets = STORE_OFFSETS.pack_into
    pack_ts = _I64.pack_into
    for i in range(len(starts)):
        pack_offsets(buf, starts[i] + QUEUE_OFFSET_POSITION, queue_offset + i, offsets[i])
        pack_ts(buf, ts_positions[i], now_ms)
    return offsets, b"".join([CQ_ENTRY.pack(offsets[i], sizes[i], codes[i]) for i in range(len(starts))])
