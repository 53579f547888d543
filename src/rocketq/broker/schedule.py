"""Delayed messages: the schedule topic and the service that delivers its messages on time.

A message sent with the ``DELAY`` property (level ``n`` of the broker's ``messageDelayLevel``,
``1s 5s 10s 30s 1m ... 2h`` by default) is not stored under its topic but under
``SCHEDULE_TOPIC_XXXX``, queue ``n - 1``, with its real topic and queue id in the ``REAL_TOPIC``
and ``REAL_QID`` properties; its consume-queue tag code is the time it is due (store time + the
level's delay, epoch ms). That is RocketMQ 4.9.4's ``CommitLog.asyncPutMessage`` rewrite, done by
:func:`schedule_record`. Retries travel the same way: ``CONSUMER_SEND_MSG_BACK`` stores the
message for ``%RETRY%<group>`` with delay level 3 + its reconsume count.

:class:`ScheduleService` (RocketMQ's ``ScheduleMessageService``) is one asyncio task walking the
18 queues. Messages of one level are due in the order they were stored, so for each level it
reads from its progress offset and re-stores every message that is due under its real topic and
queue (``messageTimeup``: same body, flags, born and store hosts, reconsume count; the stored
property string kept as is, so ``DELAY``, ``REAL_TOPIC`` and ``REAL_QID`` stay visible to
consumers as in RocketMQ); then it sleeps until the earliest message not yet due, or until
:meth:`ScheduleService.kick` says a new delayed message arrived. Progress offsets are persisted
to ``config/delayOffset.json`` (``{"offsetTable":{1:5,3:2}}``, RocketMQ's file) every
``flush_delay_offset_interval`` seconds and at close, so a restart neither loses nor (beyond
the last persist) repeats deliveries - delivery is at least once, as in RocketMQ.

A due time more than one level delay ahead of now (the clock went back) is corrected to now, as
RocketMQ's ``correctDeliverTimestamp`` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from rocketq.clock import ms
from rocketq.errors import RocketQError
from rocketq.protocol.message import MessageExt, decode_messages, encode_message
from rocketq.protocol.properties import MessageConst, tags_code
from rocketq.protocol.topics import RMQ_SYS_SCHEDULE_TOPIC
from rocketq.store import GetMessageStatus, MessageStore, TagsCodeFunction, read_with_backup, write_atomically
from rocketq.store.message_store import default_tags_code
from rocketq.tasks import cancel_and_wait

__all__ = [
    "DELAY_OFFSET_FILE",
    "ScheduleService",
    "delay_level_of",
    "encode_delay_offsets",
    "load_delay_offsets",
    "schedule_tags_code_function",
]

log = logging.getLogger(__name__)

DELAY_OFFSET_FILE = "delayOffset.json"
"""RocketMQ's file of the schedule service's progress, under the store's ``config`` directory."""

_RETRY_AFTER_FAILURE = 10.0  # RocketMQ's DELAY_FOR_A_PERIOD: retry a failed re-store after 10 s
_FIRST_DELAY = 1.0  # RocketMQ's FIRST_DELAY_TIME
_BATCH = 32
_ROUND_BUDGET = 1024  # messages re-stored per level and round before yielding the loop
_ENTRY = re.compile(rb"(-?\d+)\s*:\s*(-?\d+)")


def delay_level_of(properties: Mapping[str, str], max_level: int) -> int:
    """The message's ``DELAY`` level clamped to ``max_level`` (0: not delayed, as a bad value)."""
    raw = properties.get(MessageConst.DELAY)
    if not raw:
        return 0
    try:
        level = int(raw)
    except ValueError:
        return 0
    return min(level, max_level) if level > 0 else 0


def schedule_tags_code_function(levels: tuple[float, ...]) -> TagsCodeFunction:
    """The store's tag-code function for this broker: a schedule-topic entry's tag code is its due
    time (store time + the level's delay, ms); other topics use the ``TAGS`` hash. Recovery
    calls it when it rebuilds consume queues."""
    delays_ms = [int(d * 1000) for d in levels]

    def code(topic: str, properties: Mapping[str, str], store_timestamp: int) -> int:
        if topic == RMQ_SYS_SCHEDULE_TOPIC:
            level = delay_level_of(properties, len(delays_ms))
            return store_timestamp + (delays_ms[level - 1] if level else 0)
        return default_tags_code(topic, properties, store_timestamp)

    return code


def load_delay_offsets(path: Path) -> dict[int, int]:
    """Parse ``delayOffset.json`` (fastjson's integer-keyed map, not strict JSON); ``{}`` if absent."""

    def parse(data: bytes) -> dict[int, int]:
        if b"offsetTable" not in data:
            raise ValueError("no offsetTable")
        return {int(k): int(v) for k, v in _ENTRY.findall(data)}

    return read_with_backup(path, parse) or {}


def encode_delay_offsets(offsets: Mapping[int, int]) -> bytes:
    """``delayOffset.json``'s content (and GET_ALL_DELAY_OFFSET's body): ``{"offsetTable":{1:5}}``."""
    inner = ",".join(f"{level}:{offset}" for level, offset in sorted(offsets.items()))
    return ('{"offsetTable":{' + inner + "}}").encode()


class ScheduleService:
    """Delivers ``SCHEDULE_TOPIC_XXXX`` messages when due (see the module docstring).

    ``clock`` is the wall clock in seconds (due times are epoch ms, as the store's timestamps).
    """

    def __init__(
        self,
        store: MessageStore,
        levels: tuple[float, ...],
        *,
        persist_interval: float = 10.0,
        clock: Callable[[], float] = time.time,
        on_delivered: Callable[[MessageExt], None] | None = None,
    ) -> None:
        self._store = store
        self._delays_ms = [int(d * 1000) for d in levels]
        self._persist_interval = persist_interval
        self._clock = clock
        self._on_delivered = on_delivered
        self._path = store.root / "config" / DELAY_OFFSET_FILE
        self._offsets: dict[int, int] = load_delay_offsets(self._path)
        self._dirty = False
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.delivered = 0
        """Messages re-stored under their real topic since start."""

    @property
    def offsets(self) -> dict[int, int]:
        """Progress per level (level -> next queue offset of the schedule queue)."""
        return dict(self._offsets)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="schedule-service")

    def kick(self) -> None:
        """A delayed message was stored: look again now (cheap; call from the event loop)."""
        self._wakeup.set()

    async def close(self) -> None:
        """Stop the task and persist the progress offsets."""
        task, self._task = self._task, None
        await cancel_and_wait(task)
        self.persist()

    def persist(self) -> None:
        """Write ``delayOffset.json`` now (atomically) if anything was delivered since the last write."""
        if not self._dirty:
            return
        try:
            write_atomically(self._path, encode_delay_offsets(self._offsets))
            self._dirty = False
        except OSError as exc:
            log.error("cannot persist %s: %s", self._path, exc)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        next_persist = loop.time() + self._persist_interval
        await asyncio.sleep(0)
        while True:
            try:
                wait = self.deliver_due()
            except Exception:  # a bug in one round must not end deliveries
                log.exception("schedule service: delivery round failed")
                wait = _RETRY_AFTER_FAILURE
            now = loop.time()
            if now >= next_persist:
                await asyncio.to_thread(self.persist)
                next_persist = now + self._persist_interval
            timeout = min(wait if wait is not None else self._persist_interval, next_persist - now)
            self._wakeup.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), max(timeout, 0.001))

    def deliver_due(self, budget: int = _ROUND_BUDGET) -> float | None:
        """Re-store the messages that are due now, at most ``budget`` per level (so a backlog
        after a long stop never holds the event loop for long: the rest goes in the next round,
        right after other work had its turn); return seconds until the next one is due (0 when
        the budget ran out, ``None`` when nothing is waiting). Each re-store is one store append."""
        wait: float | None = None
        for level in range(1, len(self._delays_ms) + 1):
            level_wait = self._deliver_level(level, budget)
            if level_wait is not None and (wait is None or level_wait < wait):
                wait = level_wait
        return wait

    def _deliver_level(self, level: int, budget: int) -> float | None:
        store = self._store
        queue_id = level - 1
        delay_ms = self._delays_ms[level - 1]
        offset = self._offsets.get(level, 0)
        while True:
            if budget <= 0:
                return 0.0
            result = store.get_messages(RMQ_SYS_SCHEDULE_TOPIC, queue_id, offset, _BATCH)
            if result.status is not GetMessageStatus.FOUND:
                if (
                    result.status
                    in (
                        GetMessageStatus.OFFSET_TOO_SMALL,
                        GetMessageStatus.OFFSET_OVERFLOW_BADLY,
                        GetMessageStatus.OFFSET_FOUND_NULL,
                        GetMessageStatus.MESSAGE_WAS_REMOVING,
                    )
                    and result.next_begin_offset != offset
                ):
                    log.warning(
                        "schedule level %d: offset %d moved to %d", level, offset, result.next_begin_offset
                    )
                    self._set_offset(level, result.next_begin_offset)
                    offset = result.next_begin_offset
                    continue
                return None
            for msg in decode_messages(result.data, decompress=False):
                if budget <= 0:
                    return 0.0
                now_ms = ms(self._clock())
                due = msg.store_timestamp + delay_ms
                if due > now_ms + delay_ms:
                    due = now_ms  # the clock went back: RocketMQ's correctDeliverTimestamp
                if due > now_ms:
                    return (due - now_ms) / 1000
                try:
                    self._restore(msg)
                except (RocketQError, OSError) as exc:
                    log.error(
                        "schedule level %d: cannot deliver message at offset %d: %s; retrying in %gs",
                        level,
                        msg.queue_offset,
                        exc,
                        _RETRY_AFTER_FAILURE,
                    )
                    return _RETRY_AFTER_FAILURE
                offset = msg.queue_offset + 1
                self._set_offset(level, offset)
                budget -= 1

    def _set_offset(self, level: int, offset: int) -> None:
        self._offsets[level] = offset
        self._dirty = True

    def _restore(self, msg: MessageExt) -> None:
        props = msg.properties
        topic = props.get(MessageConst.REAL_TOPIC)
        qid_text = props.get(MessageConst.REAL_QID)
        if not topic or qid_text is None or not qid_text.lstrip("-").isdigit():
            log.error(
                "schedule: message at offset %d has no REAL_TOPIC/REAL_QID; dropped", msg.commit_log_offset
            )
            return
        record = encode_message(
            topic=topic,
            body=msg.body,
            properties=msg.stored_properties,
            queue_id=int(qid_text),
            flag=msg.flag,
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=msg.born_host,
            store_host=msg.store_host,
            reconsume_times=msg.reconsume_times,
            prepared_transaction_offset=msg.prepared_transaction_offset,
        )
        self._store.put_message(topic, int(qid_text), record, tags_code(props.get(MessageConst.TAGS)))
        self.delivered += 1
        if self._on_delivered is not None:
            self._on_delivered(msg)
