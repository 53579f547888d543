"""What client code sees: messages to send, send results, listener statuses and contexts.

:class:`Message` is the protocol's :class:`rocketq.protocol.Message` with a friendlier
constructor (``Message("TopicTest", b"hi", tags="TagA", keys=["k1", "k2"])``); consumers receive
:class:`~rocketq.protocol.MessageExt` values. Status enums carry RocketMQ's names.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rocketq.errors import ConfigError
from rocketq.models import LocalTransactionState, MessageQueue, PullStatus, SendResult, SendStatus
from rocketq.protocol.message import Message as _ProtocolMessage
from rocketq.protocol.message import MessageExt

__all__ = [
    "AnsweredSend",
    "ConsumeConcurrentlyContext",
    "ConsumeConcurrentlyStatus",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyStatus",
    "EndedTransaction",
    "Message",
    "MessageExt",
    "PullStatus",
    "SendResult",
    "SendStatus",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class AnsweredSend:
    """A send the broker answered, as a traced producer's hook sees it (Java's
    ``SendMessageContext``): the producer group, the topic, the properties sent (``None`` for a
    batch's), the body's length, the broker's address, when the send began (epoch ms) and its
    result."""

    group: str
    topic: str
    properties: dict[str, str] | None
    body_length: int
    broker_addr: str
    begin_ms: int
    result: SendResult
    batch: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class EndedTransaction:
    """A transaction ended, as a traced producer's hook sees it (Java's ``EndTransactionContext``):
    the producer group, the half message and its id, the broker told, the state, and whether the
    broker's check asked (else the local transaction's end)."""

    group: str
    msg: _ProtocolMessage
    msg_id: str
    broker_addr: str
    state: LocalTransactionState
    from_check: bool


class Message(_ProtocolMessage):
    """A message to send: topic, body (``bytes`` or ``str``, sent as UTF-8) and properties.

    ``tags`` is one tag (consumers filter on it), ``keys`` one key or several (indexed by the
    broker for queries, joined with a space), ``properties`` user properties, ``delay_level`` a
    delay level (1 = 1 s ... 18 = 2 h with the broker's default levels; 0 = none), ``flag`` the
    producer's opaque int.

    >>> m = Message("TopicTest", "hello", tags="TagA", keys=["order-1", "user-42"], properties={"a": "1"})
    >>> (m.topic, m.body, m.tags, m.keys, m.properties["a"])
    ('TopicTest', b'hello', 'TagA', 'order-1 user-42', '1')
    """

    __slots__ = ()

    def __init__(
        self,
        topic: str,
        body: bytes | bytearray | memoryview | str = b"",
        *,
        tags: str | None = None,
        keys: str | Iterable[str] | None = None,
        properties: Mapping[str, str] | None = None,
        delay_level: int = 0,
        flag: int = 0,
        wait_store_msg_ok: bool = True,
    ) -> None:
        if not isinstance(topic, str) or not topic:
            raise ConfigError("a message needs a non-empty topic")
        data = body.encode() if isinstance(body, str) else bytes(body)
        super().__init__(topic, data, flag, {})
        if properties:
            for name, value in properties.items():
                if not isinstance(name, str) or not isinstance(value, str):
                    raise ConfigError(f"message properties must be str to str, got {name!r}: {value!r}")
                self.properties[name] = value
        if tags is not None:
            self.tags = tags
        if keys is not None:
            self.keys = keys
        if delay_level:
            if delay_level < 0:
                raise ConfigError(f"delay_level must be >= 0, got {delay_level}")
            self.delay_time_level = delay_level
        self.wait_store_msg_ok = wait_store_msg_ok


class ConsumeConcurrentlyStatus(enum.Enum):
    """What a concurrent listener returns: done, or send back and redeliver later."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(enum.Enum):
    """What an orderly listener returns (RocketMQ's ``ConsumeOrderlyStatus``)."""

    SUCCESS = "SUCCESS"
    ROLLBACK = "ROLLBACK"
    COMMIT = "COMMIT"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


class ConsumeConcurrentlyContext:
    """Passed to a concurrent listener with its messages (RocketMQ's context of the same name).

    ``delay_level_when_next_consume``: 0 lets the broker choose (3 + reconsume times), -1 sends a
    failed message straight to the dead-letter queue, > 0 picks that delay level.
    ``ack_index``: on ``CONSUME_SUCCESS``, messages after this index of the batch are treated as
    failed (default: all succeeded).
    """

    __slots__ = ("ack_index", "delay_level_when_next_consume", "message_queue")

    def __init__(self, message_queue: MessageQueue) -> None:
        self.message_queue = message_queue
        self.delay_level_when_next_consume = 0
        self.ack_index = 2**31 - 1

    def __repr__(self) -> str:
        return (
            f"ConsumeConcurrentlyContext({self.message_queue.short}, "
            f"delay_level={self.delay_level_when_next_consume}, ack_index={self.ack_index})"
        )


class ConsumeOrderlyContext:
    """Passed to an orderly listener (RocketMQ's ``ConsumeOrderlyContext``)."""

    __slots__ = ("auto_commit", "message_queue", "suspend_current_queue_time")

    def __init__(self, message_queue: MessageQueue) -> None:
        self.message_queue = message_queue
        self.auto_commit = True
        #: seconds to suspend the queue after SUSPEND_CURRENT_QUEUE_A_MOMENT (-1: the consumer's default)
        self.suspend_current_queue_time = -1.0
