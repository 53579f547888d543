"""What a client checks before it talks to a broker (RocketMQ's ``Validators``).

Topic and group names (:func:`check_topic`, :func:`check_group`: 1..127 / 1..255 characters of
``[%|a-zA-Z0-9_-]``) and a message about to be sent (:func:`check_message`: a valid topic that is
not a system topic, a body of 1..``max_size`` bytes). Producers and consumers call them in their
constructors and on every send; a bad value raises :class:`~rocketq.errors.ConfigError` before
anything is sent.

>>> check_topic("TopicTest"); check_group("my-group")
>>> check_topic("bad topic")
Traceback (most recent call last):
  ...
rocketq.errors.ConfigError: the topic 'bad topic' contains characters other than [%|a-zA-Z0-9_-]
"""

from __future__ import annotations

import re

from rocketq.errors import ConfigError
from rocketq.protocol.message import Message as ProtocolMessage
from rocketq.protocol.topics import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    RMQ_SYS_BENCHMARK_TOPIC,
    RMQ_SYS_OFFSET_MOVED_EVENT,
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_SELF_TEST_TOPIC,
    RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    TOPIC_MAX_LENGTH,
)

__all__ = ["SEND_FORBIDDEN_TOPICS", "check_group", "check_message", "check_topic"]

_NAME_RE = re.compile(r"^[%|a-zA-Z0-9_-]+$")
_MAX_GROUP_LENGTH = 255

SEND_FORBIDDEN_TOPICS = frozenset(
    {
        AUTO_CREATE_TOPIC_KEY_TOPIC,
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_BENCHMARK_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        RMQ_SYS_SELF_TEST_TOPIC,
        RMQ_SYS_OFFSET_MOVED_EVENT,
    }
)
"""System topics a producer may not send to. The trace topic is not one of them: trace producers
send there, as RocketMQ's ``NOT_ALLOWED_SEND_TOPIC_SET`` allows."""


def check_topic(topic: str) -> None:
    """RocketMQ's ``Validators.checkTopic``: 1..127 chars of ``[%|a-zA-Z0-9_-]``."""
    if not topic or not topic.strip():
        raise ConfigError("the topic is blank")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise ConfigError(f"the topic is longer than {TOPIC_MAX_LENGTH} characters: {topic!r}")
    if not _NAME_RE.match(topic):
        raise ConfigError(f"the topic {topic!r} contains characters other than [%|a-zA-Z0-9_-]")


def check_group(group: str) -> None:
    """RocketMQ's ``Validators.checkGroup``: 1..255 chars of ``[%|a-zA-Z0-9_-]``."""
    if not isinstance(group, str) or not group.strip():
        raise ConfigError("the group name is blank")
    if len(group) > _MAX_GROUP_LENGTH:
        raise ConfigError(f"the group name is longer than {_MAX_GROUP_LENGTH} characters: {group!r}")
    if not _NAME_RE.match(group):
        raise ConfigError(f"the group name {group!r} contains characters other than [%|a-zA-Z0-9_-]")


def check_message(msg: ProtocolMessage, max_size: int) -> None:
    """RocketMQ's ``Validators.checkMessage``: valid topic, not a system topic, body 1..max bytes."""
    check_topic(msg.topic)
    if msg.topic in SEND_FORBIDDEN_TOPICS:
        raise ConfigError(f"the topic {msg.topic!r} is a system topic; sending to it is not allowed")
    if not msg.body:
        raise ConfigError("the message body is empty")
    if len(msg.body) > max_size:
        raise ConfigError(f"the message body is {len(msg.body)} bytes; the maximum is {max_size}")
