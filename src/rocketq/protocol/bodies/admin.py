"""Bodies of the admin requests: stats, connections, running info, offsets resets and queries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, ClassVar

from rocketq.models import MessageQueue
from rocketq.protocol.bodies._codec import (
    _BOOL,
    _F,
    _FLOAT,
    _INT,
    _LONG_KEY,
    _QUEUE,
    _STR,
    JsonBody,
    _Bean,
    _bean_set,
    _beans,
    _Enum,
    _java_key,
    _list,
    _Map,
    _p,
    _props,
    _set,
)
from rocketq.protocol.bodies.client import SubscriptionData
from rocketq.protocol.bodies.enums import ConsumeFromWhere, ConsumeType, MessageModel

__all__ = [
    "Connection",
    "ConsumeQueueData",
    "ConsumeStats",
    "ConsumeStatsList",
    "ConsumeStatus",
    "ConsumerConnection",
    "ConsumerRunningInfo",
    "GroupList",
    "OffsetWrapper",
    "ProcessQueueInfo",
    "ProducerConnection",
    "QueryConsumeQueueResponseBody",
    "QueryConsumeTimeSpanBody",
    "QueryCorrectionOffsetBody",
    "QueueTimeSpan",
    "ResetOffsetBody",
    "TopicOffset",
    "TopicStatsTable",
]


@dataclass(frozen=True, slots=True)
class OffsetWrapper(JsonBody):
    """A queue's broker max offset, the group's committed offset and the last store time."""

    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("brokerOffset", "broker_offset", _INT),
        _p("consumerOffset", "consumer_offset", _INT),
        _p("lastTimestamp", "last_timestamp", _INT),
    )


@dataclass(frozen=True, slots=True)
class ConsumeStats(JsonBody):
    """``GET_CONSUME_STATS``: per-queue offsets of a group on one broker, and its consume TPS."""

    offset_table: Mapping[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("consumeTps", "consume_tps", _FLOAT),
        _p("offsetTable", "offset_table", _Map(_QUEUE, _Bean(OffsetWrapper))),
    )

    def total_diff(self) -> int:
        """Messages not yet consumed, summed over the queues (``computeTotalDiff``)."""
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())


@dataclass(frozen=True, slots=True)
class TopicOffset(JsonBody):
    """A queue's min and max offsets and the store time of its last message."""

    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("lastUpdateTimestamp", "last_update_timestamp", _INT),
        _p("maxOffset", "max_offset", _INT),
        _p("minOffset", "min_offset", _INT),
    )


@dataclass(frozen=True, slots=True)
class TopicStatsTable(JsonBody):
    """``GET_TOPIC_STATS_INFO``: the offsets of every queue of a topic on one broker."""

    offset_table: Mapping[MessageQueue, TopicOffset] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("offsetTable", "offset_table", _Map(_QUEUE, _Bean(TopicOffset)))
    )


@dataclass(frozen=True, slots=True)
class Connection(JsonBody):
    """One client connection: id, remote address, language (``LanguageCode`` name) and version."""

    client_id: str | None = None
    client_addr: str | None = None
    language: str | None = None
    version: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("clientAddr", "client_addr", _STR),
        _p("clientId", "client_id", _STR),
        _p("language", "language", _STR),
        _p("version", "version", _INT),
    )


@dataclass(frozen=True, slots=True)
class ConsumerConnection(JsonBody):
    """``GET_CONSUMER_CONNECTION_LIST``: a group's connections and its subscriptions."""

    connection_set: tuple[Connection, ...] = ()
    subscription_table: Mapping[str, SubscriptionData] = field(default_factory=dict)
    consume_type: ConsumeType | None = None
    message_model: MessageModel | None = None
    consume_from_where: ConsumeFromWhere | None = None

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("connectionSet", "connection_set", _bean_set(Connection)),
        _p("consumeFromWhere", "consume_from_where", _Enum(ConsumeFromWhere)),
        _p("consumeType", "consume_type", _Enum(ConsumeType)),
        _p("messageModel", "message_model", _Enum(MessageModel)),
        _p("subscriptionTable", "subscription_table", _Map(_STR, _Bean(SubscriptionData))),
    )


@dataclass(frozen=True, slots=True)
class ProducerConnection(JsonBody):
    """``GET_PRODUCER_CONNECTION_LIST``: a producer group's connections."""

    connection_set: tuple[Connection, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = _props(_p("connectionSet", "connection_set", _bean_set(Connection)))


@dataclass(frozen=True, slots=True)
class ProcessQueueInfo(JsonBody):
    """A push consumer's view of one of its queues (``ProcessQueueInfo``; ``droped`` sic)."""

    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_size_in_mib: int = 0
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    droped: bool = False
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("cachedMsgCount", "cached_msg_count", _INT),
        _p("cachedMsgMaxOffset", "cached_msg_max_offset", _INT),
        _p("cachedMsgMinOffset", "cached_msg_min_offset", _INT),
        _p("cachedMsgSizeInMiB", "cached_msg_size_in_mib", _INT),
        _p("commitOffset", "commit_offset", _INT),
        _p("droped", "droped", _BOOL),
        _p("lastConsumeTimestamp", "last_consume_timestamp", _INT),
        _p("lastLockTimestamp", "last_lock_timestamp", _INT),
        _p("lastPullTimestamp", "last_pull_timestamp", _INT),
        _p("locked", "locked", _BOOL),
        _p("transactionMsgCount", "transaction_msg_count", _INT),
        _p("transactionMsgMaxOffset", "transaction_msg_max_offset", _INT),
        _p("transactionMsgMinOffset", "transaction_msg_min_offset", _INT),
        _p("tryUnlockTimes", "try_unlock_times", _INT),
    )


@dataclass(frozen=True, slots=True)
class ConsumeStatus(JsonBody):
    """A consumer's per-topic rates: pull/consume response times (ms) and TPS, failures."""

    pull_rt: float = 0.0
    pull_tps: float = 0.0
    consume_rt: float = 0.0
    consume_ok_tps: float = 0.0
    consume_failed_tps: float = 0.0
    consume_failed_msgs: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("consumeFailedMsgs", "consume_failed_msgs", _INT),
        _p("consumeFailedTPS", "consume_failed_tps", _FLOAT),
        _p("consumeOKTPS", "consume_ok_tps", _FLOAT),
        _p("consumeRT", "consume_rt", _FLOAT),
        _p("pullRT", "pull_rt", _FLOAT),
        _p("pullTPS", "pull_tps", _FLOAT),
    )


def _subscription_key(sub: SubscriptionData) -> bytes:
    # SubscriptionData.compareTo compares "topic@subString" (Java string concatenation of nulls too)
    return _java_key(f"{sub.topic}@{sub.sub_string}")


@dataclass(frozen=True, slots=True)
class ConsumerRunningInfo(JsonBody):
    """``GET_CONSUMER_RUNNING_INFO`` answer: a consumer's settings, subscriptions and queues.

    ``properties`` is the client's own ``Properties`` dump (free-form strings). Java keeps
    ``subscription_set``, ``mq_table`` and ``status_table`` sorted (TreeSet/TreeMap), so they are
    written sorted whatever order they are given in.
    """

    properties: Mapping[str, str] = field(default_factory=dict)
    subscription_set: tuple[SubscriptionData, ...] = ()
    mq_table: Mapping[MessageQueue, ProcessQueueInfo] = field(default_factory=dict)
    status_table: Mapping[str, ConsumeStatus] = field(default_factory=dict)
    jstack: str | None = None

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("jstack", "jstack", _STR),
        _p("mqTable", "mq_table", _Map(_QUEUE, _Bean(ProcessQueueInfo))),
        _p("properties", "properties", _Map(_STR, _STR)),
        _p("statusTable", "status_table", _Map(_STR, _Bean(ConsumeStatus))),
        _p("subscriptionSet", "subscription_set", _bean_set(SubscriptionData)),
    )

    def to_json(self) -> dict[str, Any]:
        ordered = ConsumerRunningInfo(
            properties=self.properties,
            subscription_set=tuple(sorted(self.subscription_set, key=_subscription_key)),
            mq_table=dict(sorted(self.mq_table.items())),
            status_table=dict(sorted(self.status_table.items(), key=lambda kv: _java_key(kv[0]))),
            jstack=self.jstack,
        )
        return JsonBody.to_json(ordered)


_JAVA_DATE_FORMAT = "%Y-%m-%d#%H:%M:%S"


def _format_java_millis(millis: int, tz: tzinfo) -> str:
    """``UtilAll.formatDate(new Date(ms), "yyyy-MM-dd#HH:mm:ss:SSS")`` in time zone ``tz``."""
    moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=millis)
    return f"{moment.astimezone(tz).strftime(_JAVA_DATE_FORMAT)}:{millis % 1000:03d}"


@dataclass(frozen=True, slots=True)
class QueueTimeSpan(JsonBody):
    """The store-time span of a queue and how far a group has consumed it.

    Java also writes each timestamp formatted in the broker's local time zone
    (``minTimeStampStr`` …); those strings are kept as received, and :meth:`of` computes them
    for a given zone.
    """

    message_queue: MessageQueue | None = None
    min_time_stamp: int = 0
    max_time_stamp: int = 0
    consume_time_stamp: int = 0
    delay_time: int = 0
    min_time_stamp_str: str | None = None
    max_time_stamp_str: str | None = None
    consume_time_stamp_str: str | None = None

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("consumeTimeStamp", "consume_time_stamp", _INT),
        _p("consumeTimeStampStr", "consume_time_stamp_str", _STR),
        _p("delayTime", "delay_time", _INT),
        _p("maxTimeStamp", "max_time_stamp", _INT),
        _p("maxTimeStampStr", "max_time_stamp_str", _STR),
        _p("messageQueue", "message_queue", _QUEUE),
        _p("minTimeStamp", "min_time_stamp", _INT),
        _p("minTimeStampStr", "min_time_stamp_str", _STR),
    )

    @classmethod
    def of(
        cls,
        message_queue: MessageQueue,
        *,
        min_time_stamp: int,
        max_time_stamp: int,
        consume_time_stamp: int,
        delay_time: int,
        tz: tzinfo = UTC,
    ) -> QueueTimeSpan:
        """A span with the ``*_str`` fields formatted as Java formats them, in zone ``tz``."""
        return cls(
            message_queue=message_queue,
            min_time_stamp=min_time_stamp,
            max_time_stamp=max_time_stamp,
            consume_time_stamp=consume_time_stamp,
            delay_time=delay_time,
            min_time_stamp_str=_format_java_millis(min_time_stamp, tz),
            max_time_stamp_str=_format_java_millis(max_time_stamp, tz),
            consume_time_stamp_str=_format_java_millis(consume_time_stamp, tz),
        )


@dataclass(frozen=True, slots=True)
class QueryConsumeTimeSpanBody(JsonBody):
    """``QUERY_CONSUME_TIME_SPAN`` answer: one :class:`QueueTimeSpan` per queue."""

    consume_time_span_set: tuple[QueueTimeSpan, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("consumeTimeSpanSet", "consume_time_span_set", _beans(QueueTimeSpan))
    )


@dataclass(frozen=True, slots=True)
class GroupList(JsonBody):
    """Group names (``QUERY_TOPIC_CONSUME_BY_WHO`` answer)."""

    group_list: tuple[str, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = _props(_p("groupList", "group_list", _set(_STR)))


@dataclass(frozen=True, slots=True)
class ResetOffsetBody(JsonBody):
    """New offsets per queue (``INVOKE_BROKER_TO_RESET_OFFSET`` answer, ``RESET_CONSUMER_CLIENT_OFFSET``)."""

    offset_table: Mapping[MessageQueue, int] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(_p("offsetTable", "offset_table", _Map(_QUEUE, _INT)))


@dataclass(frozen=True, slots=True)
class QueryCorrectionOffsetBody(JsonBody):
    """``QUERY_CORRECTION_OFFSET`` answer: the lowest committed offset per queue id over groups."""

    correction_offsets: Mapping[int, int] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("correctionOffsets", "correction_offsets", _Map(_LONG_KEY, _INT))
    )


@dataclass(frozen=True, slots=True)
class ConsumeStatsList(JsonBody):
    """``GET_BROKER_CONSUME_STATS``: every group's :class:`ConsumeStats` on a broker, by topic."""

    consume_stats_list: tuple[Mapping[str, tuple[ConsumeStats, ...]], ...] = ()
    broker_addr: str | None = None
    total_diff: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("brokerAddr", "broker_addr", _STR),
        _p("consumeStatsList", "consume_stats_list", _list(_Map(_STR, _beans(ConsumeStats)))),
        _p("totalDiff", "total_diff", _INT),
    )


@dataclass(frozen=True, slots=True)
class ConsumeQueueData(JsonBody):
    """One consume-queue entry as ``QUERY_CONSUME_QUEUE`` shows it, with the filter's verdict."""

    physic_offset: int = 0
    physic_size: int = 0
    tags_code: int = 0
    extend_data_json: str | None = None
    bit_map: str | None = None
    eval: bool = False
    msg: str | None = None

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("bitMap", "bit_map", _STR),
        _p("eval", "eval", _BOOL),
        _p("extendDataJson", "extend_data_json", _STR),
        _p("msg", "msg", _STR),
        _p("physicOffset", "physic_offset", _INT),
        _p("physicSize", "physic_size", _INT),
        _p("tagsCode", "tags_code", _INT),
    )


@dataclass(frozen=True, slots=True)
class QueryConsumeQueueResponseBody(JsonBody):
    """``QUERY_CONSUME_QUEUE`` answer: entries of a consume queue and the group's subscription."""

    subscription_data: SubscriptionData | None = None
    filter_data: str | None = None
    queue_data: tuple[ConsumeQueueData, ...] = ()
    max_queue_index: int = 0
    min_queue_index: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("filterData", "filter_data", _STR),
        _p("maxQueueIndex", "max_queue_index", _INT),
        _p("minQueueIndex", "min_queue_index", _INT),
        _p("queueData", "queue_data", _beans(ConsumeQueueData)),
        _p("subscriptionData", "subscription_data", _Bean(SubscriptionData)),
    )
