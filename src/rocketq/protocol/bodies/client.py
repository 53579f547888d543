"""Bodies clients send or answer: heartbeats and subscriptions, queue locks, consumer lists."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from rocketq.errors import ConfigError
from rocketq.models import MessageQueue
from rocketq.protocol.bodies._codec import (
    _BOOL,
    _F,
    _INT,
    _QUEUE,
    _STR,
    JsonBody,
    _Bean,
    _bean_set,
    _Enum,
    _list,
    _Map,
    _p,
    _props,
    _set,
)
from rocketq.protocol.bodies.enums import CMResult, ConsumeFromWhere, ConsumeType, MessageModel
from rocketq.protocol.bodies.hashorder import java_hash_order
from rocketq.protocol.properties import java_string_hash

__all__ = [
    "SQL92",
    "SUB_ALL",
    "TAG",
    "CheckClientRequestBody",
    "ConsumeMessageDirectlyResult",
    "ConsumerData",
    "GetConsumerListByGroupResponseBody",
    "GetConsumerStatusBody",
    "HeartbeatData",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "ProducerData",
    "SubscriptionData",
    "UnlockBatchRequestBody",
]


#: ``SubscriptionData.SUB_ALL``: the tag expression that matches every message.
SUB_ALL = "*"


#: ``ExpressionType.TAG`` and ``ExpressionType.SQL92``.
TAG = "TAG"


SQL92 = "SQL92"


# Java's String.trim() removes every character up to U+0020.
_JAVA_TRIMMED = "".join(map(chr, range(0x21)))


@dataclass(frozen=True, slots=True)
class SubscriptionData(JsonBody):
    """A consumer's subscription to one topic (``SubscriptionData``).

    For tag expressions ``tags_set`` holds the tags and ``code_set`` their Java ``String.hashCode``;
    ``sub_string`` ``"*"`` means everything. ``filterClassSource`` is never serialized by RocketMQ.
    """

    topic: str | None = None
    sub_string: str | None = None
    tags_set: tuple[str, ...] = ()
    code_set: tuple[int, ...] = ()
    sub_version: int = 0
    expression_type: str | None = TAG
    class_filter_mode: bool = False

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("classFilterMode", "class_filter_mode", _BOOL),
        _p("codeSet", "code_set", _set(_INT)),
        _p("expressionType", "expression_type", _STR),
        _p("subString", "sub_string", _STR),
        _p("subVersion", "sub_version", _INT),
        _p("tagsSet", "tags_set", _set(_STR)),
        _p("topic", "topic", _STR),
    )

    @classmethod
    def build(
        cls, topic: str, expression: str | None, *, sub_version: int, expression_type: str | None = TAG
    ) -> SubscriptionData:
        """The subscription a Java client makes of ``expression`` (``FilterAPI.build``).

        For a tag expression (``"TagA || TagB"``; ``None``, ``""`` or ``"*"`` mean every tag) the
        tags are split on ``||`` and trimmed; ``tags_set`` and ``code_set`` come out in the order a
        Java ``HashSet`` iterates them, so the heartbeat carrying them is byte-identical to a Java
        client's. Any other expression type (``"SQL92"``) is kept as text and must not be empty.
        ``sub_version`` is the client's clock in ms when it subscribed.

        >>> sub = SubscriptionData.build("T", "TagB || TagA ||", sub_version=1)
        >>> sub.tags_set, sub.code_set
        (('TagA', 'TagB'), (2598919, 2598920))
        """
        if expression_type not in (None, TAG):
            if not expression:
                raise ConfigError(f"a {expression_type} expression must not be empty")
            return cls(
                topic=topic, sub_string=expression, sub_version=sub_version, expression_type=expression_type
            )
        if not expression or expression == SUB_ALL:
            return cls(topic=topic, sub_string=SUB_ALL, sub_version=sub_version)
        tags: dict[str, None] = {}
        for part in expression.split("||"):
            tag = part.strip(_JAVA_TRIMMED)
            if tag:
                tags.setdefault(tag)
        codes = dict.fromkeys(java_string_hash(tag) for tag in tags)
        return cls(
            topic=topic,
            sub_string=expression,
            tags_set=tuple(java_hash_order(tags)),
            code_set=tuple(java_hash_order(codes)),
            sub_version=sub_version,
        )


@dataclass(frozen=True, slots=True)
class ProducerData(JsonBody):
    """A producer group in a heartbeat."""

    group_name: str | None = None

    _PROPS: ClassVar[tuple[_F, ...]] = _props(_p("groupName", "group_name", _STR))


@dataclass(frozen=True, slots=True)
class ConsumerData(JsonBody):
    """A consumer group in a heartbeat: how it consumes and what it subscribes to."""

    group_name: str | None = None
    consume_type: ConsumeType | None = None
    message_model: MessageModel | None = None
    consume_from_where: ConsumeFromWhere | None = None
    subscription_data_set: tuple[SubscriptionData, ...] = ()
    unit_mode: bool = False

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("consumeFromWhere", "consume_from_where", _Enum(ConsumeFromWhere)),
        _p("consumeType", "consume_type", _Enum(ConsumeType)),
        _p("groupName", "group_name", _STR),
        _p("messageModel", "message_model", _Enum(MessageModel)),
        _p("subscriptionDataSet", "subscription_data_set", _bean_set(SubscriptionData)),
        _p("unitMode", "unit_mode", _BOOL),
    )


@dataclass(frozen=True, slots=True)
class HeartbeatData(JsonBody):
    """The ``HEART_BEAT`` body (note the JSON name ``clientID`` with a capital D)."""

    client_id: str | None = None
    producer_data_set: tuple[ProducerData, ...] = ()
    consumer_data_set: tuple[ConsumerData, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("clientID", "client_id", _STR),
        _p("consumerDataSet", "consumer_data_set", _bean_set(ConsumerData)),
        _p("producerDataSet", "producer_data_set", _bean_set(ProducerData)),
    )


@dataclass(frozen=True, slots=True)
class CheckClientRequestBody(JsonBody):
    """``CHECK_CLIENT_CONFIG``: a consumer asks the broker whether it can evaluate its filter."""

    client_id: str | None = None
    group: str | None = None
    subscription_data: SubscriptionData | None = None

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("clientId", "client_id", _STR),
        _p("group", "group", _STR),
        _p("subscriptionData", "subscription_data", _Bean(SubscriptionData)),
    )


@dataclass(frozen=True, slots=True)
class GetConsumerListByGroupResponseBody(JsonBody):
    """The client ids of a consumer group (``GET_CONSUMER_LIST_BY_GROUP`` response)."""

    consumer_id_list: tuple[str, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = _props(_p("consumerIdList", "consumer_id_list", _list(_STR)))


@dataclass(frozen=True, slots=True)
class LockBatchRequestBody(JsonBody):
    """``LOCK_BATCH_MQ`` request: the queues an orderly consumer wants to own."""

    consumer_group: str | None = None
    client_id: str | None = None
    mq_set: tuple[MessageQueue, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("clientId", "client_id", _STR),
        _p("consumerGroup", "consumer_group", _STR),
        _p("mqSet", "mq_set", _set(_QUEUE)),
    )


@dataclass(frozen=True, slots=True)
class UnlockBatchRequestBody(JsonBody):
    """``UNLOCK_BATCH_MQ`` request: the queues an orderly consumer releases."""

    consumer_group: str | None = None
    client_id: str | None = None
    mq_set: tuple[MessageQueue, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = LockBatchRequestBody._PROPS


@dataclass(frozen=True, slots=True)
class LockBatchResponseBody(JsonBody):
    """``LOCK_BATCH_MQ`` response: the queues now locked by the requester."""

    lock_ok_mq_set: tuple[MessageQueue, ...] = ()

    _PROPS: ClassVar[tuple[_F, ...]] = _props(_p("lockOKMQSet", "lock_ok_mq_set", _set(_QUEUE)))


@dataclass(frozen=True, slots=True)
class ConsumeMessageDirectlyResult(JsonBody):
    """A client's answer to ``CONSUME_MESSAGE_DIRECTLY``: how its listener handled one message."""

    order: bool = False
    auto_commit: bool = True
    consume_result: CMResult | None = None
    remark: str | None = None
    spent_time_mills: int = 0

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("autoCommit", "auto_commit", _BOOL),
        _p("consumeResult", "consume_result", _Enum(CMResult)),
        _p("order", "order", _BOOL),
        _p("remark", "remark", _STR),
        _p("spentTimeMills", "spent_time_mills", _INT),
    )


@dataclass(frozen=True, slots=True)
class GetConsumerStatusBody(JsonBody):
    """Offsets per queue, a client's ``GET_CONSUMER_STATUS_FROM_CLIENT`` answer (per client via a broker)."""

    message_queue_table: Mapping[MessageQueue, int] = field(default_factory=dict)
    consumer_table: Mapping[str, Mapping[MessageQueue, int]] = field(default_factory=dict)

    _PROPS: ClassVar[tuple[_F, ...]] = _props(
        _p("consumerTable", "consumer_table", _Map(_STR, _Map(_QUEUE, _INT))),
        _p("messageQueueTable", "message_queue_table", _Map(_QUEUE, _INT)),
    )
