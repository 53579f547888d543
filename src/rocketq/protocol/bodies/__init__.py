"""Typed JSON bodies of RocketMQ remoting commands, read and written as fastjson does.

Every body is a frozen dataclass with snake_case fields, ``encode() -> bytes`` and
``decode(data) -> body``. The JSON names, their order (fastjson sorts bean properties by name) and
the Java defaults come from RocketMQ 4.9.4's classes of the same names. Decoding is lenient the way
fastjson is (missing fields take the Java default, unknown fields are ignored, ``"0"`` and ``0``
are both accepted for an integer map key) but a value of the wrong kind is a
:class:`~rocketq.errors.RemoteProtocolError` naming the field, e.g.
``TopicRouteData.queueDatas[0].perm: expected an integer, got 'x'``.

Collections keep the order they had on the wire, and are written back in that order, so a body
decoded from a Java peer re-encodes to the same bytes. Java's ``HashMap``/``HashSet`` fields come
out of fastjson in hash-bucket order; a Python peer building a body from scratch may pass entries
in any order (Java readers rebuild their own maps), or use :func:`java_hash_order` to reproduce the
order a Java peer would have produced. ``TreeMap``/``TreeSet`` fields
(:class:`ConsumerRunningInfo`) are sorted on encoding, as Java sorts them. Java lists and sets
are both tuples here; ``to_json`` gives lists for the former and tuples for the latter, which only
``encode(pretty=True)`` (fastjson's ``PrettyFormat``, the layout of RocketMQ's config files) tells
apart.

Maps keyed by a queue use :class:`~rocketq.models.MessageQueue` keys; fastjson writes those keys
as inline objects (``{{"brokerName":"b","queueId":0,"topic":"T"}:5}``), which
:mod:`rocketq.protocol.fastjson` reads and writes.

>>> from rocketq.models import MessageQueue
>>> body = LockBatchRequestBody(consumer_group="G", client_id="c1", mq_set=(MessageQueue("T", "b", 1),))
>>> body.encode()
b'{"clientId":"c1","consumerGroup":"G","mqSet":[{"brokerName":"b","queueId":1,"topic":"T"}]}'
>>> LockBatchRequestBody.decode(body.encode()) == body
True
"""

from __future__ import annotations

from rocketq.protocol.bodies._codec import JsonBody
from rocketq.protocol.bodies.admin import (
    Connection,
    ConsumeQueueData,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    ConsumeStatsList,
    ConsumeStatus,
    GroupList,
    OffsetWrapper,
    ProcessQueueInfo,
    ProducerConnection,
    QueryConsumeQueueResponseBody,
    QueryConsumeTimeSpanBody,
    QueryCorrectionOffsetBody,
    QueueTimeSpan,
    ResetOffsetBody,
    TopicOffset,
    TopicStatsTable,
)
from rocketq.protocol.bodies.broker import (
    MAX_INFLATED_REGISTER_BODY,
    ConsumerOffsetSerializeWrapper,
    DataVersion,
    DelayOffsetSerializeWrapper,
    KVTable,
    RegisterBrokerBody,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicConfig,
    TopicConfigSerializeWrapper,
)
from rocketq.protocol.bodies.client import (
    SQL92,
    SUB_ALL,
    TAG,
    CheckClientRequestBody,
    ConsumeMessageDirectlyResult,
    ConsumerData,
    GetConsumerListByGroupResponseBody,
    GetConsumerStatusBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    ProducerData,
    SubscriptionData,
    UnlockBatchRequestBody,
)
from rocketq.protocol.bodies.enums import (
    CMResult,
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    TopicFilterType,
)
from rocketq.protocol.bodies.hashorder import java_hash_order
from rocketq.protocol.bodies.route import (
    BrokerData,
    ClusterInfo,
    QueueData,
    TopicList,
    TopicRouteData,
)

__all__ = [
    "MAX_INFLATED_REGISTER_BODY",
    "SQL92",
    "SUB_ALL",
    "TAG",
    "BrokerData",
    "CMResult",
    "CheckClientRequestBody",
    "ClusterInfo",
    "Connection",
    "ConsumeFromWhere",
    "ConsumeMessageDirectlyResult",
    "ConsumeQueueData",
    "ConsumeStats",
    "ConsumeStatsList",
    "ConsumeStatus",
    "ConsumeType",
    "ConsumerConnection",
    "ConsumerData",
    "ConsumerOffsetSerializeWrapper",
    "ConsumerRunningInfo",
    "DataVersion",
    "DelayOffsetSerializeWrapper",
    "GetConsumerListByGroupResponseBody",
    "GetConsumerStatusBody",
    "GroupList",
    "HeartbeatData",
    "JsonBody",
    "KVTable",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "MessageModel",
    "OffsetWrapper",
    "ProcessQueueInfo",
    "ProducerConnection",
    "ProducerData",
    "QueryConsumeQueueResponseBody",
    "QueryConsumeTimeSpanBody",
    "QueryCorrectionOffsetBody",
    "QueueData",
    "QueueTimeSpan",
    "RegisterBrokerBody",
    "ResetOffsetBody",
    "SubscriptionData",
    "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicFilterType",
    "TopicList",
    "TopicOffset",
    "TopicRouteData",
    "TopicStatsTable",
    "UnlockBatchRequestBody",
    "java_hash_order",
]
