"""Topic names and permission bits every RocketMQ peer agrees on, defined once.

The system topics (``TopicValidator`` and ``MixAll`` of RocketMQ 4.9.4), the groups a broker makes
for itself, the per-group retry and
dead-letter topics, topic-name validation as a broker applies it, and the ``PermName`` and
``TopicSysFlag`` bits a topic's config and route carry. Wire facts, like the codes in
:mod:`rocketq.protocol.codes`: the broker, the name server, the clients, the admin tools and the
Spark source all take them from here.

>>> retry_topic("my-group"), dlq_topic("my-group"), is_system_topic("%RETRY%my-group")
('%RETRY%my-group', '%DLQ%my-group', True)
>>> perm_to_string(Perm.READ | Perm.WRITE)
'RW-'
"""

from __future__ import annotations

from enum import IntFlag
from typing import Final

__all__ = [
    "AUTO_CREATE_TOPIC_KEY_TOPIC",
    "BUILTIN_SUBSCRIPTION_GROUPS",
    "CID_RMQ_SYS_PREFIX",
    "DEFAULT_TOPIC_QUEUE_NUMS",
    "DLQ_GROUP_TOPIC_PREFIX",
    "DLQ_NUMS_PER_GROUP",
    "FORCE_SYSTEM_TOPIC_FIELD",
    "REPLY_TOPIC_POSTFIX",
    "RETRY_GROUP_TOPIC_PREFIX",
    "RMQ_SYS_BENCHMARK_TOPIC",
    "RMQ_SYS_OFFSET_MOVED_EVENT",
    "RMQ_SYS_SCHEDULE_TOPIC",
    "RMQ_SYS_SELF_TEST_TOPIC",
    "RMQ_SYS_TRACE_TOPIC",
    "RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "SCHEDULE_TOPIC_QUEUE_NUM",
    "STATIC_SYSTEM_TOPICS",
    "SYSTEM_TOPIC_PREFIX",
    "TOPIC_MAX_LENGTH",
    "Perm",
    "TopicSysFlag",
    "dlq_topic",
    "is_inherited",
    "is_not_allowed_send_topic",
    "is_readable",
    "is_retry_or_dlq_topic",
    "is_system_topic",
    "is_writeable",
    "perm_to_string",
    "reply_topic",
    "retry_topic",
    "validate_topic",
]

AUTO_CREATE_TOPIC_KEY_TOPIC: Final = "TBW102"
"""The topic whose route a producer borrows for a topic that does not exist yet (auto-creation)."""
DEFAULT_TOPIC_QUEUE_NUMS: Final = 4
"""Queues a producer asks a broker to auto-create (``DefaultMQProducer.defaultTopicQueueNums``)."""
RMQ_SYS_SCHEDULE_TOPIC: Final = "SCHEDULE_TOPIC_XXXX"
RMQ_SYS_BENCHMARK_TOPIC: Final = "BenchmarkTest"
RMQ_SYS_TRANS_HALF_TOPIC: Final = "RMQ_SYS_TRANS_HALF_TOPIC"
RMQ_SYS_TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"
RMQ_SYS_TRANS_OP_HALF_TOPIC: Final = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC: Final = "TRANS_CHECK_MAX_TIME_TOPIC"
RMQ_SYS_SELF_TEST_TOPIC: Final = "SELF_TEST_TOPIC"
RMQ_SYS_OFFSET_MOVED_EVENT: Final = "OFFSET_MOVED_EVENT"
SYSTEM_TOPIC_PREFIX: Final = "rmq_sys_"
RETRY_GROUP_TOPIC_PREFIX: Final = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX: Final = "%DLQ%"
REPLY_TOPIC_POSTFIX: Final = "REPLY_TOPIC"
TOPIC_MAX_LENGTH: Final = 127
SCHEDULE_TOPIC_QUEUE_NUM: Final = 18
"""Queues of ``SCHEDULE_TOPIC_XXXX``: one per delay level."""
DLQ_NUMS_PER_GROUP: Final = 1
FORCE_SYSTEM_TOPIC_FIELD: Final = "rocketqForceSystemTopic"
"""rocketq's own ext field of UPDATE_AND_CREATE_TOPIC and DELETE_TOPIC_IN_BROKER: its value, the
topic's name repeated, lets a rocketq broker change or delete one of its system topics, which it
otherwise refuses as RocketMQ 4.9's broker does (``The topic[...] is conflict with system topic.``).
A RocketMQ broker ignores the field (and refuses)."""

CID_RMQ_SYS_PREFIX: Final = "CID_RMQ_SYS_"
"""``MixAll.CID_RMQ_SYS_PREFIX``: the system consumer groups' names start with it."""
BUILTIN_SUBSCRIPTION_GROUPS: Final = (
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
)
"""Groups RocketMQ's ``SubscriptionGroupManager`` creates at start (``MixAll`` names)."""

STATIC_SYSTEM_TOPICS: Final = frozenset(
    {
        AUTO_CREATE_TOPIC_KEY_TOPIC,
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_BENCHMARK_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRACE_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        RMQ_SYS_SELF_TEST_TOPIC,
        RMQ_SYS_OFFSET_MOVED_EVENT,
    }
)
"""``TopicValidator``'s system topics: the ones every broker knows by name."""
_NOT_ALLOWED_SEND_TOPICS: Final = frozenset(
    {
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        RMQ_SYS_SELF_TEST_TOPIC,
        RMQ_SYS_OFFSET_MOVED_EVENT,
    }
)
_VALID_TOPIC_CHARS: Final = frozenset("%|-_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


class Perm(IntFlag):
    """RocketMQ's ``PermName`` bits: what a topic (or a broker) allows.

    The members also answer to their Java names (``Perm.PERM_READ is Perm.READ``), so code
    written after RocketMQ's ``PermName`` reads the same.
    """

    INHERIT = 0x1
    """New topics may be auto-created from this one (``TBW102``)."""
    WRITE = 0x2
    """Producers may send."""
    READ = 0x4
    """Consumers may pull."""
    PRIORITY = 0x8
    PERM_INHERIT = INHERIT
    PERM_WRITE = WRITE
    PERM_READ = READ
    PERM_PRIORITY = PRIORITY


class TopicSysFlag(IntFlag):
    """RocketMQ's ``TopicSysFlag`` bits of a topic's ``topicSysFlag``."""

    FLAG_UNIT = 0x1
    """A unit topic."""
    FLAG_UNIT_SUB = 0x2
    """A topic with unit subscriptions (a unit-mode consumer's retry topic)."""


def retry_topic(group: str) -> str:
    """``%RETRY%<group>``: where a group's failed messages wait for redelivery."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """``%DLQ%<group>``: where a group's messages go after the maximum number of retries."""
    return DLQ_GROUP_TOPIC_PREFIX + group


def reply_topic(cluster: str) -> str:
    """``<cluster>_REPLY_TOPIC``: where replies of request-reply messaging travel."""
    return f"{cluster}_{REPLY_TOPIC_POSTFIX}"


def is_retry_or_dlq_topic(topic: str) -> bool:
    """Whether ``topic`` is a group's retry or dead-letter topic."""
    return topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))


def is_system_topic(topic: str) -> bool:
    """Whether ``topic`` is RocketMQ's own: a static system topic, ``rmq_sys_*``, a retry or
    dead-letter topic, or a reply topic (what ``rocketq topic list`` hides without ``--all``)."""
    return (
        topic in STATIC_SYSTEM_TOPICS
        or topic.startswith(SYSTEM_TOPIC_PREFIX)
        or is_retry_or_dlq_topic(topic)
        or topic.endswith("_" + REPLY_TOPIC_POSTFIX)
    )


def validate_topic(topic: str) -> str | None:
    """``TopicValidator.validateTopic``: ``None`` if ``topic`` is acceptable, else the error remark
    RocketMQ answers with (response code SYSTEM_ERROR).

    >>> validate_topic("Topic-A_1%|x") is None
    True
    >>> validate_topic("bad topic")
    'The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$'
    """
    if not topic or topic.isspace():
        return "The specified topic is blank."
    if not _VALID_TOPIC_CHARS.issuperset(topic):
        return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


def is_not_allowed_send_topic(topic: str) -> bool:
    """Whether clients may not send to ``topic`` (schedule, transaction, self-test, offset-moved)."""
    return topic in _NOT_ALLOWED_SEND_TOPICS


_READ: Final = int(Perm.READ)  # plain ints: IntFlag arithmetic costs a call per operation
_WRITE: Final = int(Perm.WRITE)
_INHERIT: Final = int(Perm.INHERIT)


def is_readable(perm: int) -> bool:
    """``PermName.isReadable``."""
    return bool(perm & _READ)


def is_writeable(perm: int) -> bool:
    """``PermName.isWriteable``."""
    return bool(perm & _WRITE)


def is_inherited(perm: int) -> bool:
    """``PermName.isInherited``: whether topics may be auto-created from one with this perm."""
    return bool(perm & _INHERIT)


def perm_to_string(perm: int) -> str:
    """``PermName.perm2String``: ``R``/``W``/``X`` (inherit) or ``-`` in three places.

    >>> perm_to_string(6), perm_to_string(7), perm_to_string(2)
    ('RW-', 'RWX', '-W-')
    """
    return (
        ("R" if perm & _READ else "-") + ("W" if perm & _WRITE else "-") + ("X" if perm & _INHERIT else "-")
    )
