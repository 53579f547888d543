"""The admin layer's value types (topic and group figures, reset results) and its time parsers."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from rocketq.admin.monitoring import SlaveLag
from rocketq.errors import (
    ConfigError,
)
from rocketq.models import DuplicateClientId, MessageQueue
from rocketq.protocol.codes import version_name

__all__ = [
    "ORDER_TOPIC_CONFIG",
    "GroupMember",
    "GroupMembers",
    "GroupProgress",
    "QueueProgress",
    "QueueSource",
    "ResetResult",
    "TopicQueueStats",
    "TopicStats",
    "parse_reset_target",
    "parse_time",
]

T = TypeVar("T")

ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"
"""The name servers' KV namespace of ordered topics' ``brokerName:queues;...`` settings."""

#: Where a member's queues came from: its own running info, or the strategy re-run here.
QueueSource = Literal["running-info", "plan"]

_FIRST = 0  # a reset to time stamp 0 lands on each queue's min offset
_JAVA_LONG_MAX = (1 << 63) - 1  # a query's end when none is given (Long.MAX_VALUE, as mqadmin)
_LAST = -1  # RocketMQ's "now": each queue's max offset


# ------------------------------------------------------------------------------------ values


def _mq_dict(mq: MessageQueue) -> dict[str, Any]:
    return {"topic": mq.topic, "broker": mq.broker_name, "queue_id": mq.queue_id}


@dataclass(frozen=True, slots=True)
class TopicQueueStats:
    """One queue of a topic: the offsets the broker holds and when it last stored a message."""

    queue: MessageQueue
    min_offset: int
    max_offset: int
    last_update_ms: int
    slave_max_offset: int | None = None
    """The queue's max offset on the broker's slave (its first, by id); ``None`` without one, or
    when the slave did not answer (a topic it has not synced yet)."""

    @property
    def messages(self) -> int:
        """Messages stored in the queue now (max - min)."""
        return self.max_offset - self.min_offset

    @property
    def slave_behind(self) -> int | None:
        """Messages of the queue the slave does not have yet."""
        if self.slave_max_offset is None:
            return None
        return max(self.max_offset - self.slave_max_offset, 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            **_mq_dict(self.queue),
            "min_offset": self.min_offset,
            "max_offset": self.max_offset,
            "messages": self.messages,
            "last_update_ms": self.last_update_ms,
            "slave_max_offset": self.slave_max_offset,
        }


@dataclass(frozen=True, slots=True)
class TopicStats:
    """Every queue of a topic on every broker of its route, sorted."""

    topic: str
    queues: tuple[TopicQueueStats, ...]
    slaves: tuple[SlaveLag, ...] = ()
    """The slaves of the route's brokers, with their lag behind their masters."""

    @property
    def total_messages(self) -> int:
        return sum(q.messages for q in self.queues)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "queues": [q.to_dict() for q in self.queues],
            "total_messages": self.total_messages,
            "slaves": [s.to_dict() for s in self.slaves],
        }


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One client id of a group: its connections, and the queues it owns.

    ``queues_source`` is ``"running-info"`` when the client reported its queues itself, ``"plan"``
    when they were computed here with ``strategy`` (the client did not answer: ``error`` says why).
    Two processes sharing one client id (``duplicate``) both own these queues: they consume them
    twice.
    """

    client_id: str
    addresses: tuple[str, ...]
    language: str
    version: int
    queues: tuple[MessageQueue, ...]
    queues_source: QueueSource
    strategy: str
    duplicate: bool = False
    error: str | None = None

    @property
    def version_name(self) -> str:
        return version_name(self.version)

    def to_dict(self) -> dict[str, Any]:
        return {
            "client_id": self.client_id,
            "addresses": list(self.addresses),
            "language": self.language,
            "version": self.version_name,
            "queues": [_mq_dict(q) for q in self.queues],
            "queues_source": self.queues_source,
            "strategy": self.strategy,
            "duplicate": self.duplicate,
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class GroupMembers:
    """The online members of a consumer group (empty when it has none)."""

    group: str
    members: tuple[GroupMember, ...]
    subscriptions: Mapping[str, str] = field(default_factory=dict)
    message_model: str | None = None
    consume_type: str | None = None
    consume_from_where: str | None = None
    duplicates: tuple[DuplicateClientId, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "message_model": self.message_model,
            "consume_type": self.consume_type,
            "consume_from_where": self.consume_from_where,
            "subscriptions": dict(self.subscriptions),
            "members": [m.to_dict() for m in self.members],
            "duplicates": [d.to_dict() for d in self.duplicates],
        }


@dataclass(frozen=True, slots=True)
class QueueProgress:
    """A queue as a group sees it: the broker's max offset, the group's committed offset, the lag."""

    queue: MessageQueue
    broker_offset: int
    consumer_offset: int
    last_timestamp_ms: int
    owner: str | None

    @property
    def lag(self) -> int:
        return max(self.broker_offset - self.consumer_offset, 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            **_mq_dict(self.queue),
            "broker_offset": self.broker_offset,
            "consumer_offset": self.consumer_offset,
            "lag": self.lag,
            "owner": self.owner,
            "last_timestamp_ms": self.last_timestamp_ms,
        }


@dataclass(frozen=True, slots=True)
class GroupProgress:
    """Consume progress of a group over its topics (or one), sorted by queue."""

    group: str
    queues: tuple[QueueProgress, ...]
    consume_tps: float
    owners_source: QueueSource | None = None
    slaves: tuple[SlaveLag, ...] = ()
    """The slaves of the brokers asked, with their lag behind their masters (what a consumer
    sent to a slave - its master gone, or far behind with ``slaveReadEnable`` - can read)."""

    @property
    def total_lag(self) -> int:
        return sum(q.lag for q in self.queues)

    @property
    def total_broker_offset(self) -> int:
        return sum(q.broker_offset for q in self.queues)

    @property
    def total_consumer_offset(self) -> int:
        return sum(q.consumer_offset for q in self.queues)

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "queues": [q.to_dict() for q in self.queues],
            "total_broker_offset": self.total_broker_offset,
            "total_consumer_offset": self.total_consumer_offset,
            "total_lag": self.total_lag,
            "consume_tps": self.consume_tps,
            "owners_source": self.owners_source,
            "slaves": [s.to_dict() for s in self.slaves],
        }


@dataclass(frozen=True, slots=True)
class ResetResult:
    """The offsets a reset set, per queue; ``timestamp_ms`` -1 means "last", 0 "first"."""

    group: str
    topic: str
    timestamp_ms: int
    offsets: Mapping[MessageQueue, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "topic": self.topic,
            "timestamp_ms": self.timestamp_ms,
            "offsets": [{**_mq_dict(mq), "offset": o} for mq, o in sorted(self.offsets.items())],
        }


def parse_reset_target(text: str | int, *, now_ms: int | None = None) -> int:
    """A reset target as the time stamp RocketMQ's reset takes: ``"first"`` → 0 (each queue's min
    offset), ``"last"``/``"now"`` → -1 (max offset), digits → epoch ms, else ISO-8601 (local time
    when it has no offset). A time after ``now_ms`` (default: now) is refused: no message is stored
    after it, and RocketMQ's brokers would answer each queue's last message (max - 1), not its end.

    >>> parse_reset_target("first"), parse_reset_target("last"), parse_reset_target("1700000000000")
    (0, -1, 1700000000000)
    >>> parse_reset_target("2023-11-14T22:13:20+00:00")
    1700000000000
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if isinstance(text, int):
        if text < -1:
            raise ConfigError(f"a reset time stamp must be >= -1, got {text}")
        if text > now:
            raise ConfigError(_future(str(text)))
        return text
    value = text.strip()
    if value in ("first", "earliest"):
        return _FIRST
    if value in ("last", "latest", "now"):
        return _LAST
    if value.isdigit():
        ms = int(value)
    else:
        from datetime import datetime  # noqa: PLC0415 (only for this rarely used form)

        try:
            ms = int(datetime.fromisoformat(value).timestamp() * 1000)
        except (ValueError, OverflowError, OSError):
            raise ConfigError(
                f"a time must be first, last, epoch milliseconds or ISO-8601 (2026-01-31T12:00:00), "
                f"got {text!r}"
            ) from None
    if ms > now:
        raise ConfigError(_future(text if isinstance(text, str) else str(text)))
    return ms


def _future(text: str) -> str:
    return (
        f"time {text.strip()!r} is in the future: no message is stored after it "
        "(use last for each queue's end)"
    )


_AGE = re.compile(r"^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_time(text: str, *, now_ms: int | None = None) -> int:
    """A time as epoch ms: digits (epoch ms), ``now``, an age (``30s``, ``15m``, ``2h``, ``1d``:
    that long ago) or ISO-8601 (local time when it has no offset); else
    :class:`~rocketq.errors.ConfigError`.

    >>> parse_time("1700000000000"), parse_time("90s", now_ms=1_000_000), parse_time("now", now_ms=5)
    (1700000000000, 910000, 5)
    >>> parse_time("2023-11-14T22:13:20+00:00")
    1700000000000
    """
    value = text.strip()
    if value.isdigit():
        return int(value)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if value == "now":
        return now
    m = _AGE.match(value)
    if m:
        return now - int(float(m.group(1)) * _UNIT_MS[m.group(2)])
    from datetime import datetime  # noqa: PLC0415 (only for this form)

    try:
        return int(datetime.fromisoformat(value).timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        raise ConfigError(
            f"a time must be epoch ms, now, an age such as 15m, or ISO-8601 (2026-01-31T12:00:00); "
            f"got {text!r}"
        ) from None
